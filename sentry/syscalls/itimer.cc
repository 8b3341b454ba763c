// Interval timers: alarm(2), getitimer(2), setitimer(2) (Linux's
// kernel/time/itimer.c). The timers live in kernel::ProcessTimers.
#include <sys/time.h>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/timers.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

using Spec = kernel::ProcessTimers::Spec;

struct Itimerval {
  abi::Timeval interval;
  abi::Timeval value;
};
static_assert(sizeof(Itimerval) == 32);

bool ValidWhich(int32_t which) {
  return which == ITIMER_REAL || which == ITIMER_VIRTUAL ||
         which == ITIMER_PROF;
}

// timeval_valid: tv_sec >= 0 and 0 <= tv_usec < 1e6.
bool ValidTimeval(const abi::Timeval& tv) {
  return tv.tv_sec >= 0 && static_cast<uint64_t>(tv.tv_usec) < 1000000;
}

// timespec64_to_ns: saturates at KTIME_MAX.
int64_t TimevalNs(const abi::Timeval& tv) {
  if (tv.tv_sec >= INT64_MAX / 1000000000) return INT64_MAX;
  return tv.tv_sec * 1000000000 + tv.tv_usec * 1000;
}

// put_itimerval: microseconds, truncated.
abi::Timeval NsTimeval(int64_t ns) {
  return abi::Timeval{ns / 1000000000, (ns % 1000000000) / 1000};
}

Itimerval ToItimerval(const Spec& s) {
  return Itimerval{NsTimeval(s.interval_ns), NsTimeval(s.value_ns)};
}

// getitimer(2).
SyscallResult Getitimer(Task& t, int32_t which, UserPtr<Itimerval> value) {
  if (!ValidWhich(which)) return kEINVAL;
  Spec s = t.thread_group().timers().GetItimer(t, which);
  TRY_VOID(value.CopyOut(t, ToItimerval(s)));
  return uint64_t{0};
}

// setitimer(2). A null new value disarms (as Linux since 5.x, with a
// warning there); the old value is written after the timer is set.
SyscallResult Setitimer(Task& t, int32_t which, UserPtr<Itimerval> value,
                        UserPtr<Itimerval> ovalue) {
  Spec next;
  if (!value.null()) {
    TRY(Itimerval v, value.CopyIn(t));
    if (!ValidTimeval(v.value) || !ValidTimeval(v.interval)) return kEINVAL;
    next.value_ns = TimevalNs(v.value);
    next.interval_ns = TimevalNs(v.interval);
  }
  if (!ValidWhich(which)) return kEINVAL;
  Spec old = t.thread_group().timers().SetItimer(t, which, next);
  if (!ovalue.null()) TRY_VOID(ovalue.CopyOut(t, ToItimerval(old)));
  return uint64_t{0};
}

// alarm(2): ITIMER_REAL for `seconds`; returns the seconds left of the
// previous alarm, rounded to nearest, and never 0 for one still pending
// (alarm_setitimer).
SyscallResult Alarm(Task& t, uint32_t seconds) {
  Spec next{static_cast<int64_t>(seconds) * 1000000000, 0};
  Spec old = t.thread_group().timers().SetItimer(t, ITIMER_REAL, next);
  int64_t sec = old.value_ns / 1000000000;
  const int64_t nsec = old.value_ns % 1000000000;
  if ((sec == 0 && nsec != 0) || nsec >= 500000000) ++sec;
  return static_cast<uint64_t>(sec);
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Getitimer);
SANDBOX_SYSCALL_HANDLER(Setitimer);
SANDBOX_SYSCALL_HANDLER(Alarm);

}  // namespace sandbox::syscalls
