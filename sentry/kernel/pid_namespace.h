// PidNamespace: the map between thread IDs and tasks in one PID namespace.
//
// Namespaces nest: a task has an ID in its own namespace and in each
// ancestor (CLONE_NEWPID comes with a later issue; the parent pointer and
// per-namespace IDs are here so nothing above needs to change).
//
// Lock order: PidNamespace::mu_ is a leaf.
#ifndef SENTRY_KERNEL_PID_NAMESPACE_H_
#define SENTRY_KERNEL_PID_NAMESPACE_H_

#include <stdint.h>

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"

namespace sandbox::kernel {

using ThreadId = int32_t;
class Task;

class PidNamespace {
 public:
  // TIDs stay below 2^30 (PID_MAX_LIMIT is 2^22; futex owner words keep
  // the top bits).
  static constexpr ThreadId kMaxTid = 1 << 22;

  explicit PidNamespace(PidNamespace* parent) : parent_(parent) {}
  PidNamespace(const PidNamespace&) = delete;
  PidNamespace& operator=(const PidNamespace&) = delete;

  PidNamespace* parent() const { return parent_; }

  // The pids limit (runsc do --pids-limit, a pids cgroup's pids.max): at
  // most `n` TIDs in use at once, counting threads and zombies as Linux's
  // pids controller does; Allocate fails with EAGAIN beyond. 0: no limit.
  void set_max_tasks(size_t n) {
    absl::MutexLock l(&mu_);
    max_tasks_ = n;
  }
  // Whether Allocate would now fail for the pids limit (a hint: fork checks
  // it before copying an address space; Allocate decides).
  bool AtLimit() const {
    absl::MutexLock l(&mu_);
    return max_tasks_ != 0 && tasks_.size() >= max_tasks_;
  }

  // Allocates the next free TID for `task` (1 for the first: init).
  // EAGAIN if the namespace is full or at its pids limit. The namespace holds
  // the task while the TID names it: a thread until it exits, a process's
  // leader until the process is reaped (its zombie), the task of an execve from
  // another thread under the leader's TID (Reassign).
  KResult<ThreadId> Allocate(std::shared_ptr<Task> task);
  void Release(ThreadId tid);
  // Releases `tid` only if it still names `task` (true if it did).
  bool ReleaseIf(ThreadId tid, const Task* task);
  // execve from a non-leader thread (de_thread): `tid` (the leader's) now
  // names `task`. Kernel::TaskExited then leaves it alone when the old
  // leader exits (it releases only TIDs that still name the exiting task).
  void Reassign(ThreadId tid, std::shared_ptr<Task> task);
  // The task `tid` names, held (it stays valid while the reference is
  // held, even once it exits and is reaped), or null.
  std::shared_ptr<Task> Lookup(ThreadId tid) const;
  // Whether `tid` names `task` now.
  bool Names(ThreadId tid, const Task* task) const;
  size_t Count() const;
  // Every TID in use, ascending (/proc's directory listing).
  std::vector<ThreadId> Tids() const;

 private:
  PidNamespace* const parent_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<ThreadId, std::shared_ptr<Task>> tasks_
      ABSL_GUARDED_BY(mu_);
  ThreadId last_ ABSL_GUARDED_BY(mu_) = 0;
  size_t max_tasks_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_PID_NAMESPACE_H_
