// ProcessTimers: a process's interval timers (setitimer: ITIMER_REAL,
// ITIMER_VIRTUAL, ITIMER_PROF) and POSIX timers (timer_create), with
// Linux's semantics (kernel/time/itimer.c, posix-timers.c,
// posix-cpu-timers.c).
//
// Wall-clock timers (ITIMER_REAL; POSIX timers on CLOCK_REALTIME,
// MONOTONIC, BOOTTIME, TAI and the _ALARM clocks) are entries in the
// kernel's one TimerService. CPU-clock timers (ITIMER_VIRTUAL/PROF; POSIX
// timers on the process and thread CPU clocks) are checked by the run loop
// after each return from guest code (MaybeCheckCpu: one atomic compare
// unless one may be due) and by a service poll, so a task spinning in guest
// code is caught too.
//
// As Linux: a periodic ITIMER_REAL re-arms when its SIGALRM is dequeued; a
// periodic POSIX timer is not re-armed while its signal is queued; it is
// forwarded when the signal is dequeued, and the periods missed meanwhile
// are the signal's si_overrun (and timer_getoverrun's answer). A timer
// whose signal is ignored (dropped at send) keeps running. POSIX timers are
// not inherited by fork (a new ThreadGroup starts empty) and are deleted
// by execve; the interval timers survive execve.
//
// Locking: ThreadGroup::signal_mu() -> ProcessTimers::mu_ ->
// TimerService's lock. Signals are sent with mu_ released. Service
// callbacks carry the timer's generation: a callback for a timer re-set or
// deleted since it was scheduled does nothing.
#ifndef SENTRY_KERNEL_TIMERS_H_
#define SENTRY_KERNEL_TIMERS_H_

#include <signal.h>
#include <stdint.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/kernel/pid_namespace.h"
#include "sentry/kernel/timer_service.h"

namespace sandbox::kernel {

class Task;
class ThreadGroup;

// CPU clock ids (Linux's CPUCLOCK_*): clock_getcpuclockid and
// pthread_getcpuclockid encode a PID or TID in a negative clockid.
inline constexpr int kCpuClockProf = 0;
inline constexpr int kCpuClockVirt = 1;
inline constexpr int kCpuClockSched = 2;
inline constexpr int kCpuClockPerThread = 4;
constexpr bool IsCpuClockId(int clock) {
  return clock < 0 || clock == CLOCK_PROCESS_CPUTIME_ID ||
         clock == CLOCK_THREAD_CPUTIME_ID;
}

// A resolved CPU clock: a process (task null) or one thread, and which
// time it counts.
struct CpuClockRef {
  ThreadGroup* tg = nullptr;
  Task* task = nullptr;  // a thread clock
  int which = kCpuClockSched;
  ThreadId tid = 0;  // the thread's TID (a timer re-checks it names task)
  // Keeps the looked-up task (and so its process) alive while held.
  std::shared_ptr<void> hold;
};
// pid_for_clock: the clock `clock` names as seen by `caller` (pid 0: the
// caller's thread or process; a thread clock only of a thread of the
// caller's process; a process clock of any process, by a thread's TID only
// for reading). EINVAL otherwise.
KResult<CpuClockRef> ResolveCpuClock(Task& caller, int clock, bool gettime);
// The clock's value in ns.
int64_t ReadCpuClock(const CpuClockRef& c, const Task* self);

class ProcessTimers {
 public:
  explicit ProcessTimers(ThreadGroup& tg) : tg_(tg) {}
  ProcessTimers(const ProcessTimers&) = delete;
  ProcessTimers& operator=(const ProcessTimers&) = delete;

  // A timer's value and period in ns (itimerspec / itimerval).
  struct Spec {
    int64_t value_ns = 0;
    int64_t interval_ns = 0;
  };

  // ---- Interval timers; `which` is ITIMER_REAL/VIRTUAL/PROF. ----
  Spec GetItimer(Task& t, int which);
  // Returns the old setting.
  Spec SetItimer(Task& t, int which, const Spec& next);

