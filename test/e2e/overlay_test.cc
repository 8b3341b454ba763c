// End-to-end: the overlay root of `runsc do` (the host's "/" through the
// Gofer, read-only, under a tmpfs upper layer). A program inside writes a
// file under /etc, reads it back, deletes /etc/os-release and appends to
// /etc/hostname (test/e2e/overlay_probe.c); the host's /etc is unchanged
// (names, sizes, mtimes, contents of the touched files), and the next
// sandbox starts from the host's tree again.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
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

namespace {

std::string Runfile(const std::string& rel) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (ws ? ws : "sandbox") +
         "/" + rel;
}

struct Result {
  int status = -1;
  std::string out;
};

// Runs runsc with `args`, stdout and stderr collected together.
Result RunRunsc(const std::vector<std::string>& args) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) abort();
  std::string runsc = Runfile("runsc-compat/runsc");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    dup2(p[1], 2);
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    std::vector<char*> argv{const_cast<char*>("runsc")};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
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

// /etc's entries with type, size and mtime.
std::map<std::string, std::string> EtcSnapshot() {
  std::map<std::string, std::string> m;
  DIR* d = opendir("/etc");
  if (!d) return m;
  while (struct dirent* e = readdir(d)) {
    std::string p = std::string("/etc/") + e->d_name;
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) continue;
    m[e->d_name] = std::to_string(st.st_mode) + " " +
                   std::to_string(st.st_size) + " " +
                   std::to_string(st.st_mtim.tv_sec) + "." +
                   std::to_string(st.st_mtim.tv_nsec);
  }
  closedir(d);
  return m;
}

class OverlayRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat st;
    if (stat("/etc/os-release", &st) != 0) {
      GTEST_SKIP() << "SKIP: the host has no /etc/os-release";
    }
    name_ = "overlay_e2e." + std::to_string(getpid());
    os_release_ = ReadHost("/etc/os-release");
    hostname_ = ReadHost("/etc/hostname");
    before_ = EtcSnapshot();
  }
  void ExpectHostUnchanged() {
    struct stat st;
    EXPECT_NE(stat(("/etc/" + name_).c_str(), &st), 0)
        << "the file written in the sandbox reached the host";
    EXPECT_EQ(ReadHost("/etc/os-release"), os_release_);
    EXPECT_EQ(ReadHost("/etc/hostname"), hostname_);
    EXPECT_EQ(EtcSnapshot(), before_);
  }

  std::string probe_ = Runfile("test/e2e/overlay_probe");
  std::string name_, os_release_, hostname_;
  std::map<std::string, std::string> before_;
};

TEST_F(OverlayRootTest, WritesAndDeletesStayInside) {
  Result r = RunRunsc({"do", "--", probe_, "write", name_});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok os-release not listed"), std::string::npos) << r.out;
  ExpectHostUnchanged();
  // A new sandbox starts from the host's tree.
  r = RunRunsc({"do", "--", probe_, "absent", name_});
  EXPECT_EQ(r.status, 0) << r.out;
  ExpectHostUnchanged();
}

TEST_F(OverlayRootTest, ReadOnlyRootOnRequest) {
  Result r = RunRunsc({"do", "--root=host-ro", "--", probe_, "erofs", name_});
  EXPECT_EQ(r.status, 0) << r.out;
  ExpectHostUnchanged();
}

}  // namespace
