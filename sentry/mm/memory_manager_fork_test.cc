#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/page_refs.h"
#include "sentry/mm/testing/fake_platform.h"

namespace sandbox::mm {
namespace {

using ::sandbox::mm::testing::FakeAddressSpace;
using ::sandbox::mm::testing::FakePlatform;

constexpr int kRW = PROT_READ | PROT_WRITE;
constexpr int kAnonPrivate = MAP_PRIVATE | MAP_ANONYMOUS;
constexpr uintptr_t kBase = 0x200000000;
constexpr uint64_t kMiB = 1 << 20;

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

class ForkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    baseline_ = platform_.fake_memory_file().AllocatedBytes();
    auto mm = MemoryManager::Create(platform_, {.randomize = false});
    ASSERT_TRUE(mm.ok());
    parent_ = std::move(mm).value();
    parent_as_ = platform_.last_address_space();
  }
  void TearDown() override {
    for (MemoryManager* mm : {parent_.get(), child_.get()}) {
      if (mm == nullptr) continue;
      uint64_t sum = 0;
      for (const VmaInfo& v : mm->Vmas()) sum += v.end - v.start;
      EXPECT_EQ(mm->MappedBytes(), sum);
    }
  }
  void MapFixed(MemoryManager& mm, uintptr_t addr, size_t len,
                int flags = kAnonPrivate, int prot = kRW) {
    ASSERT_TRUE(mm.Mmap({.addr = addr,
                         .length = len,
                         .prot = prot,
                         .flags = flags | MAP_FIXED})
                    .ok());
  }
  void Fork() {
    auto c = parent_->Fork(platform_);
    ASSERT_TRUE(c.ok());
    child_ = std::move(c).value();
    child_as_ = platform_.last_address_space();
  }
  static uint64_t Get(MemoryManager& mm, uintptr_t addr) {
    uint64_t v = ~0ull;
    EXPECT_TRUE(mm.CopyIn(addr, &v, 8).ok());
    return v;
  }
  static void Put(MemoryManager& mm, uintptr_t addr, uint64_t v) {
    EXPECT_TRUE(mm.CopyOut(addr, &v, 8).ok());
  }
  uint64_t Allocated() {
    return platform_.fake_memory_file().AllocatedBytes() - baseline_;
  }

  FakePlatform platform_;
  uint64_t baseline_ = 0;
  std::unique_ptr<MemoryManager> parent_, child_;
  FakeAddressSpace* parent_as_ = nullptr;
  FakeAddressSpace* child_as_ = nullptr;
};

TEST_F(ForkTest, PrivateMemoryIsCopyOnWrite) {
  MapFixed(*parent_, kBase, 4 * kMiB);
  Put(*parent_, kBase + 8, 1);
  const uint64_t before = Allocated();
  EXPECT_EQ(before, 2 * kMiB);
  Fork();
  EXPECT_EQ(Allocated(), before);  // nothing copied at fork
  // The parent's host mapping is now read-only.
  FakeAddressSpace::Page page;
  ASSERT_TRUE(parent_as_->Lookup(kBase, &page));
  EXPECT_EQ(page.prot, PROT_READ);
  EXPECT_EQ(Get(*child_, kBase + 8), 1u);
  // The child's address space is filled lazily, read-only while shared.
  EXPECT_FALSE(child_as_->Lookup(kBase, nullptr));
  platform::AccessType r;
  r.read = true;
  ASSERT_TRUE(child_->HandleFault(kBase + 8, r).ok());
  ASSERT_TRUE(child_as_->Lookup(kBase, &page));
  EXPECT_EQ(page.prot, PROT_READ);

  // The child writes: it gets a copy of a small run around the page.
  platform::AccessType w;
  w.write = true;
  ASSERT_TRUE(child_->HandleFault(kBase + 8, w).ok());
  Put(*child_, kBase + 8, 2);
  EXPECT_EQ(Allocated(), before + 64 * 1024);
  EXPECT_EQ(Get(*parent_, kBase + 8), 1u);
  ASSERT_TRUE(child_as_->Lookup(kBase, &page));
  EXPECT_EQ(page.prot, kRW);

  // The parent writes the same page: no other owner left, so no copy.
  Put(*parent_, kBase + 8, 3);
  EXPECT_EQ(Allocated(), before + 64 * 1024);
  EXPECT_EQ(Get(*child_, kBase + 8), 2u);
  EXPECT_EQ(Get(*parent_, kBase + 8), 3u);
  ASSERT_TRUE(parent_as_->Lookup(kBase, &page));
  EXPECT_EQ(page.prot, kRW);

  // Elsewhere in the run, the parent's write must copy (the child still
  // shares those pages).
  Put(*parent_, kBase + kMiB, 4);
  EXPECT_EQ(Allocated(), before + 2 * 64 * 1024);
  EXPECT_EQ(Get(*child_, kBase + kMiB), 0u);

  child_.reset();
  // The child's pages went; the parent's remaining COW pages are its own
  // now and become writable without a copy.
  const uint64_t after_child = Allocated();
  Put(*parent_, kBase + kMiB + 512 * 1024, 5);
  EXPECT_EQ(Allocated(), after_child);
  parent_.reset();
  EXPECT_EQ(Allocated(), 0u);
}

