// Direct I/O of Gofer files (ReadDirect/WriteDirect over a vfs::GuestIo):
// host data lands in (comes from) the guest's memory-file pages with no
// bounce buffer; a buffer that stops being accessible part way gives the
// count before it (EFAULT if none, 0 at the end of file) and moves the
// offset by that count only; O_APPEND; cached mmap pages see direct writes.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "platform/memory_file.h"
#include "sentry/fs/gofer/regular_file.h"
#include "sentry/fs/gofer/testing.h"
#include "sentry/vfs/testing/fake_guest_io.h"

namespace sandbox::fs::gofer {
namespace {

constexpr size_t kPage = 4096;

using FakeGuest = vfs::testing::FakeGuestIo;

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 23);
  return s;
}

void HostWrite(const std::string& path, std::string_view data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, data.data(), data.size()),
            static_cast<ssize_t>(data.size()));
  close(fd);
}

class GoferDirectIoTest : public GoferFsWithMemoryFileTest {
 protected:
  vfs::IoContext ctx_;
};

TEST_F(GoferDirectIoTest, ReadsIntoGuestPagesAcrossSegmentsAndPieces) {
  const std::string data = Pattern(300000);
  HostWrite(Host("f"), data);
  Mount();
  ASSERT_OK(Open("f", O_RDONLY));
  auto f = Open("f", O_RDONLY).value();
  ASSERT_TRUE(f->CanDirectIo(*mf_));
  // Three segments, the middle one unaligned; one-page pieces.
  FakeGuest g(*mf_, {5000, 123, 200000});
  auto n = f->ReadDirect(ctx_, g, -1);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 205123u);
  EXPECT_EQ(g.Contents(), data.substr(0, 205123));
  EXPECT_EQ(f->Seek(0, SEEK_CUR).value(), 205123);
  // The rest: short at the end of file, then 0.
  FakeGuest g2(*mf_, {200000}, SIZE_MAX, /*piece=*/1 << 20);
  EXPECT_EQ(f->ReadDirect(ctx_, g2, -1).value(), 300000u - 205123u);
  EXPECT_EQ(g2.Contents().substr(0, 300000 - 205123), data.substr(205123));
  EXPECT_EQ(g2.pieces, 1);  // one run: one host pread
  EXPECT_EQ(f->ReadDirect(ctx_, g2, -1).value(), 0u);
  // pread form: the offset does not move.
  FakeGuest g3(*mf_, {10});
  EXPECT_EQ(f->ReadDirect(ctx_, g3, 7).value(), 10u);
  EXPECT_EQ(g3.Contents(), data.substr(7, 10));
  EXPECT_EQ(f->Seek(0, SEEK_CUR).value(), 300000);
}

TEST_F(GoferDirectIoTest, ReadStopsWhereTheBufferFaults) {
  const std::string data = Pattern(2 * kPage);
  HostWrite(Host("f"), data);
  Mount();
  auto f = Open("f", O_RDONLY).value();
  FakeGuest part(*mf_, {1000}, /*accessible=*/100);
  EXPECT_EQ(f->ReadDirect(ctx_, part, -1).value(), 100u);
  EXPECT_EQ(part.Contents().substr(0, 100), data.substr(0, 100));
  EXPECT_EQ(f->Seek(0, SEEK_CUR).value(), 100);
  FakeGuest none(*mf_, {10}, /*accessible=*/0);
  EXPECT_ERRNO(f->ReadDirect(ctx_, none, -1), kEFAULT);
  EXPECT_EQ(f->Seek(0, SEEK_CUR).value(), 100);
  // At the end of file nothing is copied: 0 even into a bad buffer.
  EXPECT_EQ(f->ReadDirect(ctx_, none, 2 * kPage).value(), 0u);
  EXPECT_EQ(f->ReadDirect(ctx_, none, 5 * kPage).value(), 0u);
  // The second segment faults: the first counts.
  FakeGuest two(*mf_, {50, 50}, /*accessible=*/50);
  EXPECT_EQ(f->ReadDirect(ctx_, two, 0).value(), 50u);
  // A write-only description cannot be read.
  auto w = Open("f", O_WRONLY).value();
  FakeGuest g(*mf_, {10});
  EXPECT_ERRNO(w->ReadDirect(ctx_, g, -1), kEBADF);
}

