#include "sentry/mm/memory_manager.h"

#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/mm/guest_io.h"
#include "sentry/mm/testing/fake_platform.h"

namespace sandbox::mm {
namespace {

using ::sandbox::mm::testing::FakeAddressSpace;
using ::sandbox::mm::testing::FakePlatform;

constexpr int kRW = PROT_READ | PROT_WRITE;
constexpr int kAnonPrivate = MAP_PRIVATE | MAP_ANONYMOUS;
constexpr uintptr_t kBase = 0x200000000;  // 2 MiB-aligned, below mmap_base
constexpr uint64_t kMiB = 1 << 20;

template <typename T>
T V(KResult<T> r) {
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return T();
  return std::move(r).value();
}

#ifndef PROT_SEM
#define PROT_SEM 0x8
#endif

#define EXPECT_ERRNO(expr, e)                          \
  do {                                                 \
    auto _r = (expr);                                  \
    ASSERT_FALSE(_r.ok()) << #expr << " succeeded";    \
    EXPECT_EQ(_r.error().name(), (e).name()) << #expr; \
  } while (0)

class MemoryManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto mm = MemoryManager::Create(platform_, {.randomize = false});
    ASSERT_TRUE(mm.ok());
    mm_ = std::move(mm).value();
    as_ = platform_.last_address_space();
  }
  void TearDown() override {
    if (mm_ == nullptr) return;
    // The running total of VMA sizes matches the VMAs.
    uint64_t sum = 0;
    for (const VmaInfo& v : mm_->Vmas()) sum += v.end - v.start;
    EXPECT_EQ(mm_->MappedBytes(), sum);
  }

  KResult<uintptr_t> Map(uintptr_t addr, size_t len, int prot = kRW,
                         int flags = kAnonPrivate) {
    return mm_->Mmap(
        {.addr = addr, .length = len, .prot = prot, .flags = flags});
  }
  uintptr_t MapOk(uintptr_t addr, size_t len, int prot = kRW,
                  int flags = kAnonPrivate) {
    auto r = Map(addr, len, prot, flags);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().name());
    return r.ok() ? *r : 0;
  }
  uintptr_t FixedOk(uintptr_t addr, size_t len, int prot = kRW,
                    int flags = kAnonPrivate) {
    return MapOk(addr, len, prot, flags | MAP_FIXED);
  }
  int ProtAt(uintptr_t addr) {
    for (const VmaInfo& v : mm_->Vmas()) {
      if (addr >= v.start && addr < v.end) return v.prot;
    }
    return -1;
  }
  bool Fault(uintptr_t addr, bool write = false, bool exec = false) {
    platform::AccessType at;
    at.read = !write && !exec;
    at.write = write;
    at.execute = exec;
    return mm_->HandleFault(addr, at).ok();
  }

  FakePlatform platform_;
  std::unique_ptr<MemoryManager> mm_;
  FakeAddressSpace* as_ = nullptr;
};

// ---------------------------------------------------------------- mmap ----

TEST_F(MemoryManagerTest, MmapPlacesTopDownBelowMmapBaseAndMerges) {
  const uintptr_t base = mm_->layout().mmap_base;
  uintptr_t a = MapOk(0, 4096);
  uintptr_t b = MapOk(0, 3 * 4096);
  EXPECT_EQ(a, base - 4096);
  EXPECT_EQ(b, a - 3 * 4096);
  EXPECT_EQ(mm_->VmaCount(), 1u);  // compatible anonymous VMAs merge
  uintptr_t c = MapOk(0, 4096, PROT_READ);
  EXPECT_EQ(c, b - 4096);
  EXPECT_EQ(mm_->VmaCount(), 2u);
  // Nothing is backed until touched.
  EXPECT_EQ(mm_->BackedBytes(), 0u);
  EXPECT_EQ(as_->MappedPages(), 0u);
}

TEST_F(MemoryManagerTest, MmapArgumentErrors) {
  EXPECT_ERRNO(Map(0, 0), kEINVAL);
  EXPECT_ERRNO(
      mm_->Mmap(
          {.length = 4096, .prot = kRW, .flags = kAnonPrivate, .offset = 123}),
      kEINVAL);
  EXPECT_ERRNO(Map(0, 4096, kRW, MAP_ANONYMOUS), kEINVAL);  // no map type
  EXPECT_ERRNO(Map(0, 4096, kRW, MAP_ANONYMOUS | 0xf), kEINVAL);
  EXPECT_ERRNO(Map(0, 4096, kRW, MAP_ANONYMOUS | MAP_SHARED_VALIDATE), kEINVAL);
  EXPECT_ERRNO(Map(0, 4096, kRW, MAP_ANONYMOUS | MAP_SHARED | MAP_GROWSDOWN),
               kEINVAL);
  EXPECT_ERRNO(Map(0, UINT64_MAX), kENOMEM);  // rounding overflows
  EXPECT_ERRNO(Map(0, mm_->layout().max_addr + 4096), kENOMEM);
  EXPECT_ERRNO(Map(0, 4096, kRW, kAnonPrivate | MAP_HUGETLB), kENOMEM);
  EXPECT_EQ(mm_->VmaCount(), 0u);
}

TEST_F(MemoryManagerTest, MmapFixedErrors) {
  EXPECT_ERRNO(Map(kBase + 1, 4096, kRW, kAnonPrivate | MAP_FIXED), kEINVAL);
  EXPECT_ERRNO(Map(0x1000, 4096, kRW, kAnonPrivate | MAP_FIXED), kEPERM);
  EXPECT_ERRNO(Map(0, 4096, kRW, kAnonPrivate | MAP_FIXED), kEPERM);
  const uintptr_t max = mm_->layout().max_addr;
  EXPECT_ERRNO(Map(max, 4096, kRW, kAnonPrivate | MAP_FIXED), kENOMEM);
  EXPECT_ERRNO(Map(max - 4096, 8192, kRW, kAnonPrivate | MAP_FIXED), kENOMEM);
  EXPECT_EQ(FixedOk(max - 4096, 4096), max - 4096);
}

TEST_F(MemoryManagerTest, MmapFixedReplacesAndNoReplaceGivesEexist) {
  FixedOk(kBase, 4 * 4096);
  const char msg[] = "hello";
  ASSERT_TRUE(mm_->CopyOut(kBase + 4096, msg, sizeof(msg)).ok());
  const uint64_t backed = mm_->BackedBytes();
  EXPECT_GT(backed, 0u);

  EXPECT_ERRNO(Map(kBase + 4096, 4096, kRW, kAnonPrivate | MAP_FIXED_NOREPLACE),
               kEEXIST);
  EXPECT_ERRNO(Map(kBase - 4096, 8192, kRW, kAnonPrivate | MAP_FIXED_NOREPLACE),
               kEEXIST);
  EXPECT_EQ(MapOk(kBase - 4096, 4096, kRW, kAnonPrivate | MAP_FIXED_NOREPLACE),
            kBase - 4096);

  // MAP_FIXED over the data replaces it with fresh zero pages.
  FixedOk(kBase + 4096, 4096, PROT_READ);
  char buf[sizeof(msg)] = {1};
  ASSERT_TRUE(mm_->CopyIn(kBase + 4096, buf, sizeof(buf)).ok());
  EXPECT_EQ(std::string(buf, sizeof(buf)), std::string(sizeof(buf), '\0'));
  EXPECT_EQ(ProtAt(kBase + 4096), PROT_READ);
  EXPECT_EQ(ProtAt(kBase), kRW);
}

TEST_F(MemoryManagerTest, MmapHints) {
  // A free hint is taken (rounded down to a page).
  EXPECT_EQ(MapOk(kBase + 123, 4096), kBase);
  // An occupied hint is not: top-down placement instead.
  EXPECT_EQ(MapOk(kBase, 4096), mm_->layout().mmap_base - 4096);
  // A hint below mmap_min_addr is raised to it.
  EXPECT_EQ(MapOk(0x1000, 4096), mm_->layout().min_addr);
  // A hint that does not fit below the top of the address space is ignored.
  const uintptr_t max = mm_->layout().max_addr;
  uintptr_t r = MapOk(max - 4096, 8192);
  EXPECT_LT(r, mm_->layout().mmap_base);
}

TEST_F(MemoryManagerTest, MmapKeepsGuardGapBelowGrowsDown) {
  const uintptr_t stack = kBase + 64 * kMiB;
  FixedOk(stack, 16 * 4096, kRW, kAnonPrivate | MAP_GROWSDOWN);
  // A hint ending inside the guard gap is refused.
  uintptr_t r = MapOk(stack - 2 * 4096, 4096);
  EXPECT_NE(r, stack - 2 * 4096);
  // One ending below the gap is fine.
  EXPECT_EQ(MapOk(stack - kStackGuardGap - 4096, 4096),
            stack - kStackGuardGap - 4096);
}

TEST_F(MemoryManagerTest, MmapFallsBackToBottomUp) {
  auto as = std::make_unique<FakeAddressSpace>();
  Layout l;
  l.min_addr = 0x10000;
  l.max_addr = 0x10000000;
  l.mmap_base = 0x1000000;
  l.legacy_mmap_base = 0x5000000;
  l.stack_top = l.max_addr;
  auto mm =
      MemoryManager::CreateWith(std::move(as), platform_.memory_file(), l);
  // Room below mmap_base: top-down.
  auto a = mm->Mmap({.length = 0x100000, .prot = kRW, .flags = kAnonPrivate});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 0x1000000u - 0x100000);
  // Too big for below mmap_base: bottom-up from the legacy base.
  auto b = mm->Mmap({.length = 0x2000000, .prot = kRW, .flags = kAnonPrivate});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, 0x5000000u);
  // Nothing fits anywhere.
  EXPECT_ERRNO(
      mm->Mmap({.length = 0x9001000, .prot = kRW, .flags = kAnonPrivate}),
      kENOMEM);
}

TEST_F(MemoryManagerTest, Map32Bit) {
  uintptr_t a = MapOk(0, 4096, kRW, kAnonPrivate | MAP_32BIT);
  EXPECT_GE(a, 0x40000000u);
  EXPECT_LT(a, 0x80000000u);
}

TEST_F(MemoryManagerTest, MmapPopulateBacksEverything) {
  uintptr_t a = MapOk(kBase, 3 * kMiB, kRW, kAnonPrivate | MAP_POPULATE);
  EXPECT_EQ(mm_->BackedBytes(), 3 * kMiB);
  EXPECT_EQ(as_->MappedPages(), 3 * kMiB / 4096);
  (void)a;
}

