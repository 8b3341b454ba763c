#include "sentry/net/wait.h"

namespace sandbox::net {

KResult<void> WakeResult(vfs::WakeReason r) {
  switch (r) {
    case vfs::WakeReason::kNotified:
      return OkResult();
    case vfs::WakeReason::kInterrupted:
      return kERestartSys;
    case vfs::WakeReason::kTimedOut:
      return kEAGAIN;
  }
  return OkResult();
}

KResult<void> QueueWaiter::Wait(const Caller& c, int64_t deadline) {
  if (!w_.has_value()) {
    w_.emplace();
    q_.Register(&*w_, events_);
    return OkResult();
  }
  return WakeResult(w_->Sleep(c.io.interrupt_fd, deadline));
}

}  // namespace sandbox::net
