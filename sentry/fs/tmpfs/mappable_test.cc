// RegularFile as an mm::Mappable: one copy of the data for read/write and
// mappings; SIGBUS past the end; truncate invalidates before freeing.
#include "sentry/mm/mappable.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/regular_file.h"
#include "sentry/fs/tmpfs/testing.h"

namespace sandbox::fs::tmpfs {
namespace {

constexpr uint64_t kPage = 4096;

class RecordingSpace : public mm::MappingSpace {
 public:
  void Invalidate(uintptr_t addr, uint64_t length) override {
    calls.emplace_back(addr, length);
  }
  std::vector<std::pair<uintptr_t, uint64_t>> calls;
};

class MappableTest : public TmpfsTest {
 protected:
  std::shared_ptr<mm::Mappable> MappableOf(std::string_view path) {
    auto f = Open(path, O_RDWR);
    EXPECT_TRUE(f.ok());
    return f.ok() ? (*f)->GetMappable() : nullptr;
  }
  platform::AccessType rw_{.read = true, .write = true};
};

TEST_F(MappableTest, SharesPagesWithReadAndWrite) {
  WriteFile("/f", std::string(2 * kPage, 'a'));
  auto m = MappableOf("/f");
  ASSERT_NE(m, nullptr);
  auto t = m->Translate(kPage, kPage, 0, 2 * kPage, rw_);
  ASSERT_OK(t);
  ASSERT_FALSE(t->empty());
  EXPECT_EQ(t->front().offset, kPage);
  uint64_t covered = 0;
  for (const auto& tr : *t) covered += tr.length;
  EXPECT_GE(covered, kPage);
  // A store through the "mapping" is what read(2) returns, and vice versa.
  ASSERT_TRUE(mf_->Write(t->front().file_offset, "XY", 2));
  auto f = Open("/f", O_RDWR).value();
  vfs::IoContext ctx;
  uint8_t buf[2];
  ASSERT_OK(f->PRead(ctx, absl::MakeSpan(buf), kPage));
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), 2), "XY");
  ASSERT_OK(f->PWrite(
      ctx, absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>("zz"), 2),
      kPage + 2));
  char back[2];
  ASSERT_TRUE(mf_->Read(t->front().file_offset + 2, back, 2));
  EXPECT_EQ(std::string(back, 2), "zz");
}

TEST_F(MappableTest, HolesAreAllocatedAndPastEndIsSigbus) {
  WriteFile("/f", "");
  ASSERT_OK(vfs::TruncateAt(Base(), "/f", kPage + 1));  // two pages, sparse
  auto m = MappableOf("/f");
  auto t = m->Translate(0, 2 * kPage, 0, 2 * kPage, rw_);
  ASSERT_OK(t);
  char zero[16] = {1};
  ASSERT_TRUE(mf_->Read(t->front().file_offset, zero, sizeof(zero)));
  EXPECT_EQ(std::string(zero, 16), std::string(16, '\0'));
  EXPECT_ERRNO(m->Translate(2 * kPage, kPage, 2 * kPage, kPage, rw_), kEFAULT);
  EXPECT_ERRNO(m->Translate(kPage, 2 * kPage, kPage, 2 * kPage, rw_), kEFAULT);
}

TEST_F(MappableTest, OptionalRangeMapsOnlyExistingPagesOfASparseFile) {
  // 256 pages, only pages 0 and 3 written: a fault on page 0 with a
  // 256-page window may map pages that exist but must not fill holes.
  WriteFile("/f", "");
  ASSERT_OK(vfs::TruncateAt(Base(), "/f", 256 * kPage));
  auto f = Open("/f", O_RDWR).value();
  vfs::IoContext ctx;
  const uint8_t x = 'x';
  ASSERT_OK(f->PWrite(ctx, absl::Span<const uint8_t>(&x, 1), 0));
  ASSERT_OK(f->PWrite(ctx, absl::Span<const uint8_t>(&x, 1), 3 * kPage));
  auto m = MappableOf("/f");
  auto t = m->Translate(0, kPage, 0, 256 * kPage, rw_);
  ASSERT_OK(t);
  uint64_t covered = 0;
  for (const auto& tr : *t) covered += tr.length;
  EXPECT_EQ(covered, kPage);  // page 1 is a hole: the run stops there
  // The required page of a hole is allocated (as shmem_fault); the window
  // around it is not.
  auto t2 = m->Translate(100 * kPage, kPage, 0, 256 * kPage, rw_);
  ASSERT_OK(t2);
  covered = 0;
  for (const auto& tr : *t2) covered += tr.length;
  EXPECT_EQ(covered, kPage);
  // Pages 1, 2, 4..99 and 101..255 are still holes.
  EXPECT_EQ(f->Seek(0, SEEK_HOLE).value(), static_cast<int64_t>(kPage));
  EXPECT_EQ(f->Seek(4 * kPage, SEEK_DATA).value(),
            static_cast<int64_t>(100 * kPage));
  EXPECT_ERRNO(f->Seek(101 * kPage, SEEK_DATA), kENXIO);
}