TEST_F(MemoryManagerTest, MmapProtBeyondMaxProtIsEacces) {
  EXPECT_ERRNO(mm_->Mmap({.length = 4096,
                          .prot = kRW,
                          .flags = kAnonPrivate,
                          .max_prot = PROT_READ}),
               kEACCES);
}

// -------------------------------------------------------------- munmap ----

TEST_F(MemoryManagerTest, MunmapErrors) {
  EXPECT_ERRNO(mm_->Munmap(kBase + 1, 4096), kEINVAL);
  EXPECT_ERRNO(mm_->Munmap(kBase, 0), kEINVAL);
  const uintptr_t max = mm_->layout().max_addr;
  EXPECT_ERRNO(mm_->Munmap(max + 4096, 4096), kEINVAL);
  EXPECT_ERRNO(mm_->Munmap(max - 4096, 8192), kEINVAL);
  EXPECT_ERRNO(mm_->Munmap(kBase, UINT64_MAX), kEINVAL);
  // Unmapping nothing is fine.
  EXPECT_TRUE(mm_->Munmap(kBase, 4096).ok());
  EXPECT_TRUE(mm_->Munmap(max - 4096, 4096).ok());
}

TEST_F(MemoryManagerTest, MunmapSplitsAndFreesPages) {
  FixedOk(kBase, 4 * kMiB, kRW, kAnonPrivate | MAP_POPULATE);
  const uint64_t before = platform_.fake_memory_file().AllocatedBytes();
  EXPECT_EQ(mm_->BackedBytes(), 4 * kMiB);
  ASSERT_TRUE(mm_->Munmap(kBase + kMiB, kMiB + 1).ok());  // rounds up
  EXPECT_EQ(mm_->VmaCount(), 2u);
  EXPECT_EQ(mm_->BackedBytes(), 3 * kMiB - 4096);
  EXPECT_EQ(platform_.fake_memory_file().AllocatedBytes(),
            before - kMiB - 4096);
  EXPECT_TRUE(as_->Lookup(kBase, nullptr));
  EXPECT_FALSE(as_->Lookup(kBase + kMiB, nullptr));
  EXPECT_FALSE(as_->Lookup(kBase + 2 * kMiB, nullptr));
  EXPECT_TRUE(as_->Lookup(kBase + 2 * kMiB + 4096, nullptr));
  auto vmas = mm_->Vmas();
  ASSERT_EQ(vmas.size(), 2u);
  EXPECT_EQ(vmas[0].start, kBase);
  EXPECT_EQ(vmas[0].end, kBase + kMiB);
  EXPECT_EQ(vmas[1].start, kBase + 2 * kMiB + 4096);
  // Touching the hole faults.
  EXPECT_FALSE(Fault(kBase + kMiB));
  EXPECT_FALSE(mm_->FaultIsAccessError(kBase + kMiB));
  // Unmapping across both pieces and beyond removes everything.
  ASSERT_TRUE(mm_->Munmap(kBase - 4096, 8 * kMiB).ok());
  EXPECT_EQ(mm_->VmaCount(), 0u);
  EXPECT_EQ(mm_->BackedBytes(), 0u);
  EXPECT_EQ(as_->MappedPages(), 0u);
}

// ------------------------------------------------------------ mprotect ----

TEST_F(MemoryManagerTest, MprotectErrors) {
  FixedOk(kBase, 4 * 4096);
  EXPECT_ERRNO(mm_->Mprotect(kBase + 1, 4096, PROT_READ), kEINVAL);
  EXPECT_TRUE(mm_->Mprotect(kBase + 4096 * 100, 0, PROT_READ).ok());
  EXPECT_ERRNO(mm_->Mprotect(kBase, 4096, 0x10), kEINVAL);
  EXPECT_TRUE(mm_->Mprotect(kBase, 4096, PROT_READ | PROT_SEM).ok());
  EXPECT_ERRNO(
      mm_->Mprotect(kBase, 4096, PROT_READ | PROT_GROWSDOWN | PROT_GROWSUP),
      kEINVAL);
  EXPECT_ERRNO(mm_->Mprotect(kBase, 4096, PROT_READ | PROT_GROWSUP), kEINVAL);
  EXPECT_ERRNO(mm_->Mprotect(kBase, 4096, PROT_READ | PROT_GROWSDOWN),
               kEINVAL);  // not a grows-down VMA
  EXPECT_ERRNO(mm_->Mprotect(kBase - 4096, 8192, PROT_READ), kENOMEM);
  EXPECT_ERRNO(mm_->Mprotect(kBase + 3 * 4096, UINT64_MAX - 4096, PROT_READ),
               kENOMEM);  // wraps
  EXPECT_ERRNO(mm_->Mprotect(kBase + 100 * 4096, 4096, PROT_READ), kENOMEM);
}

TEST_F(MemoryManagerTest, MprotectHoleIsEnomemAfterApplyingTheStart) {
  FixedOk(kBase, 2 * 4096);
  FixedOk(kBase + 3 * 4096, 2 * 4096);
  EXPECT_ERRNO(mm_->Mprotect(kBase, 5 * 4096, PROT_READ), kENOMEM);
  // Linux applies the change up to the hole.
  EXPECT_EQ(ProtAt(kBase), PROT_READ);
  EXPECT_EQ(ProtAt(kBase + 4096), PROT_READ);
  EXPECT_EQ(ProtAt(kBase + 3 * 4096), kRW);
}

TEST_F(MemoryManagerTest, MprotectBeyondMaxProtIsEacces) {
  ASSERT_TRUE(mm_->Mmap({.addr = kBase,
                         .length = 2 * 4096,
                         .prot = PROT_READ,
                         .flags = kAnonPrivate | MAP_FIXED,
                         .max_prot = PROT_READ | PROT_EXEC})
                  .ok());
  EXPECT_ERRNO(mm_->Mprotect(kBase, 4096, kRW), kEACCES);
  EXPECT_TRUE(mm_->Mprotect(kBase, 4096, PROT_READ | PROT_EXEC).ok());
  EXPECT_EQ(ProtAt(kBase), PROT_READ | PROT_EXEC);
}

TEST_F(MemoryManagerTest, MprotectSplitsMergesAndRemaps) {
  FixedOk(kBase, 16 * 4096, kRW, kAnonPrivate | MAP_POPULATE);
  const char msg[] = "kept";
  ASSERT_TRUE(mm_->CopyOut(kBase + 5 * 4096, msg, sizeof(msg)).ok());
  ASSERT_TRUE(mm_->Mprotect(kBase + 4 * 4096, 4 * 4096, PROT_READ).ok());
  EXPECT_EQ(mm_->VmaCount(), 3u);
  FakeAddressSpace::Page page;
  ASSERT_TRUE(as_->Lookup(kBase + 5 * 4096, &page));
  EXPECT_EQ(page.prot, PROT_READ);
  ASSERT_TRUE(as_->Lookup(kBase, &page));
  EXPECT_EQ(page.prot, kRW);
  // PROT_NONE removes the host mapping but keeps the data.
  ASSERT_TRUE(mm_->Mprotect(kBase + 4 * 4096, 4 * 4096, PROT_NONE).ok());
  EXPECT_FALSE(as_->Lookup(kBase + 5 * 4096, nullptr));
  EXPECT_FALSE(Fault(kBase + 5 * 4096));
  EXPECT_TRUE(mm_->FaultIsAccessError(kBase + 5 * 4096));
  char buf[sizeof(msg)];
  EXPECT_ERRNO(mm_->CopyIn(kBase + 5 * 4096, buf, sizeof(buf)), kEFAULT);
  // Back to RW: one VMA again, data intact, mapped.
  ASSERT_TRUE(mm_->Mprotect(kBase + 4 * 4096, 4 * 4096, kRW).ok());
  EXPECT_EQ(mm_->VmaCount(), 1u);
  ASSERT_TRUE(as_->Lookup(kBase + 5 * 4096, &page));
  EXPECT_EQ(page.prot, kRW);
  ASSERT_TRUE(mm_->CopyIn(kBase + 5 * 4096, buf, sizeof(buf)).ok());
  EXPECT_STREQ(buf, msg);
}

TEST_F(MemoryManagerTest, MprotectGrowsDownExtendsToVmaStart) {
  FixedOk(kBase, 8 * 4096, kRW, kAnonPrivate | MAP_GROWSDOWN);
  ASSERT_TRUE(mm_->Mprotect(kBase + 6 * 4096, 4096,
                            PROT_READ | PROT_EXEC | PROT_GROWSDOWN)
                  .ok());
  EXPECT_EQ(ProtAt(kBase), PROT_READ | PROT_EXEC);
  EXPECT_EQ(ProtAt(kBase + 6 * 4096), PROT_READ | PROT_EXEC);
  EXPECT_EQ(ProtAt(kBase + 7 * 4096), kRW);
}

// ----------------------------------------------------------------- brk ----

TEST_F(MemoryManagerTest, BrkUnsetReturnsZero) {
  EXPECT_EQ(mm_->Brk(0), 0u);
  EXPECT_EQ(mm_->Brk(0x1000000), 0u);
  EXPECT_EQ(mm_->VmaCount(), 0u);
}

TEST_F(MemoryManagerTest, BrkGrowsShrinksAndNeverGoesBelowStart) {
  const uintptr_t start = 0x600000;
  mm_->SetBrkStart(start);
  EXPECT_EQ(mm_->Brk(0), start);
  EXPECT_EQ(mm_->Brk(start - 1), start);  // below the start: old break
  // Growing returns the exact (unaligned) request; the mapping is rounded.
  EXPECT_EQ(mm_->Brk(start + 1), start + 1);
  auto vmas = mm_->Vmas();
  ASSERT_EQ(vmas.size(), 1u);
  EXPECT_EQ(vmas[0].start, start);
  EXPECT_EQ(vmas[0].end, start + 4096);
  EXPECT_EQ(vmas[0].prot, kRW);
  EXPECT_EQ(vmas[0].name, "[heap]");
  EXPECT_EQ(mm_->Brk(start + 100), start + 100);  // same page
  EXPECT_EQ(mm_->Brk(start + 3 * 4096), start + 3 * 4096);
  EXPECT_EQ(mm_->VmaCount(), 1u);
  EXPECT_EQ(mm_->Vmas()[0].end, start + 3 * 4096);
  uint64_t v = 42;
  ASSERT_TRUE(mm_->CopyOut(start + 2 * 4096, &v, sizeof(v)).ok());
  EXPECT_GT(mm_->BackedBytes(), 0u);
  // Shrinking unmaps and frees.
  EXPECT_EQ(mm_->Brk(start + 10), start + 10);
  EXPECT_EQ(mm_->Vmas()[0].end, start + 4096);
  EXPECT_ERRNO(mm_->CopyIn(start + 2 * 4096, &v, sizeof(v)), kEFAULT);
  EXPECT_EQ(mm_->BackedBytes(), 4096u);
  // Back to the start: no heap at all.
  EXPECT_EQ(mm_->Brk(start), start);
  EXPECT_EQ(mm_->VmaCount(), 0u);
  EXPECT_EQ(mm_->BackedBytes(), 0u);
}

