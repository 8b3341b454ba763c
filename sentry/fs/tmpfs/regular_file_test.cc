// tmpfs regular files: data in the memory file, offsets, O_APPEND, holes,
// SEEK_DATA/SEEK_HOLE, truncate, and the attribute operations on them.
#include "sentry/fs/tmpfs/regular_file.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "platform/long_work.h"
#include "sentry/fs/tmpfs/testing.h"

namespace sandbox::fs::tmpfs {
namespace {

absl::Span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

class RegularFileTest : public TmpfsTest {
 protected:
  std::shared_ptr<vfs::VfsFile> Create(std::string_view path,
                                       uint32_t flags = O_RDWR) {
    auto f = Open(path, O_CREAT | flags, 0644);
    EXPECT_TRUE(f.ok());
    return f.ok() ? f.value() : nullptr;
  }
  std::string PRead(vfs::VfsFile& f, size_t n, int64_t off) {
    std::string s(n, '\0');
    auto r = f.PRead(
        ctx_, absl::MakeSpan(reinterpret_cast<uint8_t*>(s.data()), n), off);
    EXPECT_TRUE(r.ok());
    s.resize(r.ok() ? *r : 0);
    return s;
  }
  vfs::IoContext ctx_;
};

TEST_F(RegularFileTest, WriteReadSeek) {
  auto f = Create("/f");
  ASSERT_EQ((*f).Write(ctx_, Bytes("hello world")).value(), 11u);
  EXPECT_EQ(f->Seek(0, SEEK_CUR).value(), 11);
  EXPECT_EQ(f->Seek(0, SEEK_SET).value(), 0);
  EXPECT_EQ(ReadAll(*f), "hello world");
  EXPECT_EQ(f->Seek(-5, SEEK_END).value(), 6);
  EXPECT_EQ(ReadAll(*f), "world");
  EXPECT_ERRNO(f->Seek(-1, SEEK_SET), kEINVAL);
  EXPECT_ERRNO(f->Seek(0, 17), kEINVAL);
  EXPECT_EQ(PRead(*f, 5, 0), "hello");
  EXPECT_EQ(PRead(*f, 100, 6), "world");
  EXPECT_EQ(PRead(*f, 10, 100), "");
  uint8_t b[1];
  EXPECT_ERRNO(f->PRead(ctx_, absl::MakeSpan(b), -1), kEINVAL);
  abi::Stat st = f->Stat().value();
  EXPECT_EQ(st.st_size, 11);
  EXPECT_EQ(st.st_blocks, 8);
  EXPECT_EQ(st.st_blksize, 4096);
}

TEST_F(RegularFileTest, AccessModeEnforced) {
  WriteFile("/f", "abc");
  auto ro = Open("/f", O_RDONLY).value();
  auto wo = Open("/f", O_WRONLY).value();
  uint8_t b[3];
  EXPECT_ERRNO(ro->Write(ctx_, Bytes("x")), kEBADF);
  EXPECT_ERRNO(ro->PWrite(ctx_, Bytes("x"), 0), kEBADF);
  EXPECT_ERRNO(wo->Read(ctx_, absl::MakeSpan(b)), kEBADF);
  EXPECT_ERRNO(wo->PRead(ctx_, absl::MakeSpan(b), 0), kEBADF);
}

TEST_F(RegularFileTest, AppendAlwaysWritesAtEnd) {
  WriteFile("/f", "abc");
  auto a = Open("/f", O_WRONLY | O_APPEND).value();
  auto other = Open("/f", O_RDWR).value();
  ASSERT_OK(a->Seek(0, SEEK_SET));
  ASSERT_OK(a->Write(ctx_, Bytes("de")));
  ASSERT_OK(other->PWrite(ctx_, Bytes("XYZW"), 3));  // grows to 7
  ASSERT_OK(a->Write(ctx_, Bytes("f")));
  EXPECT_EQ(a->Seek(0, SEEK_CUR).value(), 8);
  // pwrite on an O_APPEND description appends too (Linux).
  ASSERT_OK(a->PWrite(ctx_, Bytes("g"), 0));
  EXPECT_EQ(ReadAll(*other), "abcXYZWfg");
}

TEST_F(RegularFileTest, SparseFilesAndHoles) {
  auto f = Create("/sparse");
  ASSERT_OK(f->PWrite(ctx_, Bytes("A"), 3 * 4096 + 10));
  ASSERT_OK(f->PWrite(ctx_, Bytes("B"), 4 * 4096));
  EXPECT_EQ(f->Stat()->st_size, 4 * 4096 + 1);
  EXPECT_EQ(f->Stat()->st_blocks, 16);  // two pages
  std::string head = PRead(*f, 4096, 0);
  EXPECT_EQ(head, std::string(4096, '\0'));
  EXPECT_EQ(PRead(*f, 1, 3 * 4096 + 10), "A");
  EXPECT_EQ(f->Seek(0, SEEK_DATA).value(), 3 * 4096);
  EXPECT_EQ(f->Seek(3 * 4096 + 5, SEEK_DATA).value(), 3 * 4096 + 5);
  EXPECT_EQ(f->Seek(0, SEEK_HOLE).value(), 0);
  EXPECT_EQ(f->Seek(3 * 4096, SEEK_HOLE).value(), 4 * 4096 + 1);  // EOF
  EXPECT_ERRNO(f->Seek(4 * 4096 + 1, SEEK_DATA), kENXIO);
  EXPECT_ERRNO(f->Seek(4 * 4096 + 1, SEEK_HOLE), kENXIO);
  EXPECT_ERRNO(f->Seek(-1, SEEK_DATA), kENXIO);
}

TEST_F(RegularFileTest, TruncateFreesAndZeroes) {
  auto f = Create("/t");
  std::string big(3 * 4096, 'x');
  ASSERT_OK(f->Write(ctx_, Bytes(big)));
  uint64_t before = mf_->AllocatedBytes();
  ASSERT_OK(vfs::TruncateAt(Base(), "/t", 100));
  EXPECT_EQ(f->Stat()->st_size, 100);
  EXPECT_LT(mf_->AllocatedBytes(), before);
  EXPECT_EQ(f->Stat()->st_blocks, 8);
  // Growing again shows zeros past the old cut, not the old bytes.
  ASSERT_OK(vfs::Ftruncate(root_, *f, 8192));
  EXPECT_EQ(PRead(*f, 4, 98), std::string("xx\0\0", 4));
  EXPECT_EQ(PRead(*f, 4096, 4096), std::string(4096, '\0'));
  EXPECT_ERRNO(vfs::TruncateAt(Base(), "/t", -1), kEINVAL);
  EXPECT_ERRNO(vfs::TruncateAt(Base(), "/", 0), kEISDIR);
  EXPECT_ERRNO(vfs::TruncateAt(Base(user_), "/t", 0), kEACCES);
  auto ro = Open("/t", O_RDONLY).value();
  EXPECT_ERRNO(vfs::Ftruncate(root_, *ro, 0), kEINVAL);
  ASSERT_OK(vfs::MknodAt(Base(), "/fifo", S_IFIFO | 0666, 0, 0));
  EXPECT_ERRNO(vfs::TruncateAt(Base(), "/fifo", 0), kEINVAL);
}

TEST_F(RegularFileTest, PagesFreedWhenLastReferenceGoes) {
  uint64_t base = mf_->AllocatedBytes();
  {
    auto f = Create("/gone");
    ASSERT_OK(f->Write(ctx_, Bytes(std::string(10000, 'z'))));
    EXPECT_EQ(mf_->AllocatedBytes(), base + 3 * 4096);
    ASSERT_OK(vfs::UnlinkAt(Base(), "/gone", 0));
    EXPECT_EQ(mf_->AllocatedBytes(), base + 3 * 4096);  // still open
  }
  EXPECT_EQ(mf_->AllocatedBytes(), base);
}

TEST_F(RegularFileTest, SizeLimitGivesEnospcAndShortWrites) {
  auto small = Filesystem::Create(*mf_, Options{.max_bytes = 2 * 4096});
  ASSERT_OK(Mkdir("/small"));
  ASSERT_OK(ns_->MountAt(vfs::Resolve(Base(), "/small", {}).value(), small, 0));
  auto f = Create("/small/f");
  auto n = f->Write(ctx_, Bytes(std::string(3 * 4096, 'q')));
  ASSERT_OK(n);
  EXPECT_EQ(*n, 2u * 4096);
  EXPECT_ERRNO(f->Write(ctx_, Bytes("more")), kENOSPC);
  auto st = vfs::StatFsAt(Base(), "/small");
  ASSERT_OK(st);
  EXPECT_EQ(st->type, kTmpfsMagic);
  EXPECT_EQ(st->blocks, 2u);
  EXPECT_EQ(st->blocks_free, 0u);
}

// shmem_statfs: by default half of RAM's pages and as many inodes; used
// data pages and live inodes (the root's too) come off the free counts.
TEST_F(RegularFileTest, StatFsShowsTheDefaultLimitsAndWhatIsUsed) {
  ASSERT_GT(DefaultMaxPages(), 0u);
  auto st = vfs::StatFsAt(Base(), "/");
  ASSERT_OK(st);
  EXPECT_EQ(st->type, kTmpfsMagic);
  EXPECT_EQ(st->block_size, 4096u);
  EXPECT_EQ(st->blocks, DefaultMaxPages());
  EXPECT_EQ(st->blocks_free, st->blocks);
  EXPECT_EQ(st->files, DefaultMaxPages());
  EXPECT_EQ(st->files_free, st->files - 1);
  {
    auto f = Create("/data");
    ASSERT_OK(f->Write(ctx_, Bytes(std::string(10000, 'd'))));
    auto now = vfs::StatFsAt(Base(), "/");
    ASSERT_OK(now);
    EXPECT_EQ(now->blocks_free, st->blocks - 3);
    EXPECT_EQ(now->blocks_avail, now->blocks_free);
    EXPECT_EQ(now->files_free, st->files - 2);
    ASSERT_OK(vfs::UnlinkAt(Base(), "/data", 0));
  }
  auto after = vfs::StatFsAt(Base(), "/");
  ASSERT_OK(after);
  EXPECT_EQ(after->blocks_free, st->blocks);
  EXPECT_EQ(after->files_free, st->files - 1);
}

// size=0 and nr_inodes=0 are "no limit": statfs shows no sizes.
TEST_F(RegularFileTest, StatFsOfAnUnlimitedInstanceShowsNoSizes) {
  auto fs = Filesystem::Create(*mf_, Options{.max_bytes = 0, .max_inodes = 0});
  vfs::FsStats st = fs->StatFs();
  EXPECT_EQ(st.type, kTmpfsMagic);
  EXPECT_EQ(st.blocks, 0u);
  EXPECT_EQ(st.files, 0u);
  EXPECT_EQ(st.files_free, 0u);
}

TEST_F(RegularFileTest, InodeLimitGivesEnospc) {
  auto small = Filesystem::Create(*mf_, Options{.max_inodes = 3});
  ASSERT_OK(Mkdir("/small"));
  ASSERT_OK(ns_->MountAt(vfs::Resolve(Base(), "/small", {}).value(), small, 0));
  ASSERT_OK(vfs::MknodAt(Base(), "/small/a", S_IFREG | 0644, 0, 0));
  ASSERT_OK(vfs::MkdirAt(Base(), "/small/d", 0755, 0));
  EXPECT_ERRNO(vfs::MknodAt(Base(), "/small/b", S_IFREG | 0644, 0, 0), kENOSPC);
  EXPECT_EQ(small->StatFs().files_free, 0u);
  ASSERT_OK(vfs::UnlinkAt(Base(), "/small/a", 0));
  EXPECT_EQ(small->StatFs().files_free, 1u);
  ASSERT_OK(vfs::MknodAt(Base(), "/small/b", S_IFREG | 0644, 0, 0));
}

TEST_F(RegularFileTest, ConcurrentAppendsDoNotInterleave) {
  auto f = Create("/log", O_WRONLY | O_APPEND);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      vfs::IoContext ctx;
      std::string rec(100, static_cast<char>('a' + t));
      for (int i = 0; i < 50; ++i) ASSERT_OK(f->Write(ctx, Bytes(rec)));
    });
  }
  for (auto& th : threads) th.join();
  auto r = Open("/log", O_RDONLY).value();
  std::string all = ReadAll(*r);
  ASSERT_EQ(all.size(), 4u * 50 * 100);
  for (size_t i = 0; i < all.size(); i += 100) {
    EXPECT_EQ(all.substr(i, 100), std::string(100, all[i]));
  }
}