TEST_F(GoferDirectIoTest, WritesFromGuestPagesAndStopsAtTheFault) {
  Mount();
  auto f = Open("out", O_RDWR | O_CREAT).value();
  const std::string data = Pattern(3 * kPage + 17);
  FakeGuest g(*mf_, {kPage + 5, 2 * kPage + 12});
  g.Fill(data);
  EXPECT_EQ(f->WriteDirect(ctx_, g, -1).value(), data.size());
  EXPECT_EQ(f->Seek(0, SEEK_CUR).value(), static_cast<int64_t>(data.size()));
  EXPECT_EQ(HostRead(Host("out")), data);
  // 100 readable bytes of 1000: 100 written, the offset moves by 100.
  FakeGuest part(*mf_, {1000}, /*accessible=*/100);
  part.Fill(std::string(1000, 'x'));
  EXPECT_EQ(f->WriteDirect(ctx_, part, -1).value(), 100u);
  EXPECT_EQ(HostRead(Host("out")), data + std::string(100, 'x'));
  FakeGuest none(*mf_, {10}, /*accessible=*/0);
  EXPECT_ERRNO(f->WriteDirect(ctx_, none, -1), kEFAULT);
  EXPECT_EQ(f->Seek(0, SEEK_CUR).value(),
            static_cast<int64_t>(data.size() + 100));
  auto st = vfs::StatAt(Base(), "out", 0);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->st_size, static_cast<int64_t>(data.size() + 100));
  // pwrite form.
  FakeGuest y(*mf_, {3});
  y.Fill("yyy");
  EXPECT_EQ(f->WriteDirect(ctx_, y, 1).value(), 3u);
  EXPECT_EQ(HostRead(Host("out")).substr(0, 5),
            data.substr(0, 1) + "yyy" + data.substr(4, 1));
  // Read-only description.
  auto r = Open("out", O_RDONLY).value();
  EXPECT_ERRNO(r->WriteDirect(ctx_, y, -1), kEBADF);
}

TEST_F(GoferDirectIoTest, AppendGoesToTheHostEnd) {
  HostWrite(Host("log"), "abc");
  Mount();
  auto f = Open("log", O_WRONLY | O_APPEND).value();
  HostWrite(Host("log"), "abcdef");  // grown on the host meanwhile
  FakeGuest g(*mf_, {2});
  g.Fill("XY");
  EXPECT_EQ(f->WriteDirect(ctx_, g, -1).value(), 2u);
  EXPECT_EQ(f->WriteDirect(ctx_, g, 0).value(), 2u);  // pwrite appends too
  EXPECT_EQ(HostRead(Host("log")), "abcdefXYXY");
}

TEST_F(GoferDirectIoTest, CachedMmapPagesSeeDirectWrites) {
  HostWrite(Host("m"), Pattern(2 * kPage));
  MountWithCache();
  auto f = Open("m", O_RDWR).value();
  std::shared_ptr<mm::Mappable> m = f->GetMappable();
  ASSERT_NE(m, nullptr);
  auto ts = m->Translate(0, kPage, 0, 2 * kPage, {.read = true});
  ASSERT_TRUE(ts.ok());
  ASSERT_FALSE(ts->empty());
  const uint64_t page0 = (*ts)[0].file_offset;
  FakeGuest g(*mf_, {10});
  g.Fill("0123456789");
  EXPECT_EQ(f->WriteDirect(ctx_, g, 4090).value(), 10u);
  std::string seen(6, '\0');
  ASSERT_TRUE(mf_->Read(page0 + 4090, seen.data(), 6));
  EXPECT_EQ(seen, "012345");
  // And a direct read sees the host's bytes.
  FakeGuest back(*mf_, {10});
  EXPECT_EQ(f->ReadDirect(ctx_, back, 4090).value(), 10u);
  EXPECT_EQ(back.Contents(), "0123456789");
}

// Small files of an exclusive read-only mount (the sandbox's root) are read
// from the host once, then from the Sentry. The host file is changed behind
// the mount's back below only to tell where a read's bytes come from.
TEST_F(GoferDirectIoTest, SmallFilesOfAnExclusiveReadOnlyMountAreReadOnce) {
  HostWrite(Host("f"), "hello world");
  HostWrite(Host("other"), "x");
  Options opts;
  opts.read_only = true;
  opts.max_host_fds = 1;
  Mount(opts);
  auto f = Open("f", O_RDONLY).value();
  auto* file = static_cast<GoferRegularFile*>(&f->inode());
  EXPECT_FALSE(file->data_cached());
  FakeGuest g(*mf_, {5});
  EXPECT_EQ(f->ReadDirect(ctx_, g, -1).value(), 5u);
  EXPECT_EQ(g.Contents(), "hello");
  EXPECT_TRUE(file->data_cached());
  EXPECT_EQ(fs_->file_data_bytes(), 11u);
  HostWrite(Host("f"), "HELLO WORLD");
  ASSERT_OK(vfs::StatAt(Base(), "/other", 0));  // walked now
  const uint64_t rpcs = fs_->rpc_count();
  EXPECT_EQ(f->ReadDirect(ctx_, g, -1).value(), 5u);
  EXPECT_EQ(g.Contents(), " worl");
  EXPECT_EQ(f->Seek(0, SEEK_CUR).value(), 10);
  uint8_t buf[16];
  EXPECT_EQ(f->PRead(ctx_, absl::MakeSpan(buf), 6).value(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), 5), "world");
  EXPECT_EQ(f->PRead(ctx_, absl::MakeSpan(buf), 11).value(), 0u);
  // A buffer that faults part way: the bytes before it; at once: EFAULT;
  // at the end of file: 0 (Linux's filemap_read), offsets unchanged.
  FakeGuest part(*mf_, {6}, /*accessible=*/3);
  EXPECT_EQ(f->ReadDirect(ctx_, part, 0).value(), 3u);
  EXPECT_EQ(part.Contents().substr(0, 3), "hel");
  FakeGuest bad(*mf_, {6}, /*accessible=*/0);
  EXPECT_ERRNO(f->ReadDirect(ctx_, bad, 0), kEFAULT);
  EXPECT_EQ(f->ReadDirect(ctx_, bad, 11).value(), 0u);
  EXPECT_EQ(f->ReadDirect(ctx_, bad, 1000).value(), 0u);
  EXPECT_EQ(f->Seek(0, SEEK_CUR).value(), 10);
  // Opening another file takes the only host FD; opening this one again
  // needs none (no Open call), and reads still come from the Sentry.
  ASSERT_OK(Open("other", O_RDONLY));
  auto again = Open("f", O_RDONLY).value();
  FakeGuest all(*mf_, {20});
  EXPECT_EQ(again->ReadDirect(ctx_, all, -1).value(), 11u);
  EXPECT_EQ(all.Contents().substr(0, 11), "hello world");
  EXPECT_EQ(fs_->rpc_count(), rpcs + 1);  // the Open of "other" only
}

