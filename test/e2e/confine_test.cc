// End-to-end: the Sentry (`runsc boot`) confines itself before the guest's
// first instruction (sentry/confine). Checked from outside, through
// /proc/<sentry pid>, while a guest runs: seccomp filter mode, no_new_privs,
// no capability, its own namespaces, an empty read-only root, and no FD
// naming a host path. Also: the allowlist covers the e2e programs (no
// denial reported in --debug-seccomp mode), and --unconfined skips it all.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace {

using ::sandbox::e2e::Child;
using ::sandbox::e2e::Program;
using ::sandbox::e2e::Result;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string Link(const std::string& path) {
  char buf[4096];
  ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
  return n < 0 ? "" : std::string(buf, n);
}

// The value of "Key:" in /proc/PID/status, or "" if absent.
std::string StatusField(const std::string& status, const std::string& key) {
  std::istringstream in(status);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "";
}

// `runsc do ARGS...` (test/e2e/runsc_child.h).
class RunscDo : public Child {
 public:
  explicit RunscDo(const std::vector<std::string>& args)
      : Child(DoArgs(args)) {}
  // Closes stdin, waits for the exit; the status (exit code or
  // 128+signal), and stderr in *err.
  int Finish(std::string* err) {
    CloseStdin();
    Result r = Child::Finish();
    *err += r.err;
    return r.status;
  }

 private:
  static std::vector<std::string> DoArgs(const std::vector<std::string>& a) {
    std::vector<std::string> v = {"do"};
    v.insert(v.end(), a.begin(), a.end());
    return v;
  }
};

// The Sentry: the child of `runsc do` named runsc-sentry. -1 if none.
pid_t FindSentry(pid_t cli) {
  DIR* d = opendir("/proc");
  if (d == nullptr) return -1;
  pid_t found = -1;
  while (dirent* e = readdir(d)) {
    pid_t pid = atoi(e->d_name);
    if (pid <= 0) continue;
    std::string stat = ReadFile("/proc/" + std::string(e->d_name) + "/stat");
    size_t close_paren = stat.rfind(')');
    size_t open_paren = stat.find('(');
    if (close_paren == std::string::npos || open_paren == std::string::npos) {
      continue;
    }
    std::string comm =
        stat.substr(open_paren + 1, close_paren - open_paren - 1);
    std::istringstream rest(stat.substr(close_paren + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == cli && comm == "runsc-sentry") found = pid;
  }
  closedir(d);
  return found;
}

// The names in a directory, without "." and "..".
std::vector<std::string> List(const std::string& dir, int* err) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  *err = d == nullptr ? errno : 0;
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  return names;
}

TEST(SentryConfinementTest, ConfinedWhileTheGuestRuns) {
  // --root=tmpfs: every FD the Sentry holds is then its own (over the
  // Gofer's root it also holds the host files the Gofer donated, by design).
  RunscDo run({"--root=tmpfs", "--", Program("cat")});
  // The guest echoes a line: its first instructions have run.
  run.Write("ping\n");
  ASSERT_TRUE(run.WaitForOutput("ping\n"));
  const pid_t sentry = FindSentry(run.pid());
  ASSERT_GT(sentry, 0);
  const std::string proc = "/proc/" + std::to_string(sentry);

  // seccomp filter mode, no_new_privs, no capability in any set.
  const std::string status = ReadFile(proc + "/status");
  EXPECT_EQ(StatusField(status, "Seccomp"), "2") << status;
  EXPECT_EQ(StatusField(status, "NoNewPrivs"), "1");
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
    EXPECT_EQ(StatusField(status, set), "0000000000000000") << set;
  }
  // Every thread has the filter (TSYNC), not only the main one.
  int err = 0;
  std::vector<std::string> tids = List(proc + "/task", &err);
  ASSERT_EQ(err, 0);
  EXPECT_GE(tids.size(), 2u);  // the platform's service thread, the task
  for (const std::string& tid : tids) {
    std::string ts = ReadFile(proc + "/task/" + tid + "/status");
    EXPECT_EQ(StatusField(ts, "Seccomp"), "2") << "thread " << tid;
    EXPECT_EQ(StatusField(ts, "CapEff"), "0000000000000000") << tid;
  }

  // Namespaces of its own.
  for (const char* ns : {"mnt", "ipc", "uts", "net"}) {
    std::string mine = Link(std::string("/proc/self/ns/") + ns);
    std::string its = Link(proc + "/ns/" + ns);
    ASSERT_FALSE(its.empty()) << ns;
    EXPECT_NE(mine, its) << ns;
  }

  // Its root is an empty, read-only directory that is not the host's.
  struct stat host_root, its_root;
  ASSERT_EQ(stat("/", &host_root), 0);
  ASSERT_EQ(stat((proc + "/root/").c_str(), &its_root), 0) << strerror(errno);
  EXPECT_FALSE(host_root.st_dev == its_root.st_dev &&
               host_root.st_ino == its_root.st_ino);
  std::vector<std::string> names = List(proc + "/root/", &err);
  EXPECT_EQ(err, 0);
  EXPECT_TRUE(names.empty()) << names.front();
  struct stat st;
  EXPECT_NE(stat((proc + "/root/etc").c_str(), &st), 0);
  EXPECT_NE(stat((proc + "/root/proc/self").c_str(), &st), 0);
  EXPECT_NE(mkdir((proc + "/root/x").c_str(), 0700), 0);
  EXPECT_EQ(errno, EROFS);
  EXPECT_EQ(Link(proc + "/cwd"), "/");

  // No FD names a host file by path: stdio are pipes here; the rest are
  // the memory file, pipes, sockets, eventfds, epoll and pidfds.
  std::vector<std::string> fds = List(proc + "/fd", &err);
  ASSERT_EQ(err, 0);
  for (const std::string& fd : fds) {
    std::string target = Link(proc + "/fd/" + fd);
    if (!target.empty() && target[0] == '/') {
      EXPECT_EQ(target.rfind("/memfd:", 0), 0u) << fd << " -> " << target;
    }
  }

  run.CloseStdin();
  std::string stderr_text;
  EXPECT_EQ(run.Finish(&stderr_text), 0) << stderr_text;
}

