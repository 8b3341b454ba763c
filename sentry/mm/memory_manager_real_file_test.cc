// The MemoryManager over the real MemoryFile (platform/memory_file.cc)
// rather than the test fake: the allocator, partial frees and copies must
// agree with what the mm expects.
#include <sys/mman.h>

#include <cstring>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "platform/memory_file.h"
#include "sentry/abi/linux.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/testing/fake_platform.h"

namespace sandbox::mm {
namespace {

constexpr uintptr_t kBase = 0x200000000;
constexpr uint64_t kMiB = 1 << 20;

TEST(MemoryManagerRealFileTest, WorkloadReturnsEveryPage) {
  auto mf = platform::MemoryFile::Create(1ull << 30);
  ASSERT_TRUE(mf.ok()) << mf.status();
  Layout layout = PickLayout(0x10000, abi::kTaskSizeMax, {.randomize = false});
  auto mm = MemoryManager::CreateWith(
      std::make_unique<testing::FakeAddressSpace>(), **mf, layout);

  constexpr int kRW = PROT_READ | PROT_WRITE;
  auto a = mm->Mmap({.addr = kBase,
                     .length = 8 * kMiB,
                     .prot = kRW,
                     .flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED});
  ASSERT_TRUE(a.ok());
  std::string data(3 * kMiB, 'z');
  for (size_t i = 0; i < data.size(); i += 4096)
    data[i] = static_cast<char>(i >> 12);
  auto w = mm->CopyOut(kBase + 12345, data.data(), data.size());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*w, data.size());
  // Punch a hole in the middle of a run, then read around it.
  ASSERT_TRUE(mm->Munmap(kBase + kMiB, 4096).ok());
  std::string back(4096, '\0');
  ASSERT_TRUE(mm->CopyIn(kBase + kMiB + 4096, back.data(), back.size()).ok());
  EXPECT_EQ(0, std::memcmp(back.data(), data.data() + kMiB + 4096 - 12345,
                           back.size()));
  ASSERT_TRUE(mm->Madvise(kBase, 64 * 1024, MADV_DONTNEED).ok());
  auto moved = mm->Mremap(kBase + 2 * kMiB, kMiB, 4 * kMiB, MREMAP_MAYMOVE, 0);
  ASSERT_TRUE(moved.ok());
  ASSERT_TRUE(mm->CopyIn(*moved, back.data(), back.size()).ok());
  EXPECT_EQ(
      0, std::memcmp(back.data(), data.data() + 2 * kMiB - 12345, back.size()));
  EXPECT_GT((*mf)->AllocatedBytes(), 0u);
  EXPECT_EQ((*mf)->AllocatedBytes(), mm->BackedBytes());
  mm.reset();
  EXPECT_EQ((*mf)->AllocatedBytes(), 0u);
}

}  // namespace
}  // namespace sandbox::mm
