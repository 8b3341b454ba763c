// The overlay over a tmpfs lower layer (prepared first) and a tmpfs upper,
// through the VFS path operations; each test also checks what the layers
// hold (whiteouts, opaque marks, copies) and that the lower never changes.
#include "sentry/fs/overlay/overlay.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <map>
#include <set>

#include "gtest/gtest.h"
#include "sentry/fs/overlay/testing.h"
#include "sentry/vfs/xattr_ops.h"

namespace sandbox::fs::overlay {
namespace {

class OverlayFsTest : public OverlayTest {
 protected:
  void SetUp() override {
    OverlayTest::SetUp();
    OVL_ASSERT_OK(lower_.Mkdir("/etc", 0755));
    OVL_ASSERT_OK(lower_.WriteFile("/etc/a", "lower a"));
    OVL_ASSERT_OK(lower_.WriteFile("/etc/b", "lower b"));
    OVL_ASSERT_OK(lower_.Mkdir("/d", 0750));
    OVL_ASSERT_OK(lower_.Mkdir("/d/sub", 0700));
    OVL_ASSERT_OK(lower_.WriteFile("/d/sub/x", "xx"));
    OVL_ASSERT_OK(lower_.Mkdir("/empty", 0755));
    OVL_ASSERT_OK(lower_.Symlink("/etc/a", "/link"));
  }
  // Everything in the lower tree: path -> mode, size, mtime, data.
  std::map<std::string, std::string> Snapshot(const Tree& t,
                                              const std::string& dir = "/") {
    std::map<std::string, std::string> out;
    for (const std::string& name : t.List(dir)) {
      std::string p = dir == "/" ? "/" + name : dir + "/" + name;
      auto st = t.Stat(p, AT_SYMLINK_NOFOLLOW);
      EXPECT_TRUE(st.ok());
      if (!st.ok()) continue;
      std::string v = std::to_string(st->st_mode) + " " +
                      std::to_string(st->st_size) + " " +
                      std::to_string(st->st_mtim.tv_sec) + "." +
                      std::to_string(st->st_mtim.tv_nsec) + " " +
                      std::to_string(st->st_ino);
      if (S_ISREG(st->st_mode)) v += " " + t.Read(p);
      out[p] = v;
      if (S_ISDIR(st->st_mode)) out.merge(Snapshot(t, p));
    }
    return out;
  }
  void TearDown() override {
    if (!lower_before_.empty()) {
      EXPECT_EQ(Snapshot(lower_), lower_before_);
    }
  }
  void Mount() {
    lower_before_ = Snapshot(lower_);
    MountOverlay();
  }
  std::map<std::string, std::string> lower_before_;
};

TEST_F(OverlayFsTest, LookupAndReadThroughLower) {
  Mount();
  EXPECT_EQ(ovl_.Read("/etc/a"), "lower a");
  EXPECT_EQ(ovl_.Read("/d/sub/x"), "xx");
  EXPECT_EQ(ovl_.List("/"),
            (std::vector<std::string>{"d", "empty", "etc", "link"}));
  EXPECT_EQ(ovl_.List("/etc"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ovl_.Read("/link"), "lower a");
  auto st = ovl_.Stat("/etc/a");
  auto lst = lower_.Stat("/etc/a");
  ASSERT_TRUE(st.ok() && lst.ok());
  EXPECT_EQ(st->st_ino, lst->st_ino);
  EXPECT_EQ(st->st_dev, ovl_fs_->dev());
  EXPECT_EQ(st->st_mode, lst->st_mode);
  EXPECT_EQ(st->st_mtim.tv_nsec, lst->st_mtim.tv_nsec);
  // Reading copies nothing up.
  EXPECT_EQ(ovl_fs_->copy_ups(), 0u);
  EXPECT_TRUE(upper_.List("/").empty());
  // The root shows the lower root's mode, not the upper tmpfs's 01777.
  EXPECT_EQ(ovl_.Stat("/")->st_mode & 07777, 0755u);
}

TEST_F(OverlayFsTest, WriteCopiesUpDataMetadataAndParents) {
  OVL_ASSERT_OK(vfs::ChownAt(lower_.Base(), "/d/sub/x", 12, 34, 0));
  OVL_ASSERT_OK(vfs::ChmodAt(lower_.Base(), "/d/sub/x", 04755, 0));
  abi::Timespec times[2] = {{1000, 5}, {2000, 7}};
  OVL_ASSERT_OK(vfs::UtimensAt(lower_.Base(), "/d/sub/x", times, 0));
  OVL_ASSERT_OK(
      vfs::SetXattrAt(lower_.Base(), "/d/sub/x", true, "user.k", "v", 0));
  OVL_ASSERT_OK(vfs::SetXattrAt(lower_.Base(), "/d/sub/x", true,
                                "trusted.overlay.private", "p", 0));
  Mount();
  uint64_t ino = ovl_.Stat("/d/sub/x")->st_ino;
  // The private xattr is invisible through the overlay.
  OVL_EXPECT_ERRNO(
      vfs::GetXattrAt(ovl_.Base(), "/d/sub/x", true, "trusted.overlay.private"),
      kEOPNOTSUPP);
  auto names = vfs::ListXattrAt(ovl_.Base(), "/d/sub/x", true);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"user.k"});

