// Signals: sending (signal_send.cc, Linux's kernel/signal.c send side) and
// delivery (signal_deliver.cc: get_signal, handle_signal, the syscall
// restart rules, rt_sigreturn). The queues are in signal_queue.h, the x86-64
// frame in signal_frame.h.
//
// State and locking (Linux's siglock is ThreadGroup::signal_mu(), which is
// ThreadGroup::mu_):
//  - the group's shared pending queue, its actions, and every task's
//    pending queue and `exiting` flag are guarded by signal_mu();
//  - a task's blocked mask (Task::signal_mask) is written by its own
//    thread under signal_mu() (SetSignalMask) and read by it without a
//    lock, by senders under signal_mu().
// A sender queues the signal, picks a thread that does not block it
// (complete_signal's wants_signal, the leader first) and interrupts it
// (Task::Interrupt: a blocking wait returns ERESTART*, guest code stops);
// that thread's run loop delivers before it returns to guest code.
//
// Lock order: ThreadGroup::mu_ (signal_mu) -> Task::mu_ -> waiter mutexes.
// A parent's signal_mu is never held with a child's.
#ifndef SENTRY_KERNEL_SIGNAL_H_
#define SENTRY_KERNEL_SIGNAL_H_

#include <signal.h>

#include <optional>

#include "sentry/base/result.h"
#include "sentry/kernel/signal_queue.h"

