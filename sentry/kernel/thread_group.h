// ThreadGroup: a guest process (Linux's thread group / signal_struct):
// its tasks, resource limits, signal actions, exit status.
//
// Lock order: ThreadGroup::mu_ -> Task::mu_.
#ifndef SENTRY_KERNEL_THREAD_GROUP_H_
#define SENTRY_KERNEL_THREAD_GROUP_H_

#include <signal.h>

#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/abi/linux.h"
#include "sentry/base/result.h"
#include "sentry/kernel/cpu_clock.h"
#include "sentry/kernel/futex.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/pid_namespace.h"
#include "sentry/kernel/signal_queue.h"
#include "sentry/kernel/timers.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::kernel {

class Kernel;
class Task;

// How a process ended.
struct ExitStatus {
  int code = 0;   // exit(2)/exit_group(2) status; only the low 8 bits count
  int signo = 0;  // the killing signal, 0 if the process exited
  bool core = false;

  static ExitStatus Exited(int code) { return {code & 0xff, 0, false}; }
  static ExitStatus Killed(int signo, bool core = false) {
    return {0, signo, core};
  }
  // As wait4(2) reports it.
  int WaitStatus() const {
    return signo != 0 ? (signo | (core ? 0x80 : 0)) : (code & 0xff) << 8;
  }
  // As a shell reports it in $?: the code, or 128 + the signal.
  int ShellStatus() const { return signo != 0 ? 128 + signo : code & 0xff; }
};

class ThreadGroup : public std::enable_shared_from_this<ThreadGroup> {
 public:
  ThreadGroup(Kernel& kernel, ThreadGroup* parent, std::string exe_path,
              LimitSet limits);
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  Kernel& kernel() const { return kernel_; }
  // The leader's TID in the root namespace (0 until the leader is added).
  ThreadId tgid() const { return tgid_.load(std::memory_order_relaxed); }
  // The parent process, or null for init (whose parent is outside). An
  // orphan's parent becomes init.
  ThreadGroup* parent() const {
    return parent_.load(std::memory_order_acquire);
  }
  // Path of the running executable (/proc/self/exe). Changes on execve.
  std::string exe_path() const;
  void set_exe_path(std::string path);
  // The running executable's location (Linux's mm->exe_file), where the
  // magic link /proc/PID/exe jumps: set with exe_path by execve, copied by
  // fork, dropped when the last task exits; unset ({}) for processes
  // started without one (unit tests) and for zombies.
  vfs::VirtualDentry exe_file() const;
  void set_exe_file(vfs::VirtualDentry vd);
  // Process group and session IDs: a fork child inherits its parent's;
  // the first process leads its own; setpgid/setsid (process.cc) change
  // them.
  ThreadId pgid() const { return pgid_.load(std::memory_order_relaxed); }
  ThreadId sid() const { return sid_.load(std::memory_order_relaxed); }
  void set_pgid_sid(ThreadId pgid, ThreadId sid) {
    pgid_.store(pgid, std::memory_order_relaxed);
    sid_.store(sid, std::memory_order_relaxed);
  }
  // Whether the process has called execve since it was forked (Linux's
  // !PF_FORKNOEXEC on the leader): setpgid on such a child is EACCES.
  bool did_exec() const { return did_exec_.load(std::memory_order_relaxed); }
  // PR_SET_DUMPABLE (on the mm in Linux).
  int dumpable() const { return dumpable_.load(std::memory_order_relaxed); }
  void set_dumpable(int d) { dumpable_.store(d, std::memory_order_relaxed); }

  // Resource limits. SetLimit: EINVAL if cur > max; EPERM to raise max
  // without CAP_SYS_RESOURCE or the NOFILE max above fs.nr_open.
  abi::Rlimit64 GetLimit(int resource) const;
  KResult<abi::Rlimit64> SetLimit(int resource, const abi::Rlimit64& lim,
                                  bool privileged);

  // Signal actions (signal.h delivers them).
  abi::KernelSigaction GetAction(int sig) const;
  void SetAction(int sig, const abi::KernelSigaction& act);
  // Linux's flush_signal_handlers(): every action's flags, restorer and
  // mask are cleared and its handler becomes SIG_DFL, except that an
  // ignored signal stays ignored unless `force_default`. execve and
  // clone3's CLONE_CLEAR_SIGHAND call it with false.
  void FlushSignalHandlers(bool force_default);