class AttrTest : public TmpfsTest {};

TEST_F(AttrTest, ChmodRules) {
  ASSERT_OK(Mkdir("/tmp", 0777));
  ASSERT_OK(OpenAs(user_, "/tmp/f", O_CREAT | O_RDWR, 0644));
  EXPECT_OK(vfs::ChmodAt(Base(user_), "/tmp/f", 0600, 0));
  EXPECT_EQ(vfs::StatAt(Base(), "/tmp/f", 0)->st_mode, S_IFREG | 0600u);
  EXPECT_ERRNO(vfs::ChmodAt(Base(user2_), "/tmp/f", 0777, 0), kEPERM);
  // The owner not in the file's group cannot set S_ISGID: silently dropped.
  ASSERT_OK(vfs::ChownAt(Base(), "/tmp/f", -1, 55, 0));
  ASSERT_OK(vfs::ChmodAt(Base(user_), "/tmp/f", 02755, 0));
  EXPECT_EQ(vfs::StatAt(Base(), "/tmp/f", 0)->st_mode, S_IFREG | 0755u);
  ASSERT_OK(Symlink("f", "/tmp/l"));
  EXPECT_ERRNO(vfs::ChmodAt(Base(), "/tmp/l", 0600, AT_SYMLINK_NOFOLLOW),
               kEOPNOTSUPP);
  EXPECT_ERRNO(vfs::ChmodAt(Base(), "/tmp/f", 0600, 0x1), kEINVAL);
}