  // ---- POSIX timers. ----
  struct Event {
    int notify = SIGEV_SIGNAL;  // SIGEV_SIGNAL, _NONE, _THREAD, _THREAD_ID
    int signo = SIGALRM;
    ThreadId tid = 0;  // SIGEV_THREAD_ID
    uint64_t value = 0;
    bool given = false;  // false: timer_create's default (value = the id)
  };
  // timer_create after the clock was checked valid for timers: EAGAIN over
  // the limit (RLIMIT_SIGPENDING timers per process), EINVAL for a bad
  // event or CPU clock. Returns the id.
  KResult<int> Create(Task& t, int clock, const Event& ev);
  KResult<Spec> Settime(Task& t, int id, bool absolute, const Spec& next);
  KResult<Spec> Gettime(Task& t, int id);
  KResult<int> Getoverrun(int id);
  KResult<void> Delete(int id);
  // execve: every POSIX timer goes (exit_itimers).
  void DeletePosixTimers();
  // execve after de_thread (`t` is alone): the POSIX timers go and their
  // queued signals with them (flush_itimer_signals); interval timers stay.
  void OnExec(Task& t);
  // The process is dead: every timer stops.
  void Shutdown();
  // /proc/PID/timers.
  std::string ProcText();

  // ---- Hooks. ----
  // The run loop after charging CPU time (task thread of this process).
  void MaybeCheckCpu(Task& t);
  // A signal of this process was dequeued for delivery (under signal_mu):
  // SIGALRM re-arms a periodic ITIMER_REAL; a timer's signal gets its
  // si_overrun and the periodic timer is forwarded and re-armed.
  void OnDequeueLocked(Task& t, siginfo_t& info);

 private:
  struct PosixTimer {
    int id = 0;
    int clock = 0;
    bool cpu = false;
    CpuClockRef cpu_clock;
    Event ev;
    bool armed = false;
    int64_t expiry = 0;    // on the timer's clock, ns
    int64_t interval = 0;  // ns
    int64_t overrun = -1;  // Linux's it_overrun
    int64_t overrun_last = 0;
    int64_t queued_extra = 0;  // expiries while the signal was queued
    bool sig_pending = false;  // its signal is queued, not yet dequeued
    uint64_t gen = 0;
    uint64_t pending_gen = 0;  // the gen of the expiry that queued it
    TimerService::Id service_id = 0;
  };
  struct CpuItimer {
    int64_t expires = 0;  // process CPU ns; 0: off
    int64_t incr = 0;
  };

  TimerService& service();
  // Records the owning ThreadGroup's reference (from one of its tasks)
  // for service callbacks, which hold it only weakly: a process freed
  // after it is reaped is never touched.
  void BindLocked(Task& t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Now on a wall clock, ns.
  static int64_t WallNow(int clock);
  // Now on the timer's clock (`cpu_now` for a CPU clock, sampled before
  // mu_ was taken).
  int64_t TimerNowLocked(const PosixTimer& p, int64_t cpu_now)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // A CPU timer's clock, under signal_mu().
  int64_t CpuNowSignalLocked(const PosixTimer& p, const Task* self);
  std::optional<CpuClockRef> CpuRefOf(int id);
  // Schedules a wall timer's service entry at its expiry.
  void ArmWallLocked(PosixTimer& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FireWall(int id, uint64_t gen);
  // Sends a timer's signal (mu_ not held) and notices a dropped one.
  void SendTimerSignal(int id, uint64_t gen, const siginfo_t& info,
                       ThreadId tid);
  void FireReal(uint64_t gen);
  void ArmRealLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Checks every CPU timer against sampled clocks; fires the due ones.
  void CheckCpu(const Task* self);
  void UpdateCpuEarliestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SchedulePollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Spec GettimeLocked(PosixTimer& p, int64_t cpu_now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DisarmLocked(PosixTimer& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ThreadGroup& tg_;
  std::weak_ptr<ThreadGroup> self_ ABSL_GUARDED_BY(mu_);
  // The smallest expiry of the armed CPU timers (INT64_MAX: none): no CPU
  // timer is due while the process's charged time is below it.
  std::atomic<int64_t> cpu_earliest_{INT64_MAX};

  absl::Mutex mu_;
  bool dead_ ABSL_GUARDED_BY(mu_) = false;
  // ITIMER_REAL (Linux's signal->real_timer and it_real_incr).
  bool real_queued_ ABSL_GUARDED_BY(mu_) = false;
  int64_t real_expiry_ ABSL_GUARDED_BY(mu_) = 0;  // CLOCK_MONOTONIC
  int64_t real_incr_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t real_gen_ ABSL_GUARDED_BY(mu_) = 0;
  TimerService::Id real_id_ ABSL_GUARDED_BY(mu_) = 0;
  // ITIMER_PROF (0) and ITIMER_VIRTUAL (1).
  CpuItimer cpu_it_[2] ABSL_GUARDED_BY(mu_);
  std::map<int, PosixTimer> posix_ ABSL_GUARDED_BY(mu_);
  int next_id_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_gen_ ABSL_GUARDED_BY(mu_) = 1;
  TimerService::Id poll_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_TIMERS_H_