  auto f = ovl_.Open("/d/sub/x", O_WRONLY | O_APPEND);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(ovl_fs_->copy_ups(), 3u);  // /d, /d/sub, /d/sub/x
  ASSERT_TRUE(Tree::WriteAll(**f, "yy").ok());
  EXPECT_EQ(ovl_.Read("/d/sub/x"), "xxyy");
  EXPECT_EQ(upper_.Read("/d/sub/x"), "xxyy");
  EXPECT_EQ(lower_.Read("/d/sub/x"), "xx");
  auto st = ovl_.Stat("/d/sub/x");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->st_ino, ino);  // kept across copy-up
  EXPECT_EQ(st->st_uid, 12u);
  EXPECT_EQ(st->st_gid, 34u);
  // The write by a caller with every capability kept the set-id bit.
  EXPECT_EQ(st->st_mode, S_IFREG | 04755u);
  EXPECT_EQ(upper_.Stat("/d")->st_mode, S_IFDIR | 0750u);
  EXPECT_EQ(upper_.Stat("/d/sub")->st_mode, S_IFDIR | 0700u);
  auto v = vfs::GetXattrAt(upper_.Base(), "/d/sub/x", true, "user.k");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "v");
  // The overlay's own names are not copied up.
  OVL_EXPECT_ERRNO(vfs::GetXattrAt(upper_.Base(), "/d/sub/x", true,
                                   "trusted.overlay.private"),
                   kENODATA);
  // The parent directories kept their lower times.
  EXPECT_EQ(upper_.Stat("/d")->st_mtim.tv_nsec,
            lower_.Stat("/d")->st_mtim.tv_nsec);
}

TEST_F(OverlayFsTest, CopyUpKeepsTimesAndTruncateCopiesOnlyWhatStays) {
  abi::Timespec times[2] = {{1000, 5}, {2000, 7}};
  OVL_ASSERT_OK(vfs::UtimensAt(lower_.Base(), "/etc/a", times, 0));
  Mount();
  OVL_ASSERT_OK(vfs::ChmodAt(ovl_.Base(), "/etc/a", 0600, 0));
  auto st = ovl_.Stat("/etc/a");
  EXPECT_EQ(st->st_mode, S_IFREG | 0600u);
  EXPECT_EQ(st->st_mtim.tv_sec, 2000);
  EXPECT_EQ(st->st_mtim.tv_nsec, 7);
  EXPECT_EQ(st->st_atim.tv_sec, 1000);
  EXPECT_EQ(upper_.Stat("/etc/a")->st_mode, S_IFREG | 0600u);

  OVL_ASSERT_OK(vfs::TruncateAt(ovl_.Base(), "/etc/b", 3));
  EXPECT_EQ(ovl_.Read("/etc/b"), "low");
  EXPECT_EQ(lower_.Read("/etc/b"), "lower b");

  // O_TRUNC: copied up without data.
  auto f = ovl_.Open("/d/sub/x", O_WRONLY | O_TRUNC);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(ovl_.Read("/d/sub/x"), "");
  EXPECT_EQ(ovl_.Stat("/d/sub/x")->st_size, 0);
}

