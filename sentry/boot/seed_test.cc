// ApplySeed: the root file system runsc do describes, over a real memory
// file and host temporary files.
#include "sentry/boot/seed.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/operations.h"

namespace sandbox::boot {
namespace {

class SeedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto mf = platform::MemoryFile::Create(uint64_t{64} << 20);
    ASSERT_TRUE(mf.ok());
    mf_ = std::move(mf).value();
    ns_ = vfs::MountNamespace::Create(
        fs::tmpfs::Filesystem::Create(*mf_, {.root_mode = 0755}), 0);
  }
  void TearDown() override { ns_.reset(); }

  vfs::ResolveBase Base() { return {root_, ns_->Root(), ns_->Root()}; }
  KResult<abi::Stat> Stat(const std::string& p) {
    return vfs::StatAt(Base(), p, AT_SYMLINK_NOFOLLOW);
  }

  // A host temporary file holding `data`; the FD stays open.
  int HostFile(const std::string& data) {
    char name[] = "/tmp/seed_test_XXXXXX";
    int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    unlink(name);
    EXPECT_EQ(write(fd, data.data(), data.size()),
              static_cast<ssize_t>(data.size()));
    return fd;
  }

  std::unique_ptr<platform::MemoryFile> mf_;
  std::shared_ptr<vfs::MountNamespace> ns_;
  kernel::Credentials root_ = kernel::Credentials::Root();
};

TEST_F(SeedTest, MountsDirectoriesAndFiles) {
  int fd = HostFile("program bytes");
  std::vector<SeedEntry> seed = {
      {SeedEntry::kTmpfsMount, "/tmp", 01777, 0, 0, -1},
      {SeedEntry::kDir, "/tmp/work/dir", 0700, 12, 34, -1},
      {SeedEntry::kFile, "/usr/bin/prog", 04755, 5, 6, fd},
  };
  std::string why;
  ASSERT_TRUE(ApplySeed(*ns_, *mf_, seed, &why).ok()) << why;
  close(fd);
  auto st = Stat("/tmp");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->st_mode & 07777, 01777u);
  auto root = Stat("/");
  ASSERT_TRUE(root.ok());
  EXPECT_NE(st->st_dev, root->st_dev);  // its own tmpfs
  st = Stat("/tmp/work/dir");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->st_mode & 07777, 0700u);
  EXPECT_EQ(st->st_uid, 12u);
  EXPECT_EQ(st->st_gid, 34u);
  EXPECT_EQ(Stat("/tmp/work")->st_mode & 07777, 0755u);
  st = Stat("/usr/bin/prog");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->st_mode & 07777, 04755u);
  EXPECT_EQ(st->st_uid, 5u);
  EXPECT_EQ(st->st_size, 13);
  auto f = vfs::OpenAt(Base(), "/usr/bin/prog", O_RDONLY, 0, 0);
  ASSERT_TRUE(f.ok());
  vfs::IoContext ctx;
  char buf[32] = {};
  EXPECT_EQ((*f)->Read(ctx, absl::MakeSpan(reinterpret_cast<uint8_t*>(buf),
                                           sizeof(buf)))
                .value(),
            13u);
  EXPECT_EQ(std::string(buf), "program bytes");
}

TEST_F(SeedTest, ExistingDirectoryGetsModeAndOwner) {
  std::string why;
  ASSERT_TRUE(ApplySeed(*ns_, *mf_,
                        {{SeedEntry::kDir, "/a/b", 0755, 0, 0, -1},
                         {SeedEntry::kDir, "/a", 0711, 7, 7, -1}},
                        &why)
                  .ok())
      << why;
  EXPECT_EQ(Stat("/a")->st_mode & 07777, 0711u);
  EXPECT_EQ(Stat("/a")->st_uid, 7u);
}

TEST_F(SeedTest, Errors) {
  std::string why;
  EXPECT_EQ(
      ApplySeed(*ns_, *mf_, {{SeedEntry::kDir, "rel", 0755, 0, 0, -1}}, &why)
          .error(),
      kEINVAL);
  EXPECT_NE(why.find("rel"), std::string::npos);
  // A file's source must be a regular file.
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  EXPECT_EQ(
      ApplySeed(*ns_, *mf_, {{SeedEntry::kFile, "/f", 0644, 0, 0, p[0]}}, &why)
          .error(),
      kEINVAL);
  close(p[0]);
  close(p[1]);
  EXPECT_EQ(
      ApplySeed(*ns_, *mf_, {{SeedEntry::kFile, "/g", 0644, 0, 0, -1}}, &why)
          .error(),
      kEBADF);
  // A file in the way of a directory.
  int fd = HostFile("x");
  ASSERT_TRUE(
      ApplySeed(*ns_, *mf_, {{SeedEntry::kFile, "/x", 0644, 0, 0, fd}}, &why)
          .ok());
  close(fd);
  EXPECT_EQ(
      ApplySeed(*ns_, *mf_, {{SeedEntry::kDir, "/x/y", 0755, 0, 0, -1}}, &why)
          .error(),
      kENOTDIR);
}

}  // namespace
}  // namespace sandbox::boot
