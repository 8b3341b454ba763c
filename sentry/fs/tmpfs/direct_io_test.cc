// Direct I/O of tmpfs files (ReadDirect/WriteDirect over a vfs::GuestIo):
// the bytes, holes, offsets, end of file, partial transfers where the
// guest buffer stops being accessible, EFAULT, and the order of EFAULT and
// the seals' EPERM, against a fake guest buffer made of memory-file pages.
#include <fcntl.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/regular_file.h"
#include "sentry/fs/tmpfs/testing.h"
#include "sentry/vfs/testing/fake_guest_io.h"

namespace sandbox::fs::tmpfs {
namespace {

constexpr size_t kPage = 4096;

using FakeGuest = vfs::testing::FakeGuestIo;

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 23);
  return s;
}

class DirectIoTest : public TmpfsTest {
 protected:
  std::shared_ptr<vfs::VfsFile> Make(std::string_view path,
                                     std::string_view data,
                                     uint32_t flags = O_RDWR) {
    WriteFile(path, data);
    auto f = Open(path, flags);
    EXPECT_TRUE(f.ok());
    return f.ok() ? *f : nullptr;
  }
  vfs::IoContext ctx_;
};

TEST_F(DirectIoTest, OnlyWithTheSameMemoryFile) {
  auto f = Make("/f", "x");
  EXPECT_TRUE(f->CanDirectIo(*mf_));
  auto other = platform::MemoryFile::Create(1 << 20);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(f->CanDirectIo(**other));
}

TEST_F(DirectIoTest, ReadAcrossPagesAndSegmentsAdvancesTheOffset) {
  const std::string data = Pattern(3 * kPage + 100);
  auto f = Make("/f", data);
  FakeGuest g(*mf_, {10, 2 * kPage + 5, 3 * kPage});
  auto n = f->ReadDirect(ctx_, g, -1);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, data.size());
  EXPECT_EQ(g.Contents().substr(0, data.size()), data);
  // The offset moved: the next read is at the end of file.
  FakeGuest g2(*mf_, {100});
  EXPECT_EQ(f->ReadDirect(ctx_, g2, -1).value(), 0u);
  // pread does not use or move it.
  FakeGuest g3(*mf_, {50});
  EXPECT_EQ(f->ReadDirect(ctx_, g3, kPage - 20).value(), 50u);
  EXPECT_EQ(g3.Contents(), data.substr(kPage - 20, 50));
  EXPECT_EQ(f->ReadDirect(ctx_, g2, -1).value(), 0u);
}

// Pages of two files written alternately are not contiguous in the memory
// file; pages of one file written in one go usually are (copied as runs).
TEST_F(DirectIoTest, ReadsRunsAndBrokenRunsOfPages) {
  auto a = Make("/a", "");
  auto b = Make("/b", "");
  const std::string da = Pattern(6 * kPage), db(6 * kPage, 'B');
  for (size_t p = 0; p < 6; ++p) {
    for (auto& [f, d] : {std::pair{a, &da}, std::pair{b, &db}}) {
      FakeGuest g(*mf_, {kPage});
      g.Fill(d->substr(p * kPage, kPage));
      ASSERT_EQ(f->WriteDirect(ctx_, g, p * kPage).value(), kPage);
    }
  }
  WriteFile("/c", da);
  for (const char* path : {"/a", "/c"}) {
    auto f = Open(path, O_RDONLY);
    ASSERT_TRUE(f.ok());
    FakeGuest g(*mf_, {5 * kPage + 3});
    ASSERT_EQ((*f)->ReadDirect(ctx_, g, 1000).value(), 5 * kPage + 3) << path;
    EXPECT_EQ(g.Contents(), da.substr(1000, 5 * kPage + 3)) << path;
  }
}

TEST_F(DirectIoTest, HolesReadAsZeros) {
  auto f = Make("/f", "");
  auto* rf = static_cast<RegularFileDescription*>(f.get());
  uint64_t off = 3 * kPage + 7;
  ASSERT_TRUE(rf->file()
                  ->WriteAt(absl::Span<const uint8_t>(
                                reinterpret_cast<const uint8_t*>("end"), 3),
                            &off, false)
                  .ok());
  FakeGuest g(*mf_, {4 * kPage});
  g.Fill(std::string(4 * kPage, 'z'));  // stale guest bytes must go
  ASSERT_EQ(f->ReadDirect(ctx_, g, 0).value(), 3 * kPage + 10);
  std::string want(3 * kPage + 7, '\0');
  want += "end";
  EXPECT_EQ(g.Contents().substr(0, want.size()), want);
}

TEST_F(DirectIoTest, ReadAtEndOfFileIsZeroEvenIntoABadBuffer) {
  auto f = Make("/f", "abc");
  FakeGuest bad(*mf_, {100}, /*accessible=*/0);
  EXPECT_EQ(f->ReadDirect(ctx_, bad, 3).value(), 0u);
  EXPECT_EQ(f->ReadDirect(ctx_, bad, 1000).value(), 0u);
  // Before the end, a bad buffer is EFAULT, and the offset stays.
  auto r = f->ReadDirect(ctx_, bad, -1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kEFAULT);
  FakeGuest g(*mf_, {10});
  EXPECT_EQ(f->ReadDirect(ctx_, g, -1).value(), 3u);
}

