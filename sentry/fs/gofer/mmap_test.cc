// GoferRegularFile as an mm::Mappable: the page cache in the memory file is
// filled from the host, shared stores reach the host, write(2) is seen by
// mappings, SIGBUS (EFAULT) past the end, truncate invalidates mappings.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "platform/memory_file.h"
#include "sentry/fs/gofer/regular_file.h"
#include "sentry/fs/gofer/testing.h"
#include "sentry/mm/mappable.h"

namespace sandbox::fs::gofer {
namespace {

constexpr uint64_t kPage = 4096;

class RecordingSpace : public mm::MappingSpace {
 public:
  void Invalidate(uintptr_t addr, uint64_t length) override {
    calls.emplace_back(addr, length);
  }
  std::vector<std::pair<uintptr_t, uint64_t>> calls;
};

class GoferMmapTest : public GoferFsWithMemoryFileTest {
 protected:
  std::string MfRead(uint64_t off, size_t n) {
    std::string s(n, '\0');
    EXPECT_TRUE(mf_->Read(off, s.data(), n));
    return s;
  }
  platform::AccessType r_{.read = true};
  platform::AccessType rw_{.read = true, .write = true};
};

TEST_F(GoferMmapTest, NoMemoryFileMeansNoMmap) {
  ::gofer::testing::WriteFile(Host("f"), "x");
  Mount();
  auto f = Open("/f", O_RDONLY);
  ASSERT_OK(f);
  EXPECT_EQ((*f)->GetMappable(), nullptr);
}

TEST_F(GoferMmapTest, PagesComeFromTheHost) {
  std::string data(2 * kPage + 100, 'a');
  data[kPage] = 'B';
  ::gofer::testing::WriteFile(Host("f"), data);
  MountWithCache();
  auto f = Open("/f", O_RDONLY);
  ASSERT_OK(f);
  auto m = (*f)->GetMappable();
  ASSERT_NE(m, nullptr);
  auto t = m->Translate(kPage, kPage, 0, 3 * kPage, r_);
  ASSERT_OK(t);
  ASSERT_FALSE(t->empty());
  const mm::Translation& tr = t->front();
  ASSERT_LE(tr.offset, kPage);
  EXPECT_EQ(MfRead(tr.file_offset + (kPage - tr.offset), 2), "Ba");
  // The last page: the file's bytes, then zeros.
  auto last = m->Translate(2 * kPage, kPage, 2 * kPage, kPage, r_);
  ASSERT_OK(last);
  EXPECT_EQ(MfRead(last->front().file_offset + 98, 4),
            std::string("aa\0\0", 4));
  // Past the end: SIGBUS.
  EXPECT_ERRNO(m->Translate(3 * kPage, kPage, 3 * kPage, kPage, r_), kEFAULT);
  uint8_t vec[3] = {};
  m->Residency(0, 3, vec);
  EXPECT_EQ(vec[1], 1);
  EXPECT_EQ(vec[2], 1);
}

TEST_F(GoferMmapTest, RunsOfPagesFilledInOrder) {
  constexpr int kPages = 37;  // more than one fill run, a partial last page
  std::string data;
  for (int i = 0; i < kPages; ++i) data += std::string(kPage, 'A' + i % 26);
  data.resize(data.size() - 100);
  ::gofer::testing::WriteFile(Host("f"), data);
  MountWithCache();
  auto f = Open("/f", O_RDONLY);
  ASSERT_OK(f);
  auto m = (*f)->GetMappable();
  ASSERT_NE(m, nullptr);
  auto t = m->Translate(0, kPages * kPage, 0, kPages * kPage, r_);
  ASSERT_OK(t);
  uint64_t next = 0;
  for (const mm::Translation& tr : *t) {
    ASSERT_EQ(tr.offset, next);
    for (uint64_t p = 0; p < tr.length; p += kPage) {
      const uint64_t pos = tr.offset + p;
      size_t n = std::min<size_t>(kPage, data.size() - pos);
      EXPECT_EQ(MfRead(tr.file_offset + p, n), data.substr(pos, n)) << pos;
    }
    next = tr.offset + tr.length;
  }
  EXPECT_EQ(next, kPages * kPage);
  EXPECT_EQ(MfRead(t->back().file_offset + t->back().length - 100, 100),
            std::string(100, '\0'));
}

TEST_F(GoferMmapTest, SharedStoresReachTheHostAndWritesReachMappings) {
  ::gofer::testing::WriteFile(Host("f"), std::string(kPage, 'a'));
  MountWithCache();
  auto f = Open("/f", O_RDWR);
  ASSERT_OK(f);
  auto m = (*f)->GetMappable();
  ASSERT_NE(m, nullptr);
  RecordingSpace space;
  m->AddMapping(&space, 0x10000, 0, kPage, /*writable=*/true);
  auto t = m->Translate(0, kPage, 0, kPage, rw_);
  ASSERT_OK(t);
  const uint64_t page = t->front().file_offset;
  ASSERT_TRUE(mf_->Write(page + 5, "XY", 2));  // a store through the mapping
  // read(2) sees it (written back first).
  vfs::IoContext ctx;
  uint8_t buf[2];
  ASSERT_OK((*f)->PRead(ctx, absl::MakeSpan(buf), 5));
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), 2), "XY");
  EXPECT_EQ(HostRead(Host("f")).substr(5, 2), "XY");
  // write(2) shows in the mapping.
  ASSERT_OK((*f)->PWrite(
      ctx, absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>("zz"), 2),
      100));
  EXPECT_EQ(MfRead(page + 100, 2), "zz");
  ASSERT_TRUE(mf_->Write(page + 200, "Q", 1));
  m->RemoveMapping(&space, 0x10000, 0, kPage, /*writable=*/true);
  EXPECT_EQ(HostRead(Host("f")).substr(200, 1), "Q");
  EXPECT_EQ(HostRead(Host("f")).size(), kPage);  // never extended
}

TEST_F(GoferMmapTest, TruncateInvalidatesMappings) {
  ::gofer::testing::WriteFile(Host("f"), std::string(3 * kPage, 'a'));
  MountWithCache();
  auto f = Open("/f", O_RDWR);
  ASSERT_OK(f);
  auto m = (*f)->GetMappable();
  ASSERT_NE(m, nullptr);
  RecordingSpace space;
  m->AddMapping(&space, 0x20000, 0, 3 * kPage, /*writable=*/false);
  ASSERT_OK(m->Translate(0, 3 * kPage, 0, 3 * kPage, r_));
  ASSERT_OK(vfs::TruncateAt(Base(), "/f", kPage + 10));
  ASSERT_FALSE(space.calls.empty());
  EXPECT_EQ(space.calls.back().first, 0x20000 + 2 * kPage);
  EXPECT_EQ(space.calls.back().second, kPage);
  EXPECT_ERRNO(m->Translate(2 * kPage, kPage, 2 * kPage, kPage, r_), kEFAULT);
  auto t = m->Translate(kPage, kPage, kPage, kPage, r_);
  ASSERT_OK(t);
  EXPECT_EQ(MfRead(t->front().file_offset + 8, 4), std::string("aa\0\0", 4));
  m->RemoveMapping(&space, 0x20000, 0, 3 * kPage, false);
}

}  // namespace
}  // namespace sandbox::fs::gofer
