// WaitQueue: interruptible Sentry-side sleeps for file operations (pipes,
// FIFO opens, file locks), Linux's wait_queue_head_t + wait_event_
// interruptible.
//
// A sleeping thread registers a Waiter (its host thread's eventfd) on the
// queue while holding the lock that guards the condition, drops the lock
// and polls its eventfd together with the task's interrupt fd
// (vfs::IoContext::interrupt_fd). NotifyAll, called with the same lock held
// after the condition may have changed, writes every registered eventfd, so
// no wake-up is lost between the check and the sleep. Wake-ups may be
// spurious: callers re-check their condition in a loop.
//
// Thread-safety: Add/Remove/NotifyAll/empty require the owner's lock (the
// one passed to Wait); the queue has no lock of its own.
#ifndef SENTRY_VFS_LOCK_WAIT_QUEUE_H_
#define SENTRY_VFS_LOCK_WAIT_QUEUE_H_

#include <vector>

#include "absl/synchronization/mutex.h"

namespace sandbox::vfs::lock {

class WaitQueue {
 public:
  WaitQueue() = default;
  WaitQueue(const WaitQueue&) = delete;
  WaitQueue& operator=(const WaitQueue&) = delete;

  // Wakes every registered waiter. Cheap when nobody waits.
  void NotifyAll();
  bool empty() const { return waiters_.empty(); }

  // Sleeps until NotifyAll or until `interrupt_fd` (-1: none) is readable.
  // `mu` guards the caller's condition and this queue: held on entry and on
  // return, released while asleep. Returns true if the interrupt fd fired
  // (the caller returns ERESTARTSYS unless its condition now holds).
  bool Wait(absl::Mutex& mu, int interrupt_fd)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

 private:
  // Host eventfds of the sleeping threads (one per host thread, reused).
  std::vector<int> waiters_;
};

}  // namespace sandbox::vfs::lock

#endif  // SENTRY_VFS_LOCK_WAIT_QUEUE_H_
