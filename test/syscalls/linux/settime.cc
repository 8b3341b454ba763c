// clock_settime(2), settimeofday(2), adjtimex(2), clock_adjtime(2): the
// checks Linux makes before CAP_SYS_TIME (EINVAL, EFAULT), EPERM without
// the capability, and adjtimex's read-only queries. No case sets a clock:
// every call that could succeed natively runs without CAP_SYS_TIME.
#include <errno.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

void* const kBadAddr = reinterpret_cast<void*>(8);

timespec RealNow() {
  timespec ts = {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

// include/linux/posix-timers.h: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED).
clockid_t ProcessSchedClock(pid_t pid) {
  return static_cast<clockid_t>((~static_cast<unsigned>(pid) << 3) | 2);
}

// Runs `fn` in a child without capabilities (uid 0 kept); the test fails
// if the child does.
void Unprivileged(const std::function<void()>& fn) {
  int status = InForkedChild([&] {
    if (!DropCapabilities(false)) _exit(2);
    fn();
  });
  EXPECT_THAT(status, ExitedWithCode(0));
}

#define CHILD_EXPECT_ERRNO(call, err)             \
  do {                                            \
    errno = 0;                                    \
    if ((call) != -1 || errno != (err)) _exit(1); \
  } while (0)

TEST(ClockSettimeTest, ClocksWithoutASetterAreEinval) {
  timespec ts = RealNow();
  for (clockid_t c :
       {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME,
        CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE, CLOCK_TAI,
        CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID, 10, 12, 1000}) {
    EXPECT_THAT(syscall(SYS_clock_settime, c, &ts),
                SyscallFailsWithErrno(EINVAL))
        << c;
  }
  // The clock is checked before the time is read.
  EXPECT_THAT(syscall(SYS_clock_settime, CLOCK_MONOTONIC, kBadAddr),
              SyscallFailsWithErrno(EINVAL));
}

TEST(ClockSettimeTest, BadPointerIsEfault) {
  EXPECT_THAT(syscall(SYS_clock_settime, CLOCK_REALTIME, kBadAddr),
              SyscallFailsWithErrno(EFAULT));
}

TEST(ClockSettimeTest, InvalidTimeIsEinval) {
  for (timespec ts : {timespec{0, -1}, timespec{0, 1000000000}, timespec{-1, 0},
                      timespec{0x7fffffffffffffff, 0}}) {
    EXPECT_THAT(syscall(SYS_clock_settime, CLOCK_REALTIME, &ts),
                SyscallFailsWithErrno(EINVAL))
        << ts.tv_sec << "." << ts.tv_nsec;
  }
}

TEST(ClockSettimeTest, CpuClockOfAProcessIsEperm) {
  timespec ts = {1, 0};
  // posix_cpu_clock_set: EPERM for a clock that names a task, whoever asks.
  EXPECT_THAT(syscall(SYS_clock_settime, ProcessSchedClock(getpid()), &ts),
              SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(syscall(SYS_clock_settime, ProcessSchedClock(0x3ffffff0), &ts),
              SyscallFailsWithErrno(EINVAL));
}

TEST(ClockSettimeTest, RealtimeWithoutCapSysTimeIsEperm) {
  Unprivileged([] {
    timespec ts = RealNow();
    CHILD_EXPECT_ERRNO(syscall(SYS_clock_settime, CLOCK_REALTIME, &ts), EPERM);
  });
}

TEST(SettimeofdayTest, InvalidMicrosecondsAreEinval) {
  for (long usec : {-1L, 1000000L, 1000001L}) {
    timeval tv = {RealNow().tv_sec, usec};
    EXPECT_THAT(syscall(SYS_settimeofday, &tv, nullptr),
                SyscallFailsWithErrno(EINVAL))
        << usec;
  }
  EXPECT_THAT(syscall(SYS_settimeofday, kBadAddr, nullptr),
              SyscallFailsWithErrno(EFAULT));
  // The time is read and checked before the zone is read.
  timeval tv = {RealNow().tv_sec, -1};
  EXPECT_THAT(syscall(SYS_settimeofday, &tv, kBadAddr),
              SyscallFailsWithErrno(EINVAL));
  tv.tv_usec = 0;
  EXPECT_THAT(syscall(SYS_settimeofday, &tv, kBadAddr),
              SyscallFailsWithErrno(EFAULT));
}

TEST(SettimeofdayTest, WithoutCapSysTimeIsEperm) {
  Unprivileged([] {
    timeval tv = {RealNow().tv_sec, 0};
    struct timezone tz = {0, 0};
    CHILD_EXPECT_ERRNO(syscall(SYS_settimeofday, &tv, nullptr), EPERM);
    CHILD_EXPECT_ERRNO(syscall(SYS_settimeofday, nullptr, &tz), EPERM);
    CHILD_EXPECT_ERRNO(syscall(SYS_settimeofday, nullptr, nullptr), EPERM);
  });
}

TEST(AdjtimexTest, QueryReportsTheClock) {
  struct timex tx = {};
  const time_t before = RealNow().tv_sec;
  int r = static_cast<int>(syscall(SYS_adjtimex, &tx));
  ASSERT_GE(r, TIME_OK) << strerror(errno);
  EXPECT_LE(r, TIME_ERROR);
  EXPECT_EQ(tx.modes, 0u);
  EXPECT_GT(tx.tick, 0);
  EXPECT_GE(tx.time.tv_sec, before);
  EXPECT_LE(tx.time.tv_sec, RealNow().tv_sec);
  if (tx.status & STA_UNSYNC) {
    EXPECT_EQ(r, TIME_ERROR);
  }
  // adjtime(3)'s read-only query.
  tx = {};
  tx.modes = ADJ_OFFSET_SS_READ;
  EXPECT_THAT(syscall(SYS_adjtimex, &tx), SyscallSucceeds());
}

TEST(AdjtimexTest, Errors) {
  EXPECT_THAT(syscall(SYS_adjtimex, kBadAddr), SyscallFailsWithErrno(EFAULT));
  // ADJ_ADJTIME (0x8000) without ADJ_OFFSET_SINGLESHOT's low bit.
  struct timex tx = {};
  tx.modes = 0x8000;
  EXPECT_THAT(syscall(SYS_adjtimex, &tx), SyscallFailsWithErrno(EINVAL));
  Unprivileged([] {
    struct timex tx = {};
    tx.modes = ADJ_FREQUENCY;
    CHILD_EXPECT_ERRNO(syscall(SYS_adjtimex, &tx), EPERM);
    tx = {};
    tx.modes = ADJ_OFFSET_SINGLESHOT;
    CHILD_EXPECT_ERRNO(syscall(SYS_adjtimex, &tx), EPERM);
  });
}

TEST(ClockAdjtimeTest, OnlyRealtimeAdjusts) {
  struct timex tx = {};
  int r = static_cast<int>(syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx));
  EXPECT_GE(r, TIME_OK) << strerror(errno);
  EXPECT_GT(tx.tick, 0);
  tx = {};
  EXPECT_THAT(syscall(SYS_clock_adjtime, CLOCK_MONOTONIC, &tx),
              SyscallFailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(syscall(SYS_clock_adjtime, 1000, &tx),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_clock_adjtime, CLOCK_REALTIME, kBadAddr),
              SyscallFailsWithErrno(EFAULT));
}

}  // namespace
}  // namespace sandbox::testutil
