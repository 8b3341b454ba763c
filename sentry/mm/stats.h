// Process-wide counters of the mm's work (start-up profiling: `runsc do
// --strace-summary` prints them after the syscall table).
//
// Relaxed atomics, bumped on the fault and mapping paths: a few nanoseconds
// each, never a lock. They count every MemoryManager in the Sentry.
#ifndef SENTRY_MM_STATS_H_
#define SENTRY_MM_STATS_H_

#include <stdint.h>

#include <atomic>
#include <string>

namespace sandbox::mm {

struct MmStats {
  std::atomic<uint64_t> faults{0};       // HandleFault calls (guest faults)
  std::atomic<uint64_t> fault_pages{0};  // anonymous/private pages they backed
  std::atomic<uint64_t> host_maps{0};    // AddressSpace::MapFile calls
  std::atomic<uint64_t> host_map_pages{0};
  std::atomic<uint64_t> host_unmaps{0};  // AddressSpace::Unmap calls
  std::atomic<uint64_t> translates{0};   // Mappable::Translate calls
  std::atomic<uint64_t> cow_copies{0};   // private copies (BreakCow)
};

// The Sentry's counters.
MmStats& Stats();

// "mm: N guest faults (P pages), M host maps (Q pages), ..." for the
// strace summary.
std::string StatsSummary();

inline void Count(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.fetch_add(n, std::memory_order_relaxed);
}

}  // namespace sandbox::mm

#endif  // SENTRY_MM_STATS_H_
