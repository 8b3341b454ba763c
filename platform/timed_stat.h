// A lock-free accumulator of durations for start-up profiling counters
// (`runsc do --strace-summary`): how many, their total and the longest.
// Relaxed atomics: a few nanoseconds per Add, never a lock. The unit is the
// caller's (TSC ticks, nanoseconds).
#ifndef PLATFORM_TIMED_STAT_H_
#define PLATFORM_TIMED_STAT_H_

#include <stdint.h>

#include <atomic>

namespace sandbox::platform {

struct TimedStat {
  std::atomic<uint64_t> n{0}, total{0}, max{0};

  void Add(uint64_t t) {
    n.fetch_add(1, std::memory_order_relaxed);
    total.fetch_add(t, std::memory_order_relaxed);
    uint64_t m = max.load(std::memory_order_relaxed);
    while (t > m &&
           !max.compare_exchange_weak(m, t, std::memory_order_relaxed)) {
    }
  }
  uint64_t count() const { return n.load(std::memory_order_relaxed); }
  uint64_t sum() const { return total.load(std::memory_order_relaxed); }
  uint64_t longest() const { return max.load(std::memory_order_relaxed); }
};

}  // namespace sandbox::platform

#endif  // PLATFORM_TIMED_STAT_H_