TEST_F(OverlayFsTest, UtimensAndSetxattrCopyUp) {
  Mount();
  abi::Timespec times[2] = {{3, 0}, {4, 0}};
  OVL_ASSERT_OK(vfs::UtimensAt(ovl_.Base(), "/etc/a", times, 0));
  EXPECT_EQ(ovl_.Stat("/etc/a")->st_mtim.tv_sec, 4);
  EXPECT_EQ(upper_.Stat("/etc/a")->st_mtim.tv_sec, 4);
  OVL_ASSERT_OK(vfs::SetXattrAt(ovl_.Base(), "/etc/b", true, "user.n", "1", 0));
  EXPECT_EQ(vfs::GetXattrAt(upper_.Base(), "/etc/b", true, "user.n").value(),
            "1");
  OVL_EXPECT_ERRNO(vfs::SetXattrAt(ovl_.Base(), "/etc/b", true,
                                   "trusted.overlay.opaque", "y", 0),
                   kEOPNOTSUPP);
  // Removing an absent name copies nothing up.
  uint64_t before = ovl_fs_->copy_ups();
  OVL_EXPECT_ERRNO(vfs::RemoveXattrAt(ovl_.Base(), "/d/sub/x", true, "user.z"),
                   kENODATA);
  EXPECT_EQ(ovl_fs_->copy_ups(), before);
  // lchown of a symlink copies the symlink up.
  OVL_ASSERT_OK(vfs::ChownAt(ovl_.Base(), "/link", 5, 6, AT_SYMLINK_NOFOLLOW));
  EXPECT_EQ(vfs::ReadlinkAt(upper_.Base(), "/link").value(), "/etc/a");
  EXPECT_EQ(ovl_.Stat("/link", AT_SYMLINK_NOFOLLOW)->st_uid, 5u);
}

TEST_F(OverlayFsTest, UnlinkMakesWhiteoutHiddenFromTheGuest) {
  Mount();
  OVL_ASSERT_OK(ovl_.Unlink("/etc/a"));
  EXPECT_EQ(ovl_.StatErr("/etc/a"), kENOENT);
  EXPECT_EQ(ovl_.List("/etc"), std::vector<std::string>{"b"});
  auto w = upper_.Stat("/etc/a");
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(S_ISCHR(w->st_mode));
  EXPECT_EQ(w->st_rdev, 0u);
  OVL_EXPECT_ERRNO(ovl_.Unlink("/etc/a"), kENOENT);
  OVL_EXPECT_ERRNO(ovl_.Open("/etc/a", O_RDONLY), kENOENT);
  // Creating it again replaces the whiteout.
  OVL_ASSERT_OK(ovl_.WriteFile("/etc/a", "new", O_CREAT | O_EXCL | O_WRONLY));
  EXPECT_EQ(ovl_.Read("/etc/a"), "new");
  EXPECT_TRUE(S_ISREG(upper_.Stat("/etc/a")->st_mode));
  // A new file has an inode number of its own.
  EXPECT_NE(ovl_.Stat("/etc/a")->st_ino, lower_.Stat("/etc/a")->st_ino);
  // The guest cannot make a whiteout.
  OVL_EXPECT_ERRNO(vfs::MknodAt(ovl_.Base(), "/etc/wh", S_IFCHR | 0600, 0, 0),
                   kEPERM);
  OVL_ASSERT_OK(vfs::MknodAt(ovl_.Base(), "/etc/null", S_IFCHR | 0600,
                             vfs::MakeDev(1, 3), 0));
  EXPECT_EQ(ovl_.List("/etc"), (std::vector<std::string>{"a", "b", "null"}));
}

