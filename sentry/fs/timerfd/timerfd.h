// timerfd: a timer whose expirations are read from a file (Linux's
// fs/timerfd.c).
//
// The timer counts on one of the clocks timerfd_create accepts
// (CLOCK_REALTIME, MONOTONIC, BOOTTIME and the two _ALARM clocks, which
// run as CLOCK_REALTIME and BOOTTIME: the sandbox has no suspend). An
// expiration is an entry in the kernel's one TimerService (a relative
// CLOCK_REALTIME timer counts on CLOCK_MONOTONIC, as hrtimer_init makes
// it); when it runs, `ticks` grows by one, `expired` is set and the file
// becomes readable (POLLIN). As Linux, a periodic timer is NOT re-armed by
// the expiry itself: read(2) and timerfd_gettime forward it past now,
// adding the periods missed meanwhile to the count (hrtimer_forward_now),
// and re-arm it (so a short period cannot flood the service).
//
// read(2): buffers under 8 bytes are EINVAL; with no expiration, EAGAIN
// under O_NONBLOCK, else the reader sleeps on the file's queue until one
// (ERESTARTSYS when interrupted). It returns the count and resets it.
// timerfd_settime resets the count, returns the old remaining time and
// interval (a periodic timer forwarded first). TFD_IOC_SET_TICKS sets the
// count (0: EINVAL). fdinfo: clockid, ticks, settime flags (octal),
// it_value (time left), it_interval, as timerfd_show prints them.
//
// TFD_TIMER_CANCEL_ON_SET is recorded (fdinfo) but can never cancel: the
// sandbox has no way to set CLOCK_REALTIME (no clock_settime,
// settimeofday or adjtimex), and a host clock step is noticed only as
// Linux's relative view: an absolute CLOCK_REALTIME expiry that the
// service runs early (the host clock went back) is re-scheduled.
//
// Locking: TimerFd::mu_ -> the TimerService lock (Schedule/Cancel) and ->
// queue_'s lock (Notify under mu_). Service callbacks hold the file
// weakly and carry the arming's generation: a callback of an older arming
// (re-set, closed) does nothing.
#ifndef SENTRY_FS_TIMERFD_TIMERFD_H_
#define SENTRY_FS_TIMERFD_TIMERFD_H_

#include <stdint.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/kernel/timer_service.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::fs::timerfd {

inline constexpr int kTfdTimerAbstime = 1;      // TFD_TIMER_ABSTIME
inline constexpr int kTfdTimerCancelOnSet = 2;  // TFD_TIMER_CANCEL_ON_SET
inline constexpr uint32_t kTfdIocSetTicks = 0x40085400;  // _IOW('T', 0, u64)

// Whether timerfd_create takes `clock`, and whether it is an _ALARM clock
// (CAP_WAKE_ALARM).
bool ValidClock(int clock);
bool IsAlarmClock(int clock);

class TimerFd final : public vfs::FileDescription {
 public:
  // A timer's value (time left, or the absolute expiry when set with
  // TFD_TIMER_ABSTIME) and period, ns.
  struct Spec {
    int64_t value_ns = 0;
    int64_t interval_ns = 0;
  };

  // `clock` is ValidClock; `flags` the open flags (O_RDWR, maybe
  // O_NONBLOCK). The service must outlive every Schedule (it may go
  // before the file: see TimerService::alive).
  static std::shared_ptr<TimerFd> Create(kernel::TimerService& service,
                                         int clock, uint32_t flags);
  ~TimerFd() override;

  int clock() const { return clock_; }
  // do_timerfd_settime after its checks: `flags` TFD_TIMER_*, values
  // valid timespecs in ns. Returns the old setting.
  Spec SetTime(int flags, const Spec& next) ABSL_LOCKS_EXCLUDED(mu_);
  // do_timerfd_gettime.
  Spec GetTime() ABSL_LOCKS_EXCLUDED(mu_);

  KResult<size_t> Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) override;
  KResult<int64_t> Seek(int64_t, int) override { return int64_t{0}; }
  KResult<abi::Stat> Stat() override;
  KResult<uint64_t> Ioctl(vfs::IoContext& ctx, uint32_t cmd,
                          uint64_t arg) override;
  bool MayBlock() const override { return true; }
  uint32_t Readiness(uint32_t mask) override ABSL_LOCKS_EXCLUDED(mu_);
  void EventRegister(vfs::WaitEntry* e, uint32_t mask) override {
    queue_.Register(e, mask);
  }
  bool CanPoll() const override { return true; }
  std::string FdInfo() override ABSL_LOCKS_EXCLUDED(mu_);
  std::string_view AnonInodeName() const override { return "[timerfd]"; }

 private:
  TimerFd(kernel::TimerService& service, int clock, uint32_t flags);

  // Now on the clock of the current expiry.
  int64_t NowLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // hrtimer_forward_now: moves the expiry past now by whole periods;
  // returns how many (0 if not yet due).
  uint64_t ForwardLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Schedules the service entry for expiry_ (a new generation).
  void ArmLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes the service entry; older callbacks do nothing.
  void DisarmLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Time left (0 once due), as timerfd_get_remaining.
  int64_t RemainingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A periodic timer that expired: forward, count the missed periods,
  // re-arm (timerfd_read's and do_timerfd_gettime's step).
  void RestartLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The service callback (timerfd_triggered).
  void Fire(uint64_t gen) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes the count if non-zero.
  bool TryReadLocked(uint64_t* v) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  kernel::TimerService& service_;
  const std::weak_ptr<const void> service_alive_;
  const int clock_;
  std::weak_ptr<TimerFd> self_;  // set by Create, then constant

  mutable absl::Mutex mu_;
  // The clock expiry_ counts on (clock_, or MONOTONIC for a relative
  // REALTIME timer, the base clock of an _ALARM one).
  int base_ ABSL_GUARDED_BY(mu_);
  int64_t expiry_ ABSL_GUARDED_BY(mu_) = 0;  // 0: never set or disarmed
  int64_t interval_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t ticks_ ABSL_GUARDED_BY(mu_) = 0;
  bool expired_ ABSL_GUARDED_BY(mu_) = false;
  int settime_flags_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t gen_ ABSL_GUARDED_BY(mu_) = 0;
  kernel::TimerService::Id service_id_ ABSL_GUARDED_BY(mu_) = 0;
  vfs::WaitQueue queue_;
};

}  // namespace sandbox::fs::timerfd

#endif  // SENTRY_FS_TIMERFD_TIMERFD_H_
