#include "sentry/fs/devpts/devpts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/fs/kernfs/kernfs.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/operations.h"
#include "sentry/vfs/path_walk.h"

namespace sandbox::fs::devpts {
namespace {

KResult<Options> ParseAll(
    std::vector<std::pair<std::string, std::optional<std::string>>> kvs) {
  Options o;
  for (const auto& [k, v] : kvs) {
    std::optional<std::string_view> value;
    if (v.has_value()) value = *v;
    TRY_VOID(o.Parse(k, value));
  }
  return o;
}

TEST(DevptsOptionsTest, DefaultsAndShow) {
  Options o;
  EXPECT_EQ(o.Show(), "mode=600,ptmxmode=000");
  ASSERT_TRUE(o.Parse("newinstance", std::nullopt).ok());
  ASSERT_TRUE(o.Parse("gid", "5").ok());
  ASSERT_TRUE(o.Parse("mode", "620").ok());
  ASSERT_TRUE(o.Parse("ptmxmode", "0666").ok());
  EXPECT_EQ(o.Show(), "gid=5,mode=620,ptmxmode=666");
  ASSERT_TRUE(o.Parse("uid", "1000").ok());
  ASSERT_TRUE(o.Parse("max", "1024").ok());
  EXPECT_EQ(o.Show(), "uid=1000,gid=5,mode=620,ptmxmode=666,max=1024");
}

// kstrtouint: base 0 for uid/gid/max (hex, octal), 8 for the modes; the
// modes keep S_IALLUGO.
TEST(DevptsOptionsTest, NumberBases) {
  Options o;
  ASSERT_TRUE(o.Parse("gid", "0x10").ok());
  EXPECT_EQ(o.gid, 16u);
  ASSERT_TRUE(o.Parse("uid", "010").ok());
  EXPECT_EQ(o.uid, 8u);
  ASSERT_TRUE(o.Parse("mode", "+17777").ok());
  EXPECT_EQ(o.mode, 07777u);
  ASSERT_TRUE(o.Parse("max", std::string_view("7\n")).ok());
  EXPECT_EQ(o.max, 7u);
}

TEST(DevptsOptionsTest, BadOptionsAreEinval) {
  const std::vector<std::pair<std::string, std::optional<std::string>>> bad = {
      {"bogus", std::nullopt}, {"bogus", "1"},
      {"mode", std::nullopt},  {"mode", ""},
      {"mode", "8"},           {"mode", "0x1"},
      {"ptmxmode", "-1"},      {"uid", "abc"},
      {"uid", "4294967295"},   {"gid", "4294967296"},
      {"max", "1048577"},      {"newinstance", "1"},
      {"newinstance", ""}};
  for (const auto& kv : bad) {
    EXPECT_EQ(ParseAll({kv}).error(), kEINVAL)
        << kv.first << "=" << kv.second.value_or("(none)");
  }
  EXPECT_TRUE(ParseAll({{"max", "1048576"}}).ok());
}

class DevptsTest : public ::testing::Test {
 protected:
  void Mount(const Options& o) {
    ns_ = vfs::MountNamespace::Create(NewDevptsFilesystem(o), 0);
    base_ = std::make_unique<vfs::ResolveBase>(
        vfs::ResolveBase{creds_, ns_->Root(), ns_->Root()});
  }
  std::shared_ptr<vfs::MountNamespace> ns_;
  kernel::Credentials creds_ = kernel::Credentials::Root();
  std::unique_ptr<vfs::ResolveBase> base_;
};

TEST_F(DevptsTest, RootHoldsPtmx) {
  Mount(Options{});
  abi::Stat root = vfs::StatAt(*base_, "/", 0).value();
  EXPECT_EQ(root.st_mode, S_IFDIR | 0755u);
  EXPECT_EQ(root.st_ino, 1u);
  EXPECT_EQ(root.st_uid, 0u);
  EXPECT_EQ(root.st_gid, 0u);
  abi::Stat ptmx = vfs::StatAt(*base_, "/ptmx", 0).value();
  EXPECT_EQ(ptmx.st_mode, S_IFCHR | 0000u);
  EXPECT_EQ(ptmx.st_ino, 2u);
  EXPECT_EQ(major(ptmx.st_rdev), 5u);
  EXPECT_EQ(minor(ptmx.st_rdev), 2u);
  EXPECT_EQ(ptmx.st_dev, root.st_dev);
  EXPECT_EQ(vfs::StatAt(*base_, "/0", 0).error(), kENOENT);
  EXPECT_EQ(vfs::MkdirAt(*base_, "/d", 0755, 0).error(), kEPERM);
}

TEST_F(DevptsTest, PtmxModeAndNoTerminalsYet) {
  Options o;
  ASSERT_TRUE(o.Parse("ptmxmode", "666").ok());
  Mount(o);
  EXPECT_EQ(vfs::StatAt(*base_, "/ptmx", 0).value().st_mode, S_IFCHR | 0666u);
  EXPECT_EQ(vfs::OpenAt(*base_, "/ptmx", O_RDWR, 0, 0).error(), kENXIO);
}

TEST_F(DevptsTest, InstancesAreIndependent) {
  Mount(Options{});
  uint64_t dev1 = vfs::StatAt(*base_, "/ptmx", 0).value().st_dev;
  auto ns1 = ns_;
  Mount(Options{});
  EXPECT_NE(vfs::StatAt(*base_, "/ptmx", 0).value().st_dev, dev1);
}

// runsc's default: devpts on /dev/pts when the tree has that directory.
TEST(DevptsMountDefaultTest, MountsOnDevPtsOnly) {
  auto fs = std::make_shared<kernfs::Filesystem>("test", 1);
  auto root = std::make_shared<kernfs::Dir>(*fs, 0755);
  auto dev = std::make_shared<kernfs::Dir>(*fs, 0755);
  dev->Add("pts", std::make_shared<kernfs::Dir>(*fs, 0755));
  root->Add("dev", dev);
  fs->SetRoot(root);
  auto ns = vfs::MountNamespace::Create(fs, 0);
  ASSERT_TRUE(MountDefault(*ns).ok());
  kernel::Credentials creds = kernel::Credentials::Root();
  vfs::ResolveBase base{creds, ns->Root(), ns->Root()};
  abi::Stat ptmx = vfs::StatAt(base, "/dev/pts/ptmx", 0).value();
  EXPECT_EQ(ptmx.st_mode, S_IFCHR | 0666u);
  vfs::VirtualDentry pts =
      vfs::Resolve(base, "/dev/pts", vfs::ResolveOptions{}).value();
  EXPECT_EQ(pts.mount->fs().type_name(), "devpts");
  EXPECT_EQ(pts.mount->source(), "devpts");
  EXPECT_EQ(pts.mount->fs_options(), "gid=5,mode=620,ptmxmode=666");
  EXPECT_EQ(pts.mount->flags(), vfs::kMountNoSuid | vfs::kMountNoExec);

  auto bare = std::make_shared<kernfs::Filesystem>("test", 1);
  bare->SetRoot(std::make_shared<kernfs::Dir>(*bare, 0755));
  auto ns2 = vfs::MountNamespace::Create(bare, 0);
  EXPECT_TRUE(MountDefault(*ns2).ok());  // no /dev/pts: nothing
}

}  // namespace
}  // namespace sandbox::fs::devpts
