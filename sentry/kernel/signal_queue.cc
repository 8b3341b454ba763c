#include "sentry/kernel/signal_queue.h"

#include <algorithm>

namespace sandbox::kernel {

DefaultAction DefaultActionOf(int sig) {
  switch (sig) {
    case SIGCHLD:
    case SIGURG:
    case SIGWINCH:
      return DefaultAction::kIgnore;
    case SIGCONT:
      return DefaultAction::kContinue;
    case SIGSTOP:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
      return DefaultAction::kStop;
    case SIGQUIT:
    case SIGILL:
    case SIGTRAP:
    case SIGABRT:
    case SIGBUS:
    case SIGFPE:
    case SIGSEGV:
    case SIGSYS:
    case SIGXCPU:
    case SIGXFSZ:
      return DefaultAction::kCoreDump;
    default:
      // Every other standard signal and every real-time one.
      return DefaultAction::kTerminate;
  }
}

bool ActionIgnores(int sig, const abi::KernelSigaction& act) {
  if (act.handler == abi::kSigIgn) return true;
  // SIGCONT's default action (continue) is "ignore" once it has been
  // applied at send time, as Linux's sig_kernel_ignore counts it.
  return act.handler == abi::kSigDfl &&
         (DefaultActionOf(sig) == DefaultAction::kIgnore ||
          DefaultActionOf(sig) == DefaultAction::kContinue);
}

bool SignalQueue::Enqueue(const siginfo_t& info) {
  const int sig = info.si_signo;
  if (!IsRealtimeSignal(sig) && (pending_ & SigBit(sig))) return false;
  pending_ |= SigBit(sig);
  queue_.push_back(info);
  return true;
}

std::optional<siginfo_t> SignalQueue::Dequeue(SigSet blocked) {
  SigSet ready = pending_ & ~blocked;
  if (ready == 0) return std::nullopt;
  if (ready & kSynchronousSignals) ready &= kSynchronousSignals;
  const int sig = __builtin_ctzll(ready) + 1;
  auto it =
      std::find_if(queue_.begin(), queue_.end(),
                   [sig](const siginfo_t& i) { return i.si_signo == sig; });
  siginfo_t info = *it;  // pending_ has the bit only while an entry exists
  queue_.erase(it);
  if (std::none_of(queue_.begin(), queue_.end(),
                   [sig](const siginfo_t& i) { return i.si_signo == sig; })) {
    pending_ &= ~SigBit(sig);
  }
  return info;
}

void SignalQueue::Flush(SigSet set) {
  if ((pending_ & set) == 0) return;
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [set](const siginfo_t& i) {
                                return (set & SigBit(i.si_signo)) != 0;
                              }),
               queue_.end());
  pending_ &= ~set;
}

}  // namespace sandbox::kernel
