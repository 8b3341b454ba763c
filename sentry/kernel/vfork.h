// VforkCompletion: a vfork parent's wait for its child to release the
// shared address space (Linux's vfork_done completion).
//
// clone(CLONE_VFORK) gives the child a completion and, once the child runs,
// waits on it; the child completes it when it stops using the parent's mm:
// execve installs a new one (Task::set_mm) or the task exits (its run loop
// drops the mm), as Linux's mm_release -> complete_vfork_done.
//
// Locking: mu_ is a waiter mutex (taken under Task::mu_ by the waiter's
// Blocker::Notify, see README's lock order).
#ifndef SENTRY_KERNEL_VFORK_H_
#define SENTRY_KERNEL_VFORK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace sandbox::kernel {

class Task;

class VforkCompletion {
 public:
  // Any thread; idempotent.
  void Complete() {
    absl::MutexLock l(&mu_);
    done_ = true;
  }
  bool done() const {
    absl::MutexLock l(&mu_);
    return done_;
  }
  // wait_for_vfork_done: blocks `waiter` (on its own thread) until
  // Complete. The sleep is killable, not interruptible: interrupts wake it
  // only to check whether the waiter's process is being killed (exit_group,
  // a fatal signal, another thread's execve); then it returns false at
  // once. Other interrupts (a caught signal) stay pending for the run loop
  // after the wait. True once completed.
  bool Wait(Task& waiter);

 private:
  mutable absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_VFORK_H_