TEST_F(AttrTest, ChownRulesAndSetIdClearing) {
  WriteFile("/f", "");
  ASSERT_OK(vfs::ChownAt(Base(), "/f", 1000, 1000, 0));
  ASSERT_OK(vfs::ChmodAt(Base(), "/f", 06755, 0));
  kernel::Credentials member = kernel::Credentials::User(1000, 1000, {77});
  EXPECT_ERRNO(vfs::ChownAt(Base(member), "/f", 2000, -1, 0), kEPERM);
  EXPECT_ERRNO(vfs::ChownAt(Base(member), "/f", -1, 78, 0), kEPERM);
  EXPECT_ERRNO(vfs::ChownAt(Base(user2_), "/f", -1, 1000, 0), kEPERM);
  ASSERT_OK(vfs::ChownAt(Base(member), "/f", -1, 77, 0));
  abi::Stat st = vfs::StatAt(Base(), "/f", 0).value();
  EXPECT_EQ(st.st_gid, 77u);
  EXPECT_EQ(st.st_mode, S_IFREG | 0755u);  // suid and sgid (g+x) cleared
  // chown(-1, -1) still clears set-user-ID.
  ASSERT_OK(vfs::ChmodAt(Base(), "/f", 04755, 0));
  ASSERT_OK(vfs::ChownAt(Base(), "/f", -1, -1, 0));
  EXPECT_EQ(vfs::StatAt(Base(), "/f", 0)->st_mode, S_IFREG | 0755u);
  // lchown changes the link, not the target.
  ASSERT_OK(Symlink("f", "/l"));
  ASSERT_OK(vfs::ChownAt(Base(), "/l", 5, 5, AT_SYMLINK_NOFOLLOW));
  EXPECT_EQ(vfs::StatAt(Base(), "/l", AT_SYMLINK_NOFOLLOW)->st_uid, 5u);
  EXPECT_EQ(vfs::StatAt(Base(), "/f", 0)->st_uid, 1000u);
}

