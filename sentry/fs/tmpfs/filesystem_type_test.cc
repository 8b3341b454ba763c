// The "tmpfs" type: mount(2)'s options (shmem_parse_one) and what
// mountinfo shows of them (shmem_show_options); a new instance through the
// vfs::FilesystemType interface, as mount(2) makes it.
#include "sentry/fs/tmpfs/filesystem_type.h"

#include <memory>

#include "gtest/gtest.h"
#include "platform/memory_file.h"

namespace sandbox::fs::tmpfs {
namespace {

class TmpfsTypeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto mf = platform::MemoryFile::Create(uint64_t{64} << 20);
    ASSERT_TRUE(mf.ok()) << mf.status();
    mf_ = std::move(*mf);
  }
  std::unique_ptr<platform::MemoryFile> mf_;
};

TEST_F(TmpfsTypeTest, ParsesAndShowsOptions) {
  KResult<MountOptions> o =
      ParseMountOptions("size=1m,mode=755,uid=5,gid=6,nr_inodes=10", *mf_);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->opts.max_bytes, uint64_t{1} << 20);
  EXPECT_EQ(o->opts.max_inodes, 10u);
  EXPECT_EQ(o->opts.root_mode, 0755u);
  EXPECT_EQ(o->opts.root_uid, 5u);
  EXPECT_EQ(o->opts.root_gid, 6u);
  EXPECT_FALSE(o->read_only);
  EXPECT_EQ(o->shown, "size=1024k,nr_inodes=10,mode=755,uid=5,gid=6");
  // Rounded up to pages; the generic flags by key.
  o = ParseMountOptions("size=4097,ro", *mf_);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->opts.max_bytes, 8192u);
  EXPECT_TRUE(o->read_only);
  EXPECT_EQ(ParseMountOptions("", *mf_)->shown, "");
}

TEST_F(TmpfsTypeTest, RejectsBadOptions) {
  for (const char* bad : {"size", "size=", "size=1q", "mode=8", "uid=-1",
                          "uid=4294967295", "bogus=1", "bogus", "ro=1x"}) {
    KResult<MountOptions> o = ParseMountOptions(bad, *mf_);
    ASSERT_FALSE(o.ok()) << bad;
    EXPECT_EQ(o.error(), kEINVAL) << bad;
  }
}

TEST_F(TmpfsTypeTest, MakesAnInstance) {
  std::unique_ptr<vfs::FilesystemType> t = NewFilesystemType();
  EXPECT_EQ(t->name(), "tmpfs");
  EXPECT_TRUE(t->user_mountable());
  KResult<vfs::NewFilesystem> n =
      t->GetFilesystem({.memory_file = *mf_}, "none", "mode=700,ro");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->fs->type_name(), "tmpfs");
  EXPECT_EQ(n->shown_options, "mode=700");
  EXPECT_TRUE(n->read_only);
  EXPECT_EQ(n->fs->root()->inode().Stat().st_mode & 07777, 0700u);
  EXPECT_EQ(t->GetFilesystem({.memory_file = *mf_}, "", "x=1").error(),
            kEINVAL);
  EXPECT_EQ(t->Reconfigure({.memory_file = *mf_}, *n->fs, "rw").value(), false);
}

}  // namespace
}  // namespace sandbox::fs::tmpfs
