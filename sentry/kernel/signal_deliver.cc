// The delivery side of signals, on the receiving task's own thread: Linux's
// get_signal, handle_signal and arch_do_signal_or_restart
// (arch/x86/kernel/signal.c), and rt_sigreturn.
#include <signal.h>

#include <atomic>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/log.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/signal_frame.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"

namespace sandbox::kernel {
namespace {

constexpr uint64_t kNrRestartSyscall = 219;
constexpr uint64_t kSyscallInsnLen = 2;  // syscall: 0f 05

FpuFormat FpuOf(Kernel& k) {
  FpuFormat f;
  f.size = kXsaveMinSize;
  f.xfeatures = kXfeatureFpSse;
  if (platform::Platform* p = k.platform(); p != nullptr) {
    f.size = std::max(p->FpStateSize(), kXsaveMinSize);
    uint32_t r[4] = {};
    p->Cpuid(0xd, 0, r);
    uint64_t x = r[0] | (uint64_t{r[3]} << 32);
    if (x != 0) f.xfeatures = x;
  }
  return f;
}

uint64_t NegErrno(int e) {
  return static_cast<uint64_t>(-static_cast<int64_t>(e));
}

// handle_signal's restart rules for the syscall a handler interrupts.
void RestartForHandler(Task& t, const abi::KernelSigaction& act) {
  std::optional<Errno>& rs = t.signals().syscall_restart;
  if (!rs.has_value()) return;
  const int e = rs->number();
  rs.reset();
  user_regs_struct& regs = t.cpu().regs;
  switch (e) {
    case kERESTART_RESTARTBLOCK:
    case kERESTARTNOHAND:
      regs.rax = NegErrno(EINTR);
      break;
    case kERESTARTSYS:
      if (!(act.flags & SA_RESTART)) {
        regs.rax = NegErrno(EINTR);
        break;
      }
      [[fallthrough]];
    case kERESTARTNOINTR:
      regs.rax = regs.orig_rax;
      regs.rip -= kSyscallInsnLen;
      break;
  }
}

// arch_do_signal_or_restart without a handler: every restart code
// restarts; ERESTART_RESTARTBLOCK through restart_syscall(2).
void RestartWithoutHandler(Task& t) {
  std::optional<Errno>& rs = t.signals().syscall_restart;
  if (!rs.has_value()) return;
  const int e = rs->number();
  rs.reset();
  user_regs_struct& regs = t.cpu().regs;
  if (e == kERESTART_RESTARTBLOCK) {
    regs.rax = kNrRestartSyscall;
  } else {
    regs.rax = regs.orig_rax;
  }
  regs.rip -= kSyscallInsnLen;
}

// Whether a core-dumping signal reports a core (WCOREDUMP): Linux's
// do_coredump succeeds only for a dumpable process with a non-zero
// RLIMIT_CORE. The Sentry writes no core file.
bool WouldDumpCore(ThreadGroup& tg) {
  return tg.dumpable() != 0 && tg.GetLimit(RLIMIT_CORE).rlim_cur != 0;
}

// handle_signal + setup_rt_frame + signal_delivered.
void HandleSignal(Task& t, const siginfo_t& info,
                  const abi::KernelSigaction& act) {
  const int sig = info.si_signo;
  RestartForHandler(t, act);
  TaskSignals& s = t.signals();
  FrameRequest req;
  req.regs = t.cpu().regs;
  req.fp = &t.cpu().fp;
  req.fpu = FpuOf(t.kernel());
  req.alt = t.alt_stack();
  req.action = act;
  req.info = info;
  req.saved_mask = s.saved_mask.value_or(t.signal_mask());
  req.cr2 = s.fault_addr;
  req.err = s.fault_err;
  req.trapno = s.fault_trapno;
  KResult<FrameResult> r = SetupSignalFrame(t, req);
  if (!r.ok()) {
    ForceSigsegv(t, sig);
    return;
  }
  t.cpu().regs = r->regs;
  // fpu__clear_user_states: the handler starts with a reset FPU.
  t.cpu().fp.clear();
  t.cpu().fp_changed = true;
  s.saved_mask.reset();  // it is in the frame; sigreturn restores it
  SigSet blocked = t.signal_mask() | act.mask;
  if (!(act.flags & SA_NODEFER)) blocked |= SigBit(sig);
  SetSignalMask(t, blocked);
  if (r->disarm_alt_stack) t.set_alt_stack({});
}

}  // namespace

void DeliverSignals(Task& t) {
  ThreadGroup& tg = t.thread_group();
  for (;;) {
    std::optional<siginfo_t> info;
    abi::KernelSigaction act;
    int cld_notify = 0;
    bool join_stop = false;
    {
      absl::MutexLock l(&tg.signal_mu());
      if (tg.exiting()) return;
      // get_signal: a stop or continue to report to the parent
      // (SIGNAL_CLD_MASK), then a group stop to join.
      ThreadGroup::JobControl& j = tg.JobControlLocked();
      if (j.cld_notify != 0) {
        cld_notify = j.cld_notify;
        j.cld_notify = 0;
      } else if (t.signals().stop_pending) {
        join_stop = true;
      } else {
        info = t.signals().pending.Dequeue(t.signal_mask());
        if (!info.has_value()) {
          info = tg.SharedPendingLocked().Dequeue(t.signal_mask());
        }
        if (!info.has_value()) break;
        tg.timers().OnDequeueLocked(t, *info);  // timers.h: re-arm, overrun
        // dequeue_signal: JOBCTL_STOP_DEQUEUED.
        if (kStopSignals & SigBit(info->si_signo)) {
          t.signals().stop_dequeued = true;
        }
        abi::KernelSigaction& a = tg.ActionLocked(info->si_signo);
        act = a;
        // SA_RESETHAND (SA_ONESHOT): the handler runs once.
        if (a.handler != abi::kSigDfl && a.handler != abi::kSigIgn &&
            (a.flags & SA_RESETHAND)) {
          a.handler = abi::kSigDfl;
        }
      }
    }
    if (cld_notify != 0) {
      // The stop signal of a stop in progress is no longer known here
      // (SIGCONT cleared it): Linux reports group_exit_code, now 0.
      NotifyParentCldStop(t, cld_notify, 0);
      continue;
    }
    if (join_stop) {
      (void)DoSignalStop(t, 0);
      continue;
    }
    const int sig = info->si_signo;
    if (act.handler == abi::kSigIgn) continue;
    if (act.handler != abi::kSigDfl) {
      HandleSignal(t, *info, act);
      continue;
    }
    const DefaultAction def = DefaultActionOf(sig);
    if (def == DefaultAction::kIgnore || def == DefaultAction::kContinue) {
      continue;
    }
    // init gets no default action it did not ask for (a signal it blocked
    // when sent), except SIGKILL and SIGSTOP (which can only come from
    // outside) and what the runtime sends.
    if (tg.unkillable() && sig != SIGKILL && sig != SIGSTOP &&
        !(info->si_code == SI_USER && info->si_pid == 0)) {
      continue;
    }
    switch (def) {
      case DefaultAction::kIgnore:
      case DefaultAction::kContinue:
        continue;
      case DefaultAction::kStop:
        // SIGTSTP, SIGTTIN and SIGTTOU are discarded for an orphaned
        // process group (no shell to continue it).
        if (sig != SIGSTOP && ProcessGroupOrphaned(t)) continue;
        (void)DoSignalStop(t, sig);
        continue;
      case DefaultAction::kTerminate:
        tg.ExitGroup(ExitStatus::Killed(sig));
        return;
      case DefaultAction::kCoreDump:
        tg.ExitGroup(ExitStatus::Killed(sig, WouldDumpCore(tg)));
        return;
    }
  }
  RestartWithoutHandler(t);
  // restore_saved_sigmask: no handler took the mask sigsuspend saved.
  if (std::optional<SigSet> saved = t.signals().saved_mask; saved) {
    t.signals().saved_mask.reset();
    SetSignalMask(t, *saved);
  }
}

namespace {

// x86-64 with 48-bit virtual addresses (LA57 is not offered to guests):
// bits 63..47 all equal.
bool IsCanonical(uint64_t addr) {
  const uint64_t top = addr >> 47;
  return top == 0 || top == 0x1ffff;
}

}  // namespace

KResult<uint64_t> SignalReturn(Task& t) {
  // Any restart_syscall pending is void (do_no_restart_syscall).
  t.signals().restart_fn = nullptr;
  KResult<SigreturnResult> r =
      ReadSignalFrame(t, t.cpu().regs, FpuOf(t.kernel()));
  if (!r.ok()) {
    ForceSignal(t, KernelSignalInfo(SIGSEGV));
    return uint64_t{0};
  }
  t.cpu().regs = r->regs;
  t.cpu().fp = std::move(r->fp);  // empty: the reset state
  t.cpu().fp_changed = true;
  SetSignalMask(t, r->mask);
  // restore_altstack: only a failed copy matters; EPERM/EINVAL/ENOMEM are
  // ignored as Linux does.
  AltStack alt = t.alt_stack();
  if (SetAltStack(alt, r->uc_stack, t.cpu().regs.rsp).ok()) {
    t.set_alt_stack(alt);
  }
  // A non-canonical rip cannot be returned to: Linux's IRET faults in the
  // kernel, and the #GP is reported as the user's (fixup_bad_iret,
  // gp_user_force_sig_segv): SIGSEGV, SI_KERNEL, si_addr 0, with the
  // restored registers in its frame. (The platform would otherwise fault
  // in its own return path and lose the process.)
  if (!IsCanonical(t.cpu().regs.rip)) {
    t.signals().fault_trapno = 13;  // #GP
    t.signals().fault_err = 0;
    t.signals().fault_addr = 0;
    ForceSignal(t, KernelSignalInfo(SIGSEGV));
  }
  return t.cpu().regs.rax;
}

}  // namespace sandbox::kernel
