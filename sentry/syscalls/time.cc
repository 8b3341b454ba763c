// Time syscalls. The wall clocks are the host's; those the vDSO serves
// (REALTIME, MONOTONIC, BOOTTIME, _RAW, _COARSE) are read from the vDSO's
// own parameters (sentry/vdso: a TSC line fitted to the host clock), so
// that a syscall and a vDSO reading never disagree or go back. The CPU
// clocks (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID and the
// negative ids of clock_getcpuclockid/pthread_getcpuclockid) are the
// Sentry's own accounting (sentry/kernel/cpu_clock.h); the vDSO sends them
// here.
#include <poll.h>
#include <time.h>

#include <algorithm>
#include <thread>

#include "platform/sleep_state.h"
#include "sentry/abi/syscalls.h"
#include "sentry/kernel/cpu_clock.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/timers.h"
#include "sentry/syscalls/handler.h"
#include "sentry/vdso/vdso.h"

namespace sandbox::syscalls {
namespace {

constexpr int kClockTai = 11;

// The wall clocks (clock_gettime/clock_getres; the CPU clocks are apart).
bool ValidClock(int32_t id) {
  switch (id) {
    case CLOCK_REALTIME:
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_BOOTTIME:
    case kClockTai:
      return true;
    default:
      return false;
  }
}

// The _ALARM clocks need an RTC device; the sandbox has none, so (as
// Linux without one) reading them is EINVAL and sleeping on them
// EOPNOTSUPP.
bool IsAlarmClock(int32_t id) {
  return id == CLOCK_REALTIME_ALARM || id == CLOCK_BOOTTIME_ALARM;
}

// A dynamic POSIX clock (CLOCKFD, a clock from a file descriptor): none
// exist here.
bool IsFdClock(int32_t id) { return id < 0 && (id & 7) == 3; }

abi::Timespec NsToTimespec(int64_t ns) {
  return abi::Timespec{ns / 1000000000, ns % 1000000000};
}

// clock_gettime(2).
SyscallResult ClockGettime(Task& t, int32_t clock, UserPtr<abi::Timespec> tp) {
  if (kernel::IsCpuClockId(clock)) {
    if (IsFdClock(clock)) return kEINVAL;
    TRY(kernel::CpuClockRef c, kernel::ResolveCpuClock(t, clock, true));
    TRY_VOID(tp.CopyOut(t, NsToTimespec(kernel::ReadCpuClock(c, &t))));
    return uint64_t{0};
  }
  if (!ValidClock(clock)) return kEINVAL;
  timespec ts;
  if (!vdso::ClockGettime(clock, &ts) && clock_gettime(clock, &ts) != 0) {
    return Errno(errno);
  }
  TRY_VOID(tp.CopyOut(t, abi::Timespec{ts.tv_sec, ts.tv_nsec}));
  return uint64_t{0};
}

// clock_getres(2). CPU clocks: 1 ns for the scheduler clocks (PROCESS,
// THREAD, CPUCLOCK_SCHED), a tick for CPUCLOCK_PROF/VIRT; the clock must
// name a process or one of the caller's threads (EINVAL).
SyscallResult ClockGetres(Task& t, int32_t clock, UserPtr<abi::Timespec> res) {
  timespec ts;
  if (kernel::IsCpuClockId(clock)) {
    if (IsFdClock(clock)) return kEINVAL;
    TRY(kernel::CpuClockRef c, kernel::ResolveCpuClock(t, clock, false));
    ts = {0, c.which == kernel::kCpuClockSched ? 1 : kernel::kTickNs};
  } else {
    if (!ValidClock(clock)) return kEINVAL;
    if (clock_getres(clock, &ts) != 0) return Errno(errno);
  }
  if (res.null()) return uint64_t{0};
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
  platform::ScopedSleep sleeping;  // /proc: S
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

// Sleeps until the CPU clock `c` reaches `target`, polling it: each nap
// lasts until the clock could first get there (its process cannot use more
// CPU time than the host has CPUs), at least a tick. On interrupt returns
// ERESTARTSYS and the CPU time still to go in *left_ns.
KResult<void> CpuSleepUntil(Task& t, const kernel::CpuClockRef& c,
                            int64_t target, int64_t* left_ns) {
  const int64_t ncpu =
      std::max<int64_t>(1, std::thread::hardware_concurrency());
  for (;;) {
    const int64_t now = kernel::ReadCpuClock(c, &t);
    if (now >= target) return OkResult();
    int64_t unused = 0;
    const int64_t nap = std::max(kernel::kTickNs, (target - now) / ncpu);
    if (!SleepInterruptible(t, nap, &unused).ok()) {
      *left_ns = std::max<int64_t>(0, target - kernel::ReadCpuClock(c, &t));
      return kERestartSys;
    }
  }
}

// An interrupted relative CPU-clock sleep: as SleepRestartBlock, resuming
// to the same CPU-time target (posix_cpu_nsleep_restart).
Errno CpuSleepRestartBlock(Task& t, const kernel::CpuClockRef& c,
                           int64_t target, int64_t left_ns,
                           UserPtr<abi::Timespec> rem) {
  if (!rem.null()) (void)rem.CopyOut(t, NsToTimespec(left_ns));
  t.signals().restart_fn = [c, target, rem](Task& t) -> KResult<uint64_t> {
    int64_t left = 0;
    if (CpuSleepUntil(t, c, target, &left).ok()) return uint64_t{0};
    return CpuSleepRestartBlock(t, c, target, left, rem);
  };
  return kERestartRestartBlock;
}

// clock_nanosleep(2). Wall clocks sleep on CLOCK_MONOTONIC (an absolute
// time is converted at the call; an interrupted absolute sleep restarts
// with the same arguments, ERESTARTNOHAND, so it is converted again). CPU
// clocks: a process's, or another thread's of the caller's process (the
// caller's own thread clock is EINVAL).
SyscallResult ClockNanosleep(Task& t, int32_t clock, Flags flags,
                             UserPtr<abi::Timespec> req,
                             UserPtr<abi::Timespec> rem) {
  const bool abs = (flags.v & TIMER_ABSTIME) != 0;
  const bool cpu = kernel::IsCpuClockId(clock);
  // clockid_to_kclock, then whether the clock sleeps.
  if (cpu ? IsFdClock(clock) : !ValidClock(clock) && !IsAlarmClock(clock)) {
    return kEINVAL;
  }
  // No nsleep: the raw and coarse clocks, the thread CPU clock (Linux
  // 6.x), the _ALARM clocks without an RTC.
  if (clock == CLOCK_MONOTONIC_RAW || clock == CLOCK_REALTIME_COARSE ||
      clock == CLOCK_MONOTONIC_COARSE || clock == CLOCK_THREAD_CPUTIME_ID ||
      IsAlarmClock(clock)) {
    return kEOPNOTSUPP;
  }
  TRY(abi::Timespec ts, req.CopyIn(t));
  if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) {
    return kEINVAL;
  }
  int64_t ns = ts.tv_sec > INT64_MAX / 1000000000 - 1
                   ? INT64_MAX
                   : ts.tv_sec * 1000000000 + ts.tv_nsec;
  if (cpu) {
    TRY(kernel::CpuClockRef c, kernel::ResolveCpuClock(t, clock, false));
    if (c.task == &t) return kEINVAL;
    const int64_t now = kernel::ReadCpuClock(c, &t);
    const int64_t target =
        abs ? ns : (ns > INT64_MAX - now ? INT64_MAX : now + ns);
    int64_t left = 0;
    if (CpuSleepUntil(t, c, target, &left).ok()) return uint64_t{0};
    if (abs) return kERestartNoHand;
    return CpuSleepRestartBlock(t, c, target, left, rem);
  }
  if (abs) {
    timespec now;
    clock_gettime(clock, &now);
    int64_t now_ns = now.tv_sec * 1000000000LL + now.tv_nsec;
    ns = ns > now_ns ? ns - now_ns : 0;
  }
  int64_t left = 0;
  KResult<void> r = SleepInterruptible(t, ns, &left);
  if (!r.ok()) {
    // An absolute sleep restarts with the same arguments.
    if (abs) return kERestartNoHand;
    return SleepRestartBlock(t, left, rem);
  }
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(ClockGettime);
SANDBOX_SYSCALL_HANDLER(ClockGetres);
SANDBOX_SYSCALL_HANDLER(Gettimeofday);
SANDBOX_SYSCALL_HANDLER(Time);
SANDBOX_SYSCALL_HANDLER(Nanosleep);
SANDBOX_SYSCALL_HANDLER(ClockNanosleep);

}  // namespace sandbox::syscalls
