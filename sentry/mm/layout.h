// The shape of a fresh guest address space, chosen like Linux's
// arch_pick_mmap_layout() and randomize_stack_top() on x86-64.
#ifndef SENTRY_MM_LAYOUT_H_
#define SENTRY_MM_LAYOUT_H_

#include <stddef.h>
#include <stdint.h>

#include "sentry/abi/linux.h"

namespace sandbox::mm {

using abi::kPageSize;
inline constexpr uint64_t kPageMask = ~(kPageSize - 1);

inline constexpr uint64_t PageRoundDown(uint64_t x) { return x & kPageMask; }
// Callers check for overflow (x > UINT64_MAX - kPageSize + 1).
inline constexpr uint64_t PageRoundUp(uint64_t x) {
  return (x + kPageSize - 1) & kPageMask;
}
inline constexpr bool IsPageAligned(uint64_t x) {
  return (x & ~kPageMask) == 0;
}

// Linux's vm.mmap_min_addr default: nothing is mapped below it.
inline constexpr uint64_t kMmapMinAddr = 0x10000;
// Linux's stack_guard_gap (256 pages): kept free below grows-down VMAs.
inline constexpr uint64_t kStackGuardGap = 256 * kPageSize;
inline constexpr uint64_t kDefaultStackRlimit = 8 << 20;

struct LayoutOptions {
  // ASLR (personality without ADDR_NO_RANDOMIZE). Off gives Linux's
  // non-random layout: handy for tests and reproducible runs.
  bool randomize = true;
  // RLIMIT_STACK soft limit (bytes; UINT64_MAX = unlimited).
  uint64_t stack_rlimit = kDefaultStackRlimit;
};

struct Layout {
  // Usable guest addresses: [min_addr, max_addr). Page-aligned.
  uintptr_t min_addr = kMmapMinAddr;
  uintptr_t max_addr = 0;
  // Top-down mmap placement searches below mmap_base first, then bottom-up
  // from legacy_mmap_base (TASK_UNMAPPED_BASE) to max_addr.
  uintptr_t mmap_base = 0;
  uintptr_t legacy_mmap_base = 0;
  // The initial stack ends here (exclusive); page-aligned.
  uintptr_t stack_top = 0;
  // Largest size the main stack may have (RLIMIT_STACK, clamped).
  uint64_t max_stack_size = kDefaultStackRlimit;
  bool randomize = false;
};

// Computes a layout for guest addresses in [min_user, max_user).
Layout PickLayout(uintptr_t min_user, uintptr_t max_user,
                  const LayoutOptions& opts);

// Random bytes for ASLR and AT_RANDOM (getrandom(2); never fails: falls
// back to a weaker generator if the host call does).
uint64_t RandomU64();
void RandomBytes(void* buf, size_t n);

}  // namespace sandbox::mm

#endif  // SENTRY_MM_LAYOUT_H_
