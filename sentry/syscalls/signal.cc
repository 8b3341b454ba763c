// Signal syscalls: actions, masks, sending, waiting, sigreturn. The
// machinery is in sentry/kernel/signal.h.
#include "sentry/kernel/signal.h"

#include <poll.h>
#include <signal.h>
#include <time.h>

#include <climits>

#include "platform/sleep_state.h"
#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signal_frame.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

using kernel::kUnblockableSignals;
using kernel::SigBit;
using kernel::SigSet;

// Blocks until the task is interrupted (a signal it does not block, or a
// kill) or `timeout_ns` (if >= 0) passes. True if interrupted.
bool WaitInterrupted(Task& t, int64_t timeout_ns) {
  vfs::IoContext ctx = t.io_context();
  if (ctx.interrupt_fd < 0) return false;
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  const int64_t begin = start.tv_sec * 1000000000LL + start.tv_nsec;
  platform::ScopedSleep sleeping;  // /proc: S
  for (;;) {
    timespec to, *top = nullptr;
    if (timeout_ns >= 0) {
      timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      int64_t left =
          timeout_ns - (now.tv_sec * 1000000000LL + now.tv_nsec - begin);
      if (left <= 0) return false;
      to = {left / 1000000000, left % 1000000000};
      top = &to;
    }
    pollfd p = {ctx.interrupt_fd, POLLIN, 0};
    if (ppoll(&p, 1, top, nullptr) > 0) return true;
  }
}

// rt_sigaction(2).
SyscallResult RtSigaction(Task& t, int32_t sig,
                          UserPtr<abi::KernelSigaction> act,
                          UserPtr<abi::KernelSigaction> oldact,
                          uint64_t sigsetsize) {
  if (sigsetsize != abi::kSigsetSize) return kEINVAL;
  if (!kernel::ValidSignal(sig)) return kEINVAL;
  abi::KernelSigaction next = {};
  if (!act.null()) {
    if (sig == SIGKILL || sig == SIGSTOP) return kEINVAL;
    TRY(next, act.CopyIn(t));
    next.mask &= ~kUnblockableSignals;
  }
  kernel::ThreadGroup& tg = t.thread_group();
  abi::KernelSigaction old;
  {
    absl::MutexLock l(&tg.signal_mu());
    old = tg.ActionLocked(sig);
    if (!act.null()) {
      tg.ActionLocked(sig) = next;
      // POSIX: setting a pending signal's action to ignore discards it,
      // for every thread (do_sigaction).
      if (kernel::ActionIgnores(sig, next)) {
        tg.SharedPendingLocked().Flush(SigBit(sig));
        for (kernel::Task* o : tg.TasksLocked()) {
          o->signals().pending.Flush(SigBit(sig));
        }
      }
    }
  }
  if (!oldact.null()) TRY_VOID(oldact.CopyOut(t, old));
  return uint64_t{0};
}

// rt_sigprocmask(2).
SyscallResult RtSigprocmask(Task& t, int32_t how, UserPtr<uint64_t> set,
                            UserPtr<uint64_t> oldset, uint64_t sigsetsize) {
  if (sigsetsize != abi::kSigsetSize) return kEINVAL;
  const SigSet old = t.signal_mask();
  SigSet next = old;
  if (!set.null()) {
    TRY(uint64_t s, set.CopyIn(t));
    switch (how) {
      case SIG_BLOCK:
        next = old | s;
        break;
      case SIG_UNBLOCK:
        next = old & ~s;
        break;
      case SIG_SETMASK:
        next = s;
        break;
      default:
        return kEINVAL;
    }
  }
  if (!oldset.null()) TRY_VOID(oldset.CopyOut(t, old));
  if (!set.null()) kernel::SetSignalMask(t, next);
  return uint64_t{0};
}

// rt_sigpending(2): copies sigsetsize (at most 8) bytes.
SyscallResult RtSigpending(Task& t, UserAddr set, uint64_t sigsetsize) {
  if (sigsetsize > abi::kSigsetSize) return kEINVAL;
  const SigSet pending = kernel::PendingBlockedSignals(t);
  TRY_VOID(t.CopyOutFull(set.addr, &pending, sigsetsize));
  return uint64_t{0};
}

// rt_sigsuspend(2): waits with `mask` until a signal is delivered; the old
// mask comes back when the handler returns (it is saved in the frame).
SyscallResult RtSigsuspend(Task& t, UserPtr<uint64_t> mask,
                           uint64_t sigsetsize) {
  if (sigsetsize != abi::kSigsetSize) return kEINVAL;
  TRY(uint64_t m, mask.CopyIn(t));
  t.signals().saved_mask = t.signal_mask();
  kernel::SetSignalMask(t, m);
  WaitInterrupted(t, -1);
  return kERestartNoHand;
}

// pause(2): sleeps until a signal is delivered to a handler (without one,
// ERESTARTNOHAND restarts it).
SyscallResult Pause(Task& t) {
  WaitInterrupted(t, -1);
  return kERestartNoHand;
}

