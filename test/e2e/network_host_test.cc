// End-to-end: the network modes and the egress policy (issue 21 items 2-4)
// with loopback addresses only. A host test server listens on the host's
// 127.0.0.1 (this test process); a python3 client inside the sandbox
// connects to it:
//   --network=none (default): refused (the sandbox's loopback is its own);
//   --network=host without a policy: refused (host mode allows everything
//     but the host's own loopback services);
//   --network=host with a policy listing 127.0.0.1:P: reached;
//   --network=host with a policy not listing it: ECONNREFUSED, and one
//     --log line naming the destination (JSON with --log-format=json).
// Names (host mode with a policy): the sandbox's /etc/resolv.conf names
// its own name server, which asks the broker, which asks a DNS server this
// test runs on 127.0.0.1 (programs/dns_stub_server) only for names the
// policy lists; a listed name resolves and connects, an unlisted one does
// not resolve. And --publish: a host client reaches a python3 server
// inside the sandbox. Needs /usr/bin/python3 on the host (the sandbox's root is
// the host's); skips otherwise.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

// Connects to 127.0.0.1:argv[1], prints what the server sends, or the
// exception's class name.
constexpr char kClient[] = R"(
import socket, sys
try:
    s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10)
    print(s.recv(100).decode().strip())
except OSError as e:
    print(type(e).__name__)
)";

// Listens on 127.0.0.1:argv[1] inside the sandbox, prints "ready", sends
// "hello from the sandbox" to one connection.
constexpr char kServer[] = R"(
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', int(sys.argv[1])))
s.listen(1)
print('ready', flush=True)
c, peer = s.accept()
c.sendall(b'hello from the sandbox\n')
c.close()
print('served', flush=True)
)";

// A host server on 127.0.0.1 that greets every connection.
class HostServer {
 public:
  HostServer() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    socklen_t len = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p = {fd_, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) continue;
        int c = accept(fd_, nullptr, nullptr);
        if (c < 0) continue;
        ++accepted_;
        (void)!write(c, "hello from the host\n", 20);
        close(c);
      }
    });
  }
  ~HostServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

std::string TmpPath(const std::string& name) {
  const char* d = getenv("TEST_TMPDIR");
  return std::string(d != nullptr ? d : "/var/tmp") + "/" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class NetworkHost : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << "no " << kPython;
  }
  Result Client(std::vector<std::string> flags, int port) {
    std::vector<std::string> args = {"do"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(),
                {"--", kPython, "-c", kClient, std::to_string(port)});
    return RunRunsc(args);
  }
};

TEST_F(NetworkHost, NoneModeCannotReachTheHost) {
  HostServer host;
  Result r = Client({}, host.port());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "ConnectionRefusedError\n");
  EXPECT_EQ(host.accepted(), 0);
}

TEST_F(NetworkHost, HostModeWithoutPolicyDoesNotReachHostLoopback) {
  HostServer host;
  Result r = Client({"--network=host"}, host.port());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "ConnectionRefusedError\n");
  EXPECT_EQ(host.accepted(), 0);
}

TEST_F(NetworkHost, PolicyListingTheServerReachesIt) {
  HostServer host;
  const std::string p = std::to_string(host.port());
  Result r =
      Client({"--network=host", "--egress-allow=127.0.0.1:" + p}, host.port());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "hello from the host\n");
  // A CIDR with a port range, from a policy file.
  const std::string file = TmpPath("policy");
  std::ofstream(file) << "# the test server\n127.0.0.0/8:" << p << "-" << p
                      << "\n";
  r = Client({"--network=host", "--egress-policy=" + file}, host.port());
  EXPECT_EQ(r.out, "hello from the host\n") << r.err;
  EXPECT_EQ(host.accepted(), 2);
}

TEST_F(NetworkHost, PolicyNotListingTheServerRefusesWithALogLine) {
  HostServer host;
  const std::string p = std::to_string(host.port());
  const std::string other =
      std::to_string(host.port() == 65535 ? 1 : host.port() + 1);
  const std::string log = TmpPath("egress.log");
  unlink(log.c_str());
  Result r = Client(
      {"--network=host", "--egress-allow=127.0.0.1:" + other, "--log=" + log},
      host.port());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "ConnectionRefusedError\n");
  EXPECT_EQ(host.accepted(), 0);
  const std::string text = ReadFile(log);
  EXPECT_NE(text.find("egress denied: tcp to 127.0.0.1:" + p),
            std::string::npos)
      << text;
  // JSON with --log-format=json: one object a line.
  const std::string jlog = TmpPath("egress.json");
  unlink(jlog.c_str());
  r = Client({"--network=host", "--egress-allow=10.0.0.0/8", "--log=" + jlog,
              "--log-format=json"},
             host.port());
  EXPECT_EQ(r.out, "ConnectionRefusedError\n");
  const std::string json = ReadFile(jlog);
  size_t at = json.find("egress denied: tcp to 127.0.0.1:" + p);
  ASSERT_NE(at, std::string::npos) << json;
  size_t line = json.rfind('\n', at);
  line = line == std::string::npos ? 0 : line + 1;
  EXPECT_EQ(json[line], '{') << json;
  EXPECT_NE(json.find("\"msg\"", line), std::string::npos);
}

