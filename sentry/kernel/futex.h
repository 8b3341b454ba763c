// FutexManager: futex(2) wait queues.
//
// Keys: for private futexes and (until shared file mappings exist) for
// shared ones, the pair (MemoryManager, address). Waking is FIFO per key,
// filtered by bitset.
//
// A waiter blocks on its own condition variable; Task::Interrupt wakes it
// through the task's blocker hook, so a signal or a kill ends the wait
// (ERESTARTSYS).
//
// Lock order: FutexManager::mu_ -> Waiter::mu_; Task::mu_ -> Waiter::mu_.
#ifndef SENTRY_KERNEL_FUTEX_H_
#define SENTRY_KERNEL_FUTEX_H_

#include <stdint.h>

#include <list>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sentry/base/result.h"

namespace sandbox::mm {
class MemoryManager;
}

namespace sandbox::kernel {

class Task;

// Something a blocked task waits on; Task::Interrupt calls Notify.
class Blocker {
 public:
  virtual ~Blocker() = default;
  virtual void Notify() = 0;
};

class FutexManager {
 public:
  struct Key {
    const mm::MemoryManager* mm;
    uint64_t addr;
    friend bool operator==(const Key& a, const Key& b) {
      return a.mm == b.mm && a.addr == b.addr;
    }
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.mm, k.addr);
    }
  };

  // FUTEX_WAIT(_BITSET): if the 32-bit word at addr equals val, sleeps
  // until woken (0), the deadline passes (ETIMEDOUT) or the task is
  // interrupted (ERESTARTSYS); EAGAIN if the word differs, EFAULT if it
  // cannot be read, EINVAL if unaligned or bitset is 0.
  KResult<void> Wait(Task& t, uint64_t addr, uint32_t val, uint32_t bitset,
                     std::optional<absl::Time> deadline);
  // FUTEX_WAKE(_BITSET): wakes up to n waiters; returns how many.
  KResult<uint64_t> Wake(Task& t, uint64_t addr, uint32_t bitset, int n);

  size_t WaiterCount();

 private:
  struct Waiter : Blocker {
    void Notify() override {
      absl::MutexLock l(&mu);
      interrupted = true;
    }
    absl::Mutex mu;
    bool woken ABSL_GUARDED_BY(mu) = false;
    bool interrupted ABSL_GUARDED_BY(mu) = false;
    uint32_t bitset = 0;
  };

  absl::Mutex mu_;
  absl::flat_hash_map<Key, std::list<Waiter*>> queues_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_FUTEX_H_