// MappedWritable says whether a write through the address space's own
// mapping (a guest-side copy) would land where CopyOut writes: backed,
// writable, not shared copy-on-write.
TEST_F(ForkTest, MappedWritableOnlyForOwnWritablePages) {
  MapFixed(*parent_, kBase, 4 * kMiB);
  EXPECT_FALSE(parent_->MappedWritable(kBase, 4096));  // not backed yet
  Put(*parent_, kBase + 8, 1);  // backs a run around kBase
  EXPECT_TRUE(parent_->MappedWritable(kBase, 64 * 1024));
  EXPECT_FALSE(parent_->MappedWritable(kBase, 4 * kMiB));  // partly unbacked
  EXPECT_FALSE(parent_->MappedWritable(kBase, 0));
  EXPECT_FALSE(parent_->MappedWritable(kBase + 4 * kMiB, 4096));  // no VMA
  EXPECT_FALSE(parent_->MappedWritable(~uintptr_t{0} - 4095, 8192));
  Fork();
  // Shared with the child: a write must copy first.
  EXPECT_FALSE(parent_->MappedWritable(kBase, 4096));
  Put(*parent_, kBase + 8, 2);  // copies the run
  EXPECT_TRUE(parent_->MappedWritable(kBase, 4096));
  // Read-only memory never is.
  ASSERT_TRUE(parent_->Mprotect(kBase, 4096, PROT_READ).ok());
  EXPECT_FALSE(parent_->MappedWritable(kBase, 4096));
  EXPECT_TRUE(parent_->MappedWritable(kBase + 4096, 4096));
}

TEST_F(ForkTest, ForceCopyOutBreaksCow) {
  MapFixed(*parent_, kBase, 4096, kAnonPrivate, PROT_READ);
  ASSERT_TRUE(parent_->ForceCopyOut(kBase, "x", 1).ok());
  Fork();
  ASSERT_TRUE(child_->ForceCopyOut(kBase, "y", 1).ok());
  char c = 0;
  ASSERT_TRUE(parent_->CopyIn(kBase, &c, 1).ok());
  EXPECT_EQ(c, 'x');
  ASSERT_TRUE(child_->CopyIn(kBase, &c, 1).ok());
  EXPECT_EQ(c, 'y');
}