TEST_F(MappableTest, TruncateInvalidatesMappingsPastTheEnd) {
  WriteFile("/f", std::string(4 * kPage, 'b'));
  auto m = MappableOf("/f");
  RecordingSpace space;
  m->AddMapping(&space, 0x10000, 0, 4 * kPage, true);
  m->AddMapping(&space, 0x80000, 2 * kPage, kPage, true);
  ASSERT_OK(m->Translate(0, 4 * kPage, 0, 4 * kPage, rw_));
  uint64_t before = mf_->AllocatedBytes();
  ASSERT_OK(vfs::TruncateAt(Base(), "/f", kPage + 10));
  // Pages 2 and 3 go: [0x12000, 0x14000) of the first mapping, all of the
  // second.
  EXPECT_EQ(space.calls, (std::vector<std::pair<uintptr_t, uint64_t>>{
                             {0x12000, 2 * kPage}, {0x80000, kPage}}));
  EXPECT_EQ(mf_->AllocatedBytes(), before - 2 * kPage);
  EXPECT_ERRNO(m->Translate(2 * kPage, kPage, 2 * kPage, kPage, rw_), kEFAULT);
  // Removing part of a mapping keeps the rest.
  m->RemoveMapping(&space, 0x10000, 0, kPage, true);
  space.calls.clear();
  ASSERT_OK(vfs::TruncateAt(Base(), "/f", 0));
  // Only what was below the old end can still be mapped: page 1.
  EXPECT_EQ(space.calls,
            (std::vector<std::pair<uintptr_t, uint64_t>>{{0x11000, kPage}}));
  m->RemoveMapping(&space, 0x11000, kPage, 3 * kPage, true);
  m->RemoveMapping(&space, 0x80000, 2 * kPage, kPage, true);
  space.calls.clear();
  ASSERT_OK(vfs::TruncateAt(Base(), "/f", 3 * kPage));
  ASSERT_OK(m->Translate(0, 3 * kPage, 0, 3 * kPage, rw_));
  ASSERT_OK(vfs::TruncateAt(Base(), "/f", 0));
  EXPECT_TRUE(space.calls.empty());
}

TEST_F(MappableTest, PunchHoleInvalidatesBeforeFreeing) {
  WriteFile("/f", std::string(4 * kPage, 'c'));
  auto m = MappableOf("/f");
  RecordingSpace space;
  m->AddMapping(&space, 0x10000, 0, 4 * kPage, true);
  auto f = Open("/f", O_RDWR).value();
  ASSERT_OK(vfs::Fallocate(*f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                           kPage / 2, 2 * kPage));
  // Only page 1 is whole inside [kPage/2, 2.5 kPage).
  EXPECT_EQ(space.calls,
            (std::vector<std::pair<uintptr_t, uint64_t>>{{0x11000, kPage}}));
  EXPECT_EQ(f->Stat()->st_size, 4 * kPage);
}

TEST_F(MappableTest, DirectoriesAndPathFilesHaveNone) {
  ASSERT_OK(Mkdir("/d"));
  EXPECT_EQ(Open("/d", O_RDONLY).value()->GetMappable(), nullptr);
  WriteFile("/f", "x");
  EXPECT_EQ(Open("/f", O_PATH).value()->GetMappable(), nullptr);
}

}  // namespace
}  // namespace sandbox::fs::tmpfs