TEST_F(OverlayFsTest, RmdirOfMergedDirectoryThatOnlyLooksEmpty) {
  Mount();
  OVL_EXPECT_ERRNO(ovl_.Rmdir("/etc"), kENOTEMPTY);
  OVL_ASSERT_OK(ovl_.Unlink("/etc/a"));
  OVL_ASSERT_OK(ovl_.Unlink("/etc/b"));
  EXPECT_TRUE(ovl_.List("/etc").empty());
  OVL_ASSERT_OK(ovl_.Rmdir("/etc"));
  EXPECT_EQ(ovl_.StatErr("/etc"), kENOENT);
  EXPECT_TRUE(S_ISCHR(upper_.Stat("/etc")->st_mode));
  // mkdir over the whiteout: an opaque directory (the lower one's names
  // stay hidden).
  OVL_ASSERT_OK(ovl_.Mkdir("/etc", 0700));
  EXPECT_TRUE(ovl_.List("/etc").empty());
  EXPECT_EQ(ovl_.StatErr("/etc/a"), kENOENT);
  EXPECT_EQ(
      vfs::GetXattrAt(upper_.Base(), "/etc", true, "trusted.overlay.opaque")
          .value(),
      "y");
  OVL_EXPECT_ERRNO(
      vfs::GetXattrAt(ovl_.Base(), "/etc", true, "trusted.overlay.opaque"),
      kEOPNOTSUPP);
  OVL_ASSERT_OK(ovl_.WriteFile("/etc/a", "n"));
  EXPECT_EQ(ovl_.List("/etc"), std::vector<std::string>{"a"});
  // A lower-only empty directory.
  OVL_ASSERT_OK(ovl_.Rmdir("/empty"));
  EXPECT_EQ(ovl_.StatErr("/empty"), kENOENT);
  EXPECT_EQ(ovl_.List("/"), (std::vector<std::string>{"d", "etc", "link"}));
}

TEST_F(OverlayFsTest, RenameFilesCopiesUpAndWhitesOut) {
  Mount();
  uint64_t ino = ovl_.Stat("/etc/a")->st_ino;
  OVL_ASSERT_OK(ovl_.Rename("/etc/a", "/d/moved"));
  EXPECT_EQ(ovl_.StatErr("/etc/a"), kENOENT);
  EXPECT_EQ(ovl_.Read("/d/moved"), "lower a");
  EXPECT_EQ(ovl_.Stat("/d/moved")->st_ino, ino);
  EXPECT_TRUE(S_ISCHR(upper_.Stat("/etc/a")->st_mode));
  // Over a lower file.
  OVL_ASSERT_OK(ovl_.Rename("/d/moved", "/etc/b"));
  EXPECT_EQ(ovl_.Read("/etc/b"), "lower a");
  EXPECT_EQ(ovl_.List("/etc"), std::vector<std::string>{"b"});
  EXPECT_EQ(ovl_.List("/d"), std::vector<std::string>{"sub"});
  // Exchange of a lower and an upper file.
  OVL_ASSERT_OK(ovl_.WriteFile("/u", "upper"));
  OVL_ASSERT_OK(ovl_.Rename("/u", "/d/sub/x", RENAME_EXCHANGE));
  EXPECT_EQ(ovl_.Read("/u"), "xx");
  EXPECT_EQ(ovl_.Read("/d/sub/x"), "upper");
  OVL_EXPECT_ERRNO(ovl_.Rename("/u", "/etc/b", RENAME_NOREPLACE), kEEXIST);
}

