// vfs::Resolve's fast walk (path_walk.cc: one tree_mu hold per file
// system, no PathWalker) against the PathWalker alone, over a tree with
// mounts (stacked too), symlinks, a non-directory, a directory only root
// may search, a removed cwd, and every option Resolve takes: for each path,
// start, credentials and options both must give the same location or the
// same errno. Also: chmod/chown reach the lock-free permission attributes
// (Inode::Perm) at once.
#include <fcntl.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/testing.h"
#include "sentry/vfs/path_walk.h"
#include "sentry/vfs/permissions.h"

namespace sandbox::fs::tmpfs {
namespace {

using vfs::ResolveOptions;

// The PathWalker alone: what Resolve did before it had a fast path.
KResult<vfs::VirtualDentry> SlowResolve(const vfs::ResolveBase& base,
                                        std::string_view path,
                                        const ResolveOptions& opts) {
  vfs::PathWalker w(base, opts.resolve);
  TRY_VOID(w.Start(path, opts.allow_empty));
  TRY_VOID(w.WalkParent());
  return w.ResolveLast(opts.follow_final, opts.must_be_dir);
}

std::string Describe(const KResult<vfs::VirtualDentry>& r) {
  if (!r.ok()) return std::string(r.error().name());
  const vfs::VirtualDentry& vd = r.value();
  return "mount " + std::to_string(vd.mount->id()) + " ino " +
         std::to_string(vd.dentry->inode().ino()) + " dev " +
         std::to_string(vd.dentry->fs().dev());
}

class FastWalkTest : public TmpfsTest {
 protected:
  void SetUp() override {
    TmpfsTest::SetUp();
    ASSERT_OK(Mkdir("/a"));
    ASSERT_OK(Mkdir("/a/b"));
    ASSERT_OK(Mkdir("/a/b/c"));
    WriteFile("/a/b/f", "x");
    WriteFile("/a/file", "y");
    ASSERT_OK(Symlink("b", "/a/lb"));
    ASSERT_OK(Symlink("/a/b/f", "/a/lf"));
    ASSERT_OK(Symlink("missing", "/a/dangling"));
    ASSERT_OK(Symlink("/", "/a/lroot"));
    ASSERT_OK(Mkdir("/private", 0700));
    WriteFile("/private/secret", "z");
    ASSERT_OK(Mkdir("/open", 0711));
    WriteFile("/open/f", "w");
    // A mount, and two stacked on one point.
    ASSERT_OK(Mkdir("/mnt"));
    ASSERT_OK(ns_->MountAt(vfs::Resolve(Base(), "/mnt", {}).value(),
                           Filesystem::Create(*mf_), 0));
    ASSERT_OK(Mkdir("/mnt/d"));
    WriteFile("/mnt/d/g", "v");
    ASSERT_OK(Symlink("../a", "/mnt/up"));
    ASSERT_OK(Mkdir("/stack"));
    ASSERT_OK(ns_->MountAt(vfs::Resolve(Base(), "/stack", {}).value(),
                           Filesystem::Create(*mf_), 0));
    ASSERT_OK(ns_->MountAt(vfs::Resolve(Base(), "/stack", {}).value(),
                           Filesystem::Create(*mf_), 0));
    ASSERT_OK(Mkdir("/stack/top"));
    // A directory that is removed while it is a cwd.
    ASSERT_OK(Mkdir("/gone"));
  }

