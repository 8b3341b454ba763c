// Path resolution (vfs/path_walk.h) over tmpfs: every errno Linux's namei
// gives, symlinks, "..", mounts, openat2 RESOLVE_* flags, DAC search checks.
#include "sentry/vfs/path_walk.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <string>

#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/testing.h"
#include "sentry/vfs/at_start.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/fs_context.h"

namespace sandbox::fs::tmpfs {
namespace {

using vfs::ResolveOptions;

class PathWalkTest : public TmpfsTest {
 protected:
  KResult<vfs::VirtualDentry> Resolve(std::string_view path,
                                      ResolveOptions opts = {}) {
    return vfs::Resolve(Base(), path, opts);
  }
  uint64_t Ino(std::string_view path, int flags = 0) {
    auto st = vfs::StatAt(Base(), path, flags);
    EXPECT_TRUE(st.ok()) << path;
    return st.ok() ? st->st_ino : 0;
  }
};

TEST_F(PathWalkTest, EmptyPath) {
  EXPECT_ERRNO(Resolve(""), kENOENT);
  ResolveOptions opts;
  opts.allow_empty = true;
  ASSERT_OK(Resolve("", opts));
  EXPECT_EQ(Resolve("", opts)->dentry, root_vd_.dentry);
}

TEST_F(PathWalkTest, NameTooLong) {
  std::string name255(255, 'a');
  std::string name256(256, 'a');
  ASSERT_OK(Mkdir("/" + name255));
  EXPECT_ERRNO(Mkdir("/" + name256), kENAMETOOLONG);
  EXPECT_ERRNO(Resolve("/" + name256 + "/x"), kENAMETOOLONG);
  EXPECT_ERRNO(Open("/" + name256, O_CREAT | O_RDWR), kENAMETOOLONG);
  // A path of PATH_MAX bytes (no room for the NUL) is too long; one less is
  // walked (and here fails on its first missing component instead).
  std::string long_path(vfs::kPathMax, '/');
  EXPECT_ERRNO(Resolve(long_path), kENAMETOOLONG);
  long_path.pop_back();
  EXPECT_OK(Resolve(long_path));
}

TEST_F(PathWalkTest, NotDir) {
  WriteFile("/f", "x");
  EXPECT_ERRNO(Resolve("/f/x"), kENOTDIR);
  EXPECT_ERRNO(Resolve("/f/"), kENOTDIR);
  EXPECT_ERRNO(Resolve("/f/."), kENOTDIR);
  EXPECT_ERRNO(Resolve("/f/.."), kENOTDIR);
  ResolveOptions dir;
  dir.must_be_dir = true;
  EXPECT_ERRNO(Resolve("/f", dir), kENOTDIR);
  EXPECT_ERRNO(Open("/f", O_RDONLY | O_DIRECTORY), kENOTDIR);
  // A relative path from a non-directory start.
  cwd_ = Resolve("/f").value();
  EXPECT_ERRNO(Resolve("x"), kENOTDIR);
  EXPECT_OK(Resolve("/f"));  // absolute paths ignore the start
  ResolveOptions empty;
  empty.allow_empty = true;
  EXPECT_OK(Resolve("", empty));  // AT_EMPTY_PATH on a file is fine
}

TEST_F(PathWalkTest, MissingComponents) {
  ASSERT_OK(Mkdir("/d"));
  EXPECT_ERRNO(Resolve("/nope"), kENOENT);
  EXPECT_ERRNO(Resolve("/nope/x"), kENOENT);
  EXPECT_ERRNO(Resolve("/d/nope/"), kENOENT);
}

TEST_F(PathWalkTest, SlashesAndDots) {
  ASSERT_OK(Mkdir("/a"));
  ASSERT_OK(Mkdir("/a/b"));
  uint64_t b = Ino("/a/b");
  EXPECT_EQ(Ino("//a///b//"), b);
  EXPECT_EQ(Ino("/a/./b/."), b);
  EXPECT_EQ(Ino("/a/b/../b"), b);
  EXPECT_EQ(Ino("/.."), Ino("/"));
  EXPECT_EQ(Ino("/../../a/.."), Ino("/"));
  cwd_ = Resolve("/a").value();
  EXPECT_EQ(Ino("b"), b);
  EXPECT_EQ(Ino("."), Ino("/a"));
  EXPECT_EQ(Ino(".."), Ino("/"));
}

TEST_F(PathWalkTest, Symlinks) {
  ASSERT_OK(Mkdir("/d"));
  WriteFile("/d/f", "data");
  ASSERT_OK(Symlink("d", "/rel"));
  ASSERT_OK(Symlink("/d/f", "/abs"));
  ASSERT_OK(Symlink("../d/f", "/d/up"));
  ASSERT_OK(Symlink("nowhere", "/dangling"));
  ASSERT_OK(Symlink("f/", "/d/slash"));
  uint64_t f = Ino("/d/f");
  EXPECT_EQ(Ino("/rel/f"), f);
  EXPECT_EQ(Ino("/abs"), f);
  EXPECT_EQ(Ino("/d/up"), f);
  EXPECT_NE(Ino("/abs", AT_SYMLINK_NOFOLLOW), f);
  EXPECT_EQ(Ino("/rel/", AT_SYMLINK_NOFOLLOW), Ino("/d"));  // "/" follows
  EXPECT_ERRNO(Resolve("/dangling"), kENOENT);
  ResolveOptions nofollow;
  nofollow.follow_final = false;
  EXPECT_OK(Resolve("/dangling", nofollow));
  // A target ending in "/" must resolve to a directory.
  EXPECT_ERRNO(Resolve("/d/slash"), kENOTDIR);
}

TEST_F(PathWalkTest, SymlinkLimitIsForty) {
  ASSERT_OK(Mkdir("/t"));
  // /t/l0 -> /t, l1 -> l0, ..., l40 -> l39: resolving l(k) takes k+1 links.
  ASSERT_OK(Symlink("/t", "/t/l0"));
  for (int i = 1; i <= 40; ++i) {
    ASSERT_OK(Symlink("l" + std::to_string(i - 1), "/t/l" + std::to_string(i)));
  }
  EXPECT_OK(Resolve("/t/l39"));             // 40 links
  EXPECT_ERRNO(Resolve("/t/l40"), kELOOP);  // 41
  EXPECT_ERRNO(Resolve("/t/l40/l0"), kELOOP);
  ASSERT_OK(Symlink("self", "/t/self"));
  EXPECT_ERRNO(Resolve("/t/self"), kELOOP);
  ResolveOptions nofollow;
  nofollow.follow_final = false;
  EXPECT_OK(Resolve("/t/self", nofollow));
  EXPECT_ERRNO(Resolve("/t/self/x", nofollow), kELOOP);
}

TEST_F(PathWalkTest, OpenNoFollowAndPath) {
  WriteFile("/f", "x");
  ASSERT_OK(Symlink("f", "/l"));
  EXPECT_ERRNO(Open("/l", O_RDONLY | O_NOFOLLOW), kELOOP);
  EXPECT_OK(Open("/l", O_RDONLY));
  auto p = Open("/l", O_PATH | O_NOFOLLOW);
  ASSERT_OK(p);
  EXPECT_TRUE(S_ISLNK((*p)->Stat()->st_mode));
  vfs::IoContext ctx;
  uint8_t buf[4];
  EXPECT_ERRNO((*p)->Read(ctx, absl::MakeSpan(buf)), kEBADF);
  // A symlink in the middle is always followed.
  ASSERT_OK(Mkdir("/d"));
  ASSERT_OK(Symlink("d", "/ld"));
  EXPECT_OK(Open("/ld/.", O_RDONLY | O_NOFOLLOW));
}

TEST_F(PathWalkTest, ChrootRootStopsDotDotAndAbsoluteLinks) {
  ASSERT_OK(Mkdir("/jail"));
  ASSERT_OK(Mkdir("/jail/etc"));
  ASSERT_OK(Mkdir("/etc"));
  ASSERT_OK(Symlink("/etc", "/jail/link"));
  root_vd_ = Resolve("/jail").value();
  cwd_ = root_vd_;
  uint64_t jail_etc = Ino("/etc");
  EXPECT_EQ(Ino("/../etc"), jail_etc);
  EXPECT_EQ(Ino("../../etc"), jail_etc);
  EXPECT_EQ(Ino("/link"), jail_etc);
  EXPECT_EQ(vfs::GetCwd(root_vd_, cwd_).value(), "/");
}

TEST_F(PathWalkTest, SearchPermission) {
  ASSERT_OK(Mkdir("/private", 0700));
  WriteFile("/private/f", "x", 0644);
  auto base = Base(user_);
  EXPECT_ERRNO(vfs::StatAt(base, "/private/f", 0), kEACCES);
  EXPECT_ERRNO(vfs::StatAt(base, "/private/nope", 0), kEACCES);
  EXPECT_OK(vfs::StatAt(base, "/private", 0));  // the dir itself is visible
  kernel::Credentials rs = user_;
  rs.cap_effective = uint64_t{1} << kernel::kCapDacReadSearch;
  EXPECT_OK(vfs::StatAt(Base(rs), "/private/f", 0));
  EXPECT_OK(vfs::StatAt(Base(), "/private/f", 0));
  // "." and ".." need search permission on the directory too.
  EXPECT_ERRNO(vfs::StatAt(base, "/private/..", 0), kEACCES);
}

TEST_F(PathWalkTest, MountsAndDotDot) {
  ASSERT_OK(Mkdir("/mnt"));
  auto other = Filesystem::Create(*mf_);
  auto m = ns_->MountAt(Resolve("/mnt").value(), other, 0);
  ASSERT_OK(m);
  WriteFile("/mnt/inner", "x");
  auto st_root = vfs::StatAt(Base(), "/", 0);
  auto st_mnt = vfs::StatAt(Base(), "/mnt", 0);
  auto st_inner = vfs::StatAt(Base(), "/mnt/inner", 0);
  ASSERT_TRUE(st_root.ok() && st_mnt.ok() && st_inner.ok());
  EXPECT_NE(st_root->st_dev, st_mnt->st_dev);
  EXPECT_EQ(st_mnt->st_dev, st_inner->st_dev);
  EXPECT_EQ(st_mnt->st_ino, other->root()->inode().ino());
  EXPECT_EQ(Ino("/mnt/.."), Ino("/"));
  EXPECT_EQ(Ino("/mnt/../mnt/inner"), st_inner->st_ino);
  cwd_ = Resolve("/mnt").value();
  EXPECT_EQ(vfs::GetCwd(root_vd_, cwd_).value(), "/mnt");
  EXPECT_EQ(Ino(".."), Ino("/"));
  // Stacked mounts: the top one is visible, ".." leaves both.
  auto third = Filesystem::Create(*mf_);
  ASSERT_OK(ns_->MountAt(Resolve("/mnt").value(), third, 0));
  EXPECT_EQ(Ino("/mnt"), third->root()->inode().ino());
  EXPECT_ERRNO(Resolve("/mnt/inner"), kENOENT);
  EXPECT_EQ(Ino("/mnt/.."), Ino("/"));
}

TEST_F(PathWalkTest, Openat2Beneath) {
  ASSERT_OK(Mkdir("/top"));
  ASSERT_OK(Mkdir("/top/sub"));
  WriteFile("/top/sub/f", "x");
  ASSERT_OK(Symlink("/top/sub/f", "/top/abs"));
  ASSERT_OK(Symlink("sub/f", "/top/rel"));
  ASSERT_OK(Symlink("../top", "/top/escape"));
  vfs::ResolveBase b = Base();
  b.start = Resolve("/top").value();
  auto open2 = [&](std::string_view p, uint64_t resolve) {
    return vfs::OpenAt(b, p, O_RDONLY, 0, 022, resolve);
  };
  EXPECT_OK(open2("sub/f", vfs::kResolveBeneath));
  EXPECT_OK(open2("sub/../sub/f", vfs::kResolveBeneath));
  EXPECT_OK(open2("rel", vfs::kResolveBeneath));
  EXPECT_ERRNO(open2("..", vfs::kResolveBeneath), kEXDEV);
  EXPECT_ERRNO(open2("/top/sub/f", vfs::kResolveBeneath), kEXDEV);
  EXPECT_ERRNO(open2("abs", vfs::kResolveBeneath), kEXDEV);
  EXPECT_ERRNO(open2("escape/sub/f", vfs::kResolveBeneath), kEXDEV);
  EXPECT_ERRNO(open2("rel", vfs::kResolveNoSymlinks), kELOOP);
  EXPECT_ERRNO(open2("sub/f", 0x40), kEINVAL);
  EXPECT_ERRNO(open2("sub/f", vfs::kResolveBeneath | vfs::kResolveInRoot),
               kEINVAL);
}

TEST_F(PathWalkTest, Openat2InRoot) {
  ASSERT_OK(Mkdir("/r"));
  ASSERT_OK(Mkdir("/r/etc"));
  WriteFile("/r/etc/passwd", "inner");
  ASSERT_OK(Mkdir("/etc"));
  WriteFile("/etc/passwd", "outer");
  ASSERT_OK(Symlink("/etc/passwd", "/r/link"));
  vfs::ResolveBase b = Base();
  b.start = Resolve("/r").value();
  for (const char* p : {"/etc/passwd", "link", "../../etc/passwd"}) {
    auto f = vfs::OpenAt(b, p, O_RDONLY, 0, 022, vfs::kResolveInRoot);
    ASSERT_OK(f);
    EXPECT_EQ(ReadAll(**f), "inner") << p;
  }
}

TEST_F(PathWalkTest, Openat2NoXdev) {
  ASSERT_OK(Mkdir("/mnt"));
  ASSERT_OK(ns_->MountAt(Resolve("/mnt").value(), Filesystem::Create(*mf_), 0));
  ASSERT_OK(Mkdir("/mnt/d"));
  vfs::ResolveBase b = Base();
  EXPECT_ERRNO(vfs::OpenAt(b, "/mnt/d", O_RDONLY, 0, 0, vfs::kResolveNoXdev),
               kEXDEV);
  b.start = Resolve("/mnt/d").value();
  EXPECT_OK(vfs::OpenAt(b, "..", O_RDONLY, 0, 0, vfs::kResolveNoXdev));
  EXPECT_ERRNO(vfs::OpenAt(b, "../..", O_RDONLY, 0, 0, vfs::kResolveNoXdev),
               kEXDEV);
}

TEST_F(PathWalkTest, RemovedDirectory) {
  ASSERT_OK(Mkdir("/gone"));
  cwd_ = Resolve("/gone").value();
  auto dir = Open("/gone", O_RDONLY | O_DIRECTORY);
  ASSERT_OK(dir);
  ASSERT_OK(vfs::UnlinkAt(Base(), "/gone", AT_REMOVEDIR));
  EXPECT_ERRNO(Resolve("x"), kENOENT);
  EXPECT_ERRNO(Mkdir("x"), kENOENT);
  EXPECT_ERRNO(Open("x", O_CREAT | O_RDWR), kENOENT);
  EXPECT_ERRNO(vfs::GetCwd(root_vd_, cwd_), kENOENT);
  EXPECT_ERRNO((*dir)->IterDirents([](const vfs::DirEntry&) { return true; }),
               kENOENT);
  EXPECT_OK(Resolve("."));
}

}  // namespace
}  // namespace sandbox::fs::tmpfs