TEST_F(ForkTest, SharedAnonymousMemoryIsShared) {
  MapFixed(*parent_, kBase, 4 * 4096, MAP_SHARED | MAP_ANONYMOUS);
  Put(*parent_, kBase, 1);
  Fork();
  EXPECT_EQ(Get(*child_, kBase), 1u);
  Put(*child_, kBase, 2);
  EXPECT_EQ(Get(*parent_, kBase), 2u);
  // A page neither has touched yet: whoever touches first, both see it.
  Put(*child_, kBase + 3 * 4096, 7);
  EXPECT_EQ(Get(*parent_, kBase + 3 * 4096), 7u);
  // MADV_REMOVE frees it for both.
  ASSERT_TRUE(parent_->Madvise(kBase, 4 * 4096, MADV_REMOVE).ok());
  EXPECT_EQ(Get(*child_, kBase), 0u);
  EXPECT_EQ(Get(*child_, kBase + 3 * 4096), 0u);
  Put(*parent_, kBase, 9);
  EXPECT_EQ(Get(*child_, kBase), 9u);
  // Beyond the shared object (mremap grew the mapping): SIGBUS-worthy.
  auto grown = parent_->Mremap(kBase, 4 * 4096, 8 * 4096, 0, 0);
  ASSERT_TRUE(grown.ok());
  platform::AccessType r;
  r.read = true;
  auto f = parent_->HandleFault(kBase + 5 * 4096, r);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error(), kEIO);
  parent_.reset();
  child_.reset();
  EXPECT_EQ(Allocated(), 0u);
}

// A shared futex's key (FutexObjectAt): the same object and offset in both
// processes for shared memory, none (mm and address) for private memory,
// EFAULT beyond the object, in a PROT_NONE mapping or a hole.
TEST_F(ForkTest, FutexObjectAtNamesSharedMemoryInBothProcesses) {
  MapFixed(*parent_, kBase, 4 * 4096, MAP_SHARED | MAP_ANONYMOUS);
  MapFixed(*parent_, kBase + 8 * 4096, 4096);
  MapFixed(*parent_, kBase + 10 * 4096, 4096, kAnonPrivate, PROT_NONE);
  Fork();
  auto p = parent_->FutexObjectAt(kBase + 2 * 4096 + 12);
  auto c = child_->FutexObjectAt(kBase + 2 * 4096 + 12);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(c.ok());
  ASSERT_NE(p->mappable, nullptr);
  EXPECT_EQ(p->mappable, c->mappable);
  EXPECT_EQ(p->offset, 2 * 4096 + 12u);
  EXPECT_EQ(c->offset, 2 * 4096 + 12u);
  // Moved elsewhere in the child: still the same object and offset.
  auto moved = child_->Mremap(kBase, 4 * 4096, 4 * 4096,
                              MREMAP_MAYMOVE | MREMAP_FIXED, kBase + 32 * 4096);
  ASSERT_TRUE(moved.ok());
  c = child_->FutexObjectAt(kBase + 34 * 4096 + 12);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(p->mappable, c->mappable);
  EXPECT_EQ(c->offset, 2 * 4096 + 12u);
  // Private memory: keyed by mm and address, no object.
  auto priv = parent_->FutexObjectAt(kBase + 8 * 4096);
  ASSERT_TRUE(priv.ok());
  EXPECT_EQ(priv->mappable, nullptr);
  EXPECT_EQ(parent_->FutexObjectAt(kBase + 10 * 4096).error(), kEFAULT);
  EXPECT_EQ(parent_->FutexObjectAt(kBase + 12 * 4096).error(), kEFAULT);
  // Beyond the end of the shared object (grown by mremap): EFAULT.
  ASSERT_TRUE(parent_->Mremap(kBase, 4 * 4096, 6 * 4096, 0, 0).ok());
  EXPECT_EQ(parent_->FutexObjectAt(kBase + 5 * 4096).error(), kEFAULT);
}

