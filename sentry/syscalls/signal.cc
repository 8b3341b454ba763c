// Signal syscalls: actions and masks are recorded; delivery comes with the
// signals issue.
#include <signal.h>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/syscalls/table.h"

namespace sandbox::syscalls {
namespace {

constexpr uint64_t SigBit(int sig) { return uint64_t{1} << (sig - 1); }
constexpr uint64_t kUnblockable = SigBit(SIGKILL) | SigBit(SIGSTOP);

// rt_sigaction(2).
SyscallResult RtSigaction(Task& t, int32_t sig,
                          UserPtr<abi::KernelSigaction> act,
                          UserPtr<abi::KernelSigaction> oldact,
                          uint64_t sigsetsize) {
  if (sigsetsize != abi::kSigsetSize) return kEINVAL;
  if (sig < 1 || sig > abi::kNumSignals) return kEINVAL;
  abi::KernelSigaction next = {};
  if (!act.null()) {
    if (sig == SIGKILL || sig == SIGSTOP) return kEINVAL;
    TRY(next, act.CopyIn(t));
    next.mask &= ~kUnblockable;
  }
  abi::KernelSigaction old = t.thread_group().GetAction(sig);
  if (!oldact.null()) TRY_VOID(oldact.CopyOut(t, old));
  if (!act.null()) t.thread_group().SetAction(sig, next);
  return uint64_t{0};
}

// rt_sigprocmask(2).
SyscallResult RtSigprocmask(Task& t, int32_t how, UserPtr<uint64_t> set,
                            UserPtr<uint64_t> oldset, uint64_t sigsetsize) {
  if (sigsetsize != abi::kSigsetSize) return kEINVAL;
  uint64_t old = t.signal_mask();
  uint64_t next = old;
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
  t.set_signal_mask(next & ~kUnblockable);
  return uint64_t{0};
}

// The user layout of stack_t.
struct StackT {
  uint64_t ss_sp;
  int32_t ss_flags;
  int32_t pad;
  uint64_t ss_size;
};
static_assert(sizeof(StackT) == 24);

// sigaltstack(2): recorded until handlers are delivered.
SyscallResult Sigaltstack(Task& t, UserPtr<StackT> ss, UserPtr<StackT> old) {
  constexpr int32_t kSsOnstack = 1, kSsDisable = 2;
  constexpr int32_t kSsAutodisarm = 1 << 31;
  constexpr uint64_t kMinSigStkSz = 2048;
  const kernel::Task::AltStack cur = t.alt_stack();
  if (!old.null()) {
    TRY_VOID(old.CopyOut(t, StackT{cur.sp, cur.flags, 0, cur.size}));
  }
  if (!ss.null()) {
    TRY(StackT s, ss.CopyIn(t));
    int32_t mode = s.ss_flags & ~kSsAutodisarm;
    if (mode != 0 && mode != kSsDisable && mode != kSsOnstack) return kEINVAL;
    if (mode == kSsDisable) {
      t.set_alt_stack({});
    } else {
      if (s.ss_size < kMinSigStkSz) return kENOMEM;
      t.set_alt_stack({s.ss_sp, s.ss_flags & kSsAutodisarm, s.ss_size});
    }
  }
  return uint64_t{0};
}

// Sends `sig` to the caller's own process (default actions only).
KResult<uint64_t> SignalSelf(Task& t, int32_t sig) {
  if (sig < 0 || sig > abi::kNumSignals) return kEINVAL;
  if (sig != 0) t.thread_group().SignalDefaultAction(sig);
  return uint64_t{0};
}

// kill(2): the caller's own process only (by its PID, 0 or -1).
SyscallResult Kill(Task& t, int32_t pid, int32_t sig) {
  if (pid != t.thread_group().tgid() && pid != 0 && pid != -1) return kESRCH;
  return SignalSelf(t, sig);
}

// tgkill(2).
SyscallResult Tgkill(Task& t, int32_t tgid, int32_t tid, int32_t sig) {
  if (tgid <= 0 || tid <= 0) return kEINVAL;
  if (tgid != t.thread_group().tgid() || tid != t.tid()) return kESRCH;
  return SignalSelf(t, sig);
}

// tkill(2).
SyscallResult Tkill(Task& t, int32_t tid, int32_t sig) {
  if (tid <= 0) return kEINVAL;
  if (tid != t.tid()) return kESRCH;
  return SignalSelf(t, sig);
}

}  // namespace

void RegisterSignalSyscalls(SyscallTable& t) {
  using namespace abi;  // NOLINT: nr::
  t.Partial<&RtSigaction>(nr::rt_sigaction,
                          "recorded; handlers are not delivered yet");
  t.Partial<&RtSigprocmask>(nr::rt_sigprocmask,
                            "recorded; no signal is queued yet");
  constexpr const char* kSelfOnly =
      "to the caller only; default actions (stop signals end the process "
      "too), handlers not delivered";
  t.Partial<&Kill>(nr::kill, kSelfOnly);
  t.Partial<&Sigaltstack>(nr::sigaltstack,
                          "recorded; handlers are not delivered yet");
  t.Partial<&Tgkill>(nr::tgkill, kSelfOnly);
  t.Partial<&Tkill>(nr::tkill, kSelfOnly);
}

}  // namespace sandbox::syscalls
