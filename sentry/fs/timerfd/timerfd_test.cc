#include "sentry/fs/timerfd/timerfd.h"

#include <fcntl.h>
#include <time.h>

#include <cstring>
#include <thread>

#include "gtest/gtest.h"

namespace sandbox::fs::timerfd {
namespace {

constexpr int64_t kMs = 1000000;

KResult<uint64_t> Get(TimerFd& f) {
  vfs::IoContext ctx;
  uint8_t b[8];
  TRY(size_t n, f.Read(ctx, absl::MakeSpan(b)));
  EXPECT_EQ(n, 8u);
  uint64_t v;
  memcpy(&v, b, 8);
  return v;
}

TEST(TimerFdTest, Clocks) {
  EXPECT_TRUE(ValidClock(CLOCK_REALTIME));
  EXPECT_TRUE(ValidClock(CLOCK_BOOTTIME_ALARM));
  EXPECT_FALSE(ValidClock(CLOCK_PROCESS_CPUTIME_ID));
  EXPECT_FALSE(ValidClock(CLOCK_MONOTONIC_RAW));
  EXPECT_TRUE(IsAlarmClock(CLOCK_REALTIME_ALARM));
  EXPECT_FALSE(IsAlarmClock(CLOCK_REALTIME));
}

TEST(TimerFdTest, OneShotExpiresOnce) {
  kernel::TimerService svc;
  auto f = TimerFd::Create(svc, CLOCK_MONOTONIC, O_RDWR | O_NONBLOCK);
  EXPECT_EQ(Get(*f).error(), kEAGAIN);
  EXPECT_EQ(f->Readiness(vfs::kAllEvents), 0u);
  f->SetTime(0, {1 * kMs, 0});
  vfs::ThreadWaiter w;
  f->EventRegister(&w, vfs::kPollIn);
  while (f->Readiness(vfs::kPollIn) == 0) w.Sleep(-1, -1);
  EXPECT_EQ(Get(*f).value(), 1u);
  EXPECT_EQ(Get(*f).error(), kEAGAIN);
  TimerFd::Spec s = f->GetTime();
  EXPECT_EQ(s.value_ns, 0);
  EXPECT_EQ(s.interval_ns, 0);
}

TEST(TimerFdTest, PeriodicCountsMissedPeriods) {
  kernel::TimerService svc;
  auto f = TimerFd::Create(svc, CLOCK_MONOTONIC, O_RDWR);
  const int64_t start = kernel::TimerService::Now();
  f->SetTime(0, {1 * kMs, 1 * kMs});
  struct timespec ts = {0, 30 * kMs};
  nanosleep(&ts, nullptr);
  // At least 30 periods passed; only the first one fired (no re-arm
  // without a reader), the rest are counted by the read's forward, none
  // twice.
  uint64_t n = Get(*f).value();
  const int64_t elapsed = kernel::TimerService::Now() - start;
  EXPECT_GE(n, 30u);
  EXPECT_LE(n, static_cast<uint64_t>(elapsed / kMs));
  EXPECT_EQ(svc.Pending(), 1u);  // re-armed once by the read
  // The blocking read waits for the next period, and counts every period
  // that ended since the first read (more than one when the machine is
  // slow to run this thread: the count is Linux's, not a fixed 1).
  const int64_t first_read = kernel::TimerService::Now();
  const uint64_t n2 = Get(*f).value();
  const int64_t since = kernel::TimerService::Now() - first_read;
  EXPECT_GE(n2, 1u);
  EXPECT_LE(n2, static_cast<uint64_t>(since / kMs) + 1);
}

TEST(TimerFdTest, SetTimeReturnsOldAndResetsTicks) {
  kernel::TimerService svc;
  auto f = TimerFd::Create(svc, CLOCK_MONOTONIC, O_RDWR | O_NONBLOCK);
  f->SetTime(0, {10000 * kMs, 500 * kMs});
  TimerFd::Spec old = f->SetTime(0, {0, 0});
  EXPECT_GT(old.value_ns, 9000 * kMs);
  EXPECT_LE(old.value_ns, 10000 * kMs);
  EXPECT_EQ(old.interval_ns, 500 * kMs);
  EXPECT_EQ(f->GetTime().value_ns, 0);
  EXPECT_EQ(svc.Pending(), 0u);  // disarming removed the entry
}

TEST(TimerFdTest, FdInfoAndClose) {
  kernel::TimerService svc;
  {
    auto f = TimerFd::Create(svc, CLOCK_REALTIME, O_RDWR);
    f->SetTime(kTfdTimerAbstime | kTfdTimerCancelOnSet,
               {INT64_MAX / 2, 2 * 1000 * kMs + 5});
    const std::string info = f->FdInfo();
    EXPECT_NE(info.find("clockid: 0\nticks: 0\nsettime flags: 03\n"),
              std::string::npos)
        << info;
    EXPECT_NE(info.find("it_interval: (2, 5)\n"), std::string::npos) << info;
    EXPECT_EQ(svc.Pending(), 1u);
  }
  EXPECT_EQ(svc.Pending(), 0u);  // closing cancels
}

TEST(TimerFdTest, OutlivesTheService) {
  std::shared_ptr<TimerFd> f;
  {
    kernel::TimerService svc;
    f = TimerFd::Create(svc, CLOCK_MONOTONIC, O_RDWR);
    f->SetTime(0, {10000 * kMs, 0});
  }
  f.reset();  // no Cancel on the destroyed service
}

}  // namespace
}  // namespace sandbox::fs::timerfd
