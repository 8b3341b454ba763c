// TimerService: the Sentry's one timer thread. Every guest timer
// (ITIMER_REAL, POSIX timers on the wall clocks, the polls that catch CPU
// timers of tasks running guest code) is an entry in one deadline queue
// served by a single host thread, started at the first Schedule; there is
// never a host thread per timer.
//
// DeadlineQueue is the queue itself (no thread, no lock; unit-tested).
//
// Locking: TimerService::mu_ is a leaf (callers may hold ThreadGroup::mu_
// and ProcessTimers::mu_). Callbacks run on the service thread with no
// lock held; they may call Schedule and Cancel. Cancel does not wait for a
// callback that is already running: owners guard against a stale run with
// a generation number (timers.cc).
#ifndef SENTRY_KERNEL_TIMER_SERVICE_H_
#define SENTRY_KERNEL_TIMER_SERVICE_H_

#include <stdint.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace sandbox::kernel {

class DeadlineQueue {
 public:
  using Id = uint64_t;  // never 0
  using Fn = std::function<void()>;

  // Adds `fn` due at `deadline` (any monotonic unit). Entries with equal
  // deadlines come out in the order added.
  Id Add(int64_t deadline, Fn fn);
  // Removes the entry; false if it is not queued (ran or was removed).
  bool Remove(Id id);
  // The earliest deadline, if any.
  std::optional<int64_t> NextDeadline() const;
  // Removes and returns every entry due at `now` (deadline <= now),
  // earliest first.
  std::vector<Fn> TakeExpired(int64_t now);
  size_t size() const { return by_deadline_.size(); }

 private:
  Id next_id_ = 1;
  std::map<std::pair<int64_t, Id>, Fn> by_deadline_;
  absl::flat_hash_map<Id, int64_t> deadline_of_;
};

class TimerService {
 public:
  using Id = DeadlineQueue::Id;
  TimerService() = default;
  // Stops the thread (pending entries never run) and joins it.
  ~TimerService();
  TimerService(const TimerService&) = delete;
  TimerService& operator=(const TimerService&) = delete;

  // CLOCK_MONOTONIC in nanoseconds: the service's time base.
  static int64_t Now();
  // Runs `fn` on the service thread at or soon after `deadline_ns`
  // (CLOCK_MONOTONIC); a deadline in the past runs at once.
  Id Schedule(int64_t deadline_ns, DeadlineQueue::Fn fn)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Removes a queued entry (no effect once it has started running).
  void Cancel(Id id) ABSL_LOCKS_EXCLUDED(mu_);
  // Entries queued (tests, /proc).
  size_t Pending() ABSL_LOCKS_EXCLUDED(mu_);
  // Expires when the service is destroyed: an owner that may outlive it
  // (a timerfd file closed after the kernel's service went) Cancels only
  // while the token is alive. Not for concurrent use with the destructor.
  std::weak_ptr<const void> alive() const { return alive_; }

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  absl::CondVar cv_;  // the queue's head moved earlier, or stop_
  DeadlineQueue queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // Started under mu_ by the first Schedule; joined by the destructor
  // after stop_ (no Schedule may race with the destructor).
  std::thread thread_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const void> alive_ = std::make_shared<int>(0);
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_TIMER_SERVICE_H_
