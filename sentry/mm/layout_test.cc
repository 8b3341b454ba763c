#include "sentry/mm/layout.h"

#include "gtest/gtest.h"
#include "sentry/abi/linux.h"

namespace sandbox::mm {
namespace {

constexpr uintptr_t kTaskSize = abi::kTaskSizeMax;

TEST(LayoutTest, NonRandomMatchesLinux) {
  Layout l = PickLayout(0x1000, kTaskSize, {.randomize = false});
  EXPECT_EQ(l.min_addr, kMmapMinAddr);
  EXPECT_EQ(l.max_addr, kTaskSize);
  EXPECT_EQ(l.stack_top, kTaskSize);
  // gap = max(8 MiB + guard gap, 128 MiB) = 128 MiB.
  EXPECT_EQ(l.mmap_base, kTaskSize - (128ull << 20));
  EXPECT_EQ(l.legacy_mmap_base, PageRoundUp(kTaskSize / 3));
  EXPECT_EQ(l.max_stack_size, 8ull << 20);
}

TEST(LayoutTest, BigStackLimitMovesMmapBase) {
  Layout l = PickLayout(0x10000, kTaskSize,
                        {.randomize = false, .stack_rlimit = 1ull << 30});
  EXPECT_EQ(l.mmap_base, kTaskSize - (1ull << 30) - kStackGuardGap);
  EXPECT_EQ(l.max_stack_size, 1ull << 30);
}

TEST(LayoutTest, UnlimitedStackIsClamped) {
  Layout l = PickLayout(0x10000, kTaskSize,
                        {.randomize = false, .stack_rlimit = UINT64_MAX});
  EXPECT_EQ(l.mmap_base, PageRoundDown(kTaskSize - kTaskSize / 6 * 5));
  EXPECT_GT(l.mmap_base, l.min_addr);
  EXPECT_LT(l.max_stack_size, kTaskSize);
}

TEST(LayoutTest, RandomizedStaysInRangeAndVaries) {
  bool differ = false;
  Layout first = PickLayout(0x10000, kTaskSize, {.randomize = true});
  for (int i = 0; i < 8; ++i) {
    Layout l = PickLayout(0x10000, kTaskSize, {.randomize = true});
    EXPECT_TRUE(IsPageAligned(l.stack_top));
    EXPECT_TRUE(IsPageAligned(l.mmap_base));
    EXPECT_LE(l.stack_top, kTaskSize);
    EXPECT_GE(l.stack_top, kTaskSize - (16ull << 30));
    EXPECT_LT(l.mmap_base, l.stack_top - l.max_stack_size);
    EXPECT_GE(l.mmap_base, kTaskSize - (128ull << 20) - (16ull << 30) -
                               kStackGuardGap - (1ull << 40));
    if (l.mmap_base != first.mmap_base || l.stack_top != first.stack_top) {
      differ = true;
    }
  }
  EXPECT_TRUE(differ);
}

TEST(LayoutTest, RandomBytesFillsBuffer) {
  uint8_t a[64] = {}, b[64] = {};
  RandomBytes(a, sizeof(a));
  RandomBytes(b, sizeof(b));
  EXPECT_NE(0, memcmp(a, b, sizeof(a)));
}

}  // namespace
}  // namespace sandbox::mm