TEST_F(AttrTest, Utimens) {
  WriteFile("/f", "");
  ASSERT_OK(vfs::ChmodAt(Base(), "/f", 0666, 0));
  abi::Timespec ts[2] = {{100, 5}, {200, 6}};
  ASSERT_OK(vfs::UtimensAt(Base(), "/f", ts, 0));
  abi::Stat st = vfs::StatAt(Base(), "/f", 0).value();
  EXPECT_EQ(st.st_atim.tv_sec, 100);
  EXPECT_EQ(st.st_atim.tv_nsec, 5);
  EXPECT_EQ(st.st_mtim.tv_sec, 200);
  // Non-owner: explicit times EPERM; "now" allowed with write permission.
  EXPECT_ERRNO(vfs::UtimensAt(Base(user_), "/f", ts, 0), kEPERM);
  EXPECT_OK(vfs::UtimensAt(Base(user_), "/f", nullptr, 0));
  EXPECT_GT(vfs::StatAt(Base(), "/f", 0)->st_mtim.tv_sec, 200);
  ASSERT_OK(vfs::ChmodAt(Base(), "/f", 0644, 0));
  EXPECT_ERRNO(vfs::UtimensAt(Base(user_), "/f", nullptr, 0), kEACCES);
  abi::Timespec omit[2] = {{0, (1 << 30) - 2}, {7, 0}};
  ASSERT_OK(vfs::UtimensAt(Base(), "/f", omit, 0));
  st = vfs::StatAt(Base(), "/f", 0).value();
  EXPECT_EQ(st.st_mtim.tv_sec, 7);
  EXPECT_NE(st.st_atim.tv_sec, 7);
  abi::Timespec bad[2] = {{0, 1000000000}, {0, 0}};
  EXPECT_ERRNO(vfs::UtimensAt(Base(), "/f", bad, 0), kEINVAL);
}