TEST(SentryConfinementTest, UnconfinedSkipsIt) {
  RunscDo run({"--unconfined", "--", Program("cat")});
  run.Write("ping\n");
  ASSERT_TRUE(run.WaitForOutput("ping\n"));
  const pid_t sentry = FindSentry(run.pid());
  ASSERT_GT(sentry, 0);
  const std::string proc = "/proc/" + std::to_string(sentry);
  EXPECT_EQ(StatusField(ReadFile(proc + "/status"), "Seccomp"), "0");
  EXPECT_EQ(Link("/proc/self/ns/mnt"), Link(proc + "/ns/mnt"));
  std::string stderr_text;
  EXPECT_EQ(run.Finish(&stderr_text), 0);
  EXPECT_NE(stderr_text.find("UNCONFINED"), std::string::npos) << stderr_text;
}

// In --debug-seccomp mode a host syscall outside the allowlist is reported
// instead of killing the Sentry: none may be reported for these programs
// (threads, fork, faults, signals, stdio).
TEST(SentryConfinementTest, AllowlistCoversTheE2ePrograms) {
  const std::map<std::string, int> kPrograms = {
      {"true", 0},   {"hello", 0},   {"efault", 0}, {"segv", 139},
      {"malloc", 0}, {"threads", 0}, {"fork", 0},   {"cat", 0},
  };
  for (const auto& [name, want] : kPrograms) {
    RunscDo run({"--debug-seccomp", "--", Program(name)});
    std::string err;
    EXPECT_EQ(run.Finish(&err), want) << name << ": " << err;
    EXPECT_EQ(err.find("seccomp: denied"), std::string::npos)
        << name << ": " << err;
  }
}

// Dynamically linked host programs on the Gofer-served root (where this
// `runsc do` has one): file reads through donated FDs, fork and exec in the
// guest, pipes, threads. Skipped where they do not run unconfined either.
TEST(SentryConfinementTest, AllowlistCoversDynamicProgramsOnTheHostRoot) {
  {
    RunscDo probe({"--unconfined", "--", "/bin/sh", "-c", "exit 0"});
    std::string err;
    if (probe.Finish(&err) != 0) {
      GTEST_SKIP() << "runsc do cannot run /bin/sh here (no Gofer root or "
                      "no PT_INTERP): "
                   << err;
    }
  }
  const std::vector<std::vector<std::string>> kCommands = {
      {"/bin/sh", "-c", "echo hi | cat; ls / > /dev/null; exit 3"},
      {"/bin/ls", "-la", "/usr/lib"},
      {"/bin/sh", "-c", "cat /etc/hostname /proc/self/status > /dev/null"},
  };
  for (const auto& cmd : kCommands) {
    std::vector<std::string> args = {"--unconfined", "--"};
    args.insert(args.end(), cmd.begin(), cmd.end());
    std::string unconfined_err;
    int want = RunscDo(args).Finish(&unconfined_err);
    args[0] = "--debug-seccomp";
    std::string err;
    EXPECT_EQ(RunscDo(args).Finish(&err), want) << cmd[0] << ": " << err;
    EXPECT_EQ(err.find("seccomp: denied"), std::string::npos)
        << cmd[0] << ": " << err;
  }
}

}  // namespace