TEST_F(GoferDirectIoTest, EmptyFileIsCachedToo) {
  HostWrite(Host("e"), "");
  Options opts;
  opts.read_only = true;
  Mount(opts);
  auto f = Open("e", O_RDONLY).value();
  FakeGuest g(*mf_, {8}, /*accessible=*/0);
  EXPECT_EQ(f->ReadDirect(ctx_, g, -1).value(), 0u);
  EXPECT_TRUE(static_cast<GoferRegularFile*>(&f->inode())->data_cached());
  EXPECT_EQ(fs_->file_data_bytes(), 0u);
}

// Read from the host each time: a file past max_cached_file_size, a file
// past the budget, any file of a writable or a shared mount.
TEST_F(GoferDirectIoTest, FilesNotCachedAreReadFromTheHost) {
  HostWrite(Host("big"), Pattern(17));
  HostWrite(Host("a"), "aaaaaaaa");
  HostWrite(Host("b"), "bbbbbbbb");
  Options opts;
  opts.read_only = true;
  opts.max_cached_file_size = 16;
  opts.max_cached_file_bytes = 10;
  Mount(opts);
  auto ReadsHostChange = [&](const std::string& name, std::string before) {
    auto f = Open(name, O_RDONLY).value();
    FakeGuest g(*mf_, {before.size()});
    EXPECT_EQ(f->ReadDirect(ctx_, g, 0).value(), before.size());
    EXPECT_EQ(g.Contents(), before);
    std::string after = before;
    std::reverse(after.begin(), after.end());
    after[0] = '#';
    HostWrite(Host(name), after);
    EXPECT_EQ(f->ReadDirect(ctx_, g, 0).value(), before.size());
    return g.Contents() == after;
  };
  EXPECT_TRUE(ReadsHostChange("big", Pattern(17)));
  EXPECT_FALSE(ReadsHostChange("a", "aaaaaaaa"));  // cached
  EXPECT_TRUE(ReadsHostChange("b", "bbbbbbbb"));   // past the budget
  EXPECT_EQ(fs_->file_data_bytes(), 8u);
}

TEST_F(GoferDirectIoTest, WritableMountsReadFromTheHost) {
  HostWrite(Host("f"), "one");
  Mount();
  auto f = Open("f", O_RDONLY).value();
  FakeGuest g(*mf_, {3});
  EXPECT_EQ(f->ReadDirect(ctx_, g, 0).value(), 3u);
  HostWrite(Host("f"), "two");
  EXPECT_EQ(f->ReadDirect(ctx_, g, 0).value(), 3u);
  EXPECT_EQ(g.Contents(), "two");
  EXPECT_EQ(fs_->file_data_bytes(), 0u);
}

TEST_F(GoferDirectIoTest, SharedReadOnlyMountsReadFromTheHost) {
  HostWrite(Host("f"), "one");
  Options opts;
  opts.read_only = true;
  opts.exclusive = false;
  Mount(opts);
  auto f = Open("f", O_RDONLY).value();
  FakeGuest g(*mf_, {3});
  EXPECT_EQ(f->ReadDirect(ctx_, g, 0).value(), 3u);
  HostWrite(Host("f"), "two");
  EXPECT_EQ(f->ReadDirect(ctx_, g, 0).value(), 3u);
  EXPECT_EQ(g.Contents(), "two");
}

}  // namespace
}  // namespace sandbox::fs::gofer
