// clock_gettime(2), clock_getres(2), gettimeofday(2), time(2), nanosleep(2):
// monotonicity, resolution, agreement between clocks, errors.
#include <errno.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

int64_t Nanos(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t Now(clockid_t clock) {
  struct timespec ts = {};
  EXPECT_THAT(clock_gettime(clock, &ts), SyscallSucceeds());
  return Nanos(ts);
}

// Through the raw syscall, not the vDSO.
int64_t RawNow(clockid_t clock) {
  struct timespec ts = {};
  EXPECT_THAT(syscall(SYS_clock_gettime, clock, &ts), SyscallSucceeds());
  return Nanos(ts);
}

class ClockTest : public ::testing::TestWithParam<clockid_t> {};

TEST_P(ClockTest, ValidTimespec) {
  struct timespec ts = {};
  ASSERT_THAT(clock_gettime(GetParam(), &ts), SyscallSucceeds());
  EXPECT_GE(ts.tv_sec, 0);
  EXPECT_GE(ts.tv_nsec, 0);
  EXPECT_LT(ts.tv_nsec, 1000000000);
}

TEST_P(ClockTest, ResolutionIsAtMostOneMillisecond) {
  struct timespec res = {};
  ASSERT_THAT(clock_getres(GetParam(), &res), SyscallSucceeds());
  EXPECT_GT(Nanos(res), 0);
  EXPECT_LE(Nanos(res), 1000000);
}

std::string ClockName(const ::testing::TestParamInfo<clockid_t>& info) {
  switch (info.param) {
    case CLOCK_REALTIME:
      return "Realtime";
    case CLOCK_MONOTONIC:
      return "Monotonic";
    case CLOCK_BOOTTIME:
      return "Boottime";
    case CLOCK_PROCESS_CPUTIME_ID:
      return "ProcessCputime";
    case CLOCK_THREAD_CPUTIME_ID:
      return "ThreadCputime";
  }
  return "Unknown";
}

// Clocks that never go backwards (CLOCK_REALTIME may be stepped).
class MonotonicClockTest : public ::testing::TestWithParam<clockid_t> {};

TEST_P(MonotonicClockTest, NeverGoesBackwards) {
  clockid_t clock = GetParam();
  int64_t last = Now(clock);
  for (int i = 0; i < 10000; ++i) {
    int64_t now = (i % 2) ? Now(clock) : RawNow(clock);
    ASSERT_GE(now, last) << "iteration " << i;
    last = now;
  }
}

INSTANTIATE_TEST_SUITE_P(Clocks, ClockTest,
                         ::testing::Values(CLOCK_REALTIME, CLOCK_MONOTONIC,
                                           CLOCK_BOOTTIME,
                                           CLOCK_PROCESS_CPUTIME_ID,
                                           CLOCK_THREAD_CPUTIME_ID),
                         ClockName);

INSTANTIATE_TEST_SUITE_P(Clocks, MonotonicClockTest,
                         ::testing::Values(CLOCK_MONOTONIC, CLOCK_BOOTTIME,
                                           CLOCK_PROCESS_CPUTIME_ID,
                                           CLOCK_THREAD_CPUTIME_ID),
                         ClockName);

TEST(TimeTest, MonotonicAdvancesAcrossSleep) {
  int64_t before = Now(CLOCK_MONOTONIC);
  struct timespec req = {0, 20 * 1000 * 1000};  // 20 ms
  ASSERT_THAT(nanosleep(&req, nullptr), SyscallSucceeds());
  int64_t slept = Now(CLOCK_MONOTONIC) - before;
  EXPECT_GE(slept, 20 * 1000 * 1000);
  EXPECT_LT(slept, 5LL * 1000 * 1000 * 1000) << "slept far too long";
}

TEST(TimeTest, ProcessCpuTimeAdvancesWhenBusy) {
  int64_t before = Now(CLOCK_PROCESS_CPUTIME_ID);
  volatile uint64_t sink = 0;
  int64_t start = Now(CLOCK_MONOTONIC);
  while (Now(CLOCK_MONOTONIC) - start < 20 * 1000 * 1000) {
    for (int i = 0; i < 1000; ++i) sink = sink + i;
  }
  EXPECT_GT(Now(CLOCK_PROCESS_CPUTIME_ID), before);
}

TEST(TimeTest, GettimeofdayAgreesWithRealtime) {
  struct timeval tv = {};
  int64_t before = Now(CLOCK_REALTIME) / 1000;  // microseconds
  ASSERT_THAT(gettimeofday(&tv, nullptr), SyscallSucceeds());
  int64_t after = Now(CLOCK_REALTIME) / 1000;
  int64_t got = static_cast<int64_t>(tv.tv_sec) * 1000000 + tv.tv_usec;
  EXPECT_GE(tv.tv_usec, 0);
  EXPECT_LT(tv.tv_usec, 1000000);
  // Allow 1 s of slack either way for a stepped clock.
  EXPECT_GE(got, before - 1000000);
  EXPECT_LE(got, after + 1000000);
}

TEST(TimeTest, TimeAgreesWithGettimeofday) {
  struct timeval tv = {};
  ASSERT_THAT(gettimeofday(&tv, nullptr), SyscallSucceeds());
  time_t t = time(nullptr);
  ASSERT_NE(t, static_cast<time_t>(-1));
  // time() reads the coarse clock (updated once a tick), which can still
  // show the previous second just after gettimeofday's fine clock crossed it.
  EXPECT_GE(t, tv.tv_sec - 1);
  EXPECT_LE(t, tv.tv_sec + 2);
  // time() also stores through its argument.
  time_t stored = 0;
  EXPECT_EQ(time(&stored), stored);
  // A realistic date: after 2020-01-01.
  EXPECT_GT(t, 1577836800);
}

TEST(TimeTest, RawTimeSyscall) {
  time_t stored = 0;
  long t = syscall(SYS_time, &stored);
  ASSERT_THAT(t, SyscallSucceeds());
  EXPECT_EQ(t, stored);
}

TEST(TimeTest, InvalidClockIsEinval) {
  struct timespec ts;
  EXPECT_THAT(syscall(SYS_clock_gettime, static_cast<clockid_t>(-100), &ts),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_clock_getres, static_cast<clockid_t>(12345), &ts),
              SyscallFailsWithErrno(EINVAL));
}

TEST(TimeTest, BadPointerIsEfault) {
  // Raw syscalls: the vDSO would fault in user space instead.
  EXPECT_THAT(
      syscall(SYS_clock_gettime, CLOCK_MONOTONIC, reinterpret_cast<void*>(8)),
      SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(syscall(SYS_gettimeofday, reinterpret_cast<void*>(8), nullptr),
              SyscallFailsWithErrno(EFAULT));
}

TEST(TimeTest, GetresWithNullPointerSucceeds) {
  EXPECT_THAT(syscall(SYS_clock_getres, CLOCK_MONOTONIC, nullptr),
              SyscallSucceeds());
}

TEST(TimeTest, NanosleepRejectsBadTimespec) {
  struct timespec bad = {0, 1000000000};
  EXPECT_THAT(nanosleep(&bad, nullptr), SyscallFailsWithErrno(EINVAL));
  bad = {-1, 0};
  EXPECT_THAT(nanosleep(&bad, nullptr), SyscallFailsWithErrno(EINVAL));
}

}  // namespace
}  // namespace sandbox::testutil
