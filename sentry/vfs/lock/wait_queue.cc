#include "sentry/vfs/lock/wait_queue.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "platform/sleep_state.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::vfs::lock {

// The sleeping threads' wake-up eventfds are sentry/vfs/waiter.h's
// ThreadWakeFd (one per host thread, shared with readiness waits).

void WaitQueue::NotifyAll() {
  for (int fd : waiters_) SignalWakeFd(fd);
}

bool WaitQueue::Wait(absl::Mutex& mu, int interrupt_fd) {
  int efd = ThreadWakeFd();
  // No wake-up eventfd (the host had no FD): poll every millisecond and
  // return as if woken; the caller re-checks its condition.
  const int timeout_ms = efd < 0 ? 1 : -1;
  if (efd >= 0) waiters_.push_back(efd);
  mu.Unlock();
  pollfd fds[2] = {{efd, POLLIN, 0}, {interrupt_fd, POLLIN, 0}};
  bool interrupted = false;
  platform::ScopedSleep sleeping;  // /proc: S
  for (;;) {
    int n = poll(fds, 2, timeout_ms);
    if (n == 0 && efd < 0) break;
    if (n > 0) {
      interrupted = interrupt_fd >= 0 && fds[1].revents != 0;
      break;
    }
    if (n < 0 && errno != EINTR) {
      // Only EFAULT/EINVAL/ENOMEM; treat as an interrupt so the caller
      // backs out instead of spinning.
      interrupted = true;
      break;
    }
  }
  if (efd >= 0) DrainWakeFd(efd);
  mu.Lock();
  auto it = std::find(waiters_.begin(), waiters_.end(), efd);
  if (it != waiters_.end()) waiters_.erase(it);
  return interrupted;
}

}  // namespace sandbox::vfs::lock
