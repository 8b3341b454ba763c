#include "sentry/mm/layout.h"

#include <sys/random.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace sandbox::mm {
namespace {

// x86-64: STACK_RND_MASK (22 bits of pages: up to 16 GiB) and
// mmap_rnd_bits (28 bits of pages: up to 1 TiB).
constexpr uint64_t kStackRndMask = 0x3fffff;
constexpr uint64_t kMmapRndBits = 28;
constexpr uint64_t kGapMin = 128ull << 20;
constexpr uint64_t kMinStack = 128ull << 10;

}  // namespace

void RandomBytes(void* buf, size_t n) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    ssize_t r = getrandom(p, n, 0);
    if (r <= 0) break;
    p += r;
    n -= static_cast<size_t>(r);
  }
  if (n == 0) return;
  // Fallback (getrandom denied): splitmix64 over the clock. Weak, but the
  // only consumer is ASLR and AT_RANDOM, and getrandom is always allowed in
  // the Sentry's own filter.
  static std::atomic<uint64_t> state{0};
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t x = state.fetch_add(0x9e3779b97f4a7c15ull) ^
               (static_cast<uint64_t>(ts.tv_nsec) << 20) ^ ts.tv_sec;
  while (n > 0) {
    x += 0x9e3779b97f4a7c15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    size_t k = std::min(n, sizeof(z));
    std::memcpy(p, &z, k);
    p += k;
    n -= k;
  }
}

uint64_t RandomU64() {
  uint64_t v;
  RandomBytes(&v, sizeof(v));
  return v;
}

Layout PickLayout(uintptr_t min_user, uintptr_t max_user,
                  const LayoutOptions& opts) {
  Layout l;
  l.randomize = opts.randomize;
  l.min_addr = std::max<uint64_t>(PageRoundUp(min_user), kMmapMinAddr);
  l.max_addr = PageRoundDown(max_user);
  const uint64_t task_size = l.max_addr;
  const uint64_t span = task_size > l.min_addr ? task_size - l.min_addr : 0;

  uint64_t stack_rnd = opts.randomize ? (RandomU64() & kStackRndMask) << 12 : 0;
  uint64_t mmap_rnd =
      opts.randomize ? (RandomU64() & ((1ull << kMmapRndBits) - 1)) << 12 : 0;
  // Small (test) address spaces: keep randomisation within an eighth.
  stack_rnd = std::min(stack_rnd, PageRoundDown(span / 8));
  mmap_rnd = std::min(mmap_rnd, PageRoundDown(span / 8));

  l.stack_top = PageRoundDown(task_size - stack_rnd);

  // mmap_base(): the gap below the stack is RLIMIT_STACK plus the guard gap
  // and the stack's randomisation range, clamped to [128 MiB, 5/6 of the
  // address space].
  uint64_t gap = opts.stack_rlimit;
  uint64_t pad = kStackGuardGap + (opts.randomize ? (kStackRndMask << 12) : 0);
  if (gap + pad > gap) gap += pad;
  const uint64_t gap_max = task_size / 6 * 5;
  gap = std::clamp(gap, std::min(kGapMin, gap_max), gap_max);
  if (gap + mmap_rnd >= span) {
    l.mmap_base = PageRoundDown(l.min_addr + span / 2);
  } else {
    l.mmap_base = PageRoundDown(task_size - gap - mmap_rnd);
  }
  l.legacy_mmap_base =
      std::max<uint64_t>(PageRoundUp(task_size / 3) + mmap_rnd, l.min_addr);

  // The main stack may grow to RLIMIT_STACK but never into the mmap area.
  uint64_t stack_room = l.stack_top > l.mmap_base + kStackGuardGap
                            ? l.stack_top - l.mmap_base - kStackGuardGap
                            : kMinStack;
  l.max_stack_size = PageRoundDown(std::clamp(opts.stack_rlimit, kMinStack,
                                              std::max(stack_room, kMinStack)));
  return l;
}

}  // namespace sandbox::mm
