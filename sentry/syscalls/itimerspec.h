// struct itimerspec and the timespec rules that timer_settime(2) and
// timerfd_settime(2) share (kernel/time/posix-timers.c, fs/timerfd.c).
#ifndef SENTRY_SYSCALLS_ITIMERSPEC_H_
#define SENTRY_SYSCALLS_ITIMERSPEC_H_

#include <stdint.h>

#include "sentry/abi/linux.h"

namespace sandbox::syscalls {

// struct __kernel_itimerspec.
struct Itimerspec {
  abi::Timespec interval;
  abi::Timespec value;
};
static_assert(sizeof(Itimerspec) == 32);

inline constexpr int64_t kNsPerSec = 1000000000;

// timespec64_valid.
inline bool ValidTimespec(const abi::Timespec& ts) {
  return ts.tv_sec >= 0 && static_cast<uint64_t>(ts.tv_nsec) < kNsPerSec;
}

// timespec64_to_ktime: saturates at KTIME_MAX. `ts` must be valid.
inline int64_t TimespecNs(const abi::Timespec& ts) {
  if (ts.tv_sec >= INT64_MAX / kNsPerSec) return INT64_MAX;
  return ts.tv_sec * kNsPerSec + ts.tv_nsec;
}

// A timer's setting (anything with interval_ns and value_ns) as the
// guest sees it.
template <typename Spec>
Itimerspec ToItimerspec(const Spec& s) {
  return Itimerspec{{s.interval_ns / kNsPerSec, s.interval_ns % kNsPerSec},
                    {s.value_ns / kNsPerSec, s.value_ns % kNsPerSec}};
}

}  // namespace sandbox::syscalls

#endif  // SENTRY_SYSCALLS_ITIMERSPEC_H_
