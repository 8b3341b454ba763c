#include "sentry/kernel/vfork.h"

#include "platform/sleep_state.h"
#include "sentry/kernel/futex.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"

namespace sandbox::kernel {
namespace {

bool BeingKilled(Task& t) {
  ThreadGroup& tg = t.thread_group();
  return tg.exiting() || tg.KilledByExec(&t);
}

}  // namespace

bool VforkCompletion::Wait(Task& waiter) {
  // Woken by Task::Interrupt (through the Blocker) or by Complete.
  struct Wake : Blocker {
    explicit Wake(VforkCompletion& c) : c(c) {}
    void Notify() override {
      absl::MutexLock l(&c.mu_);
      woken = true;
    }
    VforkCompletion& c;
    bool woken = false;  // guarded by c.mu_
  } wake(*this);
  waiter.SetBlocker(&wake);  // notifies at once if an interrupt is pending
  bool done;
  {
    // wait_for_vfork_done sleeps TASK_KILLABLE: /proc shows D.
    platform::ScopedSleep sleeping(platform::SleepState::kUninterruptible);
    absl::MutexLock l(&mu_);
    for (;;) {
      auto ready = [this, &wake]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return done_ || wake.woken;
      };
      mu_.Await(absl::Condition(&ready));
      if (done_) break;
      wake.woken = false;
      // A pending caught signal must not end the wait (nor spin: the next
      // Interrupt wakes us again); only a kill does.
      if (BeingKilled(waiter)) break;
    }
    done = done_;
  }
  // Without mu_: SetBlocker takes Task::mu_, which Notify holds while it
  // takes mu_.
  waiter.SetBlocker(nullptr);
  return done;
}

}  // namespace sandbox::kernel
