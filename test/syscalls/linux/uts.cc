// sethostname(2), setdomainname(2), uname(2): the names change for uname
// and /proc/sys/kernel, with Linux's checks (CAP_SYS_ADMIN, length, EFAULT).
// The host's names are never touched: natively every change runs in a
// child in a new UTS namespace; in the sandbox (no unshare: ENOSYS) the
// names are the test's own sandbox's.
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

#define CHILD_CHECK(cond)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: %s (errno %d)\n", __FILE__, __LINE__, #cond, \
              errno);                                                      \
      _exit(1);                                                            \
    }                                                                      \
  } while (0)

std::string FirstLine(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// Runs `fn` in a child with names of its own; skips if it cannot have
// them natively.
void WithOwnNames(const std::function<void()>& fn) {
  int status = InForkedChild([&] {
    if (unshare(CLONE_NEWUTS) != 0 && errno != ENOSYS) _exit(77);
    fn();
  });
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    GTEST_SKIP() << "cannot make a UTS namespace here: " << strerror(errno);
  }
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(UtsTest, SethostnameChangesUnameAndProc) {
  WithOwnNames([] {
    CHILD_CHECK(sethostname("sandbox-test", 12) == 0);
    struct utsname u;
    CHILD_CHECK(uname(&u) == 0);
    CHILD_CHECK(strcmp(u.nodename, "sandbox-test") == 0);
    char buf[65] = {};
    CHILD_CHECK(gethostname(buf, sizeof(buf)) == 0);
    CHILD_CHECK(strcmp(buf, "sandbox-test") == 0);
    CHILD_CHECK(FirstLine("/proc/sys/kernel/hostname") == "sandbox-test");
    // The longest name, 64 bytes; then a shorter one clears the rest.
    const std::string longest(64, 'h');
    CHILD_CHECK(sethostname(longest.data(), 64) == 0);
    CHILD_CHECK(uname(&u) == 0 && u.nodename == longest);
    CHILD_CHECK(sethostname("ab", 2) == 0);
    CHILD_CHECK(uname(&u) == 0 && strcmp(u.nodename, "ab") == 0);
    // Length 0: an empty name.
    CHILD_CHECK(sethostname("", 0) == 0);
    CHILD_CHECK(uname(&u) == 0 && u.nodename[0] == '\0');
  });
}

TEST(UtsTest, SetdomainnameChangesUnameAndProc) {
  WithOwnNames([] {
    CHILD_CHECK(setdomainname("example.test", 12) == 0);
    struct utsname u;
    CHILD_CHECK(uname(&u) == 0);
    CHILD_CHECK(strcmp(u.domainname, "example.test") == 0);
    CHILD_CHECK(FirstLine("/proc/sys/kernel/domainname") == "example.test");
  });
}

TEST(UtsTest, Errors) {
  WithOwnNames([] {
    const std::string name(65, 'x');
    errno = 0;
    CHILD_CHECK(syscall(SYS_sethostname, name.data(), 65) == -1 &&
                errno == EINVAL);
    errno = 0;
    CHILD_CHECK(syscall(SYS_sethostname, name.data(), -1) == -1 &&
                errno == EINVAL);
    errno = 0;
    CHILD_CHECK(syscall(SYS_setdomainname, name.data(), 65) == -1 &&
                errno == EINVAL);
    errno = 0;
    CHILD_CHECK(syscall(SYS_sethostname, 8, 4) == -1 && errno == EFAULT);
    errno = 0;
    CHILD_CHECK(syscall(SYS_setdomainname, 8, 4) == -1 && errno == EFAULT);
    // Without CAP_SYS_ADMIN: EPERM, checked first.
    CHILD_CHECK(DropCapabilities(false));
    errno = 0;
    CHILD_CHECK(sethostname("x", 1) == -1 && errno == EPERM);
    errno = 0;
    CHILD_CHECK(syscall(SYS_sethostname, name.data(), 65) == -1 &&
                errno == EPERM);
    errno = 0;
    CHILD_CHECK(setdomainname("x", 1) == -1 && errno == EPERM);
  });
}

}  // namespace
}  // namespace sandbox::testutil