  // A signal the kernel raises for this process (SI_USER): to the calling
  // task if it belongs to the process (SIGPIPE), else to the process (a
  // signal from outside the sandbox). Delivered as any other signal: a
  // handler runs, or the action (ignore, default) applies.
  void SignalDefaultAction(int sig);

  // Adds a task; the first becomes the leader (its TID is the TGID).
  void AddTask(Task* task);
  size_t TaskCount() const;
  // The running tasks. Raw pointers: compare them, never use them once
  // the lock is released (a task is freed after it exits); TaskRefs holds
  // them.
  std::vector<Task*> Tasks() const;
  std::vector<std::shared_ptr<Task>> TaskRefs() const;

  // Starts ending the whole group with `status` (exit_group, a fatal
  // signal): the first caller's status wins; every task is interrupted
  // and leaves its run loop.
  void ExitGroup(ExitStatus status);
  // True once ExitGroup was called (cheap: checked by every run loop pass).
  bool exiting() const { return exiting_.load(std::memory_order_acquire); }

  // execve's de_thread: makes every task but `self` leave its run loop (as
  // if killed) and waits until they have exited; then, if `self` is not
  // the leader, it takes the leader's TID (its own is released), as Linux
  // does. False if the group started exiting meanwhile (exit_group, a
  // fatal signal): the exec must then be abandoned. Called on `self`'s
  // thread, without locks held.
  bool DeThread(Task& self);
  // Whether `t` was told to exit by another task's execve (the run loop
  // checks it with exiting()).
  bool KilledByExec(const Task* t) const {
    const Task* s = exec_survivor_.load(std::memory_order_acquire);
    return s != nullptr && s != t;
  }

  // Called on a task's own thread as its run loop ends. `code` is its
  // exit(2) status, used as the group's if it is the last task and the
  // group was not already exiting.
  void TaskExited(Task* task, int code);

  // ---- Children (wait4). ----
  // Records a child process (fork). False if this process is already dead
  // (its children were handed to init): the caller picks the new parent
  // (CLONE_PARENT racing with the grandparent's exit).
  bool AddChild(std::shared_ptr<ThreadGroup> child);
  // Which children a wait selects and what it does with them (Linux's
  // wait_opts).
  struct WaitOptions {
    enum class Type { kAny, kPid, kPgid };
    Type type = Type::kAny;
    ThreadId id = 0;         // the PID (kPid) or process group (kPgid)
    bool nohang = false;     // WNOHANG: 0 at once if none is ready
    bool nowait = false;     // WNOWAIT: report, but leave the child waitable
    bool exited = true;      // WEXITED: report dead children
    bool wall = false;       // __WALL: every child
    bool wclone = false;     // __WCLONE: only "clone" children (exit signal
                             // other than SIGCHLD); without either flag, only
                             // the others
    bool stopped = false;    // WSTOPPED/WUNTRACED: report a group stop
    bool continued = false;  // WCONTINUED: report a continue after a stop
    bool nothread = false;   // __WNOTHREAD: only the waiting thread's
                             // children
  };
  // wait4(2) for `pid` (-1: any child; > 0: that child): reaps a dead
  // child and returns (its TGID, its status). 0 with WNOHANG if none is
  // dead yet; ECHILD if there is no such child; ERESTARTSYS if `waiter` is
  // interrupted while blocked.
  struct Reaped {
    ThreadId tgid = 0;
    ExitStatus status;
    uint32_t uid = 0;  // the child's real UID (waitid's si_uid)
    ChildUsage usage;  // its and its children's times (wait4's rusage)
    // What is reported: CLD_EXITED (status says how it ended; also
    // CLD_KILLED/CLD_DUMPED), CLD_STOPPED (stop_signo) or CLD_CONTINUED.
    int cld = CLD_EXITED;
    int stop_signo = 0;
    // wait4's status word: the exit status, 0x7f | sig << 8 for a stop,
    // 0xffff for a continue.
    int WaitStatus() const {
      if (cld == CLD_STOPPED) return 0x7f | (stop_signo << 8);
      if (cld == CLD_CONTINUED) return 0xffff;
      return status.WaitStatus();
    }
  };
  KResult<Reaped> WaitChild(Task& waiter, ThreadId pid, bool nohang);
  // do_wait: the first dead child `opts` selects (in fork order) is
  // reported and, without nowait, reaped: it leaves the children and its
  // PID is released (until then /proc/PID shows a zombie). Reaped{} (tgid
  // 0) with nohang if a selected child lives; ECHILD if none is selected;
  // ERESTARTSYS if `waiter` is interrupted while blocked.
  KResult<Reaped> WaitChild(Task& waiter, const WaitOptions& opts);
  // A dead process's PID stays in use (its leader's TID names it: /proc
  // shows the zombie, kill and getpgid find it) until its parent reaps it
  // (wait, or auto-reap); then this frees it (release_task).
  void ReleaseZombiePid() const;