TEST_F(DirectIoTest, ReadStopsWhereTheBufferFaults) {
  const std::string data = Pattern(2 * kPage);
  auto f = Make("/f", data);
  FakeGuest g(*mf_, {kPage, kPage}, /*accessible=*/kPage + 17);
  ASSERT_EQ(f->ReadDirect(ctx_, g, -1).value(), kPage + 17);
  EXPECT_EQ(g.Contents().substr(0, kPage + 17), data.substr(0, kPage + 17));
  // The offset advanced by what was copied, no more.
  FakeGuest rest(*mf_, {2 * kPage});
  ASSERT_EQ(f->ReadDirect(ctx_, rest, -1).value(), kPage - 17);
  EXPECT_EQ(rest.Contents().substr(0, kPage - 17), data.substr(kPage + 17));
}

TEST_F(DirectIoTest, ReadNeedsAReadableDescription) {
  auto f = Make("/f", "abc", O_WRONLY);
  FakeGuest g(*mf_, {10});
  EXPECT_EQ(f->ReadDirect(ctx_, g, -1).error(), kEBADF);
  EXPECT_EQ(f->WriteDirect(ctx_, g, -1).value(), 10u);
  auto r = Make("/g", "abc", O_RDONLY);
  EXPECT_EQ(r->WriteDirect(ctx_, g, -1).error(), kEBADF);
}

TEST_F(DirectIoTest, WriteGrowsTheFileAndMovesTheOffset) {
  auto f = Make("/f", "");
  const std::string data = Pattern(2 * kPage + 300);
  FakeGuest g(*mf_, {100, kPage, kPage + 200});
  g.Fill(data);
  ASSERT_EQ(f->WriteDirect(ctx_, g, -1).value(), data.size());
  EXPECT_EQ(f->Stat().value().st_size, static_cast<int64_t>(data.size()));
  FakeGuest tail(*mf_, {3});
  tail.Fill("xyz");
  ASSERT_EQ(f->WriteDirect(ctx_, tail, -1).value(), 3u);
  ASSERT_EQ(f->WriteDirect(ctx_, tail, 1).value(), 3u);  // pwrite
  auto r = Open("/f", O_RDONLY);
  ASSERT_TRUE(r.ok());
  std::string want = data + "xyz";
  want.replace(1, 3, "xyz");
  EXPECT_EQ(ReadAll(**r), want);
}

TEST_F(DirectIoTest, AppendWritesAtTheEnd) {
  auto f = Make("/f", "0123456789", O_WRONLY | O_APPEND);
  FakeGuest g(*mf_, {2});
  g.Fill("ab");
  ASSERT_EQ(f->WriteDirect(ctx_, g, 0).value(), 2u);  // pwrite appends too
  ASSERT_EQ(f->WriteDirect(ctx_, g, -1).value(), 2u);
  auto r = Open("/f", O_RDONLY);
  EXPECT_EQ(ReadAll(**r), "0123456789abab");
}

TEST_F(DirectIoTest, WriteStopsWhereTheBufferFaults) {
  auto f = Make("/f", "");
  FakeGuest g(*mf_, {2 * kPage}, /*accessible=*/kPage + 5);
  g.Fill(Pattern(2 * kPage));
  ASSERT_EQ(f->WriteDirect(ctx_, g, -1).value(), kPage + 5);
  EXPECT_EQ(f->Stat().value().st_size, static_cast<int64_t>(kPage + 5));
  FakeGuest bad(*mf_, {10}, /*accessible=*/0);
  EXPECT_EQ(f->WriteDirect(ctx_, bad, -1).error(), kEFAULT);
  EXPECT_EQ(f->Stat().value().st_size, static_cast<int64_t>(kPage + 5));
}

TEST_F(DirectIoTest, SealsAfterTheBufferCheck) {
  auto made = vfs::OpenAt(Base(), "/m", O_CREAT | O_RDWR, 0644, 022);
  ASSERT_TRUE(made.ok());
  auto* rf = static_cast<RegularFileDescription*>(made->get());
  rf->file()->InitMemfd(0);
  FakeGuest g(*mf_, {5});
  g.Fill("hello");
  ASSERT_EQ((*made)->WriteDirect(ctx_, g, -1).value(), 5u);
  ASSERT_TRUE(rf->file()->AddSeals(0x0004 /* F_SEAL_GROW */).ok());
  // Inside the size: fine; beyond it: EPERM, or short.
  ASSERT_EQ((*made)->WriteDirect(ctx_, g, 0).value(), 5u);
  EXPECT_EQ((*made)->WriteDirect(ctx_, g, 5).error(), kEPERM);
  ASSERT_TRUE(rf->file()->AddSeals(0x0008 /* F_SEAL_WRITE */).ok());
  EXPECT_EQ((*made)->WriteDirect(ctx_, g, 0).error(), kEPERM);
  // A bad buffer is found first (generic_perform_write faults it in
  // before shmem_write_begin checks the seals).
  FakeGuest bad(*mf_, {5}, /*accessible=*/0);
  EXPECT_EQ((*made)->WriteDirect(ctx_, bad, 0).error(), kEFAULT);
}

}  // namespace
}  // namespace sandbox::fs::tmpfs
