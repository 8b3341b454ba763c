// Nanosecond time arithmetic as Linux's ktime/hrtimer helpers do it, shared
// by the timers that expire on the timer service (POSIX timers, itimers,
// timerfds). Times are int64_t nanoseconds; INT64_MAX is KTIME_MAX,
// "never".
#ifndef SENTRY_KERNEL_KTIME_H_
#define SENTRY_KERNEL_KTIME_H_

#include <stdint.h>

namespace sandbox::kernel {

// ktime_add_safe: a + b, saturating at KTIME_MAX.
inline int64_t SatAdd(int64_t a, int64_t b) {
  if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
  return a + b;
}

// hrtimer_forward: moves *expiry past `now` by whole periods of `interval`
// (one more than the whole periods elapsed, so it ends strictly after
// `now`) and returns how many; 0 if it already is after `now` or there is
// no period. The move saturates at KTIME_MAX.
inline int64_t Forward(int64_t* expiry, int64_t now, int64_t interval) {
  if (interval <= 0 || *expiry > now) return 0;
  const int64_t n = (now - *expiry) / interval + 1;
  const int64_t add = n > INT64_MAX / interval ? INT64_MAX : n * interval;
  *expiry = SatAdd(*expiry, add);
  return n;
}

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_KTIME_H_