namespace sandbox::kernel {

class Task;
class ThreadGroup;
struct ExitStatus;

// ---- Sending (signal_send.cc). ----

// The siginfo of a signal sent by `sender` with kill/tkill/tgkill
// (si_code SI_USER or SI_TKILL, the sender's TGID and real uid). A null
// sender (the Sentry, from outside the sandbox) gives si_pid 0.
siginfo_t UserSignalInfo(int sig, int code, const Task* sender);
// A signal the kernel raises for a reason (SIGPIPE, SIGCHLD...):
// SI_KERNEL with no sender.
siginfo_t KernelSignalInfo(int sig);

// check_kill_permission: same process, or kill_ok_by_cred (the sender's
// real or effective uid is the target's real or saved uid), or CAP_KILL;
// SIGCONT within one session.
bool MayKill(const Task& sender, Task& target, int sig);

// Sends to one thread (tkill, tgkill, faults) or to a process (kill). The
// signal is dropped when the process ignores it and the receiver does not
// block it (sig_ignored), or is a standard signal already pending.
// EAGAIN: a real-time signal over RLIMIT_SIGPENDING (not for SI_USER).
// A fatal default action (SIGKILL, or a terminating signal with SIG_DFL
// that some thread does not block) ends the whole group at once.
KResult<void> SendSignalToTask(Task& target, const siginfo_t& info);
KResult<void> SendSignalToGroup(ThreadGroup& tg, const siginfo_t& info);

// force_sig_info: a synchronous fault, or a frame that could not be
// written. A blocked signal is unblocked and SIG_IGN reset to SIG_DFL, so
// it is delivered (or kills) on the run loop's next pass.
void ForceSignal(Task& t, const siginfo_t& info);
// force_sigsegv after a failed frame for `sig`: SIGSEGV, and if `sig` was
// SIGSEGV its handler is reset first so the next failure kills.
void ForceSigsegv(Task& t, int sig);

// do_notify_parent: at a process's death, sends its exit signal (the
// clone exit_signal, SIGCHLD for fork) with CLD_EXITED/KILLED/DUMPED to
// its parent. Returns true when the parent ignores SIGCHLD or set
// SA_NOCLDWAIT: the child is reaped at once (auto-reap). `uid` is the
// dead task's real uid (si_uid).
bool NotifyParentOfExit(ThreadGroup& child, ThreadGroup& parent,
                        const ExitStatus& status, uint32_t uid);

// set_current_blocked (task thread): SIGKILL and SIGSTOP are never
// blocked; if the new mask uncovers a pending signal, the task interrupts
// itself so a blocking wait returns and the run loop delivers it.
void SetSignalMask(Task& t, SigSet mask);
// rt_sigtimedwait's sleep: the waited `set` is unblocked so its signals
// wake the task, while the real mask (returned) still counts for sending
// (a signal blocked before the wait is not discarded as ignored; Linux's
// real_blocked). EndSigwait puts the real mask back.
SigSet BeginSigwait(Task& t, SigSet set);
void EndSigwait(Task& t, SigSet real);
// sigpending: signals pending for the task or its process that it blocks.
SigSet PendingBlockedSignals(Task& t);
// /proc/PID/status: SigPnd (the thread's own), ShdPnd (the process's),
// the number of queued siginfo (SigQ) and SigBlk, read under the lock.
struct SignalStatus {
  SigSet pending = 0, shared = 0, blocked = 0;
  size_t queued = 0;
};
SignalStatus SignalStatusOf(Task& t);
// Any signal pending for the task (or its process) outside `mask`.
bool HasSignalOutside(Task& t, SigSet mask);
// Dequeues a pending signal in `set` (rt_sigtimedwait): the thread's own
// queue first, then the process's.
std::optional<siginfo_t> DequeueSignalIn(Task& t, SigSet set);

// The task's run loop is ending: it takes no more group signals, and a
// group signal it was picked for goes to another thread; a group stop it
// was asked to join counts it as stopped (exit_signals).
void SignalsOnTaskExit(Task& t);

// ---- Job control (signal_jobctl.cc). ----
//
// Linux's group stop: a stop signal whose action is SIG_DFL (SIGSTOP; or
// SIGTSTP, SIGTTIN, SIGTTOU unless the process group is orphaned, when
// they are discarded) makes the dequeuing thread start a group stop: every
// thread of the process is asked to stop (stop_pending, interrupted) and
// stops on its next pass through DeliverSignals, before it could return to
// guest code; a thread blocked in the Sentry is interrupted, so its
// syscall returns ERESTART* and is restarted (or EINTR, as Linux, for the
// syscalls that never restart) once the process continues. The last
// thread to stop sends SIGCHLD with CLD_STOPPED to the parent (unless it
// set SA_NOCLDSTOP or ignores SIGCHLD) and makes the stop waitable
// (WSTOPPED). SIGCONT, at send time (even when ignored or blocked), wakes
// every thread, discards pending stop signals and makes a continue
// waitable (WCONTINUED); the next thread through DeliverSignals sends
// CLD_CONTINUED. SIGKILL (or any fatal signal) ends a stopped process.

// do_signal_stop (task thread, no lock held): `signo` is a stop signal just
// dequeued with SIG_DFL (it starts a group stop), or 0 to join a stop in
// progress. Returns false if there is nothing to do; else the task stops,
// sleeps until SIGCONT, SIGKILL or another thread's execve, and returns
// true.
bool DoSignalStop(Task& t, int signo);
// is_current_pgrp_orphaned: no member of the caller's process group has a
// parent in another group of the same session.
bool ProcessGroupOrphaned(Task& t);
// do_notify_parent_cldstop: SIGCHLD with CLD_STOPPED (si_status
// `stop_signo`) or CLD_CONTINUED (SIGCONT) to the parent unless it ignores
// SIGCHLD or set SA_NOCLDSTOP; its waiters are woken in any case.
void NotifyParentCldStop(Task& t, int why, int stop_signo);
// Whether the task is in a group stop now (/proc: state T).
bool TaskStopped(Task& t);

// ---- Delivery (signal_deliver.cc), on the task's own thread. ----

// The run loop's step before returning to guest code (Linux's
// arch_do_signal_or_restart, looped as exit_to_user_mode_loop does):
// dequeues every deliverable signal, applies ignore and default actions
// (terminate and core end the group; stop stops the process until
// SIGCONT, DoSignalStop; continue is a no-op), builds a handler frame per
// caught signal, applies the restart rules to the syscall that just
// returned an ERESTART* code, and restores a mask saved by sigsuspend.
void DeliverSignals(Task& t);

// rt_sigreturn: restores registers, FPU state, mask and alternate stack
// from the frame; a bad frame forces SIGSEGV. Returns the restored rax.
KResult<uint64_t> SignalReturn(Task& t);

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_SIGNAL_H_
