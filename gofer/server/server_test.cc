// Functional tests of every message against a real temporary tree.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <set>

#include "gofer/server/testing.h"

namespace gofer {
namespace {

using testing::Harness;
using testing::ReadAll;
using testing::TempTree;
using testing::WriteFile;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(tree_.root() + "/a/b");
    WriteFile(tree_.root() + "/a/b/c", "hello");
    ASSERT_EQ(symlink("b", (tree_.root() + "/a/link").c_str()), 0);
  }
  std::string Root(const std::string& rel) { return tree_.root() + "/" + rel; }

  TempTree tree_;
  Harness h_{tree_.root()};
};

TEST_F(ServerTest, AttachGivesTheRootDirectory) {
  StatResp s;
  ASSERT_EQ(h_.client().Call(StatReq{h_.root()}, &s), 0);
  EXPECT_TRUE(S_ISDIR(s.stat.mode));
  struct stat st;
  ASSERT_EQ(stat(tree_.root().c_str(), &st), 0);
  EXPECT_EQ(s.stat.ino, st.st_ino);
}

TEST_F(ServerTest, WalkManyComponents) {
  int err;
  WalkResp r = h_.Walk(h_.root(), {"a", "b", "c"}, &err);
  ASSERT_EQ(err, 0);
  EXPECT_EQ(r.status, WalkStatus::kOk);
  ASSERT_EQ(r.inodes.size(), 3u);
  EXPECT_TRUE(S_ISDIR(r.inodes[1].stat.mode));
  EXPECT_TRUE(S_ISREG(r.inodes[2].stat.mode));
  EXPECT_EQ(r.inodes[2].stat.size, 5u);
  // Handles are distinct and never 0.
  std::set<Handle> hs{h_.root()};
  for (auto& i : r.inodes) hs.insert(i.handle);
  EXPECT_EQ(hs.size(), 4u);
  EXPECT_EQ(hs.count(0), 0u);
}

TEST_F(ServerTest, WalkStopsAtMissingComponent) {
  int err;
  WalkResp r = h_.Walk(h_.root(), {"a", "nope", "c"}, &err);
  ASSERT_EQ(err, 0);
  EXPECT_EQ(r.status, WalkStatus::kError);
  EXPECT_EQ(r.error, static_cast<uint32_t>(ENOENT));
  EXPECT_EQ(r.inodes.size(), 1u);
  r = h_.Walk(h_.root(), {"a", "b", "c", "d"}, &err);
  EXPECT_EQ(r.status, WalkStatus::kError);
  EXPECT_EQ(r.error, static_cast<uint32_t>(ENOTDIR));
  EXPECT_EQ(r.inodes.size(), 3u);
  r = h_.Walk(12345, {"a"}, &err);
  EXPECT_EQ(err, EBADF);
}

TEST_F(ServerTest, WalkStopsAtSymlinkAndReadlinkReadsIt) {
  int err;
  WalkResp r = h_.Walk(h_.root(), {"a", "link", "c"}, &err);
  ASSERT_EQ(err, 0);
  EXPECT_EQ(r.status, WalkStatus::kSymlink);
  ASSERT_EQ(r.inodes.size(), 2u);
  EXPECT_TRUE(S_ISLNK(r.inodes[1].stat.mode));
  ReadlinkResp rl;
  ASSERT_EQ(h_.client().Call(ReadlinkReq{r.inodes[1].handle}, &rl), 0);
  EXPECT_EQ(rl.target, "b");
  EXPECT_EQ(h_.client().Call(ReadlinkReq{r.inodes[0].handle}, &rl), EINVAL);
}

TEST_F(ServerTest, WalkStatKeepsNoHandles) {
  WalkStatResp r;
  ASSERT_EQ(h_.client().Call(WalkStatReq{h_.root(), {"a", "b", "c"}}, &r), 0);
  EXPECT_EQ(r.status, WalkStatus::kOk);
  ASSERT_EQ(r.stats.size(), 3u);
  EXPECT_EQ(r.stats[2].size, 5u);
  ASSERT_EQ(h_.client().Call(WalkStatReq{h_.root(), {"a", "link", "x"}}, &r),
            0);
  EXPECT_EQ(r.status, WalkStatus::kSymlink);
  EXPECT_EQ(r.stats.size(), 2u);
}