namespace sandbox::fs::tmpfs {
namespace {

class AtStartTest : public TmpfsTest {};

TEST_F(AtStartTest, DirfdRules) {
  ASSERT_OK(Mkdir("/d"));
  WriteFile("/f", "");
  vfs::FsContext fs(root_vd_, root_vd_);
  vfs::FdTable fds;
  int dfd = fds.Install(Open("/d", O_RDONLY).value(), 0, false, 100).value();
  int ffd = fds.Install(Open("/f", O_RDONLY).value(), 0, false, 100).value();
  class Pipe : public vfs::FileDescription {
   public:
    Pipe() : vfs::FileDescription(O_RDONLY) {}
  };
  int pfd = fds.Install(std::make_shared<Pipe>(), 0, false, 100).value();
  EXPECT_EQ(vfs::AtStart(fds, fs, AT_FDCWD, "x").value(), root_vd_);
  EXPECT_EQ(vfs::AtStart(fds, fs, dfd, "x").value().dentry->inode().ino(),
            vfs::StatAt(Base(), "/d", 0)->st_ino);
  EXPECT_ERRNO(vfs::AtStart(fds, fs, 77, "x"), kEBADF);
  EXPECT_OK(vfs::AtStart(fds, fs, 77, "/x"));  // absolute: dirfd ignored
  EXPECT_ERRNO(vfs::AtStart(fds, fs, pfd, "x"), kENOTDIR);
  // A regular file is a start; the walk refuses a relative path from it.
  auto start = vfs::AtStart(fds, fs, ffd, "x");
  ASSERT_OK(start);
  vfs::ResolveBase b = Base();
  b.start = start.value();
  EXPECT_ERRNO(vfs::StatAt(b, "x", 0), kENOTDIR);
  EXPECT_OK(vfs::StatAt(b, "", AT_EMPTY_PATH));
}

}  // namespace
}  // namespace sandbox::fs::tmpfs

namespace sandbox::fs::tmpfs {
namespace {

class NulTest : public TmpfsTest {};

TEST_F(NulTest, NulInPathOrTargetIsEinval) {
  EXPECT_ERRNO(Mkdir(std::string("/a\0b", 4)), kEINVAL);
  EXPECT_ERRNO(Symlink(std::string("t\0", 2), "/l"), kEINVAL);
  EXPECT_ERRNO(vfs::StatAt(Base(), std::string("\0", 1), 0), kEINVAL);
}

}  // namespace
}  // namespace sandbox::fs::tmpfs
