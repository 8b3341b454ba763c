#include "sentry/kernel/futex.h"

#include <atomic>

#include "sentry/kernel/task.h"
#include "sentry/mm/memory_manager.h"

namespace sandbox::kernel {

KResult<void> FutexManager::Wait(Task& t, uint64_t addr, uint32_t val,
                                 uint32_t bitset,
                                 std::optional<absl::Time> deadline) {
  if (addr % 4 != 0) return kEINVAL;
  if (bitset == 0) return kEINVAL;
  Key key{&t.mm(), addr};
  Waiter w;
  w.bitset = bitset;
  {
    absl::MutexLock l(&mu_);
    // The value is read under mu_, so a waker that changes it and then
    // calls Wake (which takes mu_) cannot be missed.
    uint32_t cur = 0;
    TRY_VOID(
        t.mm().WithInternalMapping(addr, 4, {.read = true}, [&](uint8_t* p) {
          // SAFETY: p is 4-byte aligned (addr is) and maps a populated page.
          cur = reinterpret_cast<std::atomic<uint32_t>*>(p)->load(
              std::memory_order_seq_cst);
        }));
    if (cur != val) return kEAGAIN;
    queues_[key].push_back(&w);
  }
  t.SetBlocker(&w);
  bool woken = false, interrupted = false, timed_out = false;
  {
    absl::MutexLock l(&w.mu);
    auto done = [&w]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(w.mu) {
      return w.woken || w.interrupted;
    };
    if (deadline.has_value()) {
      timed_out = !w.mu.AwaitWithDeadline(absl::Condition(&done), *deadline);
    } else {
      w.mu.Await(absl::Condition(&done));
    }
    woken = w.woken;
    interrupted = w.interrupted;
  }
  t.SetBlocker(nullptr);
  if (!woken) {
    absl::MutexLock l(&mu_);
    absl::MutexLock wl(&w.mu);
    woken = w.woken;  // A Wake may have come in between.
    if (!woken) {
      auto it = queues_.find(key);
      if (it != queues_.end()) {
        it->second.remove(&w);
        if (it->second.empty()) queues_.erase(it);
      }
    }
  }
  if (woken) return OkResult();
  if (interrupted) return kERestartSys;
  if (timed_out) return kETIMEDOUT;
  return kERestartSys;
}

KResult<uint64_t> FutexManager::Wake(Task& t, uint64_t addr, uint32_t bitset,
                                     int n) {
  if (addr % 4 != 0) return kEINVAL;
  if (bitset == 0) return kEINVAL;
  Key key{&t.mm(), addr};
  uint64_t count = 0;
  absl::MutexLock l(&mu_);
  auto it = queues_.find(key);
  if (it == queues_.end()) return count;
  auto& q = it->second;
  for (auto w = q.begin(); w != q.end() && static_cast<int>(count) < n;) {
    if (((*w)->bitset & bitset) == 0) {
      ++w;
      continue;
    }
    {
      absl::MutexLock wl(&(*w)->mu);
      (*w)->woken = true;
    }
    w = q.erase(w);
    ++count;
  }
  if (q.empty()) queues_.erase(it);
  return count;
}

size_t FutexManager::WaiterCount() {
  absl::MutexLock l(&mu_);
  size_t n = 0;
  for (auto& [k, q] : queues_) n += q.size();
  return n;
}

}  // namespace sandbox::kernel