TEST_F(ServerTest, OpenDonatesAHostFd) {
  Handle c = h_.MustWalk({"a", "b", "c"});
  Empty e;
  UniqueFd fd;
  ASSERT_EQ(h_.client().Call(OpenReq{c, O_RDWR}, &e, &fd), 0);
  ASSERT_TRUE(fd.valid());
  EXPECT_EQ(ReadAll(fd.get()), "hello");
  ASSERT_EQ(pwrite(fd.get(), "J", 1, 0), 1);
  EXPECT_EQ(fcntl(fd.get(), F_GETFL) & O_NONBLOCK, 0);
  int host = open(Root("a/b/c").c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_EQ(ReadAll(host), "Jello");
  close(host);
  UniqueFd t;
  ASSERT_EQ(h_.client().Call(OpenReq{c, O_WRONLY | O_TRUNC}, &e, &t), 0);
  EXPECT_EQ(std::filesystem::file_size(Root("a/b/c")), 0u);
  // Bad flags and directories.
  EXPECT_EQ(h_.client().Call(OpenReq{c, O_CREAT}, &e, &t), EINVAL);
  EXPECT_EQ(h_.client().Call(OpenReq{c, O_ACCMODE}, &e, &t), EINVAL);
  Handle a = h_.MustWalk({"a"});
  EXPECT_EQ(h_.client().Call(OpenReq{a, O_WRONLY}, &e, &t), EISDIR);
  ASSERT_EQ(h_.client().Call(OpenReq{a, O_RDONLY | O_DIRECTORY}, &e, &t), 0);
  EXPECT_EQ(h_.client().Call(OpenReq{c, O_RDONLY | O_DIRECTORY}, &e, &t),
            ENOTDIR);
}

TEST_F(ServerTest, CreateSetsExactModeAndDonatesFd) {
  mode_t old = umask(077);
  InodeResp r;
  UniqueFd fd;
  int err = h_.client().Call(
      CreateReq{h_.root(), "new", O_RDWR, 0664, kNoId, kNoId}, &r, &fd);
  umask(old);
  ASSERT_EQ(err, 0);
  ASSERT_TRUE(fd.valid());
  ASSERT_EQ(write(fd.get(), "x", 1), 1);
  struct stat st;
  ASSERT_EQ(stat(Root("new").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0664u);
  EXPECT_EQ(st.st_size, 1);
  EXPECT_EQ(r.inode.stat.ino, st.st_ino);
  Handle created = r.inode.handle;
  InodeResp r2;
  UniqueFd fd2;
  ASSERT_EQ(h_.client().Call(
                CreateReq{h_.root(), "new2", O_WRONLY | O_CREAT | O_EXCL, 0600},
                &r2, &fd2),
            0);
  EXPECT_EQ(
      h_.client().Call(CreateReq{h_.root(), "new", O_RDWR, 0664}, &r, &fd),
      EEXIST);
  EXPECT_EQ(h_.client().Call(
                CreateReq{h_.root(), "x", O_RDWR | O_DIRECTORY, 0664}, &r, &fd),
            EINVAL);
  // The new handle is usable.
  StatResp s;
  ASSERT_EQ(h_.client().Call(StatReq{created}, &s), 0);
  EXPECT_EQ(s.stat.ino, st.st_ino);
}

TEST_F(ServerTest, MkdirMknodSymlinkLink) {
  InodeResp r;
  ASSERT_EQ(h_.client().Call(MkdirReq{h_.root(), "d", 0750}, &r), 0);
  EXPECT_TRUE(S_ISDIR(r.inode.stat.mode));
  struct stat st;
  ASSERT_EQ(stat(Root("d").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  EXPECT_EQ(h_.client().Call(MkdirReq{h_.root(), "d", 0750}, &r), EEXIST);

  ASSERT_EQ(h_.client().Call(MknodReq{h_.root(), "fifo", S_IFIFO | 0600}, &r),
            0);
  EXPECT_TRUE(S_ISFIFO(r.inode.stat.mode));
  // A FIFO opens without blocking and stays non-blocking.
  Empty e;
  UniqueFd fd;
  ASSERT_EQ(h_.client().Call(OpenReq{r.inode.handle, O_RDONLY}, &e, &fd), 0);
  EXPECT_NE(fcntl(fd.get(), F_GETFL) & O_NONBLOCK, 0);
  EXPECT_EQ(h_.client().Call(OpenReq{r.inode.handle, O_WRONLY}, &e, &fd), 0);
  // With no reader left, a write-only open fails at once instead of blocking.
  fd.reset();
  UniqueFd w;
  EXPECT_EQ(h_.client().Call(OpenReq{r.inode.handle, O_WRONLY}, &e, &w), ENXIO);
  ASSERT_EQ(h_.client().Call(MknodReq{h_.root(), "sock", S_IFSOCK | 0600}, &r),
            0);
  EXPECT_TRUE(S_ISSOCK(r.inode.stat.mode));
  EXPECT_EQ(h_.client().Call(OpenReq{r.inode.handle, O_RDONLY}, &e, &fd),
            ENXIO);
  EXPECT_EQ(h_.client().Call(MknodReq{h_.root(), "chr", S_IFCHR | 0600}, &r),
            EPERM);
  EXPECT_EQ(h_.client().Call(MknodReq{h_.root(), "blk", S_IFBLK | 0600}, &r),
            EPERM);
  EXPECT_EQ(h_.client().Call(MknodReq{h_.root(), "lnk", S_IFLNK | 0600}, &r),
            EINVAL);
  EXPECT_FALSE(std::filesystem::exists(Root("chr")));

  ASSERT_EQ(h_.client().Call(SymlinkReq{h_.root(), "sl", "a/b/c"}, &r), 0);
  EXPECT_TRUE(S_ISLNK(r.inode.stat.mode));
  ReadlinkResp rl;
  ASSERT_EQ(h_.client().Call(ReadlinkReq{r.inode.handle}, &rl), 0);
  EXPECT_EQ(rl.target, "a/b/c");
  EXPECT_EQ(h_.client().Call(SymlinkReq{h_.root(), "s2", ""}, &r), ENOENT);
  EXPECT_EQ(
      h_.client().Call(SymlinkReq{h_.root(), "s3", std::string("a\0b", 3)}, &r),
      EINVAL);

  Handle c = h_.MustWalk({"a", "b", "c"});
  ASSERT_EQ(h_.client().Call(LinkReq{h_.root(), "hard", c}, &r), 0);
  EXPECT_EQ(r.inode.stat.nlink, 2u);
  ASSERT_EQ(stat(Root("hard").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 2u);
  Handle a = h_.MustWalk({"a"});
  EXPECT_EQ(h_.client().Call(LinkReq{h_.root(), "hd", a}, &r), EPERM);
  EXPECT_EQ(h_.client().Call(LinkReq{h_.root(), "hard", a}, &r), EEXIST);
  EXPECT_EQ(h_.client().Call(LinkReq{h_.root(), "hard", c}, &r), EEXIST);
}

TEST_F(ServerTest, UnlinkAndRmdir) {
  Empty e;
  EXPECT_EQ(h_.client().Call(UnlinkReq{h_.root(), "a", 0}, &e), EISDIR);
  EXPECT_EQ(h_.client().Call(UnlinkReq{h_.root(), "a", AT_REMOVEDIR}, &e),
            ENOTEMPTY);
  Handle b = h_.MustWalk({"a", "b"});
  EXPECT_EQ(h_.client().Call(UnlinkReq{b, "c", AT_REMOVEDIR}, &e), ENOTDIR);
  EXPECT_EQ(h_.client().Call(UnlinkReq{b, "c", 1}, &e), EINVAL);
  ASSERT_EQ(h_.client().Call(UnlinkReq{b, "c", 0}, &e), 0);
  EXPECT_FALSE(std::filesystem::exists(Root("a/b/c")));
  EXPECT_EQ(h_.client().Call(UnlinkReq{b, "c", 0}, &e), ENOENT);
  Handle a = h_.MustWalk({"a"});
  ASSERT_EQ(h_.client().Call(UnlinkReq{a, "link", 0}, &e), 0);
  ASSERT_EQ(h_.client().Call(UnlinkReq{a, "b", AT_REMOVEDIR}, &e), 0);
  EXPECT_FALSE(std::filesystem::exists(Root("a/b")));
}

TEST_F(ServerTest, RenameFlagsAndHandlesFollow) {
  WriteFile(Root("x"), "X");
  WriteFile(Root("y"), "Y");
  Handle x = h_.MustWalk({"x"});
  Handle a = h_.MustWalk({"a"});
  Empty e;
  EXPECT_EQ(
      h_.client().Call(
          RenameReq{h_.root(), "x", h_.root(), "y", RENAME_NOREPLACE}, &e),
      EEXIST);
  EXPECT_EQ(h_.client().Call(RenameReq{h_.root(), "x", h_.root(), "y", 3}, &e),
            EINVAL);
  EXPECT_EQ(h_.client().Call(RenameReq{h_.root(), "x", h_.root(), "y", 8}, &e),
            EINVAL);
  ASSERT_EQ(h_.client().Call(RenameReq{h_.root(), "x", a, "moved", 0}, &e), 0);
  EXPECT_TRUE(std::filesystem::exists(Root("a/moved")));
  // The handle of x follows it: a re-open by (parent, name) finds it.
  UniqueFd fd;
  ASSERT_EQ(h_.client().Call(OpenReq{x, O_RDONLY}, &e, &fd), 0);
  EXPECT_EQ(ReadAll(fd.get()), "X");
  Handle y = h_.MustWalk({"y"});
  ASSERT_EQ(h_.client().Call(
                RenameReq{a, "moved", h_.root(), "y", RENAME_EXCHANGE}, &e),
            0);
  ASSERT_EQ(h_.client().Call(OpenReq{x, O_RDONLY}, &e, &fd), 0);
  EXPECT_EQ(ReadAll(fd.get()), "X");
  ASSERT_EQ(h_.client().Call(OpenReq{y, O_RDONLY}, &e, &fd), 0);
  EXPECT_EQ(ReadAll(fd.get()), "Y");
  int host = open(Root("a/moved").c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_EQ(ReadAll(host), "Y");
  close(host);
  // Replacing y with a new file makes y's old handle stale, not wrong.
  WriteFile(Root("z"), "Z");
  ASSERT_EQ(h_.client().Call(RenameReq{h_.root(), "z", a, "moved", 0}, &e), 0);
  EXPECT_EQ(h_.client().Call(OpenReq{y, O_RDONLY}, &e, &fd), ESTALE);
  // A directory into itself: the host's EINVAL.
  EXPECT_EQ(h_.client().Call(RenameReq{h_.root(), "a", a, "sub", 0}, &e),
            EINVAL);
}

TEST_F(ServerTest, SetAttr) {
  Handle c = h_.MustWalk({"a", "b", "c"});
  Empty e;
  SetAttrReq req;
  req.handle = c;
  req.mask = kSetMode | kSetSize | kSetAtime | kSetMtime;
  req.mode = 04711;
  req.size = 3;
  req.atime = {1000, 5};
  req.mtime = {2000, 7};
  ASSERT_EQ(h_.client().Call(req, &e), 0);
  struct stat st;
  ASSERT_EQ(stat(Root("a/b/c").c_str(), &st), 0);
  // Nosuid by default: S_ISUID does not reach the host (nosuid_test).
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  EXPECT_EQ(st.st_size, 3);
  EXPECT_EQ(st.st_atim.tv_sec, 1000);
  EXPECT_EQ(st.st_mtim.tv_nsec, 7);
  req.mask = kSetUid | kSetGid;
  req.uid = getuid();
  req.gid = getgid();
  EXPECT_EQ(h_.client().Call(req, &e), 0);
  req.mask = kSetMtimeNow;
  ASSERT_EQ(h_.client().Call(req, &e), 0);
  ASSERT_EQ(stat(Root("a/b/c").c_str(), &st), 0);
  EXPECT_GT(st.st_mtim.tv_sec, 2000);
  req.mask = 1 << 20;
  EXPECT_EQ(h_.client().Call(req, &e), EINVAL);
  Handle a = h_.MustWalk({"a"});
  req.handle = a;
  req.mask = kSetSize;
  EXPECT_EQ(h_.client().Call(req, &e), EISDIR);
  int err;
  WalkResp w = h_.Walk(a, {"link"}, &err);
  req.handle = w.inodes.at(0).handle;
  req.mask = kSetMode;
  EXPECT_EQ(h_.client().Call(req, &e), EOPNOTSUPP);
}

TEST_F(ServerTest, GetdentsIsResumableAndComplete) {
  std::filesystem::create_directory(Root("many"));
  std::set<std::string> want;
  for (int i = 0; i < 100; ++i) {
    std::string n = "f" + std::to_string(i);
    WriteFile(Root("many/" + n), "");
    want.insert(n);
  }
  Handle d = h_.MustWalk({"many"});
  std::set<std::string> got;
  uint64_t cookie = 0;
  for (int rounds = 0; rounds < 100; ++rounds) {
    GetdentsResp r;
    ASSERT_EQ(h_.client().Call(GetdentsReq{d, cookie, 7}, &r), 0);
    if (r.dirents.empty()) break;
    EXPECT_LE(r.dirents.size(), 7u);
    for (auto& de : r.dirents) {
      EXPECT_TRUE(got.insert(de.name).second) << "duplicate " << de.name;
      EXPECT_EQ(de.type, DT_REG);
      EXPECT_NE(de.ino, 0u);
    }
    cookie = r.dirents.back().next_cookie;
  }
  EXPECT_EQ(got, want);
  GetdentsResp r;
  EXPECT_EQ(h_.client().Call(GetdentsReq{d, 0, 0}, &r), EINVAL);
  EXPECT_EQ(h_.client().Call(GetdentsReq{d, 0, kMaxDirents + 1}, &r), EINVAL);
  Handle c = h_.MustWalk({"a", "b", "c"});
  EXPECT_EQ(h_.client().Call(GetdentsReq{c, 0, 5}, &r), ENOTDIR);
}

// Replies stop short of max_count only at the end (the client relies on
// it for max_count <= 512): full replies until the last, with the longest
// names, for both listing messages.
TEST_F(ServerTest, GetdentsRepliesAreFullUntilTheEnd) {
  std::filesystem::create_directory(Root("long"));
  constexpr int kFiles = 1100;
  for (int i = 0; i < kFiles; ++i) {
    std::string n = std::to_string(i);
    WriteFile(Root("long/" + n + std::string(255 - n.size(), 'n')), "");
  }
  Handle d = h_.MustWalk({"long"});
  for (bool plus : {false, true}) {
    uint64_t cookie = 0;
    int seen = 0;
    std::vector<Handle> handles;
    for (int rounds = 0; rounds < 10; ++rounds) {
      std::vector<uint64_t> next;
      if (plus) {
        GetdentsPlusResp r;
        ASSERT_EQ(h_.client().Call(GetdentsPlusReq{d, cookie, 512}, &r), 0);
        for (auto& de : r.dirents) {
          next.push_back(de.next_cookie);
          if (de.has_inode) handles.push_back(de.inode.handle);
        }
      } else {
        GetdentsResp r;
        ASSERT_EQ(h_.client().Call(GetdentsReq{d, cookie, 512}, &r), 0);
        for (auto& de : r.dirents) next.push_back(de.next_cookie);
      }
      seen += static_cast<int>(next.size());
      if (next.size() < 512) break;
      cookie = next.back();
    }
    EXPECT_EQ(seen, kFiles) << (plus ? "GetdentsPlus" : "Getdents");
    Empty e;
    if (!handles.empty()) {
      ASSERT_EQ(h_.client().Call(CloseReq{handles}, &e), 0);
    }
  }
}

TEST_F(ServerTest, GetdentsPlusWalksEveryEntry) {
  std::filesystem::create_directory(Root("plus"));
  for (int i = 0; i < 40; ++i) {
    WriteFile(Root("plus/f" + std::to_string(i)), std::string(i, 'x'));
  }
  std::filesystem::create_directory(Root("plus/sub"));
  ASSERT_EQ(symlink("/etc/passwd", Root("plus/lnk").c_str()), 0);
  Handle d = h_.MustWalk({"plus"});
  std::map<std::string, DirentPlus> got;
  uint64_t cookie = 0;
  for (int rounds = 0; rounds < 100; ++rounds) {
    GetdentsPlusResp r;
    ASSERT_EQ(h_.client().Call(GetdentsPlusReq{d, cookie, 9}, &r), 0);
    if (r.dirents.empty()) break;
    EXPECT_LE(r.dirents.size(), 9u);
    for (auto& de : r.dirents) {
      EXPECT_TRUE(got.emplace(de.name, de).second) << "duplicate " << de.name;
    }
    cookie = r.dirents.back().next_cookie;
  }
  ASSERT_EQ(got.size(), 42u);
  for (auto& [name, de] : got) {
    ASSERT_EQ(de.has_inode, 1) << name;
    struct stat st;
    ASSERT_EQ(lstat(Root("plus/" + name).c_str(), &st), 0);
    EXPECT_EQ(de.inode.stat.ino, st.st_ino) << name;
    EXPECT_EQ(de.inode.stat.mode, st.st_mode) << name;
    EXPECT_EQ(de.inode.stat.size, static_cast<uint64_t>(st.st_size)) << name;
    EXPECT_EQ(de.ino, st.st_ino) << name;
    // The handle is a walked node: a symlink is itself, never followed.
    StatResp sr;
    ASSERT_EQ(h_.client().Call(StatReq{de.inode.handle}, &sr), 0);
    EXPECT_EQ(sr.stat.ino, st.st_ino);
  }
  EXPECT_TRUE(S_ISLNK(got["lnk"].inode.stat.mode));
  EXPECT_TRUE(S_ISDIR(got["sub"].inode.stat.mode));
  std::set<Handle> handles;
  for (auto& [name, de] : got) handles.insert(de.inode.handle);
  EXPECT_EQ(handles.size(), 42u);  // a new handle each
  GetdentsPlusResp r;
  EXPECT_EQ(h_.client().Call(GetdentsPlusReq{d, 0, 0}, &r), EINVAL);
  EXPECT_EQ(h_.client().Call(GetdentsPlusReq{d, 0, kMaxDirentsPlus + 1}, &r),
            EINVAL);
  Handle c = h_.MustWalk({"a", "b", "c"});
  EXPECT_EQ(h_.client().Call(GetdentsPlusReq{c, 0, 5}, &r), ENOTDIR);
  EXPECT_EQ(h_.client().Call(GetdentsPlusReq{999999, 0, 5}, &r), EBADF);
}

TEST_F(ServerTest, StatfsFsyncClose) {
  StatfsResp sf;
  ASSERT_EQ(h_.client().Call(StatfsReq{h_.root()}, &sf), 0);
  EXPECT_EQ(sf.namelen, 255u);
  EXPECT_EQ(sf.flags & ST_RDONLY, 0u);
  Handle c = h_.MustWalk({"a", "b", "c"});
  Empty e;
  EXPECT_EQ(h_.client().Call(FsyncReq{c}, &e), 0);
  EXPECT_EQ(h_.client().Call(FsyncReq{h_.root()}, &e), 0);
  EXPECT_EQ(h_.client().Call(CloseReq{{c, 999999}}, &e), EBADF);
  StatResp s;
  EXPECT_EQ(h_.client().Call(StatReq{c}, &s), EBADF);
  EXPECT_EQ(h_.client().Call(CloseReq{{c}}, &e), EBADF);
}

TEST_F(ServerTest, Xattrs) {
  Handle c = h_.MustWalk({"a", "b", "c"});
  Empty e;
  int err = h_.client().Call(SetXattrReq{c, "user.k", "value", 0}, &e);
  if (err == EOPNOTSUPP) GTEST_SKIP() << "host fs has no user xattrs";
  ASSERT_EQ(err, 0);
  EXPECT_EQ(h_.client().Call(SetXattrReq{c, "user.k", "v", XATTR_CREATE}, &e),
            EEXIST);
  EXPECT_EQ(h_.client().Call(SetXattrReq{c, "trusted.k", "v", 0}, &e),
            EOPNOTSUPP);
  EXPECT_EQ(h_.client().Call(SetXattrReq{c, "", "v", 0}, &e), ERANGE);
  EXPECT_EQ(h_.client().Call(SetXattrReq{c, "user.k", "v", 4}, &e), EINVAL);
  GetXattrResp g;
  ASSERT_EQ(h_.client().Call(GetXattrReq{c, "user.k", 0}, &g), 0);
  EXPECT_EQ(g.length, 5u);
  EXPECT_TRUE(g.value.empty());
  ASSERT_EQ(h_.client().Call(GetXattrReq{c, "user.k", 100}, &g), 0);
  EXPECT_EQ(g.value, "value");
  EXPECT_EQ(h_.client().Call(GetXattrReq{c, "user.k", 2}, &g), ERANGE);
  EXPECT_EQ(h_.client().Call(GetXattrReq{c, "user.none", 10}, &g), ENODATA);
  ListXattrResp l;
  ASSERT_EQ(h_.client().Call(ListXattrReq{c, 1000}, &l), 0);
  EXPECT_EQ(l.names, std::string("user.k\0", 7));
  ASSERT_EQ(h_.client().Call(RemoveXattrReq{c, "user.k"}, &e), 0);
  EXPECT_EQ(h_.client().Call(RemoveXattrReq{c, "user.k"}, &e), ENODATA);
  int w;
  WalkResp r = h_.Walk(h_.MustWalk({"a"}), {"link"}, &w);
  EXPECT_EQ(
      h_.client().Call(GetXattrReq{r.inodes.at(0).handle, "user.k", 10}, &g),
      EPERM);
}

TEST_F(ServerTest, InvalidNames) {
  int err;
  for (const std::string& bad :
       {std::string(""), std::string("."), std::string(".."),
        std::string("a/b"), std::string("a\0b", 3)}) {
    WalkResp r = h_.Walk(h_.root(), {bad}, &err);
    ASSERT_EQ(err, 0);
    EXPECT_EQ(r.status, WalkStatus::kError);
    EXPECT_EQ(r.error, static_cast<uint32_t>(EINVAL));
    InodeResp ir;
    EXPECT_EQ(h_.client().Call(MkdirReq{h_.root(), bad, 0755}, &ir), EINVAL);
  }
  WalkResp r = h_.Walk(h_.root(), {std::string(256, 'n')}, &err);
  EXPECT_EQ(r.error, static_cast<uint32_t>(ENAMETOOLONG));
  InodeResp ir;
  EXPECT_EQ(
      h_.client().Call(MkdirReq{h_.root(), std::string(256, 'n'), 0755}, &ir),
      ENAMETOOLONG);
  ASSERT_EQ(
      h_.client().Call(MkdirReq{h_.root(), std::string(255, 'n'), 0755}, &ir),
      0);
}

TEST_F(ServerTest, ProtocolErrorsAreRepliedAndSurvived) {
  Message m;
  EXPECT_EQ(h_.client().CallRaw(0, "", &m), EOPNOTSUPP);
  EXPECT_EQ(h_.client().CallRaw(999, "xyz", &m), EOPNOTSUPP);
  EXPECT_EQ(h_.client().CallRaw(static_cast<uint16_t>(MessageType::kWalk),
                                "garbage", &m),
            EINVAL);
  EXPECT_EQ(
      h_.client().CallRaw(static_cast<uint16_t>(MessageType::kAttach), "x", &m),
      EINVAL);
  StatResp s;
  EXPECT_EQ(h_.client().Call(StatReq{h_.root()}, &s), 0);
}

TEST(ServerRaw, VersionMismatchThenBadMagicClosesConnection) {
  TempTree tree;
  Harness h(tree.root());
  int sock = h.raw_fd();
  Header bad;
  bad.version = 7;
  bad.request_id = 41;
  ASSERT_EQ(SendMessage(sock, bad, "abc"), 0);
  Message m;
  ASSERT_EQ(RecvMessage(sock, &m), 0);
  EXPECT_EQ(m.header.request_id, 41u);
  EXPECT_EQ(m.header.error, static_cast<uint32_t>(EPROTONOSUPPORT));
  // A request with the reply flag, or carrying an errno, is refused.
  Header odd;
  odd.type = static_cast<uint16_t>(MessageType::kAttach);
  odd.flags = kFlagReply;
  ASSERT_EQ(SendMessage(sock, odd, ""), 0);
  ASSERT_EQ(RecvMessage(sock, &m), 0);
  EXPECT_EQ(m.header.error, static_cast<uint32_t>(EINVAL));
  // Bad magic: an EPROTO reply, then end of stream.
  Header junk;
  junk.magic = 0xdeadbeef;
  ASSERT_EQ(SendMessage(sock, junk, ""), 0);
  ASSERT_EQ(RecvMessage(sock, &m), 0);
  EXPECT_EQ(m.header.error, static_cast<uint32_t>(EPROTO));
  EXPECT_EQ(RecvMessage(sock, &m), ECONNRESET);
}

TEST(ServerReadOnly, RefusesEveryChange) {
  TempTree tree;
  WriteFile(tree.root() + "/f", "data");
  ServerOptions opts;
  opts.read_only = true;
  Harness h(tree.root(), opts);
  Handle f = h.MustWalk({"f"});
  Empty e;
  UniqueFd fd;
  ASSERT_EQ(h.client().Call(OpenReq{f, O_RDONLY}, &e, &fd), 0);
  EXPECT_EQ(ReadAll(fd.get()), "data");
  EXPECT_EQ(h.client().Call(OpenReq{f, O_RDWR}, &e, &fd), EROFS);
  EXPECT_EQ(h.client().Call(OpenReq{f, O_RDONLY | O_TRUNC}, &e, &fd), EROFS);
  InodeResp r;
  EXPECT_EQ(h.client().Call(CreateReq{h.root(), "n", O_RDWR, 0644}, &r, &fd),
            EROFS);
  EXPECT_EQ(h.client().Call(MkdirReq{h.root(), "f", 0755}, &r), EEXIST);
  EXPECT_EQ(h.client().Call(MkdirReq{h.root(), "d", 0755}, &r), EROFS);
  EXPECT_EQ(h.client().Call(MknodReq{h.root(), "p", S_IFIFO | 0644}, &r),
            EROFS);
  EXPECT_EQ(h.client().Call(SymlinkReq{h.root(), "s", "f"}, &r), EROFS);
  EXPECT_EQ(h.client().Call(LinkReq{h.root(), "l", f}, &r), EROFS);
  EXPECT_EQ(h.client().Call(UnlinkReq{h.root(), "f", 0}, &e), EROFS);
  EXPECT_EQ(h.client().Call(UnlinkReq{h.root(), "gone", 0}, &e), EROFS);
  EXPECT_EQ(h.client().Call(RenameReq{h.root(), "f", h.root(), "g", 0}, &e),
            EROFS);
  SetAttrReq sa;
  sa.handle = f;
  sa.mask = kSetMode;
  EXPECT_EQ(h.client().Call(sa, &e), EROFS);
  EXPECT_EQ(h.client().Call(SetXattrReq{f, "user.a", "b", 0}, &e), EROFS);
  EXPECT_EQ(h.client().Call(RemoveXattrReq{f, "user.a"}, &e), EROFS);
  EXPECT_EQ(h.client().Call(SetXattrReq{f, "trusted.a", "b", 0}, &e), EROFS);
  EXPECT_EQ(h.client().Call(SetXattrReq{f, "", "b", 0}, &e), ERANGE);
  EXPECT_EQ(h.client().Call(LinkReq{h.root(), "f", h.root()}, &r), EEXIST);
  EXPECT_EQ(h.client().Call(MknodReq{h.root(), "c", S_IFCHR | 0644}, &r),
            EPERM);
  StatfsResp sf;
  ASSERT_EQ(h.client().Call(StatfsReq{h.root()}, &sf), 0);
  EXPECT_NE(sf.flags & ST_RDONLY, 0u);
  EXPECT_EQ(std::filesystem::directory_iterator(tree.root())->path().filename(),
            "f");
}

TEST(ServerLimits, HandleCapIsEmfile) {
  TempTree tree;
  std::filesystem::create_directories(tree.root() + "/a/b/c/d");
  ServerOptions opts;
  opts.max_handles = 3;  // Attach takes one.
  Harness h(tree.root(), opts);
  int err;
  WalkResp r = h.Walk(h.root(), {"a", "b", "c"}, &err);
  ASSERT_EQ(err, 0);
  EXPECT_EQ(r.status, WalkStatus::kError);
  EXPECT_EQ(r.error, static_cast<uint32_t>(EMFILE));
  EXPECT_EQ(r.inodes.size(), 2u);
  Empty e;
  ASSERT_EQ(h.client().Call(CloseReq{{r.inodes[0].handle}}, &e), 0);
  r = h.Walk(r.inodes[1].handle, {"c"}, &err);
  EXPECT_EQ(r.status, WalkStatus::kOk);
}

TEST(ServerLimits, GetdentsPlusPastTheHandleCapListsWithoutInodes) {
  TempTree tree;
  for (int i = 0; i < 6; ++i) {
    testing::WriteFile(tree.root() + "/f" + std::to_string(i), "");
  }
  ServerOptions opts;
  opts.max_handles = 4;  // Attach takes one: three entries get handles.
  Harness h(tree.root(), opts);
  GetdentsPlusResp r;
  ASSERT_EQ(h.client().Call(GetdentsPlusReq{h.root(), 0, 100}, &r), 0);
  ASSERT_EQ(r.dirents.size(), 6u);
  int with = 0;
  for (const DirentPlus& d : r.dirents) {
    with += d.has_inode;
    if (!d.has_inode) {
      EXPECT_EQ(d.inode.handle, 0u);
    }
  }
  EXPECT_EQ(with, 3);
}

// Hidden entries (hidden.h) are served as their stand-ins: by name in
// their directory, by identity wherever met (here a hard link of a hidden
// file), in Walk, WalkStat and GetdentsPlus; their names cannot be removed
// or replaced (EBUSY); everything else is served as is.
TEST(ServerHidden, HiddenEntriesAreServedAsStandIns) {
  TempTree tree;
  std::filesystem::create_directories(tree.root() + "/tmp/secret");
  WriteFile(tree.root() + "/tmp/canary", "host secret");
  WriteFile(tree.root() + "/conf", "host file");
  ASSERT_EQ(link((tree.root() + "/conf").c_str(),
                 (tree.root() + "/conf-link").c_str()),
            0);
  WriteFile(tree.root() + "/plain", "served");
  const std::string stand = tree.outside() + "/stand";
  std::filesystem::create_directories(stand + "/dir");
  WriteFile(stand + "/file", "");
  auto open_path = [](const std::string& p) {
    return std::make_shared<const UniqueFd>(
        open(p.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  };
  auto parent = open_path(stand);
  auto make = [&](const std::string& name) {
    auto s = std::make_shared<StandIn>();
    s->fd = open_path(stand + "/" + name);
    s->parent_fd = parent;
    s->name = name;
    return std::shared_ptr<const StandIn>(s);
  };
  struct stat root_st, tmp_st, conf_st;
  ASSERT_EQ(stat(tree.root().c_str(), &root_st), 0);
  ASSERT_EQ(stat((tree.root() + "/tmp").c_str(), &tmp_st), 0);
  ASSERT_EQ(stat((tree.root() + "/conf").c_str(), &conf_st), 0);
  auto hidden = std::make_shared<Hidden>();
  hidden->Add(root_st.st_dev, root_st.st_ino, "tmp", true, tmp_st.st_dev,
              tmp_st.st_ino, make("dir"));
  hidden->Add(root_st.st_dev, root_st.st_ino, "conf", true, conf_st.st_dev,
              conf_st.st_ino, make("file"));
  ServerOptions opts;
  opts.hidden = hidden;
  Harness h(tree.root(), opts);
  int err;
  WalkResp w = h.Walk(h.root(), {"tmp", "canary"}, &err);
  ASSERT_EQ(err, 0);
  EXPECT_EQ(w.status, WalkStatus::kError);
  EXPECT_EQ(w.error, static_cast<uint32_t>(ENOENT));
  ASSERT_EQ(w.inodes.size(), 1u);
  EXPECT_NE(w.inodes[0].stat.ino, static_cast<uint64_t>(tmp_st.st_ino));
  GetdentsResp gd;
  ASSERT_EQ(h.client().Call(GetdentsReq{w.inodes[0].handle, 0, 10}, &gd), 0);
  for (const auto& d : gd.dirents) {
    EXPECT_TRUE(d.name == "." || d.name == "..") << d.name;
  }
  WalkStatResp ws;
  ASSERT_EQ(h.client().Call(WalkStatReq{h.root(), {"tmp", "secret"}}, &ws), 0);
  EXPECT_EQ(ws.error, static_cast<uint32_t>(ENOENT));
  // A hidden file, by name and through a hard link: the empty stand-in.
  for (const char* name : {"conf", "conf-link"}) {
    Handle f = h.MustWalk({name});
    Empty e;
    UniqueFd fd;
    ASSERT_EQ(h.client().Call(OpenReq{f, O_RDONLY}, &e, &fd), 0) << name;
    EXPECT_EQ(ReadAll(fd.get()), "") << name;
  }
  Handle p = h.MustWalk({"plain"});
  Empty e;
  UniqueFd fd;
  ASSERT_EQ(h.client().Call(OpenReq{p, O_RDONLY}, &e, &fd), 0);
  EXPECT_EQ(ReadAll(fd.get()), "served");
  GetdentsPlusResp gp;
  ASSERT_EQ(h.client().Call(GetdentsPlusReq{h.root(), 0, 100}, &gp), 0);
  for (const DirentPlus& d : gp.dirents) {
    if (d.name == "tmp") {
      ASSERT_TRUE(d.has_inode);
      EXPECT_NE(d.inode.stat.ino, static_cast<uint64_t>(tmp_st.st_ino));
    }
  }
  EXPECT_EQ(h.client().Call(UnlinkReq{h.root(), "tmp", AT_REMOVEDIR}, &e),
            EBUSY);
  EXPECT_EQ(
      h.client().Call(RenameReq{h.root(), "tmp", h.root(), "tmp2", 0}, &e),
      EBUSY);
  EXPECT_EQ(
      h.client().Call(RenameReq{h.root(), "plain", h.root(), "conf", 0}, &e),
      EBUSY);
  auto read_host = [](const std::string& path) {
    UniqueFd f(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    return ReadAll(f.get());
  };
  EXPECT_EQ(read_host(tree.root() + "/tmp/canary"), "host secret");
  EXPECT_EQ(read_host(tree.root() + "/conf"), "host file");
  EXPECT_TRUE(std::filesystem::exists(tree.root() + "/tmp/secret"));
}

}  // namespace
}  // namespace gofer
