// FutexManager: futex(2) wait queues.
//
// Keys are Linux's futex_key (get_futex_key):
//   - a private futex (FUTEX_PRIVATE_FLAG): (MemoryManager, address);
//   - a shared futex in a private mapping: (MemoryManager, address) too, of
//     a distinct kind, so it never meets a private futex at the same
//     address (Linux's FUT_OFF_MMSHARED bit);
//   - a shared futex in a MAP_SHARED mapping: (Mappable, byte offset in
//     it), as Linux keys by inode and offset, so every mapping of the page
//     (fork children, other processes mapping the same memfd, /dev/shm or
//     tmpfs file, two aliases in one mm) meets in one queue.
// A key names an object only while something holds it: a waiter holds a
// reference on its Mappable for as long as it is queued (Key::pin), and a
// waker for the length of its call, so the address of a freed Mappable
// cannot be reused by another object while a key still names it.
// Waking is FIFO per key, filtered by bitset.
//
// A waiter blocks on its own condition variable; Task::Interrupt wakes it
// through the task's blocker hook, so a signal or a kill ends the wait
// (ERESTARTSYS).
//
// Lock order: FutexManager::mu_ -> Waiter::mu_; Task::mu_ -> Waiter::mu_.
// A shared key is looked up in the mm (MemoryManager::FutexObjectAt) before
// mu_ is taken; the word itself is read under mu_ (mm locks after mu_).
#ifndef SENTRY_KERNEL_FUTEX_H_
#define SENTRY_KERNEL_FUTEX_H_

#include <stdint.h>

#include <list>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/node_hash_map.h"
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
    enum class Kind : uint8_t {
      kPrivate,         // FUTEX_PRIVATE_FLAG: base = mm, offset = address
      kPrivateMapping,  // shared futex, private mapping: same fields
      kObject,          // shared mapping: base = Mappable, offset in it
    };
    Kind kind = Kind::kPrivate;
    const void* base = nullptr;
    uint64_t offset = 0;
    friend bool operator==(const Key& a, const Key& b) {
      return a.kind == b.kind && a.base == b.base && a.offset == b.offset;
    }
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.kind, k.base, k.offset);
    }
  };

  // The key of the 32-bit word at addr in t's address space; `shared`: the
  // futex has no FUTEX_PRIVATE_FLAG, so its mapping decides. `pin` keeps a
  // kObject key's Mappable alive. EINVAL if addr is unaligned; EFAULT if a
  // shared word's page cannot be read (a private key is not checked, as
  // Linux: FUTEX_WAKE_PRIVATE of an unmapped address wakes nobody).
  struct PinnedKey {
    Key key;
    std::shared_ptr<const void> pin;
  };
  static KResult<PinnedKey> KeyFor(Task& t, uint64_t addr, bool shared,
                                   bool write = false);

  // FUTEX_WAIT(_BITSET): if the 32-bit word at addr equals val, sleeps
  // until woken (0), the deadline passes (ETIMEDOUT) or the task is
  // interrupted (ERESTARTSYS); EAGAIN if the word differs, EFAULT if it
  // cannot be read, EINVAL if unaligned or bitset is 0.
  KResult<void> Wait(Task& t, uint64_t addr, bool shared, uint32_t val,
                     uint32_t bitset, std::optional<absl::Time> deadline);
  // FUTEX_WAKE(_BITSET): wakes up to n waiters whose bitset meets
  // `bitset`, at least one if there is one (Linux's futex_wake: n <= 0
  // wakes one); returns how many. EINVAL (unaligned, bitset 0), EFAULT (a
  // shared word that cannot be read).
  KResult<uint64_t> Wake(Task& t, uint64_t addr, bool shared, uint32_t bitset,
                         int n);
  // FUTEX_REQUEUE and FUTEX_CMP_REQUEUE (with `cmpval`: EAGAIN unless the
  // word at addr equals it): wakes up to nr_wake waiters on addr, moves up
  // to nr_requeue more to addr2's queue (in order, behind its waiters);
  // returns how many it woke and moved. EINVAL: a negative count, an
  // unaligned address; EFAULT: a word that cannot be read.
  KResult<uint64_t> Requeue(Task& t, uint64_t addr, uint64_t addr2, bool shared,
                            int nr_wake, int nr_requeue,
                            std::optional<uint32_t> cmpval);
  // FUTEX_WAKE_OP: atomically applies `encoded_op`'s operation to the word
  // at addr2 (FUTEX_OP_SET/ADD/OR/ANDN/XOR, FUTEX_OP_OPARG_SHIFT), wakes up
  // to nr_wake waiters on addr (at least one) and, if the old value of the
  // addr2 word passes `encoded_op`'s comparison, up to nr_wake2 on addr2.
  // Returns how many it woke. ENOSYS: an unknown operation (nothing is
  // changed) or comparison (the word is changed, nobody is woken, as
  // Linux); EFAULT: addr2 is not writable or addr cannot be read.
  KResult<uint64_t> WakeOp(Task& t, uint64_t addr, uint64_t addr2, bool shared,
                           int nr_wake, int nr_wake2, uint32_t encoded_op);

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
    // The queue it is in (guarded by FutexManager::mu_ while queued).
    PinnedKey key;
  };

  // Wakes waiters of `key` whose bitset meets `bitset` until n are woken
  // (at least one); returns how many.
  uint64_t WakeLocked(const Key& key, uint32_t bitset, int n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  // A node map: Requeue holds two queues at once while it may insert.
  absl::node_hash_map<Key, std::list<Waiter*>> queues_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_FUTEX_H_