TEST_F(OverlayFsTest, RenameDirectories) {
  Mount();
  // Without redirect_dir, Linux refuses to move a directory that has a
  // lower layer.
  OVL_EXPECT_ERRNO(ovl_.Rename("/d", "/e"), kEXDEV);
  OVL_EXPECT_ERRNO(ovl_.Rename("/empty", "/e"), kEXDEV);
  // Pure upper directories move; into a merged parent they become opaque.
  OVL_ASSERT_OK(ovl_.Mkdir("/n"));
  OVL_ASSERT_OK(ovl_.WriteFile("/n/f", "f"));
  OVL_ASSERT_OK(ovl_.Rename("/n", "/d/n"));
  EXPECT_EQ(ovl_.Read("/d/n/f"), "f");
  EXPECT_EQ(ovl_.StatErr("/n"), kENOENT);
  // Over an empty lower directory: the lower directory never merges in.
  OVL_ASSERT_OK(ovl_.Rename("/d/n", "/empty"));
  EXPECT_EQ(ovl_.List("/empty"), std::vector<std::string>{"f"});
  // Over a merged directory that only looks empty.
  OVL_ASSERT_OK(ovl_.Unlink("/d/sub/x"));
  OVL_ASSERT_OK(ovl_.Mkdir("/m"));
  OVL_ASSERT_OK(ovl_.Rename("/m", "/d/sub"));
  EXPECT_TRUE(ovl_.List("/d/sub").empty());
  EXPECT_EQ(ovl_.StatErr("/d/sub/x"), kENOENT);
}

TEST_F(OverlayFsTest, OpenFilesAcrossCopyUp) {
  Mount();
  auto ro = ovl_.Open("/etc/a", O_RDONLY);
  ASSERT_TRUE(ro.ok());
  std::shared_ptr<mm::Mappable> lower_map = (*ro)->GetMappable();
  auto lf = lower_.Open("/etc/a", O_RDONLY);
  ASSERT_TRUE(lf.ok());
  EXPECT_EQ(lower_map, (*lf)->GetMappable());
  uint8_t buf[3];
  vfs::IoContext ctx;
  ASSERT_EQ((*ro)->Read(ctx, absl::MakeSpan(buf)).value(), 3u);
  // Copy-up through another description.
  OVL_ASSERT_OK(ovl_.WriteFile("/etc/a", "UPPER DATA", O_WRONLY));
  // Linux >= 4.19: reads of a description opened before the copy-up see
  // the upper file, at the same offset.
  EXPECT_EQ(Tree::ReadAll(**ro), "ER DATA");
  // mmap of that description still maps the lower file (ovl_mmap).
  EXPECT_EQ((*ro)->GetMappable(), lower_map);
  auto rw = ovl_.Open("/etc/a", O_RDWR);
  ASSERT_TRUE(rw.ok());
  EXPECT_NE((*rw)->GetMappable(), lower_map);
  auto uf = upper_.Open("/etc/a", O_RDONLY);
  EXPECT_EQ((*rw)->GetMappable(), (*uf)->GetMappable());
  // fstat shows the overlay inode.
  EXPECT_EQ((*ro)->Stat()->st_dev, ovl_fs_->dev());
  EXPECT_EQ((*ro)->Stat()->st_size, 10);
}

TEST_F(OverlayFsTest, HardLinkGroupsStayTogether) {
  OVL_ASSERT_OK(lower_.Link("/etc/a", "/etc/a2"));
  Mount();
  auto st = ovl_.Stat("/etc/a2");
  EXPECT_EQ(st->st_nlink, 2u);
  EXPECT_EQ(st->st_ino, ovl_.Stat("/etc/a")->st_ino);
  OVL_ASSERT_OK(ovl_.WriteFile("/etc/a", "changed", O_WRONLY | O_TRUNC));
  EXPECT_EQ(ovl_.Read("/etc/a2"), "changed");
  EXPECT_EQ(ovl_.Stat("/etc/a2")->st_nlink, 2u);
  EXPECT_EQ(ovl_.Stat("/etc/a2")->st_ino, st->st_ino);
  // A rename of the other link keeps the group.
  OVL_ASSERT_OK(ovl_.Rename("/etc/a2", "/etc/a3"));
  EXPECT_EQ(ovl_.Read("/etc/a3"), "changed");
  OVL_ASSERT_OK(ovl_.Unlink("/etc/a"));
  EXPECT_EQ(ovl_.Stat("/etc/a3")->st_nlink, 1u);
  // New links of a copied-up file.
  OVL_ASSERT_OK(ovl_.Link("/etc/a3", "/etc/a4"));
  EXPECT_EQ(ovl_.Stat("/etc/a4")->st_nlink, 2u);
  EXPECT_EQ(ovl_.Stat("/etc/a4")->st_ino, st->st_ino);
}

