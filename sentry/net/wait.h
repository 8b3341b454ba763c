// How a socket's blocking call waits on one of its queues, the same in
// every family (unix, tcp, udp): the readiness bits, a registered-on-first-
// use waiter on a vfs::WaitQueue, Linux's errnos for how a sleep ended, and
// deadlines.
//
// Thread-safety: a QueueWaiter belongs to the one thread that waits with
// it (as vfs::ThreadWaiter); the queue it registers on is thread-safe.
#ifndef SENTRY_NET_WAIT_H_
#define SENTRY_NET_WAIT_H_

#include <stdint.h>

#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/net/socket.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::net {

// The poll bits of a readable and of a writable socket (Linux's
// EPOLLIN|EPOLLRDNORM and EPOLLOUT|EPOLLWRNORM|EPOLLWRBAND).
inline constexpr uint32_t kPollInBits = vfs::kPollIn | vfs::kPollRdNorm;
inline constexpr uint32_t kPollOutBits =
    vfs::kPollOut | vfs::kPollWrNorm | vfs::kPollWrBand;

// The earlier of two deadlines (CLOCK_MONOTONIC ns; -1: none).
inline int64_t EarlierDeadline(int64_t a, int64_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return a < b ? a : b;
}

// What a sleep's end means to the socket call: ok to re-check, ERESTARTSYS
// on a signal (the syscall layer makes it EINTR for a socket with a
// timeout: Socket::IntrErrno), EAGAIN at the deadline.
KResult<void> WakeResult(vfs::WakeReason r);

// Sleeps on `q` for `events`, registered on first use and unregistered
// when destroyed.
class QueueWaiter {
 public:
  QueueWaiter(vfs::WaitQueue& q, uint32_t events) : q_(q), events_(events) {}
  // First call: registers and returns ok (the caller checks again before
  // sleeping, so no wake-up is lost); later calls sleep until woken, the
  // deadline (-1: none) or a signal (WakeResult).
  KResult<void> Wait(const Caller& c, int64_t deadline);
  // Wait with `held` (a reader's io mutex) released while it sleeps and
  // taken again before it returns.
  KResult<void> WaitReleasing(absl::Mutex& held, const Caller& c,
                              int64_t deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(held) {
    held.Unlock();
    KResult<void> r = Wait(c, deadline);
    held.Lock();
    return r;
  }

 private:
  vfs::WaitQueue& q_;
  const uint32_t events_;
  std::optional<vfs::ThreadWaiter> w_;
};

}  // namespace sandbox::net

#endif  // SENTRY_NET_WAIT_H_