// Resolves each name of argv[2:] and connects to the first at port
// argv[1]: prints "NAME ADDRESS" or "NAME unresolved", then the greeting.
constexpr char kNameClient[] = R"(
import socket, sys
port = int(sys.argv[1])
for n in sys.argv[2:]:
    try:
        print(n, socket.gethostbyname(n))
    except OSError:
        print(n, 'unresolved')
try:
    s = socket.create_connection((sys.argv[2], port), timeout=10)
    print(s.recv(100).decode().strip())
except OSError as e:
    print(type(e).__name__)
)";

TEST_F(NetworkHost, ListedNamesResolveAndConnectUnlistedOnesDoNot) {
  HostServer host;
  const char* tmp = getenv("TEST_TMPDIR");
  const std::string port_file =
      std::string(tmp != nullptr ? tmp : "/var/tmp") + "/dns_port";
  unlink(port_file.c_str());
  Child dns(
      Child::Native{},
      {Program("dns_stub_server"), "--port=0", "--port-file=" + port_file,
       "--record=allowed.test=127.0.0.1", "--record=unlisted.test=127.0.0.1"});
  ASSERT_TRUE(dns.WaitForOutput("listening on 127.0.0.1:"));
  std::ifstream f(port_file);
  int dns_port = 0;
  f >> dns_port;
  ASSERT_GT(dns_port, 0);
  const std::string p = std::to_string(host.port());
  Result r = RunRunsc(
      {"do", "--network=host", "--egress-allow=allowed.test:" + p,
       "--host-resolver=127.0.0.1:" + std::to_string(dns_port), "--", kPython,
       "-c", kNameClient, p, "allowed.test", "unlisted.test"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "allowed.test 127.0.0.1\nunlisted.test unresolved\n"
            "hello from the host\n");
  EXPECT_EQ(host.accepted(), 1);
}

TEST_F(NetworkHost, PublishedPortReachesTheSandboxsServer) {
  // A free host port.
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  const int host_port = ntohs(a.sin_port);
  Child c({"do", "--publish=" + std::to_string(host_port) + ":8765", "--",
           kPython, "-c", kServer, "8765"});
  ASSERT_TRUE(c.WaitForOutput("ready"));
  int cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  a.sin_port = htons(host_port);
  ASSERT_EQ(connect(cl, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  std::string got;
  char buf[64];
  for (int i = 0; i < 100; ++i) {
    pollfd p = {cl, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = read(cl, buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, n);
  }
  close(cl);
  EXPECT_EQ(got, "hello from the sandbox\n");
  Result r = c.Finish();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("served"), std::string::npos);
}

// A UDP echo server in the sandbox, reached through --publish=P:8766/udp
// (the default network mode): each host peer's datagrams arrive from the
// peer's own address, and the answers sent back to that address reach
// the peer through the broker's flow (not the sandbox's loopback).
constexpr char kUdpEcho[] = R"(
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('0.0.0.0', int(sys.argv[1])))
print('ready', flush=True)
seen = set()
while len(seen) < 2:
    data, peer = s.recvfrom(2048)
    if data == b'bye':
        seen.add(peer)
        s.sendto(b'bye', peer)
        continue
    s.sendto(data.upper() + (' from %s' % peer[0]).encode(), peer)
print('served', len(seen), flush=True)
)";

TEST_F(NetworkHost, PublishedUdpPortAnswersEachHostPeer) {
  int probe = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len);
  close(probe);
  const int host_port = ntohs(a.sin_port);
  Child c({"do", "--publish=" + std::to_string(host_port) + ":8766/udp", "--",
           kPython, "-c", kUdpEcho, "8766"});
  ASSERT_TRUE(c.WaitForOutput("ready"));
  a.sin_port = htons(host_port);
  // Two peers (two host sockets), each answered on its own flow.
  int peers[2];
  for (int& fd : peers) {
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  }
  // Datagrams may be lost (UDP): send each until its answer comes, bounded.
  auto ask = [&](int fd, const std::string& q) {
    char buf[2048];
    for (int i = 0; i < 50; ++i) {
      (void)!send(fd, q.data(), q.size(), 0);
      pollfd p = {fd, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n >= 0) return std::string(buf, n);
    }
    return std::string("(no answer)");
  };
  EXPECT_EQ(ask(peers[0], "one"), "ONE from 127.0.0.1");
  EXPECT_EQ(ask(peers[1], "two"), "TWO from 127.0.0.1");
  EXPECT_EQ(ask(peers[0], "three"), "THREE from 127.0.0.1");
  EXPECT_EQ(ask(peers[0], "bye"), "bye");
  EXPECT_EQ(ask(peers[1], "bye"), "bye");
  for (int fd : peers) close(fd);
  Result r = c.Finish();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("served 2"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sandbox::e2e