TEST_F(MemoryManagerTest, BrkStopsBelowAMapping) {
  const uintptr_t start = 0x600000;
  mm_->SetBrkStart(start);
  FixedOk(start + 8 * 4096, 4096);
  // Up to one page below the mapping is fine; touching or passing it is not.
  EXPECT_EQ(mm_->Brk(start + 7 * 4096), start + 7 * 4096);
  EXPECT_EQ(mm_->Brk(start + 7 * 4096 + 1), start + 7 * 4096);
  EXPECT_EQ(mm_->Brk(start + 100 * 4096), start + 7 * 4096);
  // A grows-down VMA also keeps its guard gap.
  ASSERT_TRUE(mm_->Munmap(start + 8 * 4096, 4096).ok());
  FixedOk(start + 8 * 4096 + kStackGuardGap, 4096, kRW,
          kAnonPrivate | MAP_GROWSDOWN);
  EXPECT_EQ(mm_->Brk(start + 7 * 4096 + 1), start + 7 * 4096);
  EXPECT_EQ(mm_->Brk(start + 7 * 4096), start + 7 * 4096);
  // Beyond the address space.
  EXPECT_EQ(mm_->Brk(UINT64_MAX), start + 7 * 4096);
}

// -------------------------------------------------------------- faults ----

TEST_F(MemoryManagerTest, FaultPermissionErrors) {
  EXPECT_FALSE(Fault(kBase));  // no VMA
  EXPECT_FALSE(mm_->FaultIsAccessError(kBase));
  FixedOk(kBase, 4096, PROT_READ);
  FixedOk(kBase + 4096, 4096, PROT_NONE);
  FixedOk(kBase + 2 * 4096, 4096, PROT_WRITE);
  FixedOk(kBase + 3 * 4096, 4096, PROT_EXEC);
  EXPECT_TRUE(Fault(kBase));
  EXPECT_FALSE(Fault(kBase, /*write=*/true));
  EXPECT_FALSE(Fault(kBase, false, /*exec=*/true));
  EXPECT_TRUE(mm_->FaultIsAccessError(kBase));
  EXPECT_FALSE(Fault(kBase + 4096));
  EXPECT_FALSE(Fault(kBase + 4096, true));
  EXPECT_TRUE(Fault(kBase + 2 * 4096));  // write implies read on x86
  EXPECT_TRUE(Fault(kBase + 2 * 4096, true));
  EXPECT_TRUE(Fault(kBase + 3 * 4096, false, true));
  EXPECT_TRUE(Fault(kBase + 3 * 4096));  // exec implies read on x86
  EXPECT_FALSE(Fault(0));
  EXPECT_FALSE(Fault(UINT64_MAX));
}

TEST_F(MemoryManagerTest, FaultPopulatesAlignedRunBoundedByVma) {
  FixedOk(kBase, 4 * kMiB);
  const int calls = as_->map_calls();
  ASSERT_TRUE(Fault(kBase + 3 * kMiB + 5, true));
  EXPECT_EQ(as_->map_calls(), calls + 1);  // one run, not page by page
  EXPECT_EQ(mm_->BackedBytes(), 2 * kMiB);
  EXPECT_FALSE(as_->Lookup(kBase + 2 * kMiB - 4096, nullptr));
  FakeAddressSpace::Page first, last;
  ASSERT_TRUE(as_->Lookup(kBase + 2 * kMiB, &first));
  ASSERT_TRUE(as_->Lookup(kBase + 4 * kMiB - 4096, &last));
  EXPECT_EQ(last.offset - first.offset, 2 * kMiB - 4096);  // contiguous
  EXPECT_EQ(first.prot, kRW);

  // A small VMA bounds the run.
  FixedOk(kBase + 8 * kMiB + 4096, 3 * 4096, PROT_READ);
  ASSERT_TRUE(Fault(kBase + 8 * kMiB + 2 * 4096));
  EXPECT_EQ(mm_->BackedBytes(), 2 * kMiB + 3 * 4096);
  EXPECT_FALSE(as_->Lookup(kBase + 8 * kMiB, nullptr));
  EXPECT_TRUE(as_->Lookup(kBase + 8 * kMiB + 4096, nullptr));
  EXPECT_TRUE(as_->Lookup(kBase + 8 * kMiB + 3 * 4096, nullptr));
  EXPECT_FALSE(as_->Lookup(kBase + 8 * kMiB + 4 * 4096, nullptr));
}

TEST_F(MemoryManagerTest, AdjacentRunsMergeAndUnmapInOneCall) {
  FixedOk(kBase, 4 * kMiB);
  FixedOk(kBase + 4 * kMiB, 4 * kMiB, PROT_READ);
  ASSERT_TRUE(Fault(kBase, true));
  ASSERT_TRUE(Fault(kBase + 2 * kMiB, true));
  EXPECT_EQ(mm_->PmaCount(), 1u);  // one contiguous run of the memory file
  ASSERT_TRUE(Fault(kBase + 4 * kMiB));
  EXPECT_EQ(mm_->PmaCount(), 2u);  // never across a VMA boundary
  const int unmaps = as_->unmap_calls();
  ASSERT_TRUE(mm_->Munmap(kBase, 8 * kMiB).ok());
  EXPECT_EQ(as_->unmap_calls(), unmaps + 1);
  EXPECT_EQ(mm_->PmaCount(), 0u);
  EXPECT_EQ(as_->MappedPages(), 0u);
}

TEST_F(MemoryManagerTest, FaultRunStopsAtBackedPages) {
  FixedOk(kBase, 2 * kMiB);
  // Back one page in the middle by writing to it through a small VMA that
  // is then merged back (munmap + re-mmap keeps other pages).
  ASSERT_TRUE(mm_->Munmap(kBase + kMiB, 4096).ok());
  FixedOk(kBase + kMiB, 4096, kRW, kAnonPrivate | MAP_POPULATE);
  EXPECT_EQ(mm_->VmaCount(), 1u);
  EXPECT_EQ(mm_->BackedBytes(), 4096u);
  ASSERT_TRUE(Fault(kBase + 5));
  EXPECT_EQ(mm_->BackedBytes(), kMiB + 4096);
  ASSERT_TRUE(Fault(kBase + 2 * kMiB - 1));
  EXPECT_EQ(mm_->BackedBytes(), 2 * kMiB);
}

TEST_F(MemoryManagerTest, FaultOnGrowsDownUsesSmallRunsAndGrows) {
  const uintptr_t top = kBase + 64 * kMiB;
  FixedOk(top - 16 * 4096, 16 * 4096, kRW, kAnonPrivate | MAP_GROWSDOWN);
  ASSERT_TRUE(Fault(top - 4096, true));
  EXPECT_EQ(mm_->BackedBytes(), 16 * 4096u);  // 64 KiB window
  // Just below: the VMA grows down.
  ASSERT_TRUE(Fault(top - 16 * 4096 - 100, true));
  auto vmas = mm_->Vmas();
  ASSERT_EQ(vmas.size(), 1u);
  EXPECT_EQ(vmas[0].start, top - 17 * 4096);
  // Beyond RLIMIT_STACK (8 MiB): no.
  EXPECT_FALSE(Fault(top - 9 * kMiB, true));
  // Not into the guard gap above another mapping.
  FixedOk(top - 4 * kMiB, 4096);
  EXPECT_FALSE(Fault(top - 4 * kMiB + 4096 + 8 * 4096, true));
  EXPECT_TRUE(Fault(top - 4 * kMiB + 4096 + kStackGuardGap, true));
}

TEST_F(MemoryManagerTest, FaultFallsBackToOnePageThenEnomem) {
  FixedOk(kBase, 2 * kMiB);
  platform_.fake_memory_file().FailNextAllocations(1);
  ASSERT_TRUE(Fault(kBase + 8192));
  EXPECT_EQ(mm_->BackedBytes(), 4096u);
  platform_.fake_memory_file().FailNextAllocations(2);
  platform::AccessType at;
  at.read = true;
  EXPECT_ERRNO(mm_->HandleFault(kBase + kMiB, at), kENOMEM);
}

TEST_F(MemoryManagerTest, SpuriousFaultRemaps) {
  FixedOk(kBase, 4096);
  ASSERT_TRUE(Fault(kBase));
  ASSERT_TRUE(as_->Unmap(kBase, 4096).ok());  // host mapping lost
  ASSERT_TRUE(Fault(kBase));
  EXPECT_TRUE(as_->Lookup(kBase, nullptr));
  EXPECT_EQ(mm_->BackedBytes(), 4096u);
}

// -------------------------------------------------------------- copies ----

TEST_F(MemoryManagerTest, CopyRoundTripAcrossVmas) {
  FixedOk(kBase, 4096);
  FixedOk(kBase + 4096, 4096, PROT_READ | PROT_WRITE | PROT_EXEC);
  std::string data(6000, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i);
  auto w = mm_->CopyOut(kBase + 100, data.data(), data.size());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*w, data.size());
  std::string back(data.size(), '\0');
  auto r = mm_->CopyIn(kBase + 100, back.data(), back.size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, data.size());
  EXPECT_EQ(back, data);
  EXPECT_EQ(V(mm_->CopyIn(kBase, back.data(), 0)), 0u);
}

