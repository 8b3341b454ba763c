#include "sentry/kernel/timer_service.h"

#include <time.h>

#include <algorithm>

namespace sandbox::kernel {

DeadlineQueue::Id DeadlineQueue::Add(int64_t deadline, Fn fn) {
  const Id id = next_id_++;
  by_deadline_.emplace(std::make_pair(deadline, id), std::move(fn));
  deadline_of_[id] = deadline;
  return id;
}

bool DeadlineQueue::Remove(Id id) {
  auto it = deadline_of_.find(id);
  if (it == deadline_of_.end()) return false;
  by_deadline_.erase(std::make_pair(it->second, id));
  deadline_of_.erase(it);
  return true;
}

std::optional<int64_t> DeadlineQueue::NextDeadline() const {
  if (by_deadline_.empty()) return std::nullopt;
  return by_deadline_.begin()->first.first;
}

std::vector<DeadlineQueue::Fn> DeadlineQueue::TakeExpired(int64_t now) {
  std::vector<Fn> out;
  while (!by_deadline_.empty() && by_deadline_.begin()->first.first <= now) {
    auto it = by_deadline_.begin();
    deadline_of_.erase(it->first.second);
    out.push_back(std::move(it->second));
    by_deadline_.erase(it);
  }
  return out;
}

TimerService::~TimerService() {
  alive_.reset();
  std::thread t;
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
    t = std::move(thread_);
  }
  cv_.SignalAll();
  if (t.joinable()) t.join();
}

int64_t TimerService::Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

TimerService::Id TimerService::Schedule(int64_t deadline_ns,
                                        DeadlineQueue::Fn fn) {
  Id id;
  bool wake;
  {
    absl::MutexLock l(&mu_);
    std::optional<int64_t> before = queue_.NextDeadline();
    id = queue_.Add(deadline_ns, std::move(fn));
    wake = !before.has_value() || deadline_ns < *before;
    if (!thread_.joinable() && !stop_) {
      thread_ = std::thread([this] { Loop(); });
    }
  }
  if (wake) cv_.SignalAll();
  return id;
}

void TimerService::Cancel(Id id) {
  absl::MutexLock l(&mu_);
  queue_.Remove(id);
}

size_t TimerService::Pending() {
  absl::MutexLock l(&mu_);
  return queue_.size();
}

void TimerService::Loop() {
  absl::MutexLock l(&mu_);
  while (!stop_) {
    std::vector<DeadlineQueue::Fn> due = queue_.TakeExpired(Now());
    if (!due.empty()) {
      mu_.Unlock();
      for (auto& fn : due) fn();
      due.clear();  // callbacks' captures go without the lock held
      mu_.Lock();
      continue;
    }
    std::optional<int64_t> next = queue_.NextDeadline();
    if (!next.has_value()) {
      cv_.Wait(&mu_);
    } else {
      // A relative timeout (Abseil measures it on a steady clock, the
      // queue's CLOCK_MONOTONIC time base). At most an hour at a time: a far
      // deadline ("never") must not overflow.
      const int64_t left = std::min<int64_t>(*next - Now(), 3600000000000LL);
      if (left > 0) cv_.WaitWithTimeout(&mu_, absl::Nanoseconds(left));
    }
  }
}

}  // namespace sandbox::kernel
