#include "sentry/fs/timerfd/timerfd.h"

#include <time.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "sentry/fs/anon/anon_inode.h"
#include "sentry/kernel/ktime.h"

namespace sandbox::fs::timerfd {
namespace {

constexpr int64_t kNsPerSec = 1000000000;

int64_t ClockNow(int clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * kNsPerSec + ts.tv_nsec;
}

}  // namespace

bool ValidClock(int clock) {
  return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC ||
         clock == CLOCK_BOOTTIME || IsAlarmClock(clock);
}

bool IsAlarmClock(int clock) {
  return clock == CLOCK_REALTIME_ALARM || clock == CLOCK_BOOTTIME_ALARM;
}

std::shared_ptr<TimerFd> TimerFd::Create(kernel::TimerService& service,
                                         int clock, uint32_t flags) {
  std::shared_ptr<TimerFd> f(new TimerFd(service, clock, flags));
  f->self_ = f;
  return f;
}

TimerFd::TimerFd(kernel::TimerService& service, int clock, uint32_t flags)
    : vfs::FileDescription(flags),
      service_(service),
      service_alive_(service.alive()),
      clock_(clock),
      base_(clock) {}

TimerFd::~TimerFd() {
  absl::MutexLock l(&mu_);
  DisarmLocked();
}

int64_t TimerFd::NowLocked() const { return ClockNow(base_); }

uint64_t TimerFd::ForwardLocked() {
  return static_cast<uint64_t>(
      kernel::Forward(&expiry_, NowLocked(), interval_));
}

void TimerFd::DisarmLocked() {
  ++gen_;
  if (service_id_ != 0 && !service_alive_.expired()) {
    service_.Cancel(service_id_);
  }
  service_id_ = 0;
}

void TimerFd::ArmLocked() {
  DisarmLocked();
  const int64_t left = std::max<int64_t>(0, expiry_ - NowLocked());
  const int64_t at = kernel::SatAdd(kernel::TimerService::Now(), left);
  const uint64_t gen = gen_;
  service_id_ = service_.Schedule(at, [w = self_, gen] {
    if (auto f = w.lock()) f->Fire(gen);
  });
}

void TimerFd::Fire(uint64_t gen) {
  absl::MutexLock l(&mu_);
  if (gen != gen_ || service_id_ == 0) return;
  service_id_ = 0;
  if (NowLocked() < expiry_) {
    // Early on the timer's clock (the host's CLOCK_REALTIME went back):
    // wait for the rest.
    ArmLocked();
    return;
  }
  expired_ = true;
  ++ticks_;
  queue_.Notify(vfs::kPollIn);
}

int64_t TimerFd::RemainingLocked() const {
  if (expiry_ == 0) return 0;
  return std::max<int64_t>(0, expiry_ - NowLocked());
}

void TimerFd::RestartLocked() {
  if (!expired_ || interval_ == 0) return;
  // An expired timer is due: at least one period passes.
  const uint64_t orun = ForwardLocked();
  if (orun > 0) ticks_ += orun - 1;
  ArmLocked();
}

TimerFd::Spec TimerFd::SetTime(int flags, const Spec& next) {
  absl::MutexLock l(&mu_);
  // Stop the current timer; a periodic one that expired is forwarded
  // first so the old value is its next expiry.
  DisarmLocked();
  if (expired_ && interval_ != 0) ForwardLocked();
  Spec old{RemainingLocked(), interval_};
  // timerfd_setup.
  const bool abs = (flags & kTfdTimerAbstime) != 0;
  expired_ = false;
  ticks_ = 0;
  interval_ = next.interval_ns;
  if (clock_ == CLOCK_REALTIME_ALARM) {
    base_ = CLOCK_REALTIME;
  } else if (clock_ == CLOCK_BOOTTIME_ALARM) {
    base_ = CLOCK_BOOTTIME;
  } else if (clock_ == CLOCK_REALTIME && !abs) {
    base_ = CLOCK_MONOTONIC;  // hrtimer_init: relative REALTIME
  } else {
    base_ = clock_;
  }
  expiry_ = 0;
  if (next.value_ns != 0) {
    expiry_ = abs ? next.value_ns : kernel::SatAdd(NowLocked(), next.value_ns);
    ArmLocked();
  }
  settime_flags_ = flags & (kTfdTimerAbstime | kTfdTimerCancelOnSet);
  return old;
}

TimerFd::Spec TimerFd::GetTime() {
  absl::MutexLock l(&mu_);
  // Due on its clock but not yet fired by the timer service (a busy host
  // delays the service thread; Linux's hrtimer would have fired): it
  // expires now, so that a periodic timer reports its next period, never 0.
  if (!expired_ && interval_ != 0 && expiry_ != 0 && NowLocked() >= expiry_) {
    expired_ = true;
    ++ticks_;
    queue_.Notify(vfs::kPollIn);
  }
  if (expired_ && interval_ != 0) {
    RestartLocked();
    expired_ = false;
  }
  return Spec{RemainingLocked(), interval_};
}

bool TimerFd::TryReadLocked(uint64_t* v) {
  if (ticks_ == 0) return false;
  // The period re-arms here, not in the expiry (timerfd_read).
  RestartLocked();
  *v = ticks_;
  expired_ = false;
  ticks_ = 0;
  return true;
}

KResult<size_t> TimerFd::Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) {
  // wait_event_interruptible_locked_irq(ctx->wqh, ctx->ticks).
  return vfs::ReadCounter(queue_, nonblocking(), ctx.interrupt_fd, dst,
                          [&](uint64_t* v) {
                            absl::MutexLock l(&mu_);
                            return TryReadLocked(v);
                          });
}

KResult<abi::Stat> TimerFd::Stat() { return anon::AnonInodeStat(); }

KResult<uint64_t> TimerFd::Ioctl(vfs::IoContext& ctx, uint32_t cmd,
                                 uint64_t arg) {
  if (cmd != kTfdIocSetTicks) return kENOTTY;
  uint64_t ticks = 0;
  if (ctx.user == nullptr) return kEFAULT;
  TRY_VOID(ctx.user->CopyInFull(arg, &ticks, sizeof(ticks)));
  if (ticks == 0) return kEINVAL;
  absl::MutexLock l(&mu_);
  ticks_ = ticks;
  queue_.Notify(vfs::kPollIn);
  return uint64_t{0};
}

uint32_t TimerFd::Readiness(uint32_t mask) {
  absl::MutexLock l(&mu_);
  // timerfd_poll: POLLIN only.
  return (ticks_ != 0 ? vfs::kPollIn : 0) & mask;
}

std::string TimerFd::FdInfo() {
  absl::MutexLock l(&mu_);
  const int64_t value = RemainingLocked();
  return absl::StrFormat(
      "clockid: %d\nticks: %u\nsettime flags: 0%o\nit_value: (%u, %u)\n"
      "it_interval: (%u, %u)\n",
      clock_, ticks_, settime_flags_, static_cast<uint64_t>(value / kNsPerSec),
      static_cast<uint64_t>(value % kNsPerSec),
      static_cast<uint64_t>(interval_ / kNsPerSec),
      static_cast<uint64_t>(interval_ % kNsPerSec));
}

}  // namespace sandbox::fs::timerfd
