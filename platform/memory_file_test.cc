#include "platform/memory_file.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "gtest/gtest.h"

namespace sandbox::platform {
namespace {

constexpr uint64_t kMiB = 1 << 20;

std::unique_ptr<MemoryFile> Make(uint64_t size = 64 * kMiB) {
  auto mf = MemoryFile::Create(size);
  EXPECT_TRUE(mf.ok()) << mf.status();
  return std::move(*mf);
}

uint64_t Blocks(int fd) {
  struct stat st;
  EXPECT_EQ(fstat(fd, &st), 0);
  return st.st_blocks;
}

TEST(MemoryFileTest, CreateRejectsBadSizes) {
  EXPECT_FALSE(MemoryFile::Create(0).ok());
  EXPECT_FALSE(MemoryFile::Create(4095).ok());
}

TEST(MemoryFileTest, AllocateFreeCoalesces) {
  auto mf = Make(16 * 4096);
  auto a = mf->Allocate(4 * 4096);
  auto b = mf->Allocate(4 * 4096);
  auto c = mf->Allocate(8 * 4096);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b, 4 * 4096u);
  EXPECT_EQ(*c, 8 * 4096u);
  EXPECT_EQ(mf->AllocatedBytes(), 16 * 4096u);
  EXPECT_EQ(mf->Allocate(4096).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(mf->Allocate(100).ok());
  mf->Free(*a, 4 * 4096);
  mf->Free(*b, 4 * 4096);
  EXPECT_EQ(mf->AllocatedBytes(), 8 * 4096u);
  // The two freed runs coalesced: 8 pages fit at offset 0.
  auto d = mf->Allocate(8 * 4096);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, 0u);
  // Double free and out-of-range frees are ignored.
  mf->Free(*c, 8 * 4096);
  mf->Free(*c, 8 * 4096);
  mf->Free(1 << 30, 4096);
  EXPECT_EQ(mf->AllocatedBytes(), 8 * 4096u);
  mf->Free(*d, 8 * 4096);
  EXPECT_EQ(mf->AllocatedBytes(), 0u);
}

TEST(MemoryFileTest, LimitRefusesAndCounts) {
  auto mf = Make(16 * 4096);
  mf->SetLimit(4 * 4096);
  EXPECT_EQ(mf->Limit(), 4 * 4096u);
  auto a = mf->Allocate(3 * 4096);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(mf->LimitFailures(), 0u);
  EXPECT_EQ(mf->Allocate(2 * 4096).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(mf->LimitFailures(), 1u);
  EXPECT_TRUE(mf->Allocate(4096).ok());  // exactly at the limit
  mf->SetLimit(0);
  EXPECT_TRUE(mf->Allocate(8 * 4096).ok());
  EXPECT_EQ(mf->LimitFailures(), 1u);
}

// CouldFit: the room left under the limit, or under the file's size
// without one (what size requests are checked against up front).
TEST(MemoryFileTest, CouldFitFollowsTheLimitOrTheSize) {
  auto mf = Make(16 * 4096);
  EXPECT_TRUE(mf->CouldFit(16 * 4096));
  EXPECT_FALSE(mf->CouldFit(17 * 4096));
  EXPECT_FALSE(mf->CouldFit(UINT64_MAX));
  mf->SetLimit(4 * 4096);
  ASSERT_TRUE(mf->Allocate(3 * 4096).ok());
  EXPECT_TRUE(mf->CouldFit(4096));
  EXPECT_FALSE(mf->CouldFit(2 * 4096));
  mf->SetLimit(64 * 4096);  // above the file: the file's size bounds it
  EXPECT_TRUE(mf->CouldFit(13 * 4096));
  EXPECT_FALSE(mf->CouldFit(14 * 4096));
}

// The OOM handler runs outside the allocator's lock (it may free), and the
// allocation is retried a bounded number of times.
TEST(MemoryFileTest, OomHandlerMayFreeAndIsBounded) {
  auto mf = Make(16 * 4096);
  mf->SetLimit(4 * 4096);
  auto victim = mf->Allocate(4 * 4096);
  ASSERT_TRUE(victim.ok());
  int calls = 0;
  mf->SetOomHandler([&](uint64_t needed) {
    ++calls;
    EXPECT_EQ(needed, 2 * 4096u);
    mf->Free(*victim, 4 * 4096);  // the "killed process" gives its pages
    return true;
  });
  EXPECT_TRUE(mf->Allocate(2 * 4096).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(mf->LimitFailures(), 0u);
  // A handler that frees nothing: a few rounds, then the failure.
  calls = 0;
  mf->SetOomHandler([&](uint64_t) {
    ++calls;
    return true;
  });
  EXPECT_FALSE(mf->Allocate(4 * 4096).ok());
  EXPECT_GE(calls, 1);
  EXPECT_LE(calls, 5);
  EXPECT_EQ(mf->LimitFailures(), 1u);
  // One that gives up at once.
  calls = 0;
  mf->SetOomHandler([&](uint64_t) {
    ++calls;
    return false;
  });
  EXPECT_FALSE(mf->Allocate(4 * 4096).ok());
  EXPECT_EQ(calls, 1);
  mf->SetOomHandler(nullptr);
}

TEST(MemoryFileTest, ReadWriteZeroAndBounds) {
  auto mf = Make();
  auto off = mf->Allocate(64 * 4096);
  ASSERT_TRUE(off.ok());
  std::vector<uint8_t> data(3 * 4096 + 17);
  for (size_t i = 0; i < data.size(); ++i) data[i] = i * 7 + 1;
  ASSERT_TRUE(mf->Write(*off + 100, data.data(), data.size()));
  std::vector<uint8_t> back(data.size());
  ASSERT_TRUE(mf->Read(*off + 100, back.data(), back.size()));
  EXPECT_EQ(back, data);
  EXPECT_EQ(
      memcmp(mf->Internal(*off + 100, data.size()), data.data(), data.size()),
      0);

  ASSERT_TRUE(mf->Zero(*off + 101, 10));
  ASSERT_TRUE(mf->Read(*off + 100, back.data(), 12));
  EXPECT_EQ(back[0], data[0]);
  for (int i = 1; i <= 10; ++i) EXPECT_EQ(back[i], 0) << i;
  EXPECT_EQ(back[11], data[11]);

  uint8_t b = 0;
  EXPECT_FALSE(mf->Read(64 * kMiB, &b, 1));
  EXPECT_FALSE(mf->Read(64 * kMiB - 1, &b, 2));
  EXPECT_FALSE(mf->Write(~0ull - 2, &b, 8));
  EXPECT_FALSE(mf->Zero(64 * kMiB - 4096, 8192));
  EXPECT_EQ(mf->Internal(64 * kMiB - 4096, 8192), nullptr);
  EXPECT_TRUE(mf->Read(64 * kMiB - 1, &b, 1));
}

// Copies of 16 KiB and more go through pread/pwrite: the same bytes as the
// mapping shows, at unaligned offsets too, holes read as zeros, the last
// bytes of the file are reachable and nothing past them.
TEST(MemoryFileTest, LargeCopiesMatchTheMapping) {
  auto mf = Make();
  auto off = mf->Allocate(64 * 4096);
  ASSERT_TRUE(off.ok());
  std::vector<uint8_t> data(40 * 4096 + 123);
  for (size_t i = 0; i < data.size(); ++i) data[i] = i * 13 + 5;
  ASSERT_TRUE(mf->Write(*off + 77, data.data(), data.size()));
  EXPECT_EQ(
      memcmp(mf->Internal(*off + 77, data.size()), data.data(), data.size()),
      0);
  std::vector<uint8_t> back(data.size());
  ASSERT_TRUE(mf->Read(*off + 77, back.data(), back.size()));
  EXPECT_EQ(back, data);
  // Written through the mapping, read with pread.
  memset(mf->Internal(*off + 8192, 4), 0xab, 4);
  ASSERT_TRUE(mf->Read(*off, back.data(), 32 * 1024));
  EXPECT_EQ(back[8192], 0xab);
  EXPECT_EQ(back[8195], 0xab);
  // A hole (never written) reads as zeros and stays a hole.
  auto hole = mf->Allocate(8 * 4096);
  ASSERT_TRUE(hole.ok());
  const uint64_t blocks = Blocks(mf->fd());
  std::vector<uint8_t> zeros(8 * 4096, 0xff);
  ASSERT_TRUE(mf->Read(*hole, zeros.data(), zeros.size()));
  EXPECT_EQ(zeros, std::vector<uint8_t>(8 * 4096, 0));
  EXPECT_EQ(Blocks(mf->fd()), blocks);
  // The end of the file.
  std::vector<uint8_t> tail(16 * 1024, 0x11);
  EXPECT_TRUE(mf->Write(64 * kMiB - tail.size(), tail.data(), tail.size()));
  EXPECT_FALSE(
      mf->Write(64 * kMiB - tail.size() + 1, tail.data(), tail.size()));
  EXPECT_FALSE(mf->Read(64 * kMiB - tail.size() + 1, tail.data(), tail.size()));
}

TEST(MemoryFileTest, FreeAndZeroReleasePages) {
  auto mf = Make();
  uint64_t base_blocks = Blocks(mf->fd());
  auto off = mf->Allocate(64 * 4096);
  ASSERT_TRUE(off.ok());
  std::vector<uint8_t> ones(64 * 4096, 1);
  ASSERT_TRUE(mf->Write(*off, ones.data(), ones.size()));
  EXPECT_GE(Blocks(mf->fd()), base_blocks + 64 * 8);
  // A large Zero punches whole pages.
  ASSERT_TRUE(mf->Zero(*off + 10, 64 * 4096 - 20));
  EXPECT_LE(Blocks(mf->fd()), base_blocks + 2 * 8);
  std::vector<uint8_t> back(64 * 4096);
  ASSERT_TRUE(mf->Read(*off, back.data(), back.size()));
  EXPECT_EQ(back[9], 1);
  EXPECT_EQ(back[10], 0);
  EXPECT_EQ(back[64 * 4096 - 11], 0);
  EXPECT_EQ(back[64 * 4096 - 10], 1);
  ASSERT_TRUE(mf->Write(*off, ones.data(), ones.size()));
  mf->Free(*off, 64 * 4096);
  EXPECT_EQ(Blocks(mf->fd()), base_blocks);
  // Reallocated space reads as zeroes.
  auto again = mf->Allocate(64 * 4096);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(mf->Read(*again, back.data(), back.size()));
  EXPECT_EQ(back, std::vector<uint8_t>(64 * 4096, 0));
}

TEST(MemoryFileTest, CopyInsideTheFile) {
  auto mf = Make();
  auto a = mf->Allocate(2 * 4096);
  auto b = mf->Allocate(4096);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<uint8_t> data(8192);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  ASSERT_TRUE(mf->Write(*a, data.data(), data.size()));
  ASSERT_TRUE(mf->Copy(*b + 10, *a + 4000, 1000));  // across a page
  std::vector<uint8_t> back(1000);
  ASSERT_TRUE(mf->Read(*b + 10, back.data(), back.size()));
  EXPECT_EQ(back,
            std::vector<uint8_t>(data.begin() + 4000, data.begin() + 5000));
  // Overlapping ranges move like memmove.
  ASSERT_TRUE(mf->Copy(*a + 1, *a, 100));
  ASSERT_TRUE(mf->Read(*a, back.data(), 101));
  EXPECT_EQ(back[0], 0);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(back[i + 1], i) << i;
  // Out of bounds: nothing.
  EXPECT_FALSE(mf->Copy(64 * kMiB - 10, *a, 11));
  EXPECT_FALSE(mf->Copy(*a, 64 * kMiB - 10, 11));
  // The buffered default (for other implementations) agrees.
  ASSERT_TRUE(mf->MemoryFile::Copy(*b, *a + 1, 4096));
  ASSERT_TRUE(mf->Read(*b, back.data(), 100));
  EXPECT_EQ(back[0], 0);
  EXPECT_EQ(back[1], 1);
  // A SIGBUS on either side is a failure, not a crash.
  ASSERT_EQ(ftruncate(mf->fd(), 4096), 0);
  EXPECT_FALSE(mf->Copy(0, 4096 * 3, 10));
  EXPECT_FALSE(mf->Copy(4096 * 3, 0, 10));
  ASSERT_EQ(ftruncate(mf->fd(), 64 * kMiB), 0);
}

// Shrinking the file under the mapping makes accesses beyond the end raise
// SIGBUS: copies must fail cleanly and the process must survive.
TEST(MemoryFileTest, SigbusIsReportedNotFatal) {
  auto mf = Make();
  ASSERT_EQ(ftruncate(mf->fd(), 4096), 0);
  std::vector<uint8_t> buf(8192, 5);
  EXPECT_FALSE(mf->Read(0, buf.data(), buf.size()));
  EXPECT_FALSE(mf->Write(4096 * 3, buf.data(), 10));
  EXPECT_FALSE(mf->Zero(4096 * 2, 10));
  EXPECT_TRUE(mf->Write(0, buf.data(), 4096));
  ASSERT_EQ(ftruncate(mf->fd(), 64 * kMiB), 0);
  EXPECT_TRUE(mf->Read(0, buf.data(), buf.size()));
  // Faults outside a copy still behave as usual (death test).
  EXPECT_DEATH(
      {
        volatile uint8_t* p = mf->Internal(0, 1);
        ftruncate(mf->fd(), 0);
        (void)*p;
      },
      "");
}

}  // namespace
}  // namespace sandbox::platform
