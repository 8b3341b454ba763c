// Pending signals: Linux's struct sigpending (a set plus a queue of
// siginfo) and the per-task and per-thread-group signal state that the
// send and delivery paths (signal.h) share.
//
// Standard signals (1-31) coalesce: a second instance while one is pending
// is dropped. Real-time signals (32-64) queue, each with its own siginfo,
// delivered in the order sent. Dequeue takes the synchronous faults first
// (SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGSYS), then the lowest
// number, as Linux's next_signal.
//
// Locking: a SignalQueue is not thread-safe; the queues of a thread group
// and of its tasks are guarded by ThreadGroup::signal_mu() (Linux's
// siglock).
#ifndef SENTRY_KERNEL_SIGNAL_QUEUE_H_
#define SENTRY_KERNEL_SIGNAL_QUEUE_H_

#include <signal.h>
#include <stdint.h>

#include <deque>
#include <functional>
#include <optional>

#include "sentry/abi/linux.h"
#include "sentry/base/errno.h"
#include "sentry/base/result.h"

namespace sandbox::kernel {

class Task;

// A 64-bit signal set, bit sig-1 for signal sig (the kernel's sigset_t).
using SigSet = uint64_t;
constexpr SigSet SigBit(int sig) { return SigSet{1} << (sig - 1); }
inline constexpr SigSet kUnblockableSignals = SigBit(SIGKILL) | SigBit(SIGSTOP);
// Linux's SYNCHRONOUS_MASK: faults are dequeued before anything else.
inline constexpr SigSet kSynchronousSignals = SigBit(SIGSEGV) | SigBit(SIGBUS) |
                                              SigBit(SIGILL) | SigBit(SIGTRAP) |
                                              SigBit(SIGFPE) | SigBit(SIGSYS);
inline constexpr SigSet kStopSignals =
    SigBit(SIGSTOP) | SigBit(SIGTSTP) | SigBit(SIGTTIN) | SigBit(SIGTTOU);
constexpr bool ValidSignal(int sig) {
  return sig >= 1 && sig <= abi::kNumSignals;
}
constexpr bool IsRealtimeSignal(int sig) { return sig >= 32; }

// What SIG_DFL does (signal(7)).
enum class DefaultAction { kTerminate, kCoreDump, kIgnore, kStop, kContinue };
DefaultAction DefaultActionOf(int sig);

// Whether `act` makes `sig` ignored (SIG_IGN, or SIG_DFL whose default is
// to ignore): Linux's sig_handler_ignored.
bool ActionIgnores(int sig, const abi::KernelSigaction& act);

class SignalQueue {
 public:
  // Queues `info` (si_signo set). A standard signal already pending is not
  // queued again (false); a real-time one always is.
  bool Enqueue(const siginfo_t& info);
  // The pending set.
  SigSet pending() const { return pending_; }
  // Removes and returns the next signal not in `blocked` (synchronous
  // faults first, then the lowest number; a real-time signal's instances in
  // the order sent), or nothing.
  std::optional<siginfo_t> Dequeue(SigSet blocked);
  // Drops every pending instance of the signals in `set` (SIG_IGN
  // installed, SIGCONT flushing stop signals and the reverse).
  void Flush(SigSet set);
  // Number of queued siginfo records (RLIMIT_SIGPENDING accounting).
  size_t size() const { return queue_.size(); }
  // Whether a queued siginfo satisfies `pred` (timers.cc: is a timer's
  // signal still queued).
  template <typename Pred>
  bool AnyQueued(Pred pred) const {
    for (const siginfo_t& i : queue_) {
      if (pred(i)) return true;
    }
    return false;
  }
  // Drops every queued siginfo satisfying `pred` (execve's
  // flush_itimer_signals: the deleted POSIX timers' signals).
  template <typename Pred>
  void RemoveIf(Pred pred) {
    for (auto it = queue_.begin(); it != queue_.end();) {
      it = pred(*it) ? queue_.erase(it) : it + 1;
    }
    pending_ = 0;
    for (const siginfo_t& i : queue_) pending_ |= SigBit(i.si_signo);
  }

 private:
  SigSet pending_ = 0;
  // In the order sent. At most one entry per standard signal.
  std::deque<siginfo_t> queue_;
};

// The signal state of one task. Fields are guarded by the thread group's
// signal_mu() unless marked "task thread".
struct TaskSignals {
  // Signals sent to this thread (tkill, tgkill, faults).
  SignalQueue pending;
  // Set once the task's run loop is ending: it takes no more group signals.
  bool exiting = false;
  // Job control (Linux's task->jobctl bits): a group stop asks this task to
  // stop (JOBCTL_STOP_PENDING; stop_consume: it counts in the group's
  // group_stop_count), the task dequeued a stop signal it has not acted on
  // yet (JOBCTL_STOP_DEQUEUED; SIGCONT cancels it), and the task is stopped
  // (JOBCTL_STOPPED: it sleeps in DeliverSignals until SIGCONT or SIGKILL).
  bool stop_pending = false;
  bool stop_consume = false;
  bool stop_dequeued = false;
  bool stopped = false;
  // The mask before rt_sigtimedwait unblocked the waited signals (0
  // otherwise): such signals are not ignored at send time.
  SigSet real_blocked = 0;
  // rt_sigsuspend / ppoll / pselect: the mask to restore after the signal
  // (Linux's saved_sigmask with TIF_RESTORE_SIGMASK). Task thread.
  std::optional<SigSet> saved_mask;
  // The restart code of the syscall that just returned, until the run
  // loop's signal step decides (EINTR, restart or restart_syscall). Task
  // thread.
  std::optional<Errno> syscall_restart;
  // restart_syscall(2)'s continuation for a syscall that returned
  // ERESTART_RESTARTBLOCK (Linux's restart_block). Task thread.
  std::function<KResult<uint64_t>(Task&)> restart_fn;
  // The last fault, for sigcontext's cr2, err and trapno. Task thread.
  uint64_t fault_addr = 0, fault_err = 0, fault_trapno = 0;
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_SIGNAL_QUEUE_H_
