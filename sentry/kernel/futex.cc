#include "sentry/kernel/futex.h"

#include <linux/futex.h>

#include <atomic>
#include <utility>
#include <vector>

#include "platform/sleep_state.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/memory_manager.h"

namespace sandbox::kernel {

namespace {

int32_t SignExtend12(uint32_t v) { return static_cast<int32_t>(v << 20) >> 20; }

// The word at p, atomically: FUTEX_WAKE_OP's operation. Returns the old
// value.
uint32_t ApplyOp(uint8_t* p, uint32_t op, uint32_t oparg) {
  // SAFETY: p is 4-byte aligned and maps a populated writable page.
  auto* word = reinterpret_cast<std::atomic<uint32_t>*>(p);
  uint32_t old = word->load(std::memory_order_seq_cst);
  uint32_t next = 0;
  do {
    switch (op) {
      case FUTEX_OP_SET:
        next = oparg;
        break;
      case FUTEX_OP_ADD:
        next = old + oparg;
        break;
      case FUTEX_OP_OR:
        next = old | oparg;
        break;
      case FUTEX_OP_ANDN:
        next = old & ~oparg;
        break;
      default:  // FUTEX_OP_XOR; the caller checked the others.
        next = old ^ oparg;
        break;
    }
  } while (!word->compare_exchange_weak(old, next, std::memory_order_seq_cst));
  return old;
}

}  // namespace

KResult<FutexManager::PinnedKey> FutexManager::KeyFor(Task& t, uint64_t addr,
                                                      bool shared, bool write) {
  if (addr % 4 != 0) return kEINVAL;
  if (!shared) return PinnedKey{{Key::Kind::kPrivate, &t.mm(), addr}, nullptr};
  TRY(mm::MemoryManager::SharedObject obj, t.mm().FutexObjectAt(addr, write));
  if (obj.mappable == nullptr) {
    return PinnedKey{{Key::Kind::kPrivateMapping, &t.mm(), addr}, nullptr};
  }
  Key key{Key::Kind::kObject, obj.mappable.get(), obj.offset};
  return PinnedKey{key, std::move(obj.mappable)};
}

KResult<void> FutexManager::Wait(Task& t, uint64_t addr, bool shared,
                                 uint32_t val, uint32_t bitset,
                                 std::optional<absl::Time> deadline) {
  if (addr % 4 != 0) return kEINVAL;
  if (bitset == 0) return kEINVAL;
  Waiter w;
  w.bitset = bitset;
  TRY(PinnedKey key, KeyFor(t, addr, shared));
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
    w.key = std::move(key);
    queues_[w.key.key].push_back(&w);
  }
  t.SetBlocker(&w);
  bool woken = false, interrupted = false, timed_out = false;
  {
    platform::ScopedSleep sleeping;  // /proc: S
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
      auto it = queues_.find(w.key.key);
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

KResult<uint64_t> FutexManager::Wake(Task& t, uint64_t addr, bool shared,
                                     uint32_t bitset, int n) {
  if (bitset == 0) return kEINVAL;
  // Held to the end of the call: the Mappable it names stays alive.
  TRY(PinnedKey key, KeyFor(t, addr, shared));
  absl::MutexLock l(&mu_);
  return WakeLocked(key.key, bitset, n);
}

uint64_t FutexManager::WakeLocked(const Key& key, uint32_t bitset, int n) {
  uint64_t count = 0;
  auto it = queues_.find(key);
  if (it == queues_.end()) return count;
  auto& q = it->second;
  for (auto w = q.begin(); w != q.end();) {
    if (((*w)->bitset & bitset) == 0) {
      ++w;
      continue;
    }
    {
      absl::MutexLock wl(&(*w)->mu);
      (*w)->woken = true;
    }
    w = q.erase(w);
    if (static_cast<int64_t>(++count) >= n) break;
  }
  if (q.empty()) queues_.erase(it);
  return count;
}

KResult<uint64_t> FutexManager::Requeue(Task& t, uint64_t addr, uint64_t addr2,
                                        bool shared, int nr_wake,
                                        int nr_requeue,
                                        std::optional<uint32_t> cmpval) {
  if (nr_wake < 0 || nr_requeue < 0) return kEINVAL;
  TRY(PinnedKey from, KeyFor(t, addr, shared));
  TRY(PinnedKey to, KeyFor(t, addr2, shared));
  // The keys requeued waiters leave: released after mu_, since the last
  // reference to a Mappable (its mapping gone) frees the file.
  std::vector<std::shared_ptr<const void>> dropped;
  absl::MutexLock l(&mu_);
  if (cmpval.has_value()) {
    uint32_t cur = 0;
    TRY_VOID(
        t.mm().WithInternalMapping(addr, 4, {.read = true}, [&](uint8_t* p) {
          // SAFETY: p is 4-byte aligned (addr is) and maps a populated page.
          cur = reinterpret_cast<std::atomic<uint32_t>*>(p)->load(
              std::memory_order_seq_cst);
        }));
    if (cur != *cmpval) return kEAGAIN;
  }
  auto it = queues_.find(from.key);
  if (it == queues_.end()) return uint64_t{0};
  auto& q = it->second;
  const bool same = from.key == to.key;
  std::list<Waiter*>* dest = nullptr;
  int64_t count = 0;
  for (auto w = q.begin(); w != q.end();) {
    // Linux's futex_requeue: stop once nr_requeue have been moved.
    if (count - nr_wake >= nr_requeue) break;
    if (++count <= nr_wake) {
      absl::MutexLock wl(&(*w)->mu);
      (*w)->woken = true;
      w = q.erase(w);
    } else if (same) {
      ++w;  // requeued onto its own queue: it keeps its place
    } else {
      dropped.push_back(std::move((*w)->key.pin));
      (*w)->key = to;
      // A node map: q stays where it is, though `it` may not be valid.
      if (dest == nullptr) dest = &queues_[to.key];
      dest->push_back(*w);
      w = q.erase(w);
    }
  }
  if (q.empty()) queues_.erase(from.key);
  return static_cast<uint64_t>(count);
}

KResult<uint64_t> FutexManager::WakeOp(Task& t, uint64_t addr, uint64_t addr2,
                                       bool shared, int nr_wake, int nr_wake2,
                                       uint32_t encoded_op) {
  TRY(PinnedKey key1, KeyFor(t, addr, shared));
  TRY(PinnedKey key2, KeyFor(t, addr2, shared, /*write=*/true));
  // Linux's futex_atomic_op_inuser.
  const uint32_t op = (encoded_op >> 28) & 7;
  const uint32_t cmp = (encoded_op >> 24) & 15;
  uint32_t oparg = static_cast<uint32_t>(SignExtend12(encoded_op >> 12));
  const int32_t cmparg = SignExtend12(encoded_op);
  if (encoded_op & (static_cast<uint32_t>(FUTEX_OP_OPARG_SHIFT) << 28)) {
    oparg = 1u << (oparg & 31);  // Linux masks an out-of-range shift too
  }
  if (op > FUTEX_OP_XOR) return kENOSYS;
  absl::MutexLock l(&mu_);
  uint32_t old = 0;
  TRY_VOID(t.mm().WithInternalMapping(
      addr2, 4, {.read = true, .write = true},
      [&](uint8_t* p) { old = ApplyOp(p, op, oparg); }));
  const int32_t o = static_cast<int32_t>(old);
  bool pass = false;
  switch (cmp) {
    case FUTEX_OP_CMP_EQ:
      pass = o == cmparg;
      break;
    case FUTEX_OP_CMP_NE:
      pass = o != cmparg;
      break;
    case FUTEX_OP_CMP_LT:
      pass = o < cmparg;
      break;
    case FUTEX_OP_CMP_LE:
      pass = o <= cmparg;
      break;
    case FUTEX_OP_CMP_GT:
      pass = o > cmparg;
      break;
    case FUTEX_OP_CMP_GE:
      pass = o >= cmparg;
      break;
    default:
      return kENOSYS;  // after the word changed, as Linux
  }
  uint64_t woken = WakeLocked(key1.key, FUTEX_BITSET_MATCH_ANY, nr_wake);
  if (pass) woken += WakeLocked(key2.key, FUTEX_BITSET_MATCH_ANY, nr_wake2);
  return woken;
}

size_t FutexManager::WaiterCount() {
  absl::MutexLock l(&mu_);
  size_t n = 0;
  for (auto& [k, q] : queues_) n += q.size();
  return n;
}

}  // namespace sandbox::kernel