// rt_sigtimedwait(2).
SyscallResult RtSigtimedwait(Task& t, UserPtr<uint64_t> uset, UserAddr uinfo,
                             UserPtr<abi::Timespec> uts, uint64_t sigsetsize) {
  if (sigsetsize != abi::kSigsetSize) return kEINVAL;
  TRY(uint64_t set, uset.CopyIn(t));
  set &= ~kUnblockableSignals;
  int64_t timeout = -1;
  if (!uts.null()) {
    TRY(abi::Timespec ts, uts.CopyIn(t));
    if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) {
      return kEINVAL;
    }
    timeout = ts.tv_sec > INT64_MAX / 1000000000 - 1
                  ? INT64_MAX
                  : ts.tv_sec * 1000000000 + ts.tv_nsec;
  }
  std::optional<siginfo_t> info = kernel::DequeueSignalIn(t, set);
  bool interrupted = false;
  if (!info.has_value() && timeout != 0) {
    // The waited signals wake the task while it sleeps (real_blocked).
    const SigSet real = kernel::BeginSigwait(t, set);
    interrupted = WaitInterrupted(t, timeout);
    kernel::EndSigwait(t, real);
    info = kernel::DequeueSignalIn(t, set);
  }
  if (!info.has_value()) return interrupted ? kEINTR : kEAGAIN;
  if (!uinfo.null()) TRY_VOID(t.CopyOutFull(uinfo.addr, &*info, sizeof(*info)));
  return static_cast<uint64_t>(info->si_signo);
}

// sigaltstack(2).
SyscallResult Sigaltstack(Task& t, UserPtr<kernel::StackT> ss,
                          UserPtr<kernel::StackT> old) {
  const uint64_t sp = t.cpu().regs.rsp;
  kernel::AltStack alt = t.alt_stack();
  if (!old.null()) TRY_VOID(old.CopyOut(t, kernel::AltStackForUser(alt, sp)));
  if (!ss.null()) {
    TRY(kernel::StackT s, ss.CopyIn(t));
    TRY_VOID(kernel::SetAltStack(alt, s, sp));
    t.set_alt_stack(alt);
  }
  return uint64_t{0};
}

// rt_sigreturn(2).
SyscallResult RtSigreturn(Task& t) { return kernel::SignalReturn(t); }

// restart_syscall(2): continues a syscall that returned
// ERESTART_RESTARTBLOCK; EINTR when there is none (do_no_restart_syscall).
SyscallResult RestartSyscall(Task& t) {
  auto fn = std::move(t.signals().restart_fn);
  t.signals().restart_fn = nullptr;
  if (!fn) return kEINTR;
  return fn(t);
}

// Sends `info` to one thread after check_kill_permission; signal 0 only
// checks.
KResult<uint64_t> SendToThread(Task& t, kernel::Task& target,
                               const siginfo_t& info) {
  const int sig = info.si_signo;
  if (!kernel::ValidSignal(sig) && sig != 0) return kEINVAL;
  if (!kernel::MayKill(t, target, sig)) return kEPERM;
  if (sig != 0) TRY_VOID(kernel::SendSignalToTask(target, info));
  return uint64_t{0};
}

KResult<uint64_t> SendToProcess(Task& t, kernel::Task& member,
                                const siginfo_t& info) {
  const int sig = info.si_signo;
  if (!kernel::ValidSignal(sig) && sig != 0) return kEINVAL;
  if (!kernel::MayKill(t, member, sig)) return kEPERM;
  if (sig != 0) {
    TRY_VOID(kernel::SendSignalToGroup(member.thread_group(), info));
  }
  return uint64_t{0};
}

// One live task of each process in the sandbox (its lowest TID), held.
std::vector<std::shared_ptr<kernel::Task>> AllProcesses(Task& t) {
  kernel::PidNamespace& ns = t.kernel().root_pid_namespace();
  std::vector<std::shared_ptr<kernel::Task>> out;
  std::vector<const kernel::ThreadGroup*> seen;
  for (kernel::ThreadId tid : ns.Tids()) {
    std::shared_ptr<kernel::Task> k = ns.Lookup(tid);
    if (k == nullptr) continue;
    const kernel::ThreadGroup* g = &k->thread_group();
    if (std::find(seen.begin(), seen.end(), g) != seen.end()) continue;
    seen.push_back(g);
    out.push_back(std::move(k));
  }
  return out;
}

// Sends to every process `match` accepts; ESRCH if none. kill(-1)
// (kill_something_info) returns the last result other than EPERM (so 0
// when every one refused); a process group (__kill_pgrp_info) succeeds if
// any process took it, else returns the last error.
template <typename Match>
KResult<uint64_t> SendToMany(Task& t, int32_t sig, Match match, bool all_mode) {
  bool any = false, any_ok = false;
  KResult<uint64_t> last = uint64_t{0};
  for (const std::shared_ptr<kernel::Task>& k : AllProcesses(t)) {
    if (!match(*k)) continue;
    any = true;
    KResult<uint64_t> r =
        SendToProcess(t, *k, kernel::UserSignalInfo(sig, SI_USER, &t));
    any_ok |= r.ok();
    if (!all_mode || r.ok() || r.error() != kEPERM) last = r;
  }
  if (!any) return kESRCH;
  if (!all_mode && any_ok) return uint64_t{0};
  return last;
}

