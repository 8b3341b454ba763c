// The dentry cache over tmpfs: looked-up dentries stay for later walks;
// unlinked ones go at once (with their inode, as d_delete); renamed ones
// move; the LRU is bounded with a second chance for referenced entries;
// a file system's teardown releases everything it cached.
#include <fcntl.h>

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/testing.h"
#include "sentry/vfs/dentry.h"
#include "sentry/vfs/path_walk.h"

namespace sandbox::fs::tmpfs {
namespace {

class DentryCacheTest : public TmpfsTest {
 protected:
  std::weak_ptr<vfs::Dentry> Walk(std::string_view path) {
    auto vd = vfs::Resolve(Base(), path, {});
    EXPECT_TRUE(vd.ok()) << path;
    return vd.ok() ? std::weak_ptr<vfs::Dentry>(vd->dentry)
                   : std::weak_ptr<vfs::Dentry>();
  }
};

TEST_F(DentryCacheTest, LookedUpDentriesStay) {
  ASSERT_OK(Mkdir("/d"));
  WriteFile("/d/f", "x");
  std::weak_ptr<vfs::Dentry> f = Walk("/d/f");
  std::weak_ptr<vfs::Dentry> d = Walk("/d");
  // Nothing but the cache holds them now.
  EXPECT_FALSE(f.expired());
  EXPECT_FALSE(d.expired());
  EXPECT_EQ(Walk("/d/f").lock(), f.lock());  // the same dentry, no new one
  EXPECT_GE(fs_->dentry_cache()->size(), 2u);
}

TEST_F(DentryCacheTest, UnlinkDropsTheDentryAndTheInode) {
  WriteFile("/f", std::string(3 * 4096, 'x'));
  std::weak_ptr<vfs::Dentry> f = Walk("/f");
  std::weak_ptr<vfs::Inode> inode = f.lock()->inode_ref();
  const uint64_t before = mf_->AllocatedBytes();
  ASSERT_OK(vfs::UnlinkAt(Base(), "/f", 0));
  EXPECT_TRUE(f.expired());
  EXPECT_TRUE(inode.expired());
  EXPECT_EQ(mf_->AllocatedBytes(), before - 3 * 4096);  // pages freed now
  EXPECT_EQ(StatErr("/f"), kENOENT);
  // A new file under the same name is a new dentry.
  WriteFile("/f", "y");
  EXPECT_FALSE(Walk("/f").expired());
}

TEST_F(DentryCacheTest, UnlinkedButOpenStaysDeadAndUnreachable) {
  WriteFile("/f", "data");
  auto file = Open("/f", O_RDONLY);
  ASSERT_OK(file);
  ASSERT_OK(vfs::UnlinkAt(Base(), "/f", 0));
  EXPECT_TRUE((*file)->vd().dentry->IsDead());
  EXPECT_EQ(StatErr("/f"), kENOENT);
  EXPECT_EQ(ReadAll(**file), "data");
}

TEST_F(DentryCacheTest, RenameMovesTheCachedDentry) {
  ASSERT_OK(Mkdir("/a"));
  ASSERT_OK(Mkdir("/b"));
  WriteFile("/a/f", "x");
  WriteFile("/b/g", "old");
  std::weak_ptr<vfs::Dentry> f = Walk("/a/f");
  std::weak_ptr<vfs::Dentry> g = Walk("/b/g");
  std::weak_ptr<vfs::Inode> g_inode = g.lock()->inode_ref();
  ASSERT_OK(vfs::RenameAt(Base(), "/a/f", Base(), "/b/g", 0));
  EXPECT_EQ(StatErr("/a/f"), kENOENT);
  EXPECT_EQ(Walk("/b/g").lock(), f.lock());
  // The replaced target is dead and gone, inode and all.
  EXPECT_TRUE(g.expired());
  EXPECT_TRUE(g_inode.expired());
}

TEST_F(DentryCacheTest, BoundedWithASecondChance) {
  vfs::DentryCache cache(2);
  std::vector<std::shared_ptr<vfs::Dentry>> d;
  for (int i = 0; i < 4; ++i) {
    auto inode = fs_->NewInode({.mode = S_IFREG | 0644}, "");
    ASSERT_OK(inode);
    d.push_back(vfs::Dentry::NewRoot(*inode));
  }
  std::vector<std::weak_ptr<vfs::Dentry>> w(d.begin(), d.end());
  cache.Touch(d[0]);
  cache.Touch(d[1]);
  cache.Touch(d[0]);  // referenced: survives the next eviction once
  cache.Touch(d[2]);
  d.clear();
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_FALSE(w[0].expired());
  EXPECT_TRUE(w[1].expired());
  EXPECT_FALSE(w[2].expired());
  cache.Remove(*w[0].lock());
  EXPECT_TRUE(w[0].expired());
  EXPECT_EQ(cache.size(), 1u);
  cache.Clear();
  EXPECT_TRUE(w[2].expired());
  EXPECT_EQ(cache.size(), 0u);
}

TEST_F(DentryCacheTest, TheTmpfsCacheIsBounded) {
  ASSERT_OK(Mkdir("/d"));
  const size_t cap = fs_->dentry_cache()->capacity();
  for (size_t i = 0; i < cap + 50; ++i) {
    WriteFile("/d/" + std::to_string(i), "");
    Walk("/d/" + std::to_string(i));
  }
  EXPECT_EQ(fs_->dentry_cache()->size(), cap);
}

TEST_F(DentryCacheTest, TeardownReleasesCachedFiles) {
  auto mf = platform::MemoryFile::Create(uint64_t{16} << 20);
  ASSERT_TRUE(mf.ok());
  {
    auto fs = Filesystem::Create(**mf, Options{});
    auto ns = vfs::MountNamespace::Create(fs, 0);
    vfs::VirtualDentry root = ns->Root();
    vfs::ResolveBase base{root_, root, root};
    auto f = vfs::OpenAt(base, "/f", O_CREAT | O_RDWR, 0644, 0);
    ASSERT_OK(f);
    vfs::IoContext ctx;
    std::string data(8192, 'q');
    ASSERT_OK((*f)->Write(
        ctx, absl::Span<const uint8_t>(
                 reinterpret_cast<const uint8_t*>(data.data()), data.size())));
    ASSERT_OK(vfs::Resolve(base, "/f", {}));
    EXPECT_GT((*mf)->AllocatedBytes(), 0u);
  }
  EXPECT_EQ((*mf)->AllocatedBytes(), 0u);
}

}  // namespace
}  // namespace sandbox::fs::tmpfs
