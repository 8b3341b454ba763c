#include "sentry/kernel/pid_namespace.h"

#include <algorithm>

namespace sandbox::kernel {

KResult<ThreadId> PidNamespace::Allocate(Task* task) {
  absl::MutexLock l(&mu_);
  if (tasks_.size() >= static_cast<size_t>(kMaxTid - 1)) return kEAGAIN;
  // Like Linux: the next number after the last one given, wrapping to 2
  // (1 is init's) after kMaxTid.
  ThreadId tid = last_;
  do {
    ++tid;
    if (tid >= kMaxTid) tid = 2;
  } while (tasks_.contains(tid));
  last_ = tid;
  tasks_[tid] = task;
  return tid;
}

void PidNamespace::Release(ThreadId tid) {
  absl::MutexLock l(&mu_);
  tasks_.erase(tid);
}

void PidNamespace::Reassign(ThreadId tid, Task* task) {
  absl::MutexLock l(&mu_);
  tasks_[tid] = task;
}

Task* PidNamespace::Lookup(ThreadId tid) const {
  absl::MutexLock l(&mu_);
  auto it = tasks_.find(tid);
  return it == tasks_.end() ? nullptr : it->second;
}

size_t PidNamespace::Count() const {
  absl::MutexLock l(&mu_);
  return tasks_.size();
}

std::vector<ThreadId> PidNamespace::Tids() const {
  std::vector<ThreadId> tids;
  {
    absl::MutexLock l(&mu_);
    tids.reserve(tasks_.size());
    for (const auto& [tid, task] : tasks_) tids.push_back(tid);
  }
  std::sort(tids.begin(), tids.end());
  return tids;
}

}  // namespace sandbox::kernel