TEST_F(MemoryManagerTest, CopyIsPartialAtBadPagesAndEfaultWhenNothing) {
  FixedOk(kBase, 2 * 4096);
  char buf[3 * 4096] = {};
  auto r = mm_->CopyOut(kBase + 4096 + 10, buf, sizeof(buf));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 4096u - 10);
  r = mm_->CopyIn(kBase + 10, buf, sizeof(buf));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 2 * 4096u - 10);
  EXPECT_ERRNO(mm_->CopyIn(kBase + 2 * 4096, buf, 1), kEFAULT);
  EXPECT_ERRNO(mm_->CopyOut(kBase - 1, buf, 1), kEFAULT);
  EXPECT_ERRNO(mm_->CopyIn(0, buf, 1), kEFAULT);
  EXPECT_ERRNO(mm_->CopyIn(UINT64_MAX - 3, buf, 16), kEFAULT);
  EXPECT_ERRNO(mm_->CopyIn(mm_->layout().max_addr, buf, 16), kEFAULT);
  // A read-only page stops a write.
  FixedOk(kBase + 2 * 4096, 4096, PROT_READ);
  r = mm_->CopyOut(kBase + 4096, buf, 2 * 4096);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 4096u);
  EXPECT_ERRNO(mm_->CopyOut(kBase + 2 * 4096, buf, 1), kEFAULT);
  EXPECT_ERRNO(mm_->ZeroOut(kBase + 2 * 4096, 1), kEFAULT);
}

TEST_F(MemoryManagerTest, WalkGuestGivesMemoryFileRunsWithCopyRules) {
  FixedOk(kBase, 2 * 4096);
  FixedOk(kBase + 2 * 4096, 4096, PROT_READ);
  // Guest-written walk (a read(2)'s buffer): stops at the read-only page.
  size_t seen = 0;
  auto r =
      mm_->WalkGuest(kBase + 10, 3 * 4096, /*write=*/true,
                     [&](uint64_t off, size_t at, size_t k) -> size_t {
                       EXPECT_EQ(at, seen);
                       std::string b(k, 'w');
                       EXPECT_TRUE(mm_->memory_file().Write(off, b.data(), k));
                       seen += k;
                       return k;
                     });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 2 * 4096u - 10);
  EXPECT_EQ(seen, 2 * 4096u - 10);
  std::string back(2 * 4096 - 10, '\0');
  ASSERT_TRUE(mm_->CopyIn(kBase + 10, back.data(), back.size()).ok());
  EXPECT_EQ(back, std::string(back.size(), 'w'));
  // Guest-read walk passes the read-only page.
  r = mm_->WalkGuest(kBase, 3 * 4096, /*write=*/false,
                     [](uint64_t, size_t, size_t k) -> size_t { return k; });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 3 * 4096u);
  // Nothing accessible: EFAULT; fn handling nothing: 0; fn short: short.
  EXPECT_ERRNO(
      mm_->WalkGuest(kBase + 2 * 4096, 10, true,
                     [](uint64_t, size_t, size_t k) -> size_t { return k; }),
      kEFAULT);
  EXPECT_ERRNO(
      mm_->WalkGuest(kBase - 4096, 10, false,
                     [](uint64_t, size_t, size_t k) -> size_t { return k; }),
      kEFAULT);
  EXPECT_EQ(
      V(mm_->WalkGuest(kBase, 100, true,
                       [](uint64_t, size_t, size_t) -> size_t { return 0; })),
      0u);
  EXPECT_EQ(V(mm_->WalkGuest(
                kBase, 100, true,
                [](uint64_t, size_t, size_t k) -> size_t { return k / 2; })),
            50u);
}

TEST_F(MemoryManagerTest, GuestSegmentsWalkInOrderAndStopAtAFault) {
  FixedOk(kBase, 4096);
  FixedOk(kBase + 2 * 4096, 4096);
  GuestSegments segs(*mm_, /*guest_written=*/true);
  segs.Add(kBase + 4000, 96);
  segs.Add(kBase + 100, 0);  // skipped
  segs.Add(kBase + 2 * 4096, 50);
  segs.Add(kBase + 4096, 10);  // unmapped: ends the walk
  segs.Add(kBase, 10);
  EXPECT_EQ(segs.size(), 96u + 50 + 10 + 10);
  std::vector<size_t> ats;
  auto all = [&](uint64_t, size_t at, size_t k) -> size_t {
    ats.push_back(at);
    return k;
  };
  auto r = segs.Walk(segs.size(), all);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 146u);
  EXPECT_EQ(ats, (std::vector<size_t>{0, 96}));
  // n bounds the walk.
  ats.clear();
  EXPECT_EQ(V(segs.Walk(100, all)), 100u);
  GuestSegments bad(*mm_, true);
  bad.Add(kBase + 4096, 10);
  bad.Add(kBase, 10);
  EXPECT_ERRNO(bad.Walk(bad.size(), all), kEFAULT);
}

TEST_F(MemoryManagerTest, ForceCopyIgnoresProtButNeedsAVma) {
  FixedOk(kBase, 4096, PROT_READ);
  FixedOk(kBase + 4096, 4096, PROT_NONE);
  const char msg[] = "stack data";
  EXPECT_ERRNO(mm_->CopyOut(kBase, msg, sizeof(msg)), kEFAULT);
  ASSERT_TRUE(mm_->ForceCopyOut(kBase, msg, sizeof(msg)).ok());
  char buf[sizeof(msg)];
  ASSERT_TRUE(mm_->CopyIn(kBase, buf, sizeof(buf)).ok());
  EXPECT_STREQ(buf, msg);
  // The host mapping stays read-only.
  FakeAddressSpace::Page page;
  ASSERT_TRUE(as_->Lookup(kBase, &page));
  EXPECT_EQ(page.prot, PROT_READ);
  ASSERT_TRUE(mm_->ForceCopyOut(kBase + 4096, msg, sizeof(msg)).ok());
  EXPECT_FALSE(as_->Lookup(kBase + 4096, nullptr));
  EXPECT_ERRNO(mm_->CopyIn(kBase + 4096, buf, sizeof(buf)), kEFAULT);
  ASSERT_TRUE(mm_->ForceCopyIn(kBase + 4096, buf, sizeof(buf)).ok());
  EXPECT_STREQ(buf, msg);
  EXPECT_ERRNO(mm_->ForceCopyOut(kBase + 2 * 4096, msg, 1), kEFAULT);
}

TEST_F(MemoryManagerTest, ZeroOut) {
  FixedOk(kBase, 4096);
  std::string ones(100, '\1');
  ASSERT_TRUE(mm_->CopyOut(kBase, ones.data(), ones.size()).ok());
  ASSERT_TRUE(mm_->ZeroOut(kBase + 10, 50).ok());
  std::string back(100, 'x');
  ASSERT_TRUE(mm_->CopyIn(kBase, back.data(), back.size()).ok());
  EXPECT_EQ(back, std::string(10, '\1') + std::string(50, '\0') +
                      std::string(40, '\1'));
}

TEST_F(MemoryManagerTest, CopyInString) {
  FixedOk(kBase, 2 * 4096);
  const char path[] = "/bin/true";
  ASSERT_TRUE(mm_->CopyOut(kBase + 5, path, sizeof(path)).ok());
  auto s = mm_->CopyInString(kBase + 5, 4096);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, "/bin/true");
  // Exactly like Linux getname(): the NUL must be within max_len bytes.
  EXPECT_EQ(V(mm_->CopyInString(kBase + 5, 10)), "/bin/true");
  EXPECT_ERRNO(mm_->CopyInString(kBase + 5, 9), kENAMETOOLONG);
  EXPECT_EQ(V(mm_->CopyInString(kBase + 4096, 4096)), "");

  // A string that ends (with its NUL) on the last mapped byte is fine:
  // nothing past it is read.
  const uintptr_t last = kBase + 2 * 4096 - 4;
  ASSERT_TRUE(mm_->CopyOut(last, "abc", 4).ok());
  EXPECT_EQ(V(mm_->CopyInString(last, 4096)), "abc");
  // Without a NUL before the end of the mapping: EFAULT.
  ASSERT_TRUE(mm_->CopyOut(last, "abcd", 4).ok());
  EXPECT_ERRNO(mm_->CopyInString(last, 4096), kEFAULT);
  EXPECT_ERRNO(mm_->CopyInString(last, 4), kENAMETOOLONG);
  EXPECT_ERRNO(mm_->CopyInString(0, 4096), kEFAULT);
  // A long string across a page boundary.
  std::string longs(5000, 'q');
  ASSERT_TRUE(mm_->CopyOut(kBase, longs.c_str(), longs.size() + 1).ok());
  EXPECT_EQ(V(mm_->CopyInString(kBase, 8000)), longs);
}

TEST_F(MemoryManagerTest, WithInternalMapping) {
  FixedOk(kBase, 4096);
  FixedOk(kBase + 4096, 4096, PROT_READ);
  platform::AccessType rw;
  rw.read = rw.write = true;
  uint32_t v = 41;
  ASSERT_TRUE(mm_->CopyOut(kBase + 8, &v, 4).ok());
  ASSERT_TRUE(mm_->WithInternalMapping(
                     kBase + 8, 4, rw,
                     [](uint8_t* p) {
                       auto* a = reinterpret_cast<std::atomic<uint32_t>*>(p);
                       a->fetch_add(1);
                     })
                  .ok());
  ASSERT_TRUE(mm_->CopyIn(kBase + 8, &v, 4).ok());
  EXPECT_EQ(v, 42u);
  auto nop = [](uint8_t*) {};
  EXPECT_ERRNO(mm_->WithInternalMapping(kBase + 4094, 4, rw, nop), kEFAULT);
  EXPECT_ERRNO(mm_->WithInternalMapping(kBase + 4096, 4, rw, nop), kEFAULT);
  platform::AccessType r;
  r.read = true;
  EXPECT_TRUE(mm_->WithInternalMapping(kBase + 4096, 4, r, nop).ok());
  EXPECT_ERRNO(mm_->WithInternalMapping(kBase + 2 * 4096, 4, r, nop), kEFAULT);
  EXPECT_ERRNO(mm_->WithInternalMapping(kBase, 0, r, nop), kEFAULT);
}

// -------------------------------------------------------------- rlimits ----