TEST_F(AttrTest, Access) {
  WriteFile("/f", "");
  ASSERT_OK(vfs::ChmodAt(Base(), "/f", 0640, 0));
  EXPECT_OK(vfs::AccessAt(Base(user_), "/f", F_OK, 0));
  EXPECT_ERRNO(vfs::AccessAt(Base(user_), "/f", R_OK, 0), kEACCES);
  EXPECT_OK(vfs::AccessAt(Base(), "/f", R_OK | W_OK, 0));
  EXPECT_ERRNO(vfs::AccessAt(Base(), "/f", X_OK, 0), kEACCES);  // no x bit
  EXPECT_ERRNO(vfs::AccessAt(Base(), "/f", 8, 0), kEINVAL);
  EXPECT_ERRNO(vfs::AccessAt(Base(), "/nope", F_OK, 0), kENOENT);
}

TEST_F(AttrTest, ChdirAndChroot) {
  ASSERT_OK(Mkdir("/d", 0700));
  WriteFile("/f", "");
  EXPECT_OK(vfs::ChdirTarget(Base(), "/d"));
  EXPECT_ERRNO(vfs::ChdirTarget(Base(), "/f"), kENOTDIR);
  EXPECT_ERRNO(vfs::ChdirTarget(Base(user_), "/d"), kEACCES);
  EXPECT_ERRNO(vfs::ChrootTarget(Base(user_), "/"), kEPERM);
  EXPECT_OK(vfs::ChrootTarget(Base(), "/d"));
  auto f = Open("/f", O_RDONLY).value();
  EXPECT_ERRNO(vfs::FchdirTarget(root_, *f), kENOTDIR);
}

