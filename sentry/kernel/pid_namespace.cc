#include "sentry/kernel/pid_namespace.h"

#include <algorithm>
#include <utility>

namespace sandbox::kernel {

KResult<ThreadId> PidNamespace::Allocate(std::shared_ptr<Task> task) {
  absl::MutexLock l(&mu_);
  if (tasks_.size() >= static_cast<size_t>(kMaxTid - 1)) return kEAGAIN;
  if (max_tasks_ != 0 && tasks_.size() >= max_tasks_) return kEAGAIN;
  // Like Linux: the next number after the last one given, wrapping to 2
  // (1 is init's) after kMaxTid.
  ThreadId tid = last_;
  do {
    ++tid;
    if (tid >= kMaxTid) tid = 2;
  } while (tasks_.contains(tid));
  last_ = tid;
  tasks_[tid] = std::move(task);
  return tid;
}

void PidNamespace::Release(ThreadId tid) {
  std::shared_ptr<Task> gone;  // freed after mu_ is released
  absl::MutexLock l(&mu_);
  auto it = tasks_.find(tid);
  if (it == tasks_.end()) return;
  gone = std::move(it->second);
  tasks_.erase(it);
}

bool PidNamespace::ReleaseIf(ThreadId tid, const Task* task) {
  std::shared_ptr<Task> gone;  // freed after mu_ is released
  absl::MutexLock l(&mu_);
  auto it = tasks_.find(tid);
  if (it == tasks_.end() || it->second.get() != task) return false;
  gone = std::move(it->second);
  tasks_.erase(it);
  return true;
}

void PidNamespace::Reassign(ThreadId tid, std::shared_ptr<Task> task) {
  std::shared_ptr<Task> old;  // freed after mu_ is released
  absl::MutexLock l(&mu_);
  old = std::exchange(tasks_[tid], std::move(task));
}

std::shared_ptr<Task> PidNamespace::Lookup(ThreadId tid) const {
  absl::MutexLock l(&mu_);
  auto it = tasks_.find(tid);
  return it == tasks_.end() ? nullptr : it->second;
}

bool PidNamespace::Names(ThreadId tid, const Task* task) const {
  absl::MutexLock l(&mu_);
  auto it = tasks_.find(tid);
  return it != tasks_.end() && it->second.get() == task;
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