TEST_F(MemoryManagerTest, AddressSpaceLimit) {
  mm_->SetAddressSpaceLimit(4 * 4096);
  EXPECT_TRUE(Map(kBase, 2 * 4096, kRW, kAnonPrivate | MAP_FIXED).ok());
  EXPECT_EQ(mm_->MappedBytes(), 2 * 4096u);
  EXPECT_ERRNO(Map(0, 3 * 4096), kENOMEM);
  // Replacing counts only what is new.
  EXPECT_TRUE(Map(kBase, 4 * 4096, PROT_READ, kAnonPrivate | MAP_FIXED).ok());
  EXPECT_EQ(mm_->MappedBytes(), 4 * 4096u);
  EXPECT_ERRNO(Map(0, 4096), kENOMEM);
  EXPECT_ERRNO(mm_->Mremap(kBase, 4 * 4096, 8 * 4096, MREMAP_MAYMOVE, 0),
               kENOMEM);
  mm_->SetBrkStart(0x600000);
  EXPECT_EQ(mm_->Brk(0x601000), 0x600000u);
  ASSERT_TRUE(mm_->Munmap(kBase, 4096).ok());
  EXPECT_EQ(mm_->MappedBytes(), 3 * 4096u);
  EXPECT_EQ(mm_->Brk(0x601000), 0x601000u);
  EXPECT_EQ(mm_->MappedBytes(), 4 * 4096u);
  // Grows-down stacks are limited too.
  mm_->SetAddressSpaceLimit(UINT64_MAX);
  FixedOk(kBase + 64 * kMiB, 4096, kRW, kAnonPrivate | MAP_GROWSDOWN);
  mm_->SetAddressSpaceLimit(mm_->MappedBytes());
  EXPECT_FALSE(Fault(kBase + 64 * kMiB - 8, true));
  mm_->SetAddressSpaceLimit(mm_->MappedBytes() + 4096);
  EXPECT_TRUE(Fault(kBase + 64 * kMiB - 8, true));
}

TEST_F(MemoryManagerTest, DataLimitBoundsBrk) {
  mm_->SetBrkStart(0x600000);
  mm_->SetDataLimit(8192);
  EXPECT_EQ(mm_->Brk(0x602000), 0x602000u);
  EXPECT_EQ(mm_->Brk(0x602001), 0x602000u);
  EXPECT_EQ(mm_->Brk(0x601000), 0x601000u);  // shrinking is always fine
}

// ----------------------------------------------------------- map count ----

TEST_F(MemoryManagerTest, MaxMapCount) {
  // Alternate protections so that nothing merges.
  for (size_t i = 0; i < MemoryManager::kMaxMapCount; ++i) {
    ASSERT_TRUE(Map(kBase + i * 4096, 4096, i % 2 ? PROT_READ : kRW,
                    kAnonPrivate | MAP_FIXED)
                    .ok())
        << i;
  }
  EXPECT_EQ(mm_->VmaCount(), MemoryManager::kMaxMapCount);
  EXPECT_ERRNO(Map(0, 4096, PROT_EXEC), kENOMEM);
  // Splitting a VMA in three would exceed the limit.
  const uintptr_t big = kBase - 16 * 4096;
  ASSERT_TRUE(mm_->Munmap(kBase, 4096).ok());  // make room for one
  FixedOk(big, 3 * 4096, PROT_EXEC);
  EXPECT_ERRNO(mm_->Munmap(big + 4096, 4096), kENOMEM);
  EXPECT_ERRNO(mm_->Mprotect(big + 4096, 4096, PROT_READ), kENOMEM);
  // Unmapping a whole VMA is always fine.
  EXPECT_TRUE(mm_->Munmap(big, 3 * 4096).ok());
}

// ------------------------------------------------------ madvise/mremap ----

#ifndef MADV_FREE
#define MADV_FREE 8
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

TEST_F(MemoryManagerTest, MadviseErrors) {
  FixedOk(kBase, 4 * 4096);
  EXPECT_ERRNO(mm_->Madvise(kBase, 4096, 12345), kEINVAL);
  EXPECT_ERRNO(mm_->Madvise(kBase + 1, 4096, MADV_DONTNEED), kEINVAL);
  EXPECT_ERRNO(mm_->Madvise(kBase, UINT64_MAX, MADV_DONTNEED), kEINVAL);
  EXPECT_ERRNO(mm_->Madvise(kBase, 4096, MADV_HWPOISON), kEPERM);
  EXPECT_TRUE(mm_->Madvise(kBase, 0, MADV_DONTNEED).ok());
  EXPECT_TRUE(mm_->Madvise(kBase, 4096, MADV_WILLNEED).ok());
  EXPECT_TRUE(mm_->Madvise(kBase, 4096, MADV_HUGEPAGE).ok());
  EXPECT_ERRNO(mm_->Madvise(kBase, 4096, MADV_REMOVE), kEINVAL);  // private
  EXPECT_ERRNO(mm_->Madvise(kBase + 2 * 4096, 4 * 4096, MADV_NORMAL), kENOMEM);
  EXPECT_ERRNO(mm_->Madvise(kBase + 64 * 4096, 4096, MADV_NORMAL), kENOMEM);
  FixedOk(kBase + 8 * 4096, 4096, kRW, MAP_SHARED | MAP_ANONYMOUS);
  EXPECT_ERRNO(mm_->Madvise(kBase + 8 * 4096, 4096, MADV_FREE), kEINVAL);
}

TEST_F(MemoryManagerTest, MadviseDontneedZeroesPrivateMemory) {
  FixedOk(kBase, 4 * 4096);
  FixedOk(kBase + 4 * 4096, 4 * 4096, kRW, MAP_SHARED | MAP_ANONYMOUS);
  uint64_t v = 7;
  ASSERT_TRUE(mm_->CopyOut(kBase + 4096, &v, 8).ok());
  ASSERT_TRUE(mm_->CopyOut(kBase + 5 * 4096, &v, 8).ok());
  const uint64_t backed = mm_->BackedBytes();
  // A hole after the range: ENOMEM, but the mapped part is advised.
  EXPECT_ERRNO(mm_->Madvise(kBase, 16 * 4096, MADV_DONTNEED), kENOMEM);
  ASSERT_TRUE(mm_->CopyIn(kBase + 4096, &v, 8).ok());
  EXPECT_EQ(v, 0u);  // private: zero again
  ASSERT_TRUE(mm_->CopyIn(kBase + 5 * 4096, &v, 8).ok());
  EXPECT_EQ(v, 7u);  // shared: contents kept
  EXPECT_LT(mm_->BackedBytes(), backed + 4 * 4096);
  // MADV_REMOVE frees shared anonymous memory.
  ASSERT_TRUE(mm_->Madvise(kBase + 4 * 4096, 4 * 4096, MADV_REMOVE).ok());
  ASSERT_TRUE(mm_->CopyIn(kBase + 5 * 4096, &v, 8).ok());
  EXPECT_EQ(v, 0u);
  // MADV_FREE on private anonymous memory.
  v = 9;
  ASSERT_TRUE(mm_->CopyOut(kBase, &v, 8).ok());
  ASSERT_TRUE(mm_->Madvise(kBase, 4096, MADV_FREE).ok());
  ASSERT_TRUE(mm_->CopyIn(kBase, &v, 8).ok());
  EXPECT_EQ(v, 0u);
}

TEST_F(MemoryManagerTest, MadvisePopulate) {
  FixedOk(kBase, 3 * kMiB);
  ASSERT_TRUE(mm_->Madvise(kBase, 3 * kMiB, MADV_POPULATE_WRITE).ok());
  EXPECT_EQ(mm_->BackedBytes(), 3 * kMiB);
  FixedOk(kBase + 4 * kMiB, 4096, PROT_NONE);
  EXPECT_ERRNO(mm_->Madvise(kBase + 4 * kMiB, 4096, MADV_POPULATE_WRITE),
               kENOMEM);
}

TEST_F(MemoryManagerTest, MremapErrors) {
  FixedOk(kBase, 4 * 4096);
  EXPECT_ERRNO(mm_->Mremap(kBase, 4096, 8192, 0x80, 0), kEINVAL);
  EXPECT_ERRNO(mm_->Mremap(kBase, 4096, 8192, MREMAP_FIXED, kBase + kMiB),
               kEINVAL);
  EXPECT_ERRNO(
      mm_->Mremap(kBase, 4096, 8192, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0),
      kEINVAL);
  EXPECT_ERRNO(mm_->Mremap(kBase + 1, 4096, 8192, MREMAP_MAYMOVE, 0), kEINVAL);
  EXPECT_ERRNO(mm_->Mremap(kBase, 4096, 0, MREMAP_MAYMOVE, 0), kEINVAL);
  EXPECT_ERRNO(mm_->Mremap(kBase, 0, 4096, MREMAP_MAYMOVE, 0), kEINVAL);
  EXPECT_ERRNO(mm_->Mremap(kBase, 4096, 8192, MREMAP_MAYMOVE | MREMAP_FIXED,
                           kBase - 4096),
               kEINVAL);  // overlapping
  EXPECT_ERRNO(mm_->Mremap(kBase, 4096, 8192, MREMAP_MAYMOVE | MREMAP_FIXED,
                           kBase + kMiB + 1),
               kEINVAL);
  EXPECT_ERRNO(mm_->Mremap(kBase + kMiB, 4096, 8192, MREMAP_MAYMOVE, 0),
               kEFAULT);  // no VMA
  EXPECT_ERRNO(mm_->Mremap(kBase, 8 * 4096, 16 * 4096, MREMAP_MAYMOVE, 0),
               kEFAULT);  // beyond the VMA
  FixedOk(kBase + 4 * 4096, 4096, PROT_READ);
  EXPECT_ERRNO(mm_->Mremap(kBase, 4 * 4096, 8 * 4096, 0, 0), kENOMEM);
}

TEST_F(MemoryManagerTest, MremapShrinksAndGrowsInPlace) {
  FixedOk(kBase, 8 * 4096, kRW, kAnonPrivate | MAP_POPULATE);
  auto r = mm_->Mremap(kBase, 8 * 4096, 2 * 4096 + 1, 0, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, kBase);
  EXPECT_EQ(mm_->Vmas()[0].end, kBase + 3 * 4096);
  EXPECT_EQ(mm_->BackedBytes(), 3 * 4096u);
  r = mm_->Mremap(kBase, 3 * 4096, 16 * 4096, 0, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, kBase);
  EXPECT_EQ(mm_->Vmas()[0].end, kBase + 16 * 4096);
  EXPECT_EQ(mm_->VmaCount(), 1u);
}

