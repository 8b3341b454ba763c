#include "sentry/vfs/lock/wait_queue.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "sentry/vfs/waiter.h"

namespace sandbox::vfs::lock {

// The sleeping threads' wake-up eventfds are sentry/vfs/waiter.h's
// ThreadWakeFd (one per host thread, shared with readiness waits).

void WaitQueue::NotifyAll() {
  for (int fd : waiters_) SignalWakeFd(fd);
}

bool WaitQueue::Wait(absl::Mutex& mu, int interrupt_fd) {
  int efd = ThreadWakeFd();
  waiters_.push_back(efd);
  mu.Unlock();
  pollfd fds[2] = {{efd, POLLIN, 0}, {interrupt_fd, POLLIN, 0}};
  bool interrupted = false;
  for (;;) {
    int n = poll(fds, interrupt_fd >= 0 ? 2 : 1, -1);
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
  DrainWakeFd(efd);
  mu.Lock();
  auto it = std::find(waiters_.begin(), waiters_.end(), efd);
  if (it != waiters_.end()) waiters_.erase(it);
  return interrupted;
}

}  // namespace sandbox::vfs::lock
