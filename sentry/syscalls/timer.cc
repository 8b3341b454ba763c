// POSIX per-process timers: timer_create, timer_settime, timer_gettime,
// timer_getoverrun, timer_delete (Linux's kernel/time/posix-timers.c). The
// timers live in kernel::ProcessTimers.
#include <signal.h>
#include <time.h>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/timers.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/itimerspec.h"

namespace sandbox::syscalls {
namespace {

using Spec = kernel::ProcessTimers::Spec;

// The kernel's sigevent (64 bytes): value, signo, notify, then the union
// whose first int is the thread ID of SIGEV_THREAD_ID.
struct Sigevent {
  uint64_t value;
  int32_t signo;
  int32_t notify;
  int32_t tid;
  int32_t pad[11];
};
static_assert(sizeof(Sigevent) == 64);

constexpr int kClockTai = 11;

// clockid_to_kclock and its timer_create: 0 if timers work on the clock,
// else the error.
Errno TimerClockError(int32_t clock) {
  if (clock < 0) {
    // CLOCKFD clocks (dynamic POSIX clocks; none exist here): EINVAL as
    // Linux 6.x; the rest are CPU clocks, resolved by
    // ProcessTimers::Create.
    return (clock & 7) == 3 ? kEINVAL : Errno(0);
  }
  switch (clock) {
    case CLOCK_REALTIME:
    case CLOCK_MONOTONIC:
    case CLOCK_PROCESS_CPUTIME_ID:
    case CLOCK_THREAD_CPUTIME_ID:
    case CLOCK_BOOTTIME:
    case kClockTai:
      return Errno(0);
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_MONOTONIC_COARSE:
      return kEOPNOTSUPP;  // no timer_create
    case CLOCK_REALTIME_ALARM:
    case CLOCK_BOOTTIME_ALARM:
      return kEOPNOTSUPP;  // alarm_timer_create: no RTC in the sandbox
    default:
      return kEINVAL;
  }
}

// timer_create(2).
SyscallResult TimerCreate(Task& t, int32_t clock, UserPtr<Sigevent> sevp,
                          UserPtr<int32_t> timerid) {
  kernel::ProcessTimers::Event ev;
  std::optional<Sigevent> given;
  if (!sevp.null()) {
    TRY(Sigevent e, sevp.CopyIn(t));
    given = e;
  }
  if (Errno e = TimerClockError(clock); e.number() != 0) return e;
  if (given.has_value()) {
    // good_sigevent: the notification, the signal, the thread.
    ev.given = true;
    ev.notify = given->notify;
    ev.signo = given->signo;
    ev.value = given->value;
    switch (ev.notify) {
      case SIGEV_SIGNAL | SIGEV_THREAD_ID: {
        ev.tid = given->tid;
        auto target = t.kernel().root_pid_namespace().Lookup(ev.tid);
        if (ev.tid <= 0 || target == nullptr ||
            &target->thread_group() != &t.thread_group()) {
          return kEINVAL;
        }
        [[fallthrough]];
      }
      case SIGEV_SIGNAL:
      case SIGEV_THREAD:
        if (ev.signo <= 0 || ev.signo > abi::kNumSignals) return kEINVAL;
        break;
      case SIGEV_NONE:
        break;
      default:
        return kEINVAL;
    }
  }
  kernel::ProcessTimers& timers = t.thread_group().timers();
  TRY(int id, timers.Create(t, clock, ev));
  if (KResult<void> r = timerid.CopyOut(t, id); !r.ok()) {
    (void)timers.Delete(id);
    return r.error();
  }
  return uint64_t{0};
}

// timer_settime(2).
SyscallResult TimerSettime(Task& t, int32_t id, int32_t flags,
                           UserPtr<Itimerspec> new_value,
                           UserPtr<Itimerspec> old_value) {
  if (new_value.null()) return kEINVAL;
  TRY(Itimerspec v, new_value.CopyIn(t));
  if (!ValidTimespec(v.interval) || !ValidTimespec(v.value)) return kEINVAL;
  Spec next{TimespecNs(v.value), TimespecNs(v.interval)};
  TRY(Spec old, t.thread_group().timers().Settime(
                    t, id, (flags & TIMER_ABSTIME) != 0, next));
  if (!old_value.null()) TRY_VOID(old_value.CopyOut(t, ToItimerspec(old)));
  return uint64_t{0};
}

// timer_gettime(2).
SyscallResult TimerGettime(Task& t, int32_t id, UserPtr<Itimerspec> value) {
  TRY(Spec s, t.thread_group().timers().Gettime(t, id));
  TRY_VOID(value.CopyOut(t, ToItimerspec(s)));
  return uint64_t{0};
}

// timer_getoverrun(2): the overrun of the last delivered signal, at most
// INT_MAX (DELAYTIMER_MAX).
SyscallResult TimerGetoverrun(Task& t, int32_t id) {
  TRY(int n, t.thread_group().timers().Getoverrun(id));
  return static_cast<uint64_t>(n);
}

// timer_delete(2).
SyscallResult TimerDelete(Task& t, int32_t id) {
  TRY_VOID(t.thread_group().timers().Delete(id));
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(TimerCreate);
SANDBOX_SYSCALL_HANDLER(TimerSettime);
SANDBOX_SYSCALL_HANDLER(TimerGettime);
SANDBOX_SYSCALL_HANDLER(TimerGetoverrun);
SANDBOX_SYSCALL_HANDLER(TimerDelete);

}  // namespace sandbox::syscalls