TEST_F(ForkTest, DontforkAndWipeonfork) {
  MapFixed(*parent_, kBase, 4096);
  MapFixed(*parent_, kBase + 4096, 4096, kAnonPrivate, PROT_READ);
  MapFixed(*parent_, kBase + 2 * 4096, 4096);
  MapFixed(*parent_, kBase + 8 * 4096, 4096, MAP_SHARED | MAP_ANONYMOUS);
  Put(*parent_, kBase, 1);
  Put(*parent_, kBase + 2 * 4096, 3);
  ASSERT_TRUE(parent_->Madvise(kBase, 4096, MADV_DONTFORK).ok());
  ASSERT_TRUE(parent_->Madvise(kBase + 2 * 4096, 4096, MADV_WIPEONFORK).ok());
  EXPECT_EQ(parent_->Madvise(kBase + 8 * 4096, 4096, MADV_WIPEONFORK).error(),
            kEINVAL);
  EXPECT_EQ(parent_->Madvise(kBase, 8 * 4096, MADV_DODUMP).error(), kENOMEM);
  Fork();
  uint64_t v;
  EXPECT_FALSE(child_->CopyIn(kBase, &v, 8).ok());  // not in the child
  EXPECT_EQ(Get(*child_, kBase + 2 * 4096), 0u);    // wiped
  EXPECT_EQ(Get(*parent_, kBase + 2 * 4096), 3u);
  EXPECT_EQ(Get(*parent_, kBase), 1u);
  auto vmas = child_->Vmas();
  ASSERT_FALSE(vmas.empty());
  EXPECT_EQ(vmas[0].start, kBase + 4096);
  // MADV_DOFORK undoes it.
  ASSERT_TRUE(parent_->Madvise(kBase, 4096, MADV_DOFORK).ok());
  auto c2 = parent_->Fork(platform_);
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(Get(**c2, kBase), 1u);
}

TEST_F(ForkTest, BrkAndLayoutAreInherited) {
  parent_->SetBrkStart(0x600000);
  EXPECT_EQ(parent_->Brk(0x600000 + 5000), 0x600000u + 5000);
  Put(*parent_, 0x600000 + 16, 42);
  Fork();
  EXPECT_EQ(child_->Brk(0), 0x600000u + 5000);
  EXPECT_EQ(child_->brk_start(), 0x600000u);
  EXPECT_EQ(child_->layout().mmap_base, parent_->layout().mmap_base);
  EXPECT_EQ(Get(*child_, 0x600000 + 16), 42u);
  EXPECT_EQ(child_->Brk(0x600000 + 3 * 4096), 0x600000u + 3 * 4096);
  EXPECT_EQ(parent_->Brk(0), 0x600000u + 5000);
}

TEST_F(ForkTest, ChainsOfForksFreeEverything) {
  MapFixed(*parent_, kBase, 2 * kMiB);
  for (uintptr_t a = kBase; a < kBase + 2 * kMiB; a += 256 * 1024) {
    Put(*parent_, a, a);
  }
  Fork();
  auto grandchild = child_->Fork(platform_);
  ASSERT_TRUE(grandchild.ok());
  Put(*child_, kBase, 1);
  Put(**grandchild, kBase + 256 * 1024, 2);
  EXPECT_EQ(Get(*parent_, kBase), kBase);
  EXPECT_EQ(Get(**grandchild, kBase), kBase);
  EXPECT_EQ(Get(*child_, kBase + 256 * 1024), kBase + 256 * 1024);
  ASSERT_TRUE(child_->Munmap(kBase, kMiB).ok());
  EXPECT_EQ(Get(*parent_, kBase + 512 * 1024), kBase + 512 * 1024);
  parent_.reset();
  EXPECT_EQ(Get(**grandchild, kBase + 1024 * 1024), kBase + 1024 * 1024);
  child_.reset();
  grandchild->reset();
  EXPECT_EQ(Allocated(), 0u);
}

