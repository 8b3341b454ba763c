#include "sentry/vfs/lock/wait_queue.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace sandbox::vfs::lock {
namespace {

// The calling host thread's wake-up eventfd, created on first use and
// closed when the thread ends. Non-blocking so draining never sleeps.
class ThreadEventFd {
 public:
  ThreadEventFd() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    // Without it the thread could never sleep; the Sentry cannot go on
    // (only fd exhaustion of the Sentry itself gets here).
    if (fd_ < 0) std::abort();
  }
  ~ThreadEventFd() { close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_;
};

int CurrentEventFd() {
  thread_local ThreadEventFd efd;
  return efd.fd();
}

void Drain(int fd) {
  uint64_t v;
  while (read(fd, &v, sizeof(v)) < 0 && errno == EINTR) {
  }
}

}  // namespace

void WaitQueue::NotifyAll() {
  for (int fd : waiters_) {
    uint64_t one = 1;
    while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
  }
}

bool WaitQueue::Wait(absl::Mutex& mu, int interrupt_fd) {
  int efd = CurrentEventFd();
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
  Drain(efd);
  mu.Lock();
  auto it = std::find(waiters_.begin(), waiters_.end(), efd);
  if (it != waiters_.end()) waiters_.erase(it);
  return interrupted;
}

}  // namespace sandbox::vfs::lock
