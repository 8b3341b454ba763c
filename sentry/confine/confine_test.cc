#include "sentry/confine/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace sandbox::confine {
namespace {

// Runs `body` in a forked (single-threaded) child and returns its exit code
// (or 128 + signal). `body` returns 0 on success or a step number.
int InChild(int (*body)(int), int arg) {
  pid_t pid = fork();
  if (pid == 0) _exit(body(arg));
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Whether this process may make the namespaces ConfineProcess makes (root,
// or unprivileged user namespaces).
bool CanConfine() {
  return InChild(
             [](int) {
               if (unshare(CLONE_NEWNS) == 0) return 0;
               return unshare(CLONE_NEWUSER) == 0 ? 0 : 1;
             },
             0) == 0;
}

TEST(CloseFdsExceptTest, ClosesAllButTheListed) {
  int fds[4];
  for (int& fd : fds) fd = dup(2);
  int keep = fds[1] * 1000 + fds[3];
  EXPECT_EQ(InChild(
                [](int k) {
                  int a = k / 1000, b = k % 1000;
                  if (!CloseFdsExcept({b, a, a}).ok()) return 1;
                  for (int fd = 3; fd < 1000; ++fd) {
                    bool open = fcntl(fd, F_GETFD) >= 0;
                    if (open != (fd == a || fd == b)) return 2;
                  }
                  if (fcntl(2, F_GETFD) < 0) return 3;  // stdio stays
                  return 0;
                },
                keep),
            0);
  for (int fd : fds) close(fd);
}

TEST(ConfineProcessTest, EmptyReadOnlyRootNoCapabilities) {
  if (!CanConfine()) GTEST_SKIP() << "needs root or user namespaces";
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  int other = dup(p[0]);
  EXPECT_EQ(InChild(
                [](int keep) {
                  if (!ConfineProcess({.keep_fds = {keep}}).ok()) return 1;
                  struct stat st;
                  // Nothing of the host by path.
                  if (stat("/proc/self", &st) == 0 || errno != ENOENT) {
                    return 2;
                  }
                  if (open("/etc/passwd", O_RDONLY) >= 0) return 3;
                  if (stat("/", &st) != 0 || !S_ISDIR(st.st_mode)) return 4;
                  if (stat("/..", &st) != 0) return 5;
                  // Read-only root.
                  if (mkdir("/x", 0700) == 0 || errno != EROFS) return 6;
                  char cwd[64];
                  if (getcwd(cwd, sizeof(cwd)) == nullptr ||
                      std::string(cwd) != "/") {
                    return 7;
                  }
                  // No capability in any set, no_new_privs.
                  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
                  __user_cap_data_struct d[2] = {};
                  if (syscall(SYS_capget, &hdr, d) != 0) return 8;
                  for (auto& s : d) {
                    if (s.effective || s.permitted || s.inheritable) return 9;
                  }
                  if (prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN) != 0) return 10;
                  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) return 11;
                  // The kept FD is open, the other one closed.
                  if (fcntl(keep, F_GETFD) < 0) return 12;
                  if (fcntl(keep + 1, F_GETFD) >= 0) return 13;
                  // No mount, no way back out.
                  if (unshare(CLONE_NEWNS) == 0) return 14;
                  if (chroot("/") == 0) return 15;
                  // Threads still start (the platform and tasks need them).
                  bool ran = false;
                  std::thread t([&] { ran = true; });
                  t.join();
                  if (!ran) return 16;
                  // fork still works (the platform's source stub).
                  pid_t c = fork();
                  if (c == 0) _exit(0);
                  int status;
                  if (c < 0 || waitpid(c, &status, 0) != c) return 17;
                  return 0;
                },
                p[1]),
            0);
  // `other` is p[1] + 1 only if numbering was dense; check the assumption.
  EXPECT_EQ(other, p[1] + 1);
  close(p[0]);
  close(p[1]);
  close(other);
}

TEST(ConfineProcessTest, RefusesAMultiThreadedProcess) {
  EXPECT_EQ(InChild(
                [](int) {
                  int r = 0;
                  std::thread t([&] {
                    r = ConfineProcess({}).code() ==
                                absl::StatusCode::kFailedPrecondition
                            ? 0
                            : 1;
                  });
                  t.join();
                  return r;
                },
                0),
            0);
}

}  // namespace
}  // namespace sandbox::confine