TEST_F(ForkTest, ForkWhileOtherThreadsWrite) {
  MapFixed(*parent_, kBase, 4 * kMiB);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      uint64_t i = 0;
      while (!stop.load()) {
        const uintptr_t a = kBase + ((i * 4096 * 7 + t * 8) % (4 * kMiB));
        if (!parent_->CopyOut(a, &i, 8).ok()) ++failures;
        platform::AccessType w;
        w.write = true;
        if (!parent_->HandleFault(a, w).ok()) ++failures;
        ++i;
      }
    });
  }
  for (int k = 0; k < 50; ++k) {
    auto c = parent_->Fork(platform_);
    ASSERT_TRUE(c.ok());
    uint64_t v = 0;
    // The child's view is frozen: writing it never shows in the parent.
    ASSERT_TRUE((*c)->CopyOut(kBase + 3 * kMiB + 16, &k, sizeof(k)).ok());
    ASSERT_TRUE((*c)->CopyIn(kBase + 8, &v, 8).ok());
  }
  stop = true;
  for (auto& th : writers) th.join();
  EXPECT_EQ(failures.load(), 0);
  int k = -1;
  ASSERT_TRUE(parent_->CopyIn(kBase + 3 * kMiB + 16, &k, sizeof(k)).ok());
  EXPECT_NE(k, 49);
  parent_.reset();
  EXPECT_EQ(Allocated(), 0u);
}

// An address space that checks, whenever a page is mapped over or unmapped,
// that the page it held was still allocated: a stub must never map a page
// its mm has let go of (another mm may own it by then, or the other side of
// a fork may have taken it back writable).
class FreedPageCheckingAddressSpace : public FakeAddressSpace {
 public:
  explicit FreedPageCheckingAddressSpace(testing::FakeMemoryFile& mf)
      : mf_(mf) {}
  absl::Status MapFile(uintptr_t addr, uint64_t offset, size_t length,
                       int prot) override {
    Check(addr, length);
    return FakeAddressSpace::MapFile(addr, offset, length, prot);
  }
  absl::Status Unmap(uintptr_t addr, size_t length) override {
    Check(addr, length);
    return FakeAddressSpace::Unmap(addr, length);
  }
  int violations() const { return violations_.load(); }

 private:
  void Check(uintptr_t addr, size_t length) {
    for (uintptr_t a = addr; a < addr + length; a += 4096) {
      Page p;
      if (Lookup(a, &p) && mf_.IsFree(p.offset)) ++violations_;
    }
  }
  testing::FakeMemoryFile& mf_;
  std::atomic<int> violations_{0};
};

// The copy-on-write copy of a page whose other owner is gone: its old page
// is freed, but only after the address space maps the copy in its place
// (until then other threads of the process can read the old page).
TEST_F(ForkTest, CopyOnWriteFreesTheOldPageOnlyAfterRemapping) {
  auto pas = std::make_unique<FreedPageCheckingAddressSpace>(
      platform_.fake_memory_file());
  FreedPageCheckingAddressSpace* checked = pas.get();
  auto parent = MemoryManager::CreateWith(
      std::move(pas), platform_.memory_file(), parent_->layout());
  // Two 64 KiB runs in one pma.
  MapFixed(*parent, kBase, 128 << 10);
  for (uintptr_t a = kBase; a < kBase + (128 << 10); a += 4096) {
    Put(*parent, a, a);
  }
  auto c = parent->Fork(platform_);
  ASSERT_TRUE(c.ok());
  std::unique_ptr<MemoryManager> child = std::move(c).value();
  // The child copies the first run: the parent is now its only owner,
  // while the second run stays shared.
  Put(*child, kBase, 1);
  const uint64_t before = Allocated();
  // The parent's write copies the first run too (its pma is still
  // partly shared) and frees the old one.
  Put(*parent, kBase + 8, 2);
  EXPECT_EQ(Allocated(), before);
  EXPECT_EQ(checked->violations(), 0);
  EXPECT_EQ(Get(*parent, kBase), kBase);
  EXPECT_EQ(Get(*parent, kBase + 8), 2u);
  EXPECT_EQ(Get(*child, kBase), 1u);
  EXPECT_EQ(Get(*child, kBase + (64 << 10)), kBase + (64 << 10));
  child.reset();
  parent.reset();
}