TEST_F(MemoryManagerTest, MremapMovesPagesWithoutCopying) {
  FixedOk(kBase, 4 * 4096);
  FixedOk(kBase + 4 * 4096, 4096, PROT_READ);  // blocks growing in place
  const char msg[] = "moved";
  ASSERT_TRUE(mm_->CopyOut(kBase + 4096, msg, sizeof(msg)).ok());
  const uint64_t allocated = platform_.fake_memory_file().AllocatedBytes();
  auto r = mm_->Mremap(kBase, 4 * 4096, 8 * 4096, MREMAP_MAYMOVE, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(*r, kBase);
  char buf[sizeof(msg)] = {};
  ASSERT_TRUE(mm_->CopyIn(*r + 4096, buf, sizeof(buf)).ok());
  EXPECT_STREQ(buf, msg);
  EXPECT_EQ(platform_.fake_memory_file().AllocatedBytes(), allocated);
  EXPECT_ERRNO(mm_->CopyIn(kBase + 4096, buf, 1), kEFAULT);
  EXPECT_FALSE(as_->Lookup(kBase + 4096, nullptr));
  EXPECT_TRUE(as_->Lookup(*r + 4096, nullptr));

  // MREMAP_FIXED replaces what is at the target; a smaller size frees the
  // rest.
  const uintptr_t target = kBase + 64 * kMiB;
  FixedOk(target, 4096, PROT_READ);
  auto f = mm_->Mremap(*r, 8 * 4096, 2 * 4096, MREMAP_MAYMOVE | MREMAP_FIXED,
                       target);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f, target);
  EXPECT_EQ(ProtAt(target), kRW);
  ASSERT_TRUE(mm_->CopyIn(target + 4096, buf, sizeof(buf)).ok());
  EXPECT_STREQ(buf, msg);

  // MREMAP_DONTUNMAP leaves the old range mapped and empty.
  auto d = mm_->Mremap(target, 2 * 4096, 2 * 4096,
                       MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(mm_->CopyIn(*d + 4096, buf, sizeof(buf)).ok());
  EXPECT_STREQ(buf, msg);
  ASSERT_TRUE(mm_->CopyIn(target + 4096, buf, sizeof(buf)).ok());
  EXPECT_EQ(buf[0], 0);
}

// ------------------------------------------------------------ Mappable ----

class FakeMappable : public Mappable {
 public:
  FakeMappable(platform::MemoryFile& mf, uint64_t pages) : mf_(mf) {
    off_ = *mf.Allocate(pages * 4096);
    size_ = pages * 4096;
  }
  ~FakeMappable() override { mf_.Free(off_, size_); }
  void AddMapping(MappingSpace* space, uintptr_t, uint64_t, uint64_t length,
                  bool) override {
    space_ = space;
    mapped_ += length;
  }
  void RemoveMapping(MappingSpace*, uintptr_t, uint64_t, uint64_t length,
                     bool) override {
    mapped_ -= length;
  }
  KResult<std::vector<Translation>> Translate(
      uint64_t req, uint64_t req_len, uint64_t opt, uint64_t opt_len,
      platform::AccessType at) override {
    if (req + req_len > size_) return kEFAULT;  // beyond EOF
    uint64_t end = std::min(opt + opt_len, size_);
    ++translates_;
    if (at.write) ++write_translates_;
    int prot = PROT_READ | PROT_EXEC;
    if (at.write || !track_writes_) prot |= PROT_WRITE;
    return std::vector<Translation>{{opt, end - opt, off_ + opt, prot}};
  }
  uint64_t file_offset() const { return off_; }

  MappingSpace* space_ = nullptr;
  uint64_t mapped_ = 0;
  int translates_ = 0;
  int write_translates_ = 0;
  // Hand pages out read-only until a write translation (page-cache style
  // dirty tracking).
  bool track_writes_ = false;

 private:
  platform::MemoryFile& mf_;
  uint64_t off_ = 0, size_ = 0;
};

TEST_F(MemoryManagerTest, SharedMappableIsMappedDirectly) {
  auto file = std::make_shared<FakeMappable>(platform_.memory_file(), 4);
  ASSERT_TRUE(
      platform_.memory_file().Write(file->file_offset() + 4096, "F", 1));
  auto a = mm_->Mmap({.addr = kBase,
                      .length = 8 * 4096,
                      .prot = kRW,
                      .flags = MAP_SHARED | MAP_FIXED,
                      .mappable = file});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(file->mapped_, 8 * 4096u);
  char c = 0;
  ASSERT_TRUE(mm_->CopyIn(kBase + 4096, &c, 1).ok());
  EXPECT_EQ(c, 'F');
  ASSERT_TRUE(mm_->CopyOut(kBase + 4096, "G", 1).ok());
  ASSERT_TRUE(platform_.memory_file().Read(file->file_offset() + 4096, &c, 1));
  EXPECT_EQ(c, 'G');  // shared: the write reached the file's page
  EXPECT_EQ(mm_->BackedBytes(), 0u);  // the file owns these pages
  // Beyond EOF: SIGBUS-worthy.
  platform::AccessType at;
  at.read = true;
  EXPECT_ERRNO(mm_->HandleFault(kBase + 5 * 4096, at), kEIO);
  // Invalidate drops the translation; the next access translates again.
  const int before = file->translates_;
  file->space_->Invalidate(kBase, 4 * 4096);
  EXPECT_FALSE(as_->Lookup(kBase + 4096, nullptr));
  ASSERT_TRUE(mm_->CopyIn(kBase + 4096, &c, 1).ok());
  EXPECT_EQ(file->translates_, before + 1);
  ASSERT_TRUE(mm_->Munmap(kBase, 8 * 4096).ok());
  EXPECT_EQ(file->mapped_, 0u);
}

TEST_F(MemoryManagerTest, SharedMappableHearsOfTheFirstWrite) {
  auto file = std::make_shared<FakeMappable>(platform_.memory_file(), 4);
  file->track_writes_ = true;
  ASSERT_TRUE(mm_->Mmap({.addr = kBase,
                         .length = 4 * 4096,
                         .prot = kRW,
                         .flags = MAP_SHARED | MAP_FIXED,
                         .mappable = file})
                  .ok());
  ASSERT_TRUE(Fault(kBase));
  FakeAddressSpace::Page page;
  ASSERT_TRUE(as_->Lookup(kBase, &page));
  EXPECT_EQ(page.prot, PROT_READ);  // read-only until written
  EXPECT_EQ(file->write_translates_, 0);
  ASSERT_TRUE(Fault(kBase, /*write=*/true));
  EXPECT_EQ(file->write_translates_, 1);
  ASSERT_TRUE(as_->Lookup(kBase, &page));
  EXPECT_EQ(page.prot, kRW);
  EXPECT_EQ(page.offset, file->file_offset());  // still the file's page
  // The Sentry's own writes tell the Mappable too.
  file->space_->Invalidate(kBase, 4 * 4096);
  ASSERT_TRUE(Fault(kBase + 4096));
  ASSERT_TRUE(mm_->CopyOut(kBase + 4096, "w", 1).ok());
  EXPECT_EQ(file->write_translates_, 2);
}

TEST_F(MemoryManagerTest, PrivateMappableIsCopiedOnWrite) {
  auto file = std::make_shared<FakeMappable>(platform_.memory_file(), 4);
  ASSERT_TRUE(platform_.memory_file().Write(file->file_offset(), "F", 1));
  ASSERT_TRUE(mm_->Mmap({.addr = kBase,
                         .length = 4 * 4096,
                         .prot = kRW,
                         .flags = MAP_PRIVATE | MAP_FIXED,
                         .mappable = file})
                  .ok());
  ASSERT_TRUE(Fault(kBase));
  FakeAddressSpace::Page page;
  ASSERT_TRUE(as_->Lookup(kBase, &page));
  EXPECT_EQ(page.prot, PROT_READ);  // write-protected until copied
  EXPECT_EQ(page.offset, file->file_offset());
  ASSERT_TRUE(Fault(kBase, /*write=*/true));
  ASSERT_TRUE(as_->Lookup(kBase, &page));
  EXPECT_EQ(page.prot, kRW);
  EXPECT_NE(page.offset, file->file_offset());
  ASSERT_TRUE(mm_->CopyOut(kBase, "P", 1).ok());
  char c = 0;
  ASSERT_TRUE(platform_.memory_file().Read(file->file_offset(), &c, 1));
  EXPECT_EQ(c, 'F');  // the file is untouched
  ASSERT_TRUE(mm_->CopyIn(kBase, &c, 1).ok());
  EXPECT_EQ(c, 'P');
  EXPECT_GT(mm_->BackedBytes(), 0u);
  // Invalidation keeps private copies.
  file->space_->Invalidate(kBase, 4 * 4096);
  ASSERT_TRUE(mm_->CopyIn(kBase, &c, 1).ok());
  EXPECT_EQ(c, 'P');
}

// A read fault of a file mapping maps the file's pages of the 1 MiB-aligned
// window around it (bounded by the VMA), populated at once; private pages
// stay write-protected (copy on write), so populating never lets the guest
// write the file. Anonymous memory is never populated (its pages are holes
// until touched), shared anonymous memory neither.
TEST_F(MemoryManagerTest, FileFaultMapsItsWindowPopulated) {
  constexpr uint64_t kWindow = 1 << 20;
  auto file = std::make_shared<FakeMappable>(platform_.memory_file(),
                                             2 * kWindow / 4096);
  const uintptr_t base = kBase + kWindow;  // window-aligned
  ASSERT_TRUE(mm_->Mmap({.addr = base,
                         .length = 2 * kWindow,
                         .prot = PROT_READ | PROT_EXEC,
                         .flags = MAP_PRIVATE | MAP_FIXED,
                         .mappable = file})
                  .ok());
  ASSERT_TRUE(Fault(base + kWindow + 5 * 4096));
  EXPECT_EQ(file->translates_, 1);
  EXPECT_EQ(as_->populate_calls(), 1);
  FakeAddressSpace::Page page;
  EXPECT_FALSE(as_->Lookup(base + kWindow - 4096, &page));
  ASSERT_TRUE(as_->Lookup(base + kWindow, &page));
  EXPECT_EQ(page.offset, file->file_offset() + kWindow);
  EXPECT_EQ(page.prot, PROT_READ | PROT_EXEC);
  ASSERT_TRUE(as_->Lookup(base + 2 * kWindow - 4096, &page));
  EXPECT_FALSE(as_->Lookup(base + 2 * kWindow, &page));
  // Another fault in the window finds its pages mapped: no translation.
  ASSERT_TRUE(Fault(base + kWindow + 9 * 4096));
  EXPECT_EQ(file->translates_, 1);
  // A writable private mapping: populated read-only, copied on write.
  ASSERT_TRUE(mm_->Mprotect(base, 2 * kWindow, kRW).ok());
  ASSERT_TRUE(Fault(base + 4096));
  ASSERT_TRUE(as_->Lookup(base + 4096, &page));
  EXPECT_EQ(page.prot, PROT_READ);
  EXPECT_EQ(as_->populate_calls(), 2);

  // Anonymous memory, private or shared: plain maps.
  ASSERT_TRUE(mm_->Mmap({.addr = base + 4 * kWindow,
                         .length = 4 * 4096,
                         .prot = kRW,
                         .flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED})
                  .ok());
  ASSERT_TRUE(mm_->Mmap({.addr = base + 5 * kWindow,
                         .length = 4 * 4096,
                         .prot = kRW,
                         .flags = MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED})
                  .ok());
  ASSERT_TRUE(Fault(base + 4 * kWindow));
  ASSERT_TRUE(Fault(base + 5 * kWindow));
  EXPECT_EQ(as_->populate_calls(), 2);
}

// A FakeMappable that refuses shared writable mappings like a write-sealed
// memfd, and records what it was asked.
class SealedMappable : public FakeMappable {
 public:
  using FakeMappable::FakeMappable;
  KResult<int> CheckNewMapping(bool shared, int prot, int max_prot) override {
    ++checks_;
    if (!sealed_ || !shared) return max_prot;
    if (prot & PROT_WRITE) return kEPERM;
    return max_prot & ~PROT_WRITE;
  }
  KResult<void> AddNewMapping(MappingSpace* space, uintptr_t addr,
                              uint64_t offset, uint64_t length,
                              bool writable) override {
    if (refuse_add_) return kEPERM;
    last_writable_ = writable;
    AddMapping(space, addr, offset, length, writable);
    return OkResult();
  }
  void Residency(uint64_t offset, uint64_t pages, uint8_t* vec) override {
    for (uint64_t i = 0; i < pages; ++i) {
      if ((offset / 4096 + i) % 2 == 0) vec[i] = 1;  // even pages cached
    }
  }
  bool sealed_ = false;
  bool refuse_add_ = false;
  bool last_writable_ = false;
  int checks_ = 0;
};

MmapOpts FileOpts(std::shared_ptr<Mappable> m, int prot, int flags,
                  bool readable = true, bool writable = true,
                  uint64_t offset = 0, size_t len = 4 * 4096) {
  MmapOpts o;
  o.addr = kBase;
  o.length = len;
  o.prot = prot;
  o.flags = flags | MAP_FIXED;
  o.offset = offset;
  o.mappable = std::move(m);
  o.file = MmapOpts::FileAccess{.readable = readable, .writable = writable};
  return o;
}

TEST_F(MemoryManagerTest, FileMappingChecksTheDescription) {
  auto file = std::make_shared<SealedMappable>(platform_.memory_file(), 4);
  // No read access: EACCES, private or shared.
  EXPECT_ERRNO(mm_->Mmap(FileOpts(file, PROT_READ, MAP_PRIVATE, false)),
               kEACCES);
  // Shared writable mapping of a read-only description: EACCES.
  EXPECT_ERRNO(mm_->Mmap(FileOpts(file, kRW, MAP_SHARED, true, false)),
               kEACCES);
  // ...but a private one is fine (copy on write), and may become writable.
  ASSERT_TRUE(mm_->Mmap(FileOpts(file, kRW, MAP_PRIVATE, true, false)).ok());
  EXPECT_TRUE(mm_->Mprotect(kBase, 4096, PROT_READ).ok());
  EXPECT_TRUE(mm_->Mprotect(kBase, 4096, kRW).ok());
  // A shared read-only mapping of a read-only description can never write.
  ASSERT_TRUE(
      mm_->Mmap(FileOpts(file, PROT_READ, MAP_SHARED, true, false)).ok());
  EXPECT_ERRNO(mm_->Mprotect(kBase, 4096, kRW), kEACCES);
  EXPECT_FALSE(file->last_writable_);
  // With write access it may, and it counts as a writable mapping.
  ASSERT_TRUE(mm_->Mmap(FileOpts(file, PROT_READ, MAP_SHARED)).ok());
  EXPECT_TRUE(mm_->Mprotect(kBase, 4096, kRW).ok());
  EXPECT_TRUE(file->last_writable_);
  // A file without mmap, growsdown, unknown validated flags, offsets.
  EXPECT_ERRNO(mm_->Mmap(FileOpts(nullptr, PROT_READ, MAP_SHARED)), kENODEV);
  EXPECT_ERRNO(
      mm_->Mmap(FileOpts(file, PROT_READ, MAP_PRIVATE | MAP_GROWSDOWN)),
      kEINVAL);
  EXPECT_ERRNO(
      mm_->Mmap(FileOpts(file, PROT_READ, MAP_SHARED_VALIDATE | 0x80000)),
      kEOPNOTSUPP);  // MAP_SYNC
  EXPECT_TRUE(mm_->Mmap(FileOpts(file, PROT_READ, MAP_SHARED | 0x80000)).ok());
  EXPECT_ERRNO(mm_->Mmap(FileOpts(file, PROT_READ, MAP_SHARED, true, true,
                                  uint64_t{INT64_MAX} - 4095)),
               kEOVERFLOW);
  EXPECT_ERRNO(mm_->Mmap(FileOpts(file, PROT_READ, MAP_SHARED, true, true,
                                  uint64_t{0} - 4096)),
               kEOVERFLOW);
  EXPECT_ERRNO(mm_->Mmap(FileOpts(file, PROT_READ, MAP_SHARED, true, true, 1)),
               kEINVAL);
  // noexec mounts: PROT_EXEC is EPERM, and mprotect cannot add it.
  MmapOpts o = FileOpts(file, PROT_READ | PROT_EXEC, MAP_PRIVATE);
  o.file->noexec = true;
  EXPECT_ERRNO(mm_->Mmap(o), kEPERM);
  o.prot = PROT_READ;
  ASSERT_TRUE(mm_->Mmap(o).ok());
  EXPECT_ERRNO(mm_->Mprotect(kBase, 4096, PROT_READ | PROT_EXEC), kEACCES);
}

TEST_F(MemoryManagerTest, FileMappingErrorsComeAfterPlacement) {
  auto file = std::make_shared<SealedMappable>(platform_.memory_file(), 4);
  FixedOk(kBase, 4096);
  // MAP_FIXED_NOREPLACE over a mapping is EEXIST before the file is asked.
  MmapOpts o = FileOpts(file, kRW, MAP_SHARED, true, false);
  o.flags = MAP_SHARED | MAP_FIXED_NOREPLACE;
  EXPECT_ERRNO(mm_->Mmap(o), kEEXIST);
}

TEST_F(MemoryManagerTest, MappableMayRefuseOrNarrowANewMapping) {
  auto file = std::make_shared<SealedMappable>(platform_.memory_file(), 4);
  file->sealed_ = true;
  FixedOk(kBase, 4 * 4096);  // something to replace
  EXPECT_ERRNO(mm_->Mmap(FileOpts(file, kRW, MAP_SHARED)), kEPERM);
  // The refusal came before the old mapping was replaced.
  EXPECT_EQ(ProtAt(kBase), kRW);
  EXPECT_TRUE(mm_->Vmas()[0].anonymous);
  // A shared read-only mapping is allowed but may not gain PROT_WRITE, and
  // is not a writable mapping.
  ASSERT_TRUE(mm_->Mmap(FileOpts(file, PROT_READ, MAP_SHARED)).ok());
  EXPECT_FALSE(file->last_writable_);
  EXPECT_ERRNO(mm_->Mprotect(kBase, 4096, kRW), kEACCES);
  // Private mappings are not restricted.
  ASSERT_TRUE(mm_->Mmap(FileOpts(file, kRW, MAP_PRIVATE)).ok());
  // A refusal at AddNewMapping (a seal raced in) leaves the range unmapped.
  file->sealed_ = false;
  file->refuse_add_ = true;
  EXPECT_ERRNO(mm_->Mmap(FileOpts(file, kRW, MAP_SHARED)), kEPERM);
  EXPECT_EQ(ProtAt(kBase), -1);
}

TEST_F(MemoryManagerTest, TruncationDropsPrivateCopiesToo) {
  auto file = std::make_shared<FakeMappable>(platform_.memory_file(), 4);
  ASSERT_TRUE(mm_->Mmap({.addr = kBase,
                         .length = 4 * 4096,
                         .prot = kRW,
                         .flags = MAP_PRIVATE | MAP_FIXED,
                         .mappable = file})
                  .ok());
  ASSERT_TRUE(mm_->CopyOut(kBase + 4096, "P", 1).ok());  // a private copy
  const uint64_t backed = mm_->BackedBytes();
  ASSERT_GT(backed, 0u);
  file->space_->Invalidate(kBase, 4 * 4096);
  EXPECT_EQ(mm_->BackedBytes(), backed);  // hole punch: copies stay
  file->space_->InvalidateEvenPrivate(kBase, 4 * 4096);
  EXPECT_EQ(mm_->BackedBytes(), 0u);  // truncate: gone
  char c = 0;
  ASSERT_TRUE(mm_->CopyIn(kBase + 4096, &c, 1).ok());
  EXPECT_EQ(c, 0);  // the file's page again
}

TEST_F(MemoryManagerTest, MsyncErrors) {
  FixedOk(kBase, 2 * 4096);
  FixedOk(kBase + 3 * 4096, 4096);
  EXPECT_TRUE(mm_->Msync(kBase, 2 * 4096, MS_SYNC).ok());
  EXPECT_TRUE(mm_->Msync(kBase, 1, MS_ASYNC | MS_INVALIDATE).ok());
  EXPECT_TRUE(mm_->Msync(kBase, 0, MS_SYNC).ok());
  EXPECT_ERRNO(mm_->Msync(kBase, 4096, MS_SYNC | MS_ASYNC), kEINVAL);
  EXPECT_ERRNO(mm_->Msync(kBase, 4096, 8), kEINVAL);
  EXPECT_ERRNO(mm_->Msync(kBase + 1, 4096, MS_SYNC), kEINVAL);
  // A hole: ENOMEM (after syncing what is mapped).
  EXPECT_ERRNO(mm_->Msync(kBase, 4 * 4096, MS_SYNC), kENOMEM);
  EXPECT_ERRNO(mm_->Msync(kBase, 4 * 4096, MS_ASYNC), kENOMEM);
  EXPECT_ERRNO(mm_->Msync(kBase + 2 * 4096, 4096, MS_SYNC), kENOMEM);
  // Wrapping: ENOMEM; a length that rounds to 0 succeeds, as in Linux.
  EXPECT_ERRNO(mm_->Msync(kBase, UINT64_MAX - kBase, MS_SYNC), kENOMEM);
  EXPECT_TRUE(mm_->Msync(kBase, UINT64_MAX, MS_SYNC).ok());
  // MS_INVALIDATE on a locked mapping.
  FixedOk(kBase + 8 * 4096, 4096, kRW, kAnonPrivate | MAP_LOCKED);
  EXPECT_ERRNO(mm_->Msync(kBase + 8 * 4096, 4096, MS_INVALIDATE), kEBUSY);
  EXPECT_TRUE(mm_->Msync(kBase + 8 * 4096, 4096, MS_SYNC).ok());
}

TEST_F(MemoryManagerTest, MincoreReportsBackedAndCachedPages) {
  FixedOk(kBase, 4 * 4096);
  ASSERT_TRUE(mm_->CopyOut(kBase + 4096, "x", 1).ok());
  uint8_t vec[8];
  memset(vec, 7, sizeof(vec));
  auto n = mm_->Mincore(kBase, 8, vec);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 4u);  // stops at the VMA's end
  // The fault window backed the whole VMA.
  EXPECT_THAT(std::vector<uint8_t>(vec, vec + 4), ::testing::Each(1));
  FixedOk(kBase + 8 * 4096, 4 * 4096);  // untouched
  ASSERT_TRUE(mm_->Mincore(kBase + 8 * 4096, 4, vec).ok());
  EXPECT_THAT(std::vector<uint8_t>(vec, vec + 4), ::testing::Each(0));
  EXPECT_ERRNO(mm_->Mincore(kBase + 4 * 4096, 1, vec), kENOMEM);
  // A file mapping: the file's cached pages count, mapped or not.
  auto file = std::make_shared<SealedMappable>(platform_.memory_file(), 4);
  MmapOpts o = FileOpts(file, PROT_READ, MAP_SHARED);
  o.addr = kBase + 16 * 4096;
  o.offset = 4096;
  ASSERT_TRUE(mm_->Mmap(o).ok());
  ASSERT_TRUE(mm_->Mincore(kBase + 16 * 4096, 3, vec).ok());
  EXPECT_EQ(vec[0], 0);  // file page 1
  EXPECT_EQ(vec[1], 1);  // file page 2
  EXPECT_EQ(vec[2], 0);
}