  // Copies of the per-process state a fork child inherits.
  LimitSet limits() const;
  std::array<abi::KernelSigaction, abi::kNumSignals + 1> actions() const;
  void set_actions(
      const std::array<abi::KernelSigaction, abi::kNumSignals + 1>& a);

  // Blocks until every task has exited; returns the exit status.
  ExitStatus WaitDead() const;
  std::optional<ExitStatus> exit_status() const;

  // ---- Signal delivery state (signal.h, signal_*.cc). ----
  // Linux's siglock: guards the actions, the shared pending queue and each
  // task's pending queue (it is mu_: the actions already live under it).
  absl::Mutex& signal_mu() const ABSL_LOCK_RETURNED(mu_) { return mu_; }
  const std::vector<Task*>& TasksLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return tasks_;
  }
  abi::KernelSigaction& ActionLocked(int sig)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return actions_[sig];
  }
  const abi::Rlimit64& LimitLocked(int resource) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return limits_.limits[resource];
  }
  // Signals sent to the process (kill), for any of its threads.
  SignalQueue& SharedPendingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return shared_pending_;
  }
  // complete_signal's curr_target: where the search for a thread that
  // takes a process signal starts (an index into the tasks).
  size_t signal_target_index_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return signal_target_;
  }
  void set_signal_target_index_locked(size_t i)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    signal_target_ = i;
  }
  // The signal the parent gets when this process dies (clone's
  // exit_signal: SIGCHLD for fork, 0 for none).
  int exit_signal() const {
    return exit_signal_.load(std::memory_order_relaxed);
  }
  void set_exit_signal(int sig) {
    exit_signal_.store(sig, std::memory_order_relaxed);
  }
  // CPU times (cpu_clock.h: `exited` and `children` under signal_mu())
  // and the interval and POSIX timers (timers.h).
  ProcessCpuTimes& cpu_times() { return cpu_times_; }
  ProcessTimers& timers() { return timers_; }
  // Linux's sighand->signalfd_wqh: notified (POLLIN) under signal_mu()
  // each time a signal is queued for the process or one of its threads,
  // and by signalfd(2) changing a mask. signalfds (sentry/fs/signalfd)
  // sleep and register here for the reading process.
  vfs::WaitQueue& signalfd_queue() { return signalfd_queue_; }

  // Auto-reap (the parent ignores SIGCHLD or set SA_NOCLDWAIT): the dead
  // `child` leaves the children list without a wait.
  void ForgetChild(const ThreadGroup* child);

  // ---- Job control (signal_jobctl.cc; Linux's signal->flags,
  // group_stop_count and group_exit_code), guarded by signal_mu(). ----
  struct JobControl {
    // Threads that still have to take part in the group stop in progress.
    int group_stop_count = 0;
    // The stop signal a wait(WSTOPPED) reports while stop_stopped (0 once
    // reported without WNOWAIT).
    int group_exit_code = 0;
    bool stop_stopped = false;    // SIGNAL_STOP_STOPPED
    bool stop_continued = false;  // SIGNAL_STOP_CONTINUED (for WCONTINUED)
    // SIGNAL_CLD_STOPPED/SIGNAL_CLD_CONTINUED: CLD_STOPPED or
    // CLD_CONTINUED, which the next thread through DeliverSignals reports
    // to the parent (0: none).
    int cld_notify = 0;
  };
  JobControl& JobControlLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return jobctl_;
  }
  // Linux's SIGNAL_UNKILLABLE: the sandbox's init. Signals whose action is
  // SIG_DFL are dropped (SIGKILL and SIGSTOP too, unless they come from
  // outside the sandbox); a fault with no handler clears it (force_sig).
  bool unkillable() const {
    return unkillable_.load(std::memory_order_relaxed);
  }
  void set_unkillable(bool v) {
    unkillable_.store(v, std::memory_order_relaxed);
  }
  // The parent process, held (null for init): unlike parent(), safe to
  // use while the parent may exit and be reaped concurrently.
  std::shared_ptr<ThreadGroup> parent_ref() const ABSL_LOCKS_EXCLUDED(mu_);
  // The thread (TID) of the parent process that is this child's real
  // parent (the one that forked it; when it exits, another thread of the
  // parent process): __WNOTHREAD waits only for the caller's own.
  ThreadId creator_tid() const {
    return creator_tid_.load(std::memory_order_relaxed);
  }
  void set_creator_tid(ThreadId tid) {
    creator_tid_.store(tid, std::memory_order_relaxed);
  }
  // Sets the parent (reparenting to init, CLONE_PARENT, tests).
  void set_parent(std::shared_ptr<ThreadGroup> p);
  // __wake_up_parent: a child stopped, continued or died; this process's
  // waiters in wait4/waitid look again.
  void WakeChildWaiters() { NotifyChildDied(); }
  // Whether every task has exited (a zombie or reaped).
  bool dead() const;

 private:
  Kernel& kernel_;
  std::atomic<ThreadGroup*> parent_;
  std::atomic<ThreadId> tgid_{0};
  std::atomic<bool> exiting_{false};
  std::atomic<int> dumpable_{1};
  std::atomic<bool> did_exec_{false};
  std::atomic<ThreadId> pgid_{0};
  std::atomic<ThreadId> sid_{0};
  // The task of an execve in progress (DeThread); every other task exits.
  std::atomic<Task*> exec_survivor_{nullptr};

  mutable absl::Mutex mu_;
  std::string exe_path_ ABSL_GUARDED_BY(mu_);
  vfs::VirtualDentry exe_file_ ABSL_GUARDED_BY(mu_);
  LimitSet limits_ ABSL_GUARDED_BY(mu_);
  std::array<abi::KernelSigaction, abi::kNumSignals + 1> actions_
      ABSL_GUARDED_BY(mu_) = {};
  std::vector<Task*> tasks_ ABSL_GUARDED_BY(mu_);
  std::optional<ExitStatus> exit_status_ ABSL_GUARDED_BY(mu_);
  bool dead_ ABSL_GUARDED_BY(mu_) = false;
  SignalQueue shared_pending_ ABSL_GUARDED_BY(mu_);
  size_t signal_target_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int> exit_signal_{SIGCHLD};
  ProcessCpuTimes cpu_times_;
  vfs::WaitQueue signalfd_queue_;
  ProcessTimers timers_{*this};
  JobControl jobctl_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> unkillable_{false};
  std::atomic<ThreadId> creator_tid_{0};
  // parent_ as a reference (parent_ref); guarded by parent_mu_ (a leaf).
  mutable absl::Mutex parent_mu_;
  std::weak_ptr<ThreadGroup> parent_weak_ ABSL_GUARDED_BY(parent_mu_);

  // A parent blocked in wait4. Notify (child death, interrupt) sets
  // `event`.
  struct ChildWaiter : Blocker {
    void Notify() override {
      absl::MutexLock l(&mu);
      event = true;
    }
    absl::Mutex mu;
    bool event ABSL_GUARDED_BY(mu) = false;
  };
  // Called (without the child's mu_ held) when a child has died.
  void NotifyChildDied();
  std::vector<std::shared_ptr<ThreadGroup>> children_ ABSL_GUARDED_BY(mu_);
  std::vector<ChildWaiter*> child_waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_THREAD_GROUP_H_
