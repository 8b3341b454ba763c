// The send side of signals: Linux's prepare_signal, __send_signal_locked,
// complete_signal, force_sig_info and do_notify_parent.
#include <string.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/log.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"

namespace sandbox::kernel {
namespace {

siginfo_t EmptyInfo(int sig) {
  siginfo_t info;
  memset(&info, 0, sizeof(info));
  info.si_signo = sig;
  return info;
}

// wants_signal: a thread that can take `sig` now. A stopped thread takes
// only SIGKILL: anything else (even a fatal signal) stays pending until
// SIGCONT.
bool WantsSignal(int sig, Task& t) {
  if (t.signals().exiting) return false;
  if (sig == SIGKILL) return true;
  if (t.signals().stopped) return false;
  return (t.signal_mask() & SigBit(sig)) == 0;
}

// What the sender must do once signal_mu() is released.
struct SendOutcome {
  bool fatal = false;  // end the group with the signal (no core)
};

// __send_signal_locked + complete_signal. `target` is the thread for a
// thread-directed signal, null for a process-directed one.
// prepare_signal for SIGCONT: every thread is woken and stops no more; a
// stop that had completed (or was in progress) becomes a continue (or a
// stop) to report, by the next thread through DeliverSignals.
void ContinueLocked(ThreadGroup& tg)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(tg.signal_mu()) {
  for (Task* t : tg.TasksLocked()) {
    TaskSignals& s = t->signals();
    s.stop_pending = s.stop_consume = s.stop_dequeued = false;
    s.stopped = false;  // wakes it (DoSignalStop's Await)
  }
  ThreadGroup::JobControl& j = tg.JobControlLocked();
  int why = 0;
  if (j.stop_stopped) {
    why = CLD_CONTINUED;
  } else if (j.group_stop_count != 0) {
    why = CLD_STOPPED;
  }
  if (why == 0) return;
  // signal_set_stop_flags(why | SIGNAL_STOP_CONTINUED).
  j.stop_stopped = false;
  j.stop_continued = true;
  j.cld_notify = why;
  j.group_stop_count = 0;
  j.group_exit_code = 0;
  for (Task* t : tg.TasksLocked()) {
    if (!t->signals().exiting) {
      t->Interrupt();
      break;
    }
  }
}

// Whether a signal came from outside the sandbox (the runtime's own
// path: SI_USER with no sender). It is not subject to init's immunity.
bool FromOutside(const siginfo_t& info) {
  return info.si_code == SI_USER && info.si_pid == 0;
}

KResult<SendOutcome> SendLocked(ThreadGroup& tg, Task* target,
                                const siginfo_t& info)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(tg.signal_mu()) {
  const int sig = info.si_signo;
  SendOutcome out;
  // A dying group takes only SIGKILL, which changes nothing.
  if (tg.exiting()) return out;
  const std::vector<Task*>& tasks = tg.TasksLocked();
  // prepare_signal: a stop signal discards pending SIGCONTs and SIGCONT
  // discards pending stop signals (and resumes a stopped process).
  SigSet flush = 0;
  if (kStopSignals & SigBit(sig)) flush = SigBit(SIGCONT);
  if (sig == SIGCONT) flush = kStopSignals;
  if (flush != 0) {
    tg.SharedPendingLocked().Flush(flush);
    for (Task* t : tasks) t->signals().pending.Flush(flush);
  }
  if (sig == SIGCONT) ContinueLocked(tg);
  // sig_ignored: dropped unless the receiver blocks it (it may unblock it
  // after changing the action). sig_task_ignored: init (SIGNAL_UNKILLABLE)
  // drops every signal whose action is SIG_DFL, SIGKILL and SIGSTOP
  // included, unless it comes from outside the sandbox.
  const abi::KernelSigaction& act = tg.ActionLocked(sig);
  Task* receiver =
      target != nullptr ? target : (tasks.empty() ? nullptr : tasks[0]);
  const bool receiver_blocks =
      receiver != nullptr &&
      ((receiver->signal_mask() | receiver->signals().real_blocked) &
       SigBit(sig)) != 0;
  if (!receiver_blocks && tg.unkillable() && act.handler == abi::kSigDfl &&
      !FromOutside(info)) {
    return out;
  }
  if (sig != SIGKILL && ActionIgnores(sig, act) && !receiver_blocks) {
    return out;
  }
  SignalQueue& q =
      target != nullptr ? target->signals().pending : tg.SharedPendingLocked();
  if (!IsRealtimeSignal(sig) && (q.pending() & SigBit(sig))) return out;
  if (IsRealtimeSignal(sig)) {
    // RLIMIT_SIGPENDING bounds the queued siginfo (per user in Linux;
    // here per queue, the same bound for one process). Over it, kill()
    // still marks the signal pending (one instance, as Linux keeps the bit
    // without the info); sigqueue and the kernel get EAGAIN.
    const abi::Rlimit64& lim = tg.LimitLocked(RLIMIT_SIGPENDING);
    if (q.size() >= lim.rlim_cur) {
      if (info.si_code != SI_USER) return kEAGAIN;
      if (q.pending() & SigBit(sig)) return out;
    }
  }
  q.Enqueue(info);
  // signalfd_notify: signalfds reading this process may take it now.
  tg.signalfd_queue().Notify(vfs::kPollIn);

  // complete_signal: the thread to wake.
  Task* t = nullptr;
  if (target != nullptr) {
    if (WantsSignal(sig, *target)) t = target;
  } else if (!tasks.empty()) {
    if (WantsSignal(sig, *tasks[0])) {
      t = tasks[0];
    } else {
      size_t start = tg.signal_target_index_locked() % tasks.size();
      for (size_t i = 0; i < tasks.size(); ++i) {
        Task* c = tasks[(start + i) % tasks.size()];
        if (WantsSignal(sig, *c)) {
          t = c;
          tg.set_signal_target_index_locked((start + i) % tasks.size());
          break;
        }
      }
    }
  }
  if (t == nullptr) return out;  // blocked everywhere: stays pending
  // A signal whose default action kills ends the group at once (the
  // core-dumping ones are left to the receiving thread).
  if (act.handler == abi::kSigDfl &&
      (sig == SIGKILL || (DefaultActionOf(sig) == DefaultAction::kTerminate &&
                          !(t->signals().real_blocked & SigBit(sig))))) {
    out.fatal = true;
    return out;
  }
  t->Interrupt();
  return out;
}

KResult<void> Send(ThreadGroup& tg, Task* target, const siginfo_t& info) {
  if (!ValidSignal(info.si_signo)) return kEINVAL;
  SendOutcome out;
  {
    absl::MutexLock l(&tg.signal_mu());
    TRY(out, SendLocked(tg, target, info));
  }
  if (out.fatal) tg.ExitGroup(ExitStatus::Killed(info.si_signo));
  return OkResult();
}

}  // namespace

siginfo_t UserSignalInfo(int sig, int code, const Task* sender) {
  siginfo_t info = EmptyInfo(sig);
  info.si_code = code;
  if (sender != nullptr) {
    info.si_pid = sender->thread_group().tgid();
    info.si_uid = sender->creds().ruid;
  }
  return info;
}

siginfo_t KernelSignalInfo(int sig) {
  siginfo_t info = EmptyInfo(sig);
  info.si_code = SI_KERNEL;
  return info;
}

bool MayKill(const Task& sender, Task& target, int sig) {
  if (&sender.thread_group() == &target.thread_group()) return true;
  const Credentials& c = sender.creds();
  std::shared_ptr<const Credentials> tc = target.CredsRef();
  if (c.euid == tc->suid || c.euid == tc->ruid || c.ruid == tc->suid ||
      c.ruid == tc->ruid || c.HasCapability(kCapKill)) {
    return true;
  }
  return sig == SIGCONT &&
         sender.thread_group().sid() == target.thread_group().sid();
}

KResult<void> SendSignalToTask(Task& target, const siginfo_t& info) {
  return Send(target.thread_group(), &target, info);
}

KResult<void> SendSignalToGroup(ThreadGroup& tg, const siginfo_t& info) {
  return Send(tg, nullptr, info);
}

void ForceSignal(Task& t, const siginfo_t& info) {
  ThreadGroup& tg = t.thread_group();
  const int sig = info.si_signo;
  {
    absl::MutexLock l(&tg.signal_mu());
    abi::KernelSigaction& act = tg.ActionLocked(sig);
    const bool blocked = (t.signal_mask() & SigBit(sig)) != 0;
    if (act.handler == abi::kSigIgn || blocked) {
      if (act.handler == abi::kSigIgn) act.handler = abi::kSigDfl;
      t.set_signal_mask(t.signal_mask() & ~SigBit(sig));
    }
    // force_sig_info_to_task: a fault init does not handle kills it.
    if (act.handler == abi::kSigDfl) tg.set_unkillable(false);
    // A fault while the same fault is pending (coalesced) still kills:
    // the pending one is delivered first.
    t.signals().pending.Enqueue(info);
    tg.signalfd_queue().Notify(vfs::kPollIn);  // signalfd_notify
  }
  t.Interrupt();
}

void ForceSigsegv(Task& t, int sig) {
  if (sig == SIGSEGV) {
    ThreadGroup& tg = t.thread_group();
    absl::MutexLock l(&tg.signal_mu());
    tg.ActionLocked(SIGSEGV).handler = abi::kSigDfl;
  }
  ForceSignal(t, KernelSignalInfo(SIGSEGV));
}

bool NotifyParentOfExit(ThreadGroup& child, ThreadGroup& parent,
                        const ExitStatus& status, uint32_t uid) {
  int sig = child.exit_signal();
  siginfo_t info = EmptyInfo(sig);
  info.si_pid = child.tgid();
  info.si_uid = uid;
  if (status.signo == 0) {
    info.si_code = CLD_EXITED;
    info.si_status = status.code & 0xff;
  } else {
    info.si_code = status.core ? CLD_DUMPED : CLD_KILLED;
    info.si_status = status.signo;
  }
  // do_notify_parent: the process's CPU times in clock ticks.
  const CpuSample times = SampleProcess(child, nullptr);
  info.si_utime = NsToClockT(times.user_ns);
  info.si_stime = NsToClockT(times.sys_ns);
  bool autoreap = false;
  SendOutcome out;
  {
    absl::MutexLock l(&parent.signal_mu());
    const abi::KernelSigaction& act = parent.ActionLocked(SIGCHLD);
    if (sig == SIGCHLD &&
        (act.handler == abi::kSigIgn || (act.flags & SA_NOCLDWAIT))) {
      autoreap = true;
      if (act.handler == abi::kSigIgn) sig = 0;
    }
    if (ValidSignal(sig)) {
      KResult<SendOutcome> r = SendLocked(parent, nullptr, info);
      if (r.ok()) out = *r;
    }
  }
  if (out.fatal) parent.ExitGroup(ExitStatus::Killed(sig));
  return autoreap;
}

void NotifyParentCldStop(Task& t, int why, int stop_signo) {
  std::shared_ptr<ThreadGroup> parent = t.thread_group().parent_ref();
  if (parent == nullptr) return;  // init: its parent is outside
  siginfo_t info = EmptyInfo(SIGCHLD);
  info.si_code = why;
  info.si_pid = t.tid();
  info.si_uid = t.CredsRef()->ruid;
  info.si_status = why == CLD_CONTINUED ? SIGCONT : (stop_signo & 0x7f);
  {
    absl::MutexLock l(&parent->signal_mu());
    const abi::KernelSigaction& act = parent->ActionLocked(SIGCHLD);
    if (act.handler != abi::kSigIgn && !(act.flags & SA_NOCLDSTOP)) {
      // SIGCHLD never kills (its default is to ignore).
      (void)SendLocked(*parent, nullptr, info);
    }
  }
  parent->WakeChildWaiters();  // __wake_up_parent
}

SigSet BeginSigwait(Task& t, SigSet set) {
  ThreadGroup& tg = t.thread_group();
  SigSet real;
  bool deliverable;
  {
    absl::MutexLock l(&tg.signal_mu());
    real = t.signal_mask();
    t.signals().real_blocked = real;
    const SigSet mask = real & ~set;
    t.set_signal_mask(mask);
    deliverable =
        ((t.signals().pending.pending() | tg.SharedPendingLocked().pending()) &
         ~mask) != 0;
  }
  if (deliverable) t.Interrupt();
  return real;
}

void EndSigwait(Task& t, SigSet real) {
  ThreadGroup& tg = t.thread_group();
  absl::MutexLock l(&tg.signal_mu());
  t.set_signal_mask(real);
  t.signals().real_blocked = 0;
}

void SetSignalMask(Task& t, SigSet mask) {
  mask &= ~kUnblockableSignals;
  ThreadGroup& tg = t.thread_group();
  bool deliverable;
  {
    absl::MutexLock l(&tg.signal_mu());
    t.set_signal_mask(mask);
    deliverable =
        ((t.signals().pending.pending() | tg.SharedPendingLocked().pending()) &
         ~mask) != 0;
  }
  if (deliverable) t.Interrupt();
}

SigSet PendingBlockedSignals(Task& t) {
  ThreadGroup& tg = t.thread_group();
  absl::MutexLock l(&tg.signal_mu());
  return (t.signals().pending.pending() | tg.SharedPendingLocked().pending()) &
         t.signal_mask();
}

SignalStatus SignalStatusOf(Task& t) {
  ThreadGroup& tg = t.thread_group();
  absl::MutexLock l(&tg.signal_mu());
  SignalStatus s;
  s.pending = t.signals().pending.pending();
  s.shared = tg.SharedPendingLocked().pending();
  s.blocked = t.signal_mask();
  s.queued = t.signals().pending.size() + tg.SharedPendingLocked().size();
  return s;
}

bool HasSignalOutside(Task& t, SigSet mask) {
  ThreadGroup& tg = t.thread_group();
  absl::MutexLock l(&tg.signal_mu());
  return ((t.signals().pending.pending() | tg.SharedPendingLocked().pending()) &
          ~mask) != 0;
}

std::optional<siginfo_t> DequeueSignalIn(Task& t, SigSet set) {
  ThreadGroup& tg = t.thread_group();
  absl::MutexLock l(&tg.signal_mu());
  std::optional<siginfo_t> info = t.signals().pending.Dequeue(~set);
  if (!info.has_value()) info = tg.SharedPendingLocked().Dequeue(~set);
  if (info.has_value()) tg.timers().OnDequeueLocked(t, *info);  // timers.h
  return info;
}

void SignalsOnTaskExit(Task& t) {
  ThreadGroup& tg = t.thread_group();
  int notify_signo = 0;
  {
    absl::MutexLock l(&tg.signal_mu());
    TaskSignals& s = t.signals();
    // exit_signals: a thread asked to join a group stop counts as stopped
    // (unless the whole group is exiting); the last one reports it.
    if (s.stop_pending && !tg.exiting() && tg.TasksLocked().size() > 1) {
      ThreadGroup::JobControl& j = tg.JobControlLocked();
      if (s.stop_consume && j.group_stop_count > 0 &&
          --j.group_stop_count == 0 && !j.stop_stopped) {
        j.stop_stopped = true;
        j.stop_continued = false;
        j.cld_notify = 0;
        notify_signo = j.group_exit_code;
      }
    }
    s.stop_pending = s.stop_consume = s.stop_dequeued = false;
  }
  if (notify_signo != 0) NotifyParentCldStop(t, CLD_STOPPED, notify_signo);
  absl::MutexLock l(&tg.signal_mu());
  t.signals().exiting = true;
  // retarget_shared_pending: wake a thread for what this one would have
  // taken.
  SigSet shared = tg.SharedPendingLocked().pending() & ~t.signal_mask();
  if (shared == 0) return;
  for (Task* o : tg.TasksLocked()) {
    if (o == &t || o->signals().exiting) continue;
    if (shared & ~o->signal_mask()) {
      o->Interrupt();
      shared &= o->signal_mask();
      if (shared == 0) break;
    }
  }
}

}  // namespace sandbox::kernel