  // Checks every path from `start` as `creds` with every option set.
  void CheckAll(const kernel::Credentials& creds,
                const vfs::VirtualDentry& start) {
    const std::vector<std::string> paths = {"/",
                                            "//",
                                            "/a",
                                            "a",
                                            "/a/b",
                                            "a/b/c",
                                            "/a/b/f",
                                            "/a//b///f",
                                            "/a/b/f/x",
                                            "/a/b/missing",
                                            "/missing/x",
                                            "/a/lb",
                                            "/a/lb/f",
                                            "/a/lf",
                                            "/a/dangling",
                                            "/a/lroot",
                                            "/a/lroot/a/b",
                                            "/a/b/",
                                            "/a/b/f/",
                                            "/a/./b",
                                            "/a/b/..",
                                            "/a/b/../file",
                                            "/private",
                                            "/private/secret",
                                            "/open/f",
                                            "/open",
                                            "/mnt",
                                            "/mnt/d/g",
                                            "/mnt/up/b/f",
                                            "/mnt/..",
                                            "/stack",
                                            "/stack/top",
                                            "/a/file/",
                                            "b",
                                            "b/f",
                                            "f",
                                            "g",
                                            ".",
                                            "..",
                                            "d/g",
                                            "x",
                                            "lb/f",
                                            std::string(300, 'n'),
                                            "/a/" + std::string(256, 'n')};
    for (const std::string& path : paths) {
      for (int follow = 0; follow < 2; ++follow) {
        for (int dir = 0; dir < 2; ++dir) {
          ResolveOptions opts;
          opts.follow_final = follow;
          opts.must_be_dir = dir;
          vfs::ResolveBase base{creds, root_vd_, start};
          auto fast = vfs::Resolve(base, path, opts);
          auto slow = SlowResolve(base, path, opts);
          EXPECT_EQ(Describe(fast), Describe(slow))
              << "path " << path << " follow " << follow << " dir " << dir
              << " uid " << creds.fsuid;
          if (fast.ok() && slow.ok()) {
            EXPECT_TRUE(fast.value() == slow.value()) << path;
          }
        }
      }
    }
  }
};

TEST_F(FastWalkTest, SameAsPathWalkerFromRoot) {
  CheckAll(root_, root_vd_);
  CheckAll(user_, root_vd_);
}

TEST_F(FastWalkTest, SameAsPathWalkerFromDirectories) {
  for (const char* dir : {"/a", "/a/b", "/mnt", "/mnt/d", "/private"}) {
    SCOPED_TRACE(dir);
    auto start = vfs::Resolve(Base(), dir, {});
    ASSERT_OK(start);
    CheckAll(root_, *start);
    CheckAll(user_, *start);
  }
}

TEST_F(FastWalkTest, SameAsPathWalkerFromFileAndRemovedDirectory) {
  auto file = vfs::Resolve(Base(), "/a/file", {});
  ASSERT_OK(file);
  CheckAll(root_, *file);  // relative paths: ENOTDIR
  auto gone = vfs::Resolve(Base(), "/gone", {});
  ASSERT_OK(gone);
  ASSERT_OK(vfs::UnlinkAt(Base(), "/gone", AT_REMOVEDIR));
  CheckAll(root_, *gone);  // relative paths: ENOENT
}

TEST_F(FastWalkTest, ResolveFlagsAndEmptyPathGoToThePathWalker) {
  ResolveOptions opts;
  opts.resolve = vfs::kResolveBeneath;
  auto a = vfs::Resolve(Base(), "/a", {}).value();
  vfs::ResolveBase base{root_, root_vd_, a};
  EXPECT_ERRNO(vfs::Resolve(base, "/a/b", opts), kEXDEV);
  EXPECT_OK(vfs::Resolve(base, "b/f", opts));
  opts.resolve = vfs::kResolveNoXdev;
  EXPECT_ERRNO(vfs::Resolve(Base(), "/mnt/d", opts), kEXDEV);
  opts = {};
  EXPECT_ERRNO(vfs::Resolve(Base(), "", opts), kENOENT);
  opts.allow_empty = true;
  EXPECT_TRUE(vfs::Resolve(base, "", opts).value() == a);
}

// The fast walk reads mode/uid/gid without the inode's lock: a chmod or
// chown is seen by the next walk.
TEST_F(FastWalkTest, PermissionChangesAreSeenAtOnce) {
  EXPECT_ERRNO(vfs::StatAt(Base(user_), "/private/secret", 0), kEACCES);
  ASSERT_OK(vfs::ChmodAt(Base(), "/private", 0711, 0));
  EXPECT_OK(vfs::StatAt(Base(user_), "/private/secret", 0));
  ASSERT_OK(vfs::ChmodAt(Base(), "/private", 0700, 0));
  EXPECT_ERRNO(vfs::StatAt(Base(user_), "/private/secret", 0), kEACCES);
  ASSERT_OK(vfs::ChownAt(Base(), "/private", 1000, 1000, 0));
  EXPECT_OK(vfs::StatAt(Base(user_), "/private/secret", 0));
  auto p = vfs::Resolve(Base(), "/private", {}).value();
  vfs::Inode::PermAttrs perm = p.dentry->inode().Perm();
  vfs::InodeAttrs attrs = p.dentry->inode().Attrs();
  EXPECT_EQ(perm.mode, attrs.mode);
  EXPECT_EQ(perm.uid, attrs.uid);
  EXPECT_EQ(perm.gid, attrs.gid);
  EXPECT_EQ(perm.mode, S_IFDIR | 0700u);
  EXPECT_EQ(perm.uid, 1000u);
}

}  // namespace
}  // namespace sandbox::fs::tmpfs
