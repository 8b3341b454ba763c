// Scheduling attributes of a task (Linux task_struct's static_prio, policy,
// rt_priority, sched_reset_on_fork and cpus_mask): what getpriority,
// setpriority, sched_setscheduler, sched_setparam and sched_setaffinity
// record and their getters report. They do not steer the host: every task
// runs on a Sentry host thread that the host schedules.
#ifndef SENTRY_KERNEL_SCHED_H_
#define SENTRY_KERNEL_SCHED_H_

#include <sched.h>
#include <stdint.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace sandbox::kernel {

inline constexpr int kMinNice = -20;
inline constexpr int kMaxNice = 19;
inline constexpr int kMaxRtPrio = 100;  // rt priorities are 1..99
inline constexpr int kSchedDeadline = 6;

inline bool IsRtPolicy(int policy) {
  return policy == SCHED_FIFO || policy == SCHED_RR;
}
inline bool IsFairPolicy(int policy) {
  return policy == SCHED_OTHER || policy == SCHED_BATCH || policy == SCHED_IDLE;
}
// valid_policy(): the fair and rt classes and SCHED_DEADLINE.
inline bool IsValidPolicy(int policy) {
  return IsFairPolicy(policy) || IsRtPolicy(policy) || policy == kSchedDeadline;
}

struct SchedAttr {
  int nice = 0;  // kMinNice..kMaxNice
  int policy = SCHED_OTHER;
  int rt_priority = 0;  // 1..99 for SCHED_FIFO/RR, else 0
  bool reset_on_fork = false;
  // CPUs the task may run on (bit i: CPU i); 0: every CPU of the sandbox.
  uint64_t affinity = 0;

  // sched_fork(): a child's attributes, with SCHED_RESET_ON_FORK applied
  // (an rt policy becomes SCHED_OTHER, a negative nice 0, the flag goes).
  SchedAttr ForChild() const {
    SchedAttr c = *this;
    if (c.reset_on_fork) {
      if (IsRtPolicy(c.policy)) {
        c.policy = SCHED_OTHER;
        c.rt_priority = 0;
      }
      if (c.nice < 0) c.nice = 0;
      c.reset_on_fork = false;
    }
    return c;
  }
};

// One task's attributes; any thread reads and writes them (setpriority
// of another process), so under a leaf lock.
class TaskSched {
 public:
  SchedAttr Get() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    return attr_;
  }
  void Set(const SchedAttr& a) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    attr_ = a;
  }
  void SetNice(int nice) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    attr_.nice = nice;
  }
  void SetAffinity(uint64_t mask) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    attr_.affinity = mask;
  }

 private:
  mutable absl::Mutex mu_;
  SchedAttr attr_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_SCHED_H_