// kill(2).
SyscallResult Kill(Task& t, int32_t pid, int32_t sig) {
  if (sig < 0 || sig > abi::kNumSignals) return kEINVAL;
  kernel::PidNamespace& ns = t.kernel().root_pid_namespace();
  if (pid > 0) {
    std::shared_ptr<kernel::Task> target = ns.Lookup(pid);
    if (target == nullptr) return kESRCH;
    return SendToProcess(t, *target, kernel::UserSignalInfo(sig, SI_USER, &t));
  }
  if (pid == INT_MIN) return kESRCH;
  if (pid == -1) {
    const kernel::ThreadGroup* self = &t.thread_group();
    return SendToMany(
        t, sig,
        [self](kernel::Task& k) {
          return k.thread_group().tgid() > 1 && &k.thread_group() != self;
        },
        /*all_mode=*/true);
  }
  const kernel::ThreadId pgid = pid == 0 ? t.thread_group().pgid() : -pid;
  return SendToMany(
      t, sig,
      [pgid](kernel::Task& k) { return k.thread_group().pgid() == pgid; },
      /*all_mode=*/false);
}

// tgkill(2): a thread, checked to be in process `tgid`.
SyscallResult Tgkill(Task& t, int32_t tgid, int32_t tid, int32_t sig) {
  if (tgid <= 0 || tid <= 0) return kEINVAL;
  std::shared_ptr<kernel::Task> target =
      t.kernel().root_pid_namespace().Lookup(tid);
  if (target == nullptr || target->thread_group().tgid() != tgid) {
    return kESRCH;
  }
  return SendToThread(t, *target, kernel::UserSignalInfo(sig, SI_TKILL, &t));
}

// tkill(2).
SyscallResult Tkill(Task& t, int32_t tid, int32_t sig) {
  if (tid <= 0) return kEINVAL;
  std::shared_ptr<kernel::Task> target =
      t.kernel().root_pid_namespace().Lookup(tid);
  if (target == nullptr) return kESRCH;
  return SendToThread(t, *target, kernel::UserSignalInfo(sig, SI_TKILL, &t));
}

// The siginfo of rt_sigqueueinfo / rt_tgsigqueueinfo: the caller may not
// pose as the kernel or kill/tkill (si_code >= 0 or SI_TKILL) except to
// itself.
KResult<siginfo_t> QueuedInfo(Task& t, UserAddr uinfo, int32_t sig,
                              bool to_self) {
  siginfo_t info;
  TRY_VOID(t.CopyInFull(uinfo.addr, &info, sizeof(info)));
  if ((info.si_code >= 0 || info.si_code == SI_TKILL) && !to_self) {
    return kEPERM;
  }
  info.si_signo = sig;
  return info;
}

// rt_sigqueueinfo(2).
SyscallResult RtSigqueueinfo(Task& t, int32_t tgid, int32_t sig,
                             UserAddr uinfo) {
  TRY(siginfo_t info,
      QueuedInfo(t, uinfo, sig, tgid == t.thread_group().tgid()));
  std::shared_ptr<kernel::Task> target =
      t.kernel().root_pid_namespace().Lookup(tgid);
  if (target == nullptr) return kESRCH;
  return SendToProcess(t, *target, info);
}

// rt_tgsigqueueinfo(2).
SyscallResult RtTgsigqueueinfo(Task& t, int32_t tgid, int32_t tid, int32_t sig,
                               UserAddr uinfo) {
  if (tgid <= 0 || tid <= 0) return kEINVAL;
  TRY(siginfo_t info, QueuedInfo(t, uinfo, sig, tid == t.tid()));
  std::shared_ptr<kernel::Task> target =
      t.kernel().root_pid_namespace().Lookup(tid);
  if (target == nullptr || target->thread_group().tgid() != tgid) {
    return kESRCH;
  }
  return SendToThread(t, *target, info);
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(RtSigaction);
SANDBOX_SYSCALL_HANDLER(RtSigprocmask);
SANDBOX_SYSCALL_HANDLER(RtSigpending);
SANDBOX_SYSCALL_HANDLER(RtSigsuspend);
SANDBOX_SYSCALL_HANDLER(Pause);
SANDBOX_SYSCALL_HANDLER(RtSigtimedwait);
SANDBOX_SYSCALL_HANDLER(RtSigreturn);
SANDBOX_SYSCALL_HANDLER(RestartSyscall);
SANDBOX_SYSCALL_HANDLER(Sigaltstack);
SANDBOX_SYSCALL_HANDLER(Kill);
SANDBOX_SYSCALL_HANDLER(Tgkill);
SANDBOX_SYSCALL_HANDLER(Tkill);
SANDBOX_SYSCALL_HANDLER(RtSigqueueinfo);
SANDBOX_SYSCALL_HANDLER(RtTgsigqueueinfo);

}  // namespace sandbox::syscalls