TEST_F(AttrTest, FsContextForkIsIndependent) {
  ASSERT_OK(Mkdir("/d"));
  vfs::FsContext ctx(root_vd_, root_vd_, 022);
  auto child = ctx.Fork();
  child->SetCwd(vfs::Resolve(Base(), "/d", {}).value());
  EXPECT_EQ(child->SwapUmask(0777 | 01000), 022u);
  EXPECT_EQ(child->umask(), 0777u);
  EXPECT_EQ(ctx.umask(), 022u);
  EXPECT_EQ(ctx.Cwd(), root_vd_);
  EXPECT_EQ(vfs::GetCwd(child->Root(), child->Cwd()).value(), "/d");
}

}  // namespace
}  // namespace sandbox::fs::tmpfs

namespace sandbox::fs::tmpfs {
namespace {

class FallocateTest : public TmpfsTest {};

// Issue 17, finding 5: a size no sandbox can back is ENOSPC before any page
// (it walked 1 PiB page by page, 80-90 s).
TEST_F(FallocateTest, BeyondTheGuestMemoryBoundIsEnospcUpFront) {
  WriteFile("/f", "");
  auto f = Open("/f", O_RDWR).value();
  const uint64_t before = mf_->AllocatedBytes();
  mf_->SetLimit(uint64_t{1} << 30);
  EXPECT_EQ(vfs::Fallocate(*f, 0, 0, uint64_t{1} << 50).error(), kENOSPC);
  EXPECT_EQ(vfs::Fallocate(*f, 0, 0, uint64_t{2} << 30).error(), kENOSPC);
  mf_->SetLimit(0);
  EXPECT_EQ(mf_->AllocatedBytes(), before);
  EXPECT_EQ(f->Stat()->st_size, 0);
}

// A pending interrupt (a signal, a kill) stops a long fallocate with EINTR,
// and the pages it had added go back (shmem_fallocate's undo).
TEST_F(FallocateTest, InterruptedFallocateIsEintrAndTakesBackItsPages) {
  WriteFile("/f", "");
  auto f = Open("/f", O_RDWR).value();
  ASSERT_OK(vfs::Fallocate(*f, 0, 0, 4096));  // kept: not this call's
  const uint64_t before = mf_->AllocatedBytes();
  std::atomic<bool> pending{true};
  {
    platform::ScopedInterruptFlag interruptible(&pending);
    EXPECT_EQ(vfs::Fallocate(*f, 0, 0, 64 << 20).error(), kEINTR);
  }
  EXPECT_EQ(mf_->AllocatedBytes(), before);
  EXPECT_EQ(f->Stat()->st_size, 4096);
  EXPECT_EQ(f->Stat()->st_blocks, 8);
  pending = false;
  platform::ScopedInterruptFlag quiet(&pending);
  ASSERT_OK(vfs::Fallocate(*f, 0, 0, 64 << 20));
  EXPECT_EQ(f->Stat()->st_size, 64 << 20);
}

TEST_F(FallocateTest, AllocateKeepSizeAndPunch) {
  WriteFile("/f", "");
  auto f = Open("/f", O_RDWR).value();
  ASSERT_OK(vfs::Fallocate(*f, 0, 100, 2 * 4096));
  EXPECT_EQ(f->Stat()->st_size, 100 + 2 * 4096);
  EXPECT_EQ(f->Stat()->st_blocks, 3 * 8);
  ASSERT_OK(vfs::Fallocate(*f, FALLOC_FL_KEEP_SIZE, 0, 5 * 4096));
  EXPECT_EQ(f->Stat()->st_size, 100 + 2 * 4096);
  EXPECT_EQ(f->Stat()->st_blocks, 5 * 8);
  // Punch [10, 3*4096+10): page 0 and 3 partly zeroed, pages 1, 2 freed.
  vfs::IoContext ctx;
  std::string data(3 * 4096 + 100, 'd');
  ASSERT_OK(
      f->PWrite(ctx,
                absl::Span<const uint8_t>(
                    reinterpret_cast<const uint8_t*>(data.data()), data.size()),
                0));
  ASSERT_OK(vfs::Fallocate(*f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 10,
                           3 * 4096));
  EXPECT_EQ(f->Stat()->st_blocks, 3 * 8);  // pages 0, 3, 4 remain
  std::string got(3 * 4096 + 20, 'x');
  ASSERT_OK(f->PRead(
      ctx, absl::MakeSpan(reinterpret_cast<uint8_t*>(got.data()), got.size()),
      0));
  EXPECT_EQ(got.substr(0, 10), std::string(10, 'd'));
  EXPECT_EQ(got.substr(10, 3 * 4096), std::string(3 * 4096, '\0'));
  EXPECT_EQ(got.substr(3 * 4096 + 10, 10), std::string(10, 'd'));
  EXPECT_EQ(f->Seek(0, SEEK_HOLE).value(), 4096);
}

TEST_F(FallocateTest, Errors) {
  WriteFile("/f", "");
  auto f = Open("/f", O_RDWR).value();
  auto ro = Open("/f", O_RDONLY).value();
  EXPECT_ERRNO(vfs::Fallocate(*f, 0, -1, 1), kEINVAL);
  EXPECT_ERRNO(vfs::Fallocate(*f, 0, 0, 0), kEINVAL);
  EXPECT_ERRNO(vfs::Fallocate(*ro, 0, 0, 1), kEBADF);
  EXPECT_ERRNO(vfs::Fallocate(*f, FALLOC_FL_PUNCH_HOLE, 0, 1), kEOPNOTSUPP);
  EXPECT_ERRNO(vfs::Fallocate(*f, FALLOC_FL_ZERO_RANGE, 0, 1), kEOPNOTSUPP);
  EXPECT_ERRNO(vfs::Fallocate(*f, 0x1000, 0, 1), kEOPNOTSUPP);
  EXPECT_ERRNO(vfs::Fallocate(*f, 0, INT64_MAX, 2), kEFBIG);
  ASSERT_OK(Mkdir("/d"));
  auto d = Open("/d", O_RDONLY).value();
  EXPECT_ERRNO(vfs::Fallocate(*d, 0, 0, 1), kEBADF);  // not writable first
}

// Linux's i_writecount: writers and deny-write holders (execve) exclude
// each other with ETXTBSY; path truncate counts as a writer.
TEST_F(RegularFileTest, DenyWriteAccessAndWritersExcludeEachOther) {
  WriteFile("/exe", "code", 0755);
  auto w = Open("/exe", O_WRONLY);
  ASSERT_OK(w);
  vfs::Inode& inode = (*w)->inode();
  EXPECT_EQ(inode.write_count(), 1);
  EXPECT_ERRNO(inode.DenyWriteAccess(), kETXTBSY);
  w->reset();  // the last close releases the writer
  EXPECT_EQ(inode.write_count(), 0);
  ASSERT_OK(inode.DenyWriteAccess());  // "running"
  EXPECT_ERRNO(Open("/exe", O_WRONLY), kETXTBSY);
  EXPECT_ERRNO(Open("/exe", O_RDWR | O_TRUNC), kETXTBSY);
  EXPECT_ERRNO(vfs::TruncateAt(Base(), "/exe", 0), kETXTBSY);
  EXPECT_EQ(ReadAll(*Open("/exe", O_RDONLY).value()), "code");  // untouched
  ASSERT_OK(inode.DenyWriteAccess());  // a second runner
  inode.AllowWriteAccess();
  EXPECT_ERRNO(Open("/exe", O_WRONLY), kETXTBSY);
  inode.AllowWriteAccess();
  EXPECT_EQ(inode.write_count(), 0);
  ASSERT_OK(vfs::TruncateAt(Base(), "/exe", 1));
  auto w2 = Open("/exe", O_WRONLY);
  ASSERT_OK(w2);
  // A refused open (EISDIR, EACCES...) leaves no writer behind.
  EXPECT_EQ(inode.write_count(), 1);
  w2->reset();
  EXPECT_EQ(inode.write_count(), 0);
  ASSERT_OK(vfs::ChmodAt(Base(), "/exe", 0444, 0));
  EXPECT_ERRNO(OpenAs(user_, "/exe", O_WRONLY), kEACCES);
  EXPECT_EQ(inode.write_count(), 0);
}

}  // namespace
}  // namespace sandbox::fs::tmpfs
