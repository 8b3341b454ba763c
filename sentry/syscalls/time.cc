// Time syscalls. The clocks are the host's; those the vDSO serves
// (REALTIME, MONOTONIC, BOOTTIME, _RAW, _COARSE) are read from the vDSO's
// own parameters (sentry/vdso: a TSC line fitted to the host clock), so
// that a syscall and a vDSO reading never disagree or go back.
#include <poll.h>
#include <time.h>

#include <algorithm>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/table.h"
#include "sentry/vdso/vdso.h"

namespace sandbox::syscalls {
namespace {

bool ValidClock(int32_t id) {
  switch (id) {
    case CLOCK_REALTIME:
    case CLOCK_MONOTONIC:
    case CLOCK_PROCESS_CPUTIME_ID:
    case CLOCK_THREAD_CPUTIME_ID:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_BOOTTIME:
      return true;
    default:
      return false;
  }
}

// clock_gettime(2). The CPU-time clocks are the Sentry thread's (which
// runs the guest's syscalls, not its user code): an approximation.
SyscallResult ClockGettime(Task& t, int32_t clock, UserPtr<abi::Timespec> tp) {
  if (!ValidClock(clock)) return kEINVAL;
  timespec ts;
  int host =
      clock == CLOCK_PROCESS_CPUTIME_ID ? CLOCK_THREAD_CPUTIME_ID : clock;
  if (!vdso::ClockGettime(clock, &ts) && clock_gettime(host, &ts) != 0) {
    return Errno(errno);
  }
  TRY_VOID(tp.CopyOut(t, abi::Timespec{ts.tv_sec, ts.tv_nsec}));
  return uint64_t{0};
}

// clock_getres(2).
SyscallResult ClockGetres(Task& t, int32_t clock, UserPtr<abi::Timespec> res) {
  if (!ValidClock(clock)) return kEINVAL;
  if (res.null()) return uint64_t{0};
  timespec ts;
  if (clock_getres(clock, &ts) != 0) return Errno(errno);
  TRY_VOID(res.CopyOut(t, abi::Timespec{ts.tv_sec, ts.tv_nsec}));
  return uint64_t{0};
}

// gettimeofday(2).
SyscallResult Gettimeofday(Task& t, UserPtr<abi::Timeval> tv,
                           UserPtr<abi::Timezone> tz) {
  if (!tv.null()) {
    timespec ts;
    if (!vdso::ClockGettime(CLOCK_REALTIME, &ts)) {
      clock_gettime(CLOCK_REALTIME, &ts);
    }
    TRY_VOID(tv.CopyOut(t, abi::Timeval{ts.tv_sec, ts.tv_nsec / 1000}));
  }
  if (!tz.null()) TRY_VOID(tz.CopyOut(t, abi::Timezone{0, 0}));
  return uint64_t{0};
}

// time(2).
SyscallResult Time(Task& t, UserPtr<int64_t> tloc) {
  timespec ts;
  if (!vdso::ClockGettime(CLOCK_REALTIME, &ts)) {
    clock_gettime(CLOCK_REALTIME, &ts);
  }
  if (!tloc.null()) TRY_VOID(tloc.CopyOut(t, int64_t{ts.tv_sec}));
  return static_cast<uint64_t>(ts.tv_sec);
}

// Sleeps `ns` nanoseconds on CLOCK_MONOTONIC, interruptibly. On interrupt
// returns ERESTARTSYS and the time left in *left_ns.
KResult<void> SleepInterruptible(Task& t, int64_t ns, int64_t* left_ns) {
  // Far enough to be forever, near enough that the deadline cannot
  // overflow.
  constexpr int64_t kMaxSleepNs = INT64_MAX / 4;
  ns = std::min(ns, kMaxSleepNs);
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  int64_t deadline = start.tv_sec * 1000000000LL + start.tv_nsec + ns;
  vfs::IoContext ctx = t.io_context();
  for (;;) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t left = deadline - (now.tv_sec * 1000000000LL + now.tv_nsec);
    if (left <= 0) return OkResult();
    timespec to = {left / 1000000000, left % 1000000000};
    pollfd p = {ctx.interrupt_fd, POLLIN, 0};
    int n = ppoll(&p, ctx.interrupt_fd >= 0 ? 1 : 0, &to, nullptr);
    if (n > 0) {
      *left_ns = left;
      return kERestartSys;
    }
  }
}

// An interrupted relative sleep with `left_ns` to go: writes the time left
// to `rem` and returns ERESTART_RESTARTBLOCK, so a handler makes it EINTR
// and anything else resumes it through restart_syscall(2) to the same
// deadline (Linux's hrtimer_nanosleep_restart).
Errno SleepRestartBlock(Task& t, int64_t left_ns, UserPtr<abi::Timespec> rem) {
  if (!rem.null()) {
    (void)rem.CopyOut(
        t, abi::Timespec{left_ns / 1000000000, left_ns % 1000000000});
  }
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t deadline = now.tv_sec * 1000000000LL + now.tv_nsec + left_ns;
  t.signals().restart_fn = [deadline, rem](Task& t) -> KResult<uint64_t> {
    timespec n;
    clock_gettime(CLOCK_MONOTONIC, &n);
    int64_t left = deadline - (n.tv_sec * 1000000000LL + n.tv_nsec);
    int64_t still = 0;
    if (left <= 0 || SleepInterruptible(t, left, &still).ok()) {
      return uint64_t{0};
    }
    return SleepRestartBlock(t, still, rem);
  };
  return kERestartRestartBlock;
}

// nanosleep(2).
SyscallResult Nanosleep(Task& t, UserPtr<abi::Timespec> req,
                        UserPtr<abi::Timespec> rem) {
  TRY(abi::Timespec ts, req.CopyIn(t));
  if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) {
    return kEINVAL;
  }
  int64_t ns = ts.tv_sec > INT64_MAX / 1000000000 - 1
                   ? INT64_MAX
                   : ts.tv_sec * 1000000000 + ts.tv_nsec;
  int64_t left = 0;
  KResult<void> r = SleepInterruptible(t, ns, &left);
  if (!r.ok()) return SleepRestartBlock(t, left, rem);
  return uint64_t{0};
}

