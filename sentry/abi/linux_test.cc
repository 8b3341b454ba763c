// The ABI's values checked against the host's headers where those carry the
// kernel's values (glibc's struct and flag definitions on x86-64), so that a
// typo in sentry/abi cannot hide; and where glibc differs from the kernel,
// the difference named.
#include "sentry/abi/linux.h"

#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <sys/stat.h>
#include <utime.h>

#include "gtest/gtest.h"
#include "sentry/abi/fcntl.h"
#include "sentry/abi/siginfo.h"

namespace sandbox::abi {
namespace {

// Open flags: glibc's values are the kernel's, but O_LARGEFILE (0 on
// 64-bit in glibc) and O_TMPFILE (glibc's __O_TMPFILE carries O_DIRECTORY).
static_assert(kOAccmode == O_ACCMODE && kORdonly == O_RDONLY &&
              kOWronly == O_WRONLY && kORdwr == O_RDWR);
static_assert(kOCreat == O_CREAT && kOExcl == O_EXCL && kONoctty == O_NOCTTY &&
              kOTrunc == O_TRUNC && kOAppend == O_APPEND &&
              kONonblock == O_NONBLOCK);
static_assert(kODsync == O_DSYNC && kOAsync == O_ASYNC &&
              kODirect == O_DIRECT && kODirectory == O_DIRECTORY &&
              kONofollow == O_NOFOLLOW && kONoatime == O_NOATIME);
static_assert(kOCloexec == O_CLOEXEC && kOSync == O_SYNC && kOPath == O_PATH &&
              kOTmpfile == O_TMPFILE);
static_assert(O_LARGEFILE == 0 && kOLargefile == 0100000);

// siginfo: glibc's siginfo_t is the kernel's layout, field for field.
static_assert(sizeof(Siginfo) == sizeof(siginfo_t));
static_assert(offsetof(Siginfo, si_signo) == offsetof(siginfo_t, si_signo));
static_assert(offsetof(Siginfo, si_errno) == offsetof(siginfo_t, si_errno));
static_assert(offsetof(Siginfo, si_code) == offsetof(siginfo_t, si_code));
static_assert(offsetof(Siginfo, sigchld) + offsetof(SiginfoSigchld, pid) ==
              offsetof(siginfo_t, si_pid));
static_assert(offsetof(Siginfo, sigchld) + offsetof(SiginfoSigchld, uid) ==
              offsetof(siginfo_t, si_uid));
static_assert(offsetof(Siginfo, sigchld) + offsetof(SiginfoSigchld, status) ==
              offsetof(siginfo_t, si_status));
static_assert(offsetof(Siginfo, sigchld) + offsetof(SiginfoSigchld, utime) ==
              offsetof(siginfo_t, si_utime));
static_assert(offsetof(Siginfo, sigchld) + offsetof(SiginfoSigchld, stime) ==
              offsetof(siginfo_t, si_stime));
static_assert(offsetof(Siginfo, rt) + offsetof(SiginfoRt, sigval) ==
              offsetof(siginfo_t, si_value));
static_assert(offsetof(Siginfo, timer) + offsetof(SiginfoTimer, overrun) ==
              offsetof(siginfo_t, si_overrun));
static_assert(offsetof(Siginfo, sigfault) + offsetof(SiginfoSigfault, addr) ==
              offsetof(siginfo_t, si_addr));
static_assert(offsetof(Siginfo, sigpoll) + offsetof(SiginfoSigpoll, band) ==
              offsetof(siginfo_t, si_band));
static_assert(offsetof(Siginfo, sigpoll) + offsetof(SiginfoSigpoll, fd) ==
              offsetof(siginfo_t, si_fd));
static_assert(offsetof(Siginfo, sigsys) + offsetof(SiginfoSigsys, syscall) ==
              offsetof(siginfo_t, si_syscall));

static_assert(sizeof(Utimbuf) == sizeof(struct utimbuf));
static_assert(sizeof(FOwnerEx) == sizeof(struct f_owner_ex) &&
              offsetof(FOwnerEx, pid) == offsetof(struct f_owner_ex, pid));

// struct stat: the kernel's x86-64 layout is glibc's.
static_assert(sizeof(Stat) == sizeof(struct stat));
static_assert(offsetof(Stat, st_blocks) == offsetof(struct stat, st_blocks));

TEST(AccessOk, Bounds) {
  EXPECT_TRUE(AccessOk(0, 0));
  EXPECT_TRUE(AccessOk(0, kTaskSizeMax));
  EXPECT_TRUE(AccessOk(kTaskSizeMax, 0));
  EXPECT_TRUE(AccessOk(kTaskSizeMax - kPageSize, kPageSize));
  EXPECT_FALSE(AccessOk(kTaskSizeMax - kPageSize, kPageSize + 1));
  EXPECT_FALSE(AccessOk(kTaskSizeMax + 1, 0));
  EXPECT_FALSE(AccessOk(0, kTaskSizeMax + 1));
  // No wrap-around: a huge length from a small address is refused.
  EXPECT_FALSE(AccessOk(kPageSize, ~uint64_t{0}));
  EXPECT_FALSE(AccessOk(~uint64_t{0}, 1));
}

}  // namespace
}  // namespace sandbox::abi
