// End-to-end, as the attack (issue 17, finding 1): a root guest with
// CAP_SYS_ADMIN in `runsc do` tries to read the host's /tmp from under the
// sandbox's /tmp (umount, umount -l, a plain bind of "/", an rbind of "/"
// held and lazily unmounted, move, remount, unbindable-then-rbind:
// test/e2e/mount_probe.c), and to see what lies under a host mount point
// and in the host's /run. Each attempt must fail as on Linux (EINVAL,
// EPERM) or show nothing, and the host must be unchanged.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace {

using ::sandbox::e2e::Result;
using ::sandbox::e2e::Runfile;

// Runs `runsc do FLAGS... -- mount_probe ARGS...`, stdout and stderr
// together.
Result Probe(const std::vector<std::string>& args,
             const std::vector<std::string>& flags = {}) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) abort();
  std::string runsc = Runfile("runsc-compat/runsc");
  std::string probe = Runfile("test/e2e/mount_probe");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    dup2(p[1], 2);
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    if (chdir("/") != 0) _exit(112);
    std::vector<std::string> v = {"runsc", "do"};
    v.insert(v.end(), flags.begin(), flags.end());
    v.push_back("--");
    v.push_back(probe);
    v.insert(v.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : v) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(runsc.c_str(), argv.data());
    _exit(111);
  }
  close(p[1]);
  Result r;
  char buf[4096];
  for (;;) {
    pollfd pfd{p[0], POLLIN, 0};
    if (poll(&pfd, 1, 120000) <= 0) {
      kill(pid, SIGKILL);
      ADD_FAILURE() << "timed out";
      break;
    }
    ssize_t n = read(p[0], buf, sizeof buf);
    if (n <= 0) break;
    r.out.append(buf, n);
  }
  close(p[0]);
  int ws = 0;
  waitpid(pid, &ws, 0);
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  return r;
}

std::string ReadHost(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool WriteHost(const std::string& path, const std::string& data) {
  std::ofstream f(path);
  f << data;
  return static_cast<bool>(f);
}

std::string Unique(const std::string& what) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return what + "-" + std::to_string(getpid()) + "-" +
         std::to_string(ts.tv_nsec);
}

int CountEntries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (struct dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ++n;
  }
  closedir(d);
  return n;
}

// The canary in the host's /tmp (the one runsc runs beside) is never seen
// inside, whatever the guest unmounts, binds or moves; the host's file is
// unchanged.
TEST(MountLockTest, HostTmpStaysCovered) {
  const std::string name = Unique("mountlock-canary");
  const std::string path = "/tmp/" + name;
  const std::string data = "host secret " + name + "\n";
  ASSERT_TRUE(WriteHost(path, data)) << path;
  Result r = Probe({"tmp", name});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok umount /tmp"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok detached rbind tmp"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(data), std::string::npos) << r.out;
  EXPECT_EQ(ReadHost(path), data);
  unlink(path.c_str());
}

// A host mount point (a tmpfs the test mounts on a directory of its own,
// over a file in that directory) is an empty directory inside: neither the
// mount's file nor the one it covers.
TEST(MountLockTest, HostMountPointIsEmpty) {
  const char* base = getenv("TEST_TMPDIR");
  std::string t = std::string(base ? base : "/var/tmp") + "/mountlockXXXXXX";
  ASSERT_NE(mkdtemp(t.data()), nullptr);
  const std::string point = t + "/mp";
  ASSERT_EQ(mkdir(point.c_str(), 0755), 0);
  ASSERT_TRUE(WriteHost(point + "/covered", "under the mount\n"));
  if (mount("mountlock", point.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
            "size=64k") != 0) {
    int e = errno;
    unlink((point + "/covered").c_str());
    rmdir(point.c_str());
    rmdir(t.c_str());
    GTEST_SKIP() << "SKIP: mounting a tmpfs needs root and CAP_SYS_ADMIN: "
                 << strerror(e);
  }
  const std::string canary = point + "/" + Unique("mounted-canary");
  ASSERT_TRUE(WriteHost(canary, "on the host mount\n"));
  ASSERT_EQ(CountEntries(point), 1);
  Result r = Probe({"empty", point, t});
  // `t` itself (no mount point) is served: it lists "mp".
  EXPECT_NE(r.out.find("FAIL " + t + " is empty"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok " + point + " is empty\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("ok " + point + " is empty through an rbind"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("ok " + point + " is a directory"), std::string::npos)
      << r.out;
  // Below a --bind's root (its own Gofer connection), the same.
  r = Probe({"empty", "/mnt/bound/mp"}, {"--bind=" + t + ":/mnt/bound:ro"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok /mnt/bound/mp is empty\n"), std::string::npos)
      << r.out;
  EXPECT_EQ(ReadHost(canary), "on the host mount\n");
  EXPECT_EQ(umount2(point.c_str(), 0), 0);
  EXPECT_EQ(ReadHost(point + "/covered"), "under the mount\n");
  unlink((point + "/covered").c_str());
  rmdir(point.c_str());
  rmdir(t.c_str());
}

// The host's /run (runtime state: sockets, pids, credentials of services)
// is an empty directory inside.
TEST(MountLockTest, HostRunIsEmpty) {
  if (CountEntries("/run") <= 0) GTEST_SKIP() << "SKIP: the host has no /run";
  Result r = Probe({"empty", "/run"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
}

}  // namespace