TEST_F(MemoryManagerTest, MadviseRemoveOnFileMappings) {
  auto file = std::make_shared<SealedMappable>(platform_.memory_file(), 4);
  // A private file mapping: EACCES (not shared may-write).
  ASSERT_TRUE(mm_->Mmap(FileOpts(file, kRW, MAP_PRIVATE)).ok());
  EXPECT_ERRNO(mm_->Madvise(kBase, 4096, MADV_REMOVE), kEACCES);
  // Shared, but of a read-only description: EACCES.
  ASSERT_TRUE(
      mm_->Mmap(FileOpts(file, PROT_READ, MAP_SHARED, true, false)).ok());
  EXPECT_ERRNO(mm_->Madvise(kBase, 4096, MADV_REMOVE), kEACCES);
  // Shared may-write, even without PROT_WRITE: the object decides; this
  // one cannot punch holes.
  ASSERT_TRUE(mm_->Mmap(FileOpts(file, PROT_READ, MAP_SHARED)).ok());
  EXPECT_ERRNO(mm_->Madvise(kBase, 4096, MADV_REMOVE), kEOPNOTSUPP);
  // A locked mapping: EINVAL.
  FixedOk(kBase + 8 * 4096, 4096, kRW, MAP_SHARED | MAP_ANONYMOUS | MAP_LOCKED);
  EXPECT_ERRNO(mm_->Madvise(kBase + 8 * 4096, 4096, MADV_REMOVE), kEINVAL);
}