// MADV_REMOVE of shared anonymous memory in one mm of a fork while the
// other faults it in: no address space may still map a page when it is
// freed. The other mm faults (on another thread, waited for) from inside
// the first one's Unmap, i.e. after the other's mappings may already have
// been dropped and before the pages are freed. Both directions, since which
// mm drops its mappings first is the MappingSet's business.
TEST_F(ForkTest, PunchHoleNeverFreesAMappedPage) {
  constexpr size_t kLen = 64 << 10;
  MapFixed(*parent_, kBase, kLen, MAP_SHARED | MAP_ANONYMOUS);
  Fork();
  for (bool from_parent : {true, false}) {
    SCOPED_TRACE(from_parent ? "parent punches" : "child punches");
    MemoryManager* punching = from_parent ? parent_.get() : child_.get();
    MemoryManager* other = from_parent ? child_.get() : parent_.get();
    FakeAddressSpace* punching_as = from_parent ? parent_as_ : child_as_;
    Put(*parent_, kBase, 1);
    ASSERT_EQ(Get(*child_, kBase), 1u);
    int violations = 0;
    FakeAddressSpace* spaces[] = {parent_as_, child_as_};
    platform_.fake_memory_file().SetFreeHook([&](uint64_t off, uint64_t len) {
      for (FakeAddressSpace* as : spaces) {
        if (as->MapsAnyOf(off, len)) ++violations;
      }
    });
    int faults = 0;
    punching_as->SetUnmapHook([&] {
      ++faults;
      std::thread([&] {
        platform::AccessType r;
        r.read = true;
        EXPECT_TRUE(other->HandleFault(kBase, r).ok());
      }).join();
    });
    ASSERT_TRUE(punching->Madvise(kBase, kLen, MADV_REMOVE).ok());
    punching_as->SetUnmapHook(nullptr);
    platform_.fake_memory_file().SetFreeHook(nullptr);
    EXPECT_GT(faults, 0);
    EXPECT_EQ(violations, 0);
    // The hole reads as zeros in both.
    EXPECT_EQ(Get(*parent_, kBase), 0u);
    EXPECT_EQ(Get(*child_, kBase), 0u);
  }
}

TEST(PageRefsTest, CountsRangesAndFreesUnownedPages) {
  testing::FakeMemoryFile mf(1 << 24);
  PageRefs refs(mf);
  auto off = mf.Allocate(16 * 4096);
  ASSERT_TRUE(off.ok());
  refs.IncRef(*off, 8 * 4096);
  refs.IncRef(*off + 4 * 4096, 8 * 4096);
  EXPECT_TRUE(refs.Shared(*off, 4096));
  EXPECT_TRUE(refs.Shared(*off + 11 * 4096, 4096));
  EXPECT_FALSE(refs.Shared(*off + 12 * 4096, 4 * 4096));
  EXPECT_EQ(refs.RangeCount(), 3u);
  // Drop the extra owners of [4, 8): count 2 -> 1.
  refs.DecRef(*off + 4 * 4096, 4 * 4096);
  EXPECT_TRUE(refs.Shared(*off + 4 * 4096, 4096));
  EXPECT_EQ(mf.AllocatedBytes(), 16 * 4096u);
  // Pages 12..16 have one owner: DecRef frees them.
  refs.DecRef(*off + 12 * 4096, 4 * 4096);
  EXPECT_EQ(mf.AllocatedBytes(), 12 * 4096u);
  refs.DecRef(*off, 12 * 4096);  // extras gone
  EXPECT_EQ(mf.AllocatedBytes(), 12 * 4096u);
  EXPECT_EQ(refs.RangeCount(), 0u);
  EXPECT_FALSE(refs.Shared(*off, 16 * 4096));
  refs.DecRef(*off, 12 * 4096);
  EXPECT_EQ(mf.AllocatedBytes(), 0u);
}

}  // namespace
}  // namespace sandbox::mm