TEST_F(OverlayFsTest, GetdentsMergesWithStableResumption) {
  for (int i = 0; i < 600; ++i) {
    OVL_ASSERT_OK(lower_.WriteFile("/etc/l" + std::to_string(i), "x"));
  }
  Mount();
  std::set<std::string> want;
  for (int i = 0; i < 600; ++i) want.insert("l" + std::to_string(i));
  want.insert("a");
  want.insert("b");
  for (int i = 0; i < 600; i += 3) {
    OVL_ASSERT_OK(ovl_.Unlink("/etc/l" + std::to_string(i)));
    want.erase("l" + std::to_string(i));
  }
  for (int i = 1; i < 600; i += 5) {
    if (i % 3 == 0) continue;
    OVL_ASSERT_OK(ovl_.WriteFile("/etc/l" + std::to_string(i), "y", O_WRONLY));
  }
  for (int i = 0; i < 300; ++i) {
    OVL_ASSERT_OK(ovl_.WriteFile("/etc/u" + std::to_string(i), "u"));
    want.insert("u" + std::to_string(i));
  }
  // Read it 7 entries per getdents call; seek back to a telldir cookie.
  auto f = ovl_.Open("/etc", O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(f.ok());
  std::vector<std::string> seen;
  std::map<std::string, uint64_t> inos;
  int64_t cookie_at_100 = -1;
  for (;;) {
    int taken = 0;
    auto r = (*f)->IterDirents([&](const vfs::DirEntry& e) {
      if (taken == 7) return false;
      ++taken;
      if (e.name != "." && e.name != "..") {
        seen.emplace_back(e.name);
        inos[std::string(e.name)] = e.ino;
        if (seen.size() == 100) cookie_at_100 = e.next_offset;
      }
      return true;
    });
    ASSERT_TRUE(r.ok());
    if (taken == 0) break;
  }
  std::set<std::string> got(seen.begin(), seen.end());
  EXPECT_EQ(got.size(), seen.size()) << "duplicates";
  EXPECT_EQ(got, want);
  for (const auto& [name, ino] : inos) {
    EXPECT_EQ(ovl_.Stat("/etc/" + name)->st_ino, ino) << name;
  }
  ASSERT_GT(cookie_at_100, 0);
  ASSERT_TRUE((*f)->Seek(cookie_at_100, SEEK_SET).ok());
  std::vector<std::string> rest;
  ASSERT_TRUE((*f)->IterDirents([&](const vfs::DirEntry& e) {
                    rest.emplace_back(e.name);
                    return true;
                  })
                  .ok());
  EXPECT_EQ(rest, std::vector<std::string>(seen.begin() + 100, seen.end()));
}

TEST_F(OverlayFsTest, ReaddirWhileRemovingEverything) {
  for (int i = 0; i < 100; ++i) {
    OVL_ASSERT_OK(lower_.WriteFile("/d/f" + std::to_string(i), "x"));
  }
  Mount();
  OVL_ASSERT_OK(ovl_.WriteFile("/d/new", "n"));
  // rm -r: read a few names, remove them, read on.
  auto f = ovl_.Open("/d", O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(f.ok());
  for (;;) {
    std::vector<std::string> names;
    ASSERT_TRUE((*f)->IterDirents([&](const vfs::DirEntry& e) {
                      if (names.size() == 10) return false;
                      names.emplace_back(e.name);
                      return true;
                    })
                    .ok());
    if (names.empty()) break;
    for (const std::string& n : names) {
      if (n == "." || n == "..") continue;
      if (n == "sub") {
        OVL_ASSERT_OK(ovl_.Unlink("/d/sub/x"));
        OVL_ASSERT_OK(ovl_.Rmdir("/d/sub"));
      } else {
        OVL_ASSERT_OK(ovl_.Unlink("/d/" + n));
      }
    }
  }
  EXPECT_TRUE(ovl_.List("/d").empty());
  OVL_ASSERT_OK(ovl_.Rmdir("/d"));
  EXPECT_EQ(lower_.List("/d").size(), 101u);
}

TEST_F(OverlayFsTest, StatfsIsTheUppersFreeSpacePlusTheLowersUse) {
  Mount();
  auto st = vfs::StatFsAt(ovl_.Base(), "/etc");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->type, kOverlayMagic);
  const vfs::FsStats upper = upper_fs_->StatFs();
  const vfs::FsStats lower = lower_fs_->StatFs();
  ASSERT_EQ(lower.frsize, upper.frsize);
  const uint64_t lower_used = lower.blocks - lower.blocks_free;
  EXPECT_GT(lower.files - lower.files_free, 0u);
  EXPECT_EQ(st->blocks, upper.blocks + lower_used);
  EXPECT_EQ(st->blocks_free, upper.blocks_free);
  EXPECT_EQ(st->blocks_avail, upper.blocks_avail);
  EXPECT_EQ(st->files, upper.files + (lower.files - lower.files_free));
  EXPECT_EQ(st->files_free, upper.files_free);
  // Used (total - free) is never negative, and grows with a write.
  EXPECT_GE(st->blocks, st->blocks_free);
  OVL_ASSERT_OK(ovl_.WriteFile("/new", std::string(8192, 'x')));
  auto after = vfs::StatFsAt(ovl_.Base(), "/");
  ASSERT_TRUE(after.ok());
  EXPECT_LT(after->blocks_free, st->blocks_free);
}

TEST_F(OverlayFsTest, PermissionsAreCheckedBeforeCopyUp) {
  Mount();
  Tree user(ns_->Root());
  user.creds_ = kernel::Credentials::User(1000, 1000);
  OVL_EXPECT_ERRNO(user.Open("/etc/a", O_WRONLY), kEACCES);
  OVL_EXPECT_ERRNO(user.Unlink("/etc/a"), kEACCES);
  OVL_EXPECT_ERRNO(user.Mkdir("/d/x"), kEACCES);
  EXPECT_EQ(user.Read("/etc/a"), "lower a");
  EXPECT_EQ(ovl_fs_->copy_ups(), 0u);
  EXPECT_TRUE(upper_.List("/").empty());
}

TEST_F(OverlayFsTest, MergedDirectoryAttributes) {
  Mount();
  OVL_ASSERT_OK(ovl_.WriteFile("/d/new", "n"));
  auto st = ovl_.Stat("/d");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->st_nlink, 1u);  // merged (ovl_getattr)
  EXPECT_EQ(st->st_ino, lower_.Stat("/d")->st_ino);
  EXPECT_EQ(st->st_mode, S_IFDIR | 0750u);
  EXPECT_EQ(ovl_.Stat("/d/sub")->st_nlink, lower_.Stat("/d/sub")->st_nlink);
}

TEST_F(OverlayFsTest, TmpfileAndLinkat) {
  Mount();
  auto f = vfs::OpenAt(ovl_.Base(), "/etc", O_TMPFILE | O_RDWR, 0600, 0);
  ASSERT_TRUE(f.ok()) << f.error().name();
  ASSERT_TRUE(Tree::WriteAll(**f, "tmp").ok());
  EXPECT_EQ((*f)->Stat()->st_nlink, 0u);
}

}  // namespace
}  // namespace sandbox::fs::overlay