TEST_F(MemoryManagerTest, MincoreOfSharedAnonymousMemorySeesOtherMappings) {
  FixedOk(kBase, 2 * 4096, kRW, MAP_SHARED | MAP_ANONYMOUS);
  ASSERT_TRUE(mm_->CopyOut(kBase + 4096, "x", 1).ok());
  auto child = mm_->Fork(platform_);
  ASSERT_TRUE(child.ok());
  uint8_t vec[2] = {7, 7};
  // The child has nothing backed itself, but the object has the page(s)
  // the parent touched.
  ASSERT_TRUE((*child)->Mincore(kBase, 2, vec).ok());
  EXPECT_EQ(vec[1], 1);
}

TEST_F(MemoryManagerTest, MremapOldSizeZeroDuplicatesSharedMappings) {
  FixedOk(kBase, 2 * 4096, kRW, MAP_SHARED | MAP_ANONYMOUS);
  ASSERT_TRUE(mm_->CopyOut(kBase + 4096, "d", 1).ok());
  // Without MREMAP_MAYMOVE there is no room to grow a 0-byte range.
  EXPECT_ERRNO(mm_->Mremap(kBase + 4096, 0, 4096, 0, 0), kENOMEM);
  auto dup = mm_->Mremap(kBase + 4096, 0, 4096, MREMAP_MAYMOVE, 0);
  ASSERT_TRUE(dup.ok());
  char c = 0;
  ASSERT_TRUE(mm_->CopyIn(*dup, &c, 1).ok());
  EXPECT_EQ(c, 'd');  // the same page
  ASSERT_TRUE(mm_->CopyOut(*dup, "D", 1).ok());
  ASSERT_TRUE(mm_->CopyIn(kBase + 4096, &c, 1).ok());
  EXPECT_EQ(c, 'D');
  // The original is untouched and still one VMA.
  EXPECT_EQ(ProtAt(kBase), kRW);
  size_t count = 0;
  for (const VmaInfo& v : mm_->Vmas()) count += v.start == kBase ? 1 : 0;
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(mm_->VmaCount(), 2u);
  // Private mappings cannot be duplicated.
  FixedOk(kBase + 16 * 4096, 4096);
  EXPECT_ERRNO(mm_->Mremap(kBase + 16 * 4096, 0, 4096, MREMAP_MAYMOVE, 0),
               kEINVAL);
}

TEST_F(MemoryManagerTest, MremapGrowthChecksTheLimitBeforeMapping) {
  auto file = std::make_shared<FakeMappable>(platform_.memory_file(), 4);
  ASSERT_TRUE(mm_->Mmap({.addr = kBase,
                         .length = 4096,
                         .prot = PROT_READ,
                         .flags = MAP_SHARED | MAP_FIXED,
                         .mappable = file})
                  .ok());
  mm_->SetAddressSpaceLimit(mm_->MappedBytes());
  EXPECT_ERRNO(mm_->Mremap(kBase, 4096, 2 * 4096, 0, 0), kENOMEM);
  EXPECT_EQ(file->mapped_, 4096u);  // nothing was added to the Mappable
  mm_->SetAddressSpaceLimit(UINT64_MAX);
  ASSERT_TRUE(mm_->Mremap(kBase, 4096, 2 * 4096, 0, 0).ok());
  EXPECT_EQ(file->mapped_, 2 * 4096u);
}

TEST_F(MemoryManagerTest, MapsText) {
  mm_->SetBrkStart(0x600000);
  mm_->Brk(0x602000);
  FixedOk(kBase, 4096, PROT_READ | PROT_EXEC);
  ASSERT_TRUE(mm_->Mmap({.addr = kBase + 0x10000,
                         .length = 8192,
                         .prot = kRW,
                         .flags = MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED,
                         .name = "/dev/zero (deleted)"})
                  .ok());
  EXPECT_EQ(mm_->MapsText(),
            "00600000-00602000 rw-p 00000000 00:00 0"
            "                                  [heap]\n"
            "200000000-200001000 r-xp 00000000 00:00 0 \n"
            "200010000-200012000 rw-s 00000000 00:00 0"
            "                                /dev/zero (deleted)\n");
  // Same columns as the host's own /proc/self/maps.
  const std::string text = mm_->MapsText();
  EXPECT_EQ(text.find("[heap]"), 73u);
}

// ----------------------------------------------------- life and threads ----

TEST_F(MemoryManagerTest, DestructionFreesEverything) {
  const uint64_t before = platform_.fake_memory_file().AllocatedBytes();
  FixedOk(kBase, 8 * kMiB, kRW, kAnonPrivate | MAP_POPULATE);
  mm_->SetBrkStart(0x600000);
  mm_->Brk(0x600000 + 5 * 4096);
  ASSERT_TRUE(mm_->Populate(0x600000, 5 * 4096).ok());
  EXPECT_GT(platform_.fake_memory_file().AllocatedBytes(), before);
  mm_.reset();
  EXPECT_EQ(platform_.fake_memory_file().AllocatedBytes(), before);
}

TEST_F(MemoryManagerTest, ManyThreadsShareOneMm) {
  constexpr int kThreads = 4;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const uintptr_t mine = kBase + t * 64 * kMiB;
      for (int i = 0; i < 200; ++i) {
        auto a = mm_->Mmap({.addr = mine,
                            .length = 64 * 4096,
                            .prot = kRW,
                            .flags = kAnonPrivate | MAP_FIXED});
        if (!a.ok()) ++failures;
        uint64_t v = i * 1000 + t;
        if (!mm_->CopyOut(mine + (i % 64) * 4096, &v, 8).ok()) ++failures;
        uint64_t back = 0;
        if (!mm_->CopyIn(mine + (i % 64) * 4096, &back, 8).ok() || back != v) {
          ++failures;
        }
        platform::AccessType at;
        at.write = true;
        if (!mm_->HandleFault(mine + ((i + 7) % 64) * 4096, at).ok()) {
          ++failures;
        }
        // Reads of someone else's region may race with its munmap: any
        // result but a crash is fine.
        (void)mm_->CopyIn(kBase + ((t + 1) % kThreads) * 64 * kMiB, &back, 8);
        if (!mm_->Mprotect(mine, 4096, PROT_READ).ok()) ++failures;
        if (!mm_->Munmap(mine, 64 * 4096).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mm_->VmaCount(), 0u);
  EXPECT_EQ(mm_->BackedBytes(), 0u);
}

}  // namespace
}  // namespace sandbox::mm