// clock_nanosleep(2): relative sleeps on the monotonic-like clocks.
SyscallResult ClockNanosleep(Task& t, int32_t clock, Flags flags,
                             UserPtr<abi::Timespec> req,
                             UserPtr<abi::Timespec> rem) {
  if (clock == CLOCK_THREAD_CPUTIME_ID) return kEINVAL;
  if (!ValidClock(clock) || clock == CLOCK_PROCESS_CPUTIME_ID) {
    return kEINVAL;
  }
  TRY(abi::Timespec ts, req.CopyIn(t));
  if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) {
    return kEINVAL;
  }
  int64_t ns = ts.tv_sec > INT64_MAX / 1000000000 - 1
                   ? INT64_MAX
                   : ts.tv_sec * 1000000000 + ts.tv_nsec;
  if (flags.v & TIMER_ABSTIME) {
    timespec now;
    clock_gettime(clock, &now);
    int64_t now_ns = now.tv_sec * 1000000000LL + now.tv_nsec;
    ns = ns > now_ns ? ns - now_ns : 0;
  }
  int64_t left = 0;
  KResult<void> r = SleepInterruptible(t, ns, &left);
  if (!r.ok()) {
    // An absolute sleep restarts with the same arguments.
    if (flags.v & TIMER_ABSTIME) return kERestartNoHand;
    return SleepRestartBlock(t, left, rem);
  }
  return uint64_t{0};
}

}  // namespace

void RegisterTimeSyscalls(SyscallTable& t) {
  using namespace abi;  // NOLINT: nr::
  t.Partial<&ClockGettime>(nr::clock_gettime,
                           "CPU-time clocks approximate; no per-PID/FD clocks");
  t.Full<&ClockGetres>(nr::clock_getres);
  t.Full<&Gettimeofday>(nr::gettimeofday);
  t.Full<&Time>(nr::time);
  t.Full<&Nanosleep>(nr::nanosleep);
  t.Partial<&ClockNanosleep>(
      nr::clock_nanosleep,
      "no CPU-time clocks; TIMER_ABSTIME becomes a relative sleep at the call");
}

}  // namespace sandbox::syscalls
