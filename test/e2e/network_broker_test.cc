// End-to-end: the network broker (issue 21 item 3): `runsc do` starts a
// separate, confined `runsc broker` only for --network=host or --publish;
// it is the only process with host Internet sockets, keeps the host's
// network namespace, has an empty root, no capabilities and a seccomp
// filter; killing the sandbox (runsc or the Sentry, SIGKILL) leaves no
// broker behind. Also the network flags' errors and a published port that
// is already in use. Every address is on loopback.
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

// /proc/PID/stat's comm and ppid, or false once it is gone (or a zombie).
bool StatOf(pid_t pid, std::string* comm, pid_t* ppid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)),
                std::istreambuf_iterator<char>());
  size_t open = s.find('('), close = s.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return false;
  *comm = s.substr(open + 1, close - open - 1);
  std::istringstream rest(s.substr(close + 2));
  char state;
  rest >> state >> *ppid;
  return state != 'Z' && state != 'X';
}

// The children of `parent` named `comm`.
std::vector<pid_t> ChildrenNamed(pid_t parent, const std::string& comm) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    pid_t pid = atoi(e->d_name);
    if (pid <= 0) continue;
    std::string c;
    pid_t pp;
    if (StatOf(pid, &c, &pp) && pp == parent && c == comm) out.push_back(pid);
  }
  closedir(d);
  return out;
}

// Waits (bounded) for runsc `cli` to have a child named `comm`.
pid_t WaitForChild(pid_t cli, const std::string& comm) {
  for (int i = 0; i < 500; ++i) {
    std::vector<pid_t> v = ChildrenNamed(cli, comm);
    if (!v.empty()) return v[0];
    usleep(10000);
  }
  return -1;
}

// Whether `pid` is gone within 5 s.
bool GoneSoon(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    std::string c;
    pid_t pp;
    if (!StatOf(pid, &c, &pp)) return true;
    usleep(10000);
  }
  return false;
}

std::string StatusField(pid_t pid, const std::string& key) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      size_t v = line.find_first_not_of(" \t", key.size() + 1);
      return v == std::string::npos ? "" : line.substr(v);
    }
  }
  return "";
}

TEST(NetworkBroker, NoneModeStartsNoBroker) {
  Child c({"do", "--", "/bin/sleep", "5"});
  ASSERT_GT(WaitForChild(c.pid(), "runsc-sentry"), 0);
  usleep(200000);
  EXPECT_TRUE(ChildrenNamed(c.pid(), "runsc-broker").empty());
  kill(c.pid(), SIGKILL);
}

TEST(NetworkBroker, BrokerIsConfinedAndKeepsTheHostNetwork) {
  Child c({"do", "--network=host", "--", "/bin/sleep", "20"});
  pid_t b = WaitForChild(c.pid(), "runsc-broker");
  ASSERT_GT(b, 0);
  // Confinement is done before the filter: wait for the filter.
  for (int i = 0; i < 500 && StatusField(b, "Seccomp") != "2"; ++i) {
    usleep(10000);
  }
  ASSERT_EQ(StatusField(b, "Seccomp"), "2");
  EXPECT_EQ(StatusField(b, "NoNewPrivs"), "1");
  EXPECT_EQ(StatusField(b, "CapEff"), "0000000000000000");
  EXPECT_EQ(StatusField(b, "CapBnd"), "0000000000000000");
  // An empty root.
  DIR* d = opendir(("/proc/" + std::to_string(b) + "/root").c_str());
  if (d != nullptr) {
    int entries = 0;
    while (dirent* e = readdir(d)) {
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
        ++entries;
      }
    }
    closedir(d);
    EXPECT_EQ(entries, 0);
  }
  // The host's network namespace (its job is host sockets); a mount
  // namespace of its own.
  auto ns = [](pid_t p, const char* which) {
    char buf[128] = {};
    std::string path = "/proc/" + std::to_string(p) + "/ns/" + which;
    ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
    return n > 0 ? std::string(buf, n) : std::string();
  };
  EXPECT_EQ(ns(b, "net"), ns(getpid(), "net"));
  EXPECT_NE(ns(b, "mnt"), ns(getpid(), "mnt"));
  kill(c.pid(), SIGKILL);
}

TEST(NetworkBroker, KillingRunscLeavesNoBroker) {
  Child c({"do", "--network=host", "--publish=0.0.0.0:0:80", "--", "/bin/sleep",
           "30"});
  // (HOSTPORT 0 is refused: this is the flag error, checked below.)
  Result r = c.Finish();
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("HOSTPORT '0'"), std::string::npos) << r.err;

  Child d({"do", "--network=host", "--", "/bin/sleep", "30"});
  pid_t b = WaitForChild(d.pid(), "runsc-broker");
  ASSERT_GT(b, 0);
  ASSERT_EQ(kill(d.pid(), SIGKILL), 0);
  EXPECT_TRUE(GoneSoon(b)) << "broker " << b << " outlived runsc";
}

TEST(NetworkBroker, KillingTheSentryLeavesNoBroker) {
  Child c({"do", "--publish=127.0.0.1:0:80", "--", "/bin/sleep", "30"});
  Result bad = c.Finish();
  ASSERT_EQ(bad.status, 2);
  // A published port (any free one: find one first) starts a broker even
  // in the default mode.
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  const int port = ntohs(a.sin_port);
  Child d({"do", "--publish=" + std::to_string(port) + ":80", "--",
           "/bin/sleep", "30"});
  pid_t b = WaitForChild(d.pid(), "runsc-broker");
  pid_t sentry = WaitForChild(d.pid(), "runsc-sentry");
  ASSERT_GT(b, 0);
  ASSERT_GT(sentry, 0);
  ASSERT_EQ(kill(sentry, SIGKILL), 0);
  // The broker sees its connection's end and exits; runsc reports the
  // sandbox killed.
  EXPECT_TRUE(GoneSoon(b)) << "broker " << b << " outlived the Sentry";
  Result r = d.Finish();
  EXPECT_EQ(r.status, 125) << r.err;
}

TEST(NetworkBroker, PublishedPortInUseFailsBeforeStart) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(s, 1), 0);
  socklen_t len = sizeof(a);
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));
  Result r = RunRunsc(
      {"do", "--publish=" + port + ":80", "--", "/bin/echo", "started"});
  close(s);
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("127.0.0.1:" + port + ":80"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("bind"), std::string::npos) << r.err;
}

TEST(NetworkBroker, FlagErrors) {
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  } cases[] = {
      {{"--network=bridge"}, "expected --network=none or host"},
      {{"--publish=80"}, "[HOSTADDR:]HOSTPORT:GUESTPORT"},
      {{"--publish=localhost:80:80"}, "HOSTADDR 'localhost'"},
      {{"--egress-allow=10.0.0.0/8"}, "--network=host only"},
      {{"--network=host", "--egress-allow=10.1.0.0/8"}, "10.0.0.0/8"},
      {{"--network=host", "--egress-policy=/nonexistent/policy"},
       "/nonexistent/policy"},
      {{"--network=host", "--host-resolver=nameserver"}, "--host-resolver"},
      {{"--host-resolver=127.0.0.1"}, "--network=host only"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"do"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    args.insert(args.end(), {"--", "/bin/true"});
    Result r = RunRunsc(args);
    EXPECT_EQ(r.status, 2) << c.flags[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  Result h = RunRunsc({"do", "--help"});
  EXPECT_NE(h.out.find("HOST MODE\n                      ALLOWS EVERY"),
            std::string::npos);
}

}  // namespace
}  // namespace sandbox::e2e
