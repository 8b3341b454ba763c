// Name operations over tmpfs (vfs/operations.h): open with O_CREAT,
// mkdir, mknod, symlink, link, unlink, rmdir, rename, readlink, getdents.
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/testing.h"

namespace sandbox::fs::tmpfs {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

class NameiTest : public TmpfsTest {
 protected:
  abi::Stat Stat(std::string_view path, int flags = 0) {
    auto st = vfs::StatAt(Base(), path, flags);
    EXPECT_TRUE(st.ok()) << path;
    return st.ok() ? st.value() : abi::Stat{};
  }
  KResult<void> Unlink(std::string_view p) {
    return vfs::UnlinkAt(Base(), p, 0);
  }
  KResult<void> Rmdir(std::string_view p) {
    return vfs::UnlinkAt(Base(), p, AT_REMOVEDIR);
  }
  KResult<void> Rename(std::string_view a, std::string_view b,
                       uint32_t flags = 0) {
    return vfs::RenameAt(Base(), a, Base(), b, flags);
  }
  KResult<void> Link(std::string_view a, std::string_view b, int flags = 0) {
    return vfs::LinkAt(Base(), a, Base(), b, flags);
  }
  std::string Contents(std::string_view path) {
    auto f = Open(path, O_RDONLY);
    EXPECT_TRUE(f.ok()) << path;
    return f.ok() ? ReadAll(**f) : "";
  }
};

TEST_F(NameiTest, OpenCreate) {
  auto f = Open("/new", O_CREAT | O_RDWR, 0666);
  ASSERT_OK(f);
  abi::Stat st = Stat("/new");
  EXPECT_EQ(st.st_mode, S_IFREG | 0644u);  // umask 022
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_ERRNO(Open("/new", O_CREAT | O_EXCL | O_RDWR), kEEXIST);
  EXPECT_OK(Open("/new", O_CREAT | O_RDWR));
  EXPECT_ERRNO(Open("/missing", O_RDONLY), kENOENT);
  EXPECT_ERRNO(Open("/", O_CREAT | O_RDWR), kEISDIR);
  EXPECT_ERRNO(Open("/newdir/", O_CREAT | O_RDWR), kEISDIR);
  EXPECT_ERRNO(Open("/x", O_CREAT | O_DIRECTORY | O_RDWR), kEINVAL);
  ASSERT_OK(Mkdir("/d"));
  EXPECT_ERRNO(Open("/d", O_CREAT | O_RDONLY), kEISDIR);
  EXPECT_ERRNO(Open("/d", O_WRONLY), kEISDIR);
  EXPECT_ERRNO(Open("/d", O_RDONLY | O_TRUNC), kEISDIR);
  EXPECT_OK(Open("/d", O_RDONLY));
}

TEST_F(NameiTest, OpenTmpfile) {
  ASSERT_OK(Mkdir("/tmp", 0777));
  uint64_t files = List("/tmp").size();
  auto f = Open("/tmp", O_TMPFILE | O_RDWR, 0600);
  ASSERT_OK(f);
  vfs::IoContext ctx;
  ASSERT_OK((*f)->Write(ctx, absl::Span<const uint8_t>(
                                 reinterpret_cast<const uint8_t*>("tmp"), 3)));
  abi::Stat st = (*f)->Stat().value();
  EXPECT_EQ(st.st_nlink, 0u);
  EXPECT_EQ(st.st_mode, S_IFREG | 0600u);
  EXPECT_EQ(List("/tmp").size(), files);  // unnamed
  // Linked into the tree with linkat(fd, "", AT_EMPTY_PATH).
  vfs::ResolveBase from = Base();
  from.start = (*f)->vd();
  ASSERT_OK(vfs::LinkAt(from, "", Base(), "/tmp/named", AT_EMPTY_PATH));
  EXPECT_EQ(Contents("/tmp/named"), "tmp");
  EXPECT_EQ(Stat("/tmp/named").st_nlink, 1u);
  // O_EXCL: never linkable.
  auto ex = Open("/tmp", O_TMPFILE | O_RDWR | O_EXCL, 0600);
  ASSERT_OK(ex);
  from.start = (*ex)->vd();
  EXPECT_ERRNO(vfs::LinkAt(from, "", Base(), "/tmp/x", AT_EMPTY_PATH), kENOENT);
  // Without CAP_DAC_READ_SEARCH, AT_EMPTY_PATH is refused.
  vfs::ResolveBase ufrom = Base(user_);
  ufrom.start = (*f)->vd();
  EXPECT_ERRNO(vfs::LinkAt(ufrom, "", Base(user_), "/tmp/y", AT_EMPTY_PATH),
               kENOENT);
  EXPECT_ERRNO(Open("/tmp", O_TMPFILE | O_RDONLY), kEINVAL);
  EXPECT_ERRNO(Open("/tmp", O_TMPFILE | O_CREAT | O_RDWR), kEINVAL);
  WriteFile("/f", "");
  EXPECT_ERRNO(Open("/f", O_TMPFILE | O_RDWR), kENOTDIR);
  EXPECT_ERRNO(Open("/nope", O_TMPFILE | O_RDWR), kENOENT);
  EXPECT_ERRNO(OpenAs(user_, "/", O_TMPFILE | O_RDWR), kEACCES);
  // An unlinked tmpfile's pages go when the last reference does.
  ASSERT_OK((*ex)->Write(ctx, absl::Span<const uint8_t>(
                                  reinterpret_cast<const uint8_t*>("x"), 1)));
  uint64_t before = mf_->AllocatedBytes();
  from.start = {};
  ex->reset();
  EXPECT_EQ(mf_->AllocatedBytes(), before - 4096);
}

TEST_F(NameiTest, OpenCreateThroughSymlinks) {
  ASSERT_OK(Symlink("target", "/dangling"));
  // O_EXCL never follows: the link itself exists.
  EXPECT_ERRNO(Open("/dangling", O_CREAT | O_EXCL | O_RDWR), kEEXIST);
  EXPECT_ERRNO(Open("/dangling", O_CREAT | O_NOFOLLOW | O_RDWR), kELOOP);
  // Without O_EXCL the target is created.
  ASSERT_OK(Open("/dangling", O_CREAT | O_RDWR));
  EXPECT_TRUE(S_ISREG(Stat("/target").st_mode));
  ASSERT_OK(Symlink("/nodir/x", "/bad"));
  EXPECT_ERRNO(Open("/bad", O_CREAT | O_RDWR), kENOENT);
}

TEST_F(NameiTest, OpenModeOfNewFileIsNotChecked) {
  // A file created with mode 0 can be opened read-write by its creator.
  ASSERT_OK(Mkdir("/tmp", 0777));
  EXPECT_OK(OpenAs(user_, "/tmp/f", O_CREAT | O_RDWR, 0));
  EXPECT_ERRNO(OpenAs(user_, "/tmp/f", O_RDWR), kEACCES);
  EXPECT_OK(Open("/tmp/f", O_RDWR));  // root: DAC_OVERRIDE
}

TEST_F(NameiTest, OpenAccessChecks) {
  WriteFile("/ro", "x", 0444);
  WriteFile("/wo", "x");
  ASSERT_OK(vfs::ChmodAt(Base(), "/wo", 0222, 0));
  EXPECT_OK(OpenAs(user_, "/ro", O_RDONLY));
  EXPECT_ERRNO(OpenAs(user_, "/ro", O_WRONLY), kEACCES);
  EXPECT_ERRNO(OpenAs(user_, "/ro", O_RDONLY | O_TRUNC), kEACCES);
  EXPECT_ERRNO(OpenAs(user_, "/wo", O_RDONLY), kEACCES);
  EXPECT_OK(OpenAs(user_, "/wo", O_WRONLY));
  EXPECT_ERRNO(OpenAs(user_, "/ro", O_RDONLY | O_NOATIME), kEPERM);
  // Creating needs write+search on the directory.
  EXPECT_ERRNO(OpenAs(user_, "/new", O_CREAT | O_RDWR), kEACCES);
  // O_PATH needs no permission on the file.
  EXPECT_OK(OpenAs(user_, "/wo", O_PATH));
}

TEST_F(NameiTest, OpenTruncate) {
  WriteFile("/f", "hello");
  ASSERT_OK(Open("/f", O_WRONLY | O_TRUNC));
  EXPECT_EQ(Stat("/f").st_size, 0);
  EXPECT_EQ(Contents("/f"), "");
}

TEST_F(NameiTest, Mkdir) {
  ASSERT_OK(Mkdir("/d", 0777));
  abi::Stat st = Stat("/d");
  EXPECT_EQ(st.st_mode, S_IFDIR | 0777u);  // umask 0 in the helper
  EXPECT_EQ(st.st_nlink, 2u);
  EXPECT_EQ(Stat("/").st_nlink, 3u);
  EXPECT_ERRNO(Mkdir("/d"), kEEXIST);
  EXPECT_ERRNO(Mkdir("/"), kEEXIST);
  EXPECT_ERRNO(Mkdir("/d/."), kEEXIST);
  EXPECT_ERRNO(Mkdir("/d/.."), kEEXIST);
  EXPECT_ERRNO(Mkdir("/x/y"), kENOENT);
  EXPECT_OK(Mkdir("/d/sub/"));  // a trailing slash is fine for mkdir
  EXPECT_ERRNO(vfs::MkdirAt(Base(user_), "/u", 0777, 0), kEACCES);
  // EEXIST wins over EACCES.
  EXPECT_ERRNO(vfs::MkdirAt(Base(user_), "/d", 0777, 0), kEEXIST);
  WriteFile("/f", "");
  EXPECT_ERRNO(Mkdir("/f/x"), kENOTDIR);
}

TEST_F(NameiTest, Mknod) {
  ASSERT_OK(vfs::MknodAt(Base(), "/fifo", S_IFIFO | 0666, 0, 022));
  EXPECT_EQ(Stat("/fifo").st_mode, S_IFIFO | 0644u);
  ASSERT_OK(vfs::MknodAt(Base(), "/reg", 0644, 0, 0));
  EXPECT_TRUE(S_ISREG(Stat("/reg").st_mode));
  EXPECT_ERRNO(vfs::MknodAt(Base(), "/dir", S_IFDIR | 0755, 0, 0), kEPERM);
  EXPECT_ERRNO(vfs::MknodAt(Base(), "/bad", 0170000, 0, 0), kEINVAL);
  ASSERT_OK(Mkdir("/tmp", 0777));
  EXPECT_ERRNO(vfs::MknodAt(Base(user_), "/tmp/c", S_IFCHR | 0666, 0x0103, 0),
               kEPERM);
  ASSERT_OK(vfs::MknodAt(Base(), "/c", S_IFCHR | 0666, 0x0103, 0));
  EXPECT_EQ(Stat("/c").st_rdev, 0x0103u);
  EXPECT_ERRNO(vfs::MknodAt(Base(), "/fifo2/", S_IFIFO | 0666, 0, 0), kENOENT);
}

TEST_F(NameiTest, SymlinkAndReadlink) {
  ASSERT_OK(Symlink("some/where", "/l"));
  EXPECT_EQ(vfs::ReadlinkAt(Base(), "/l").value(), "some/where");
  abi::Stat st = Stat("/l", AT_SYMLINK_NOFOLLOW);
  EXPECT_EQ(st.st_mode, S_IFLNK | 0777u);
  EXPECT_EQ(st.st_size, 10);
  EXPECT_ERRNO(Symlink("", "/empty"), kENOENT);
  EXPECT_ERRNO(Symlink("x", "/l"), kEEXIST);
  EXPECT_ERRNO(Symlink(std::string(vfs::kPathMax, 'a'), "/long"),
               kENAMETOOLONG);
  WriteFile("/f", "");
  EXPECT_ERRNO(vfs::ReadlinkAt(Base(), "/f"), kEINVAL);
  EXPECT_ERRNO(vfs::ReadlinkAt(Base(), "/nope"), kENOENT);
  // An empty path reads the start (AT_EMPTY_PATH implied).
  vfs::ResolveBase b = Base();
  b.start = vfs::Resolve(Base(), "/l", {.follow_final = false}).value();
  EXPECT_EQ(vfs::ReadlinkAt(b, "").value(), "some/where");
  b.start = root_vd_;
  EXPECT_ERRNO(vfs::ReadlinkAt(b, ""), kENOENT);
}

TEST_F(NameiTest, LinkAndUnlink) {
  WriteFile("/f", "data");
  ASSERT_OK(Link("/f", "/g"));
  EXPECT_EQ(Stat("/f").st_nlink, 2u);
  EXPECT_EQ(Stat("/f").st_ino, Stat("/g").st_ino);
  EXPECT_ERRNO(Link("/f", "/g"), kEEXIST);
  EXPECT_ERRNO(Link("/nope", "/h"), kENOENT);
  ASSERT_OK(Mkdir("/d"));
  EXPECT_ERRNO(Link("/d", "/d2"), kEPERM);
  ASSERT_OK(Symlink("f", "/sl"));
  ASSERT_OK(Link("/sl", "/sl2"));  // links the symlink itself
  EXPECT_TRUE(S_ISLNK(Stat("/sl2", AT_SYMLINK_NOFOLLOW).st_mode));
  ASSERT_OK(Link("/sl", "/sl3", AT_SYMLINK_FOLLOW));
  EXPECT_EQ(Stat("/sl3", AT_SYMLINK_NOFOLLOW).st_ino, Stat("/f").st_ino);
  EXPECT_ERRNO(Link("/f", "/x", 0x1), kEINVAL);

  // Unlink keeps open files readable.
  auto open = Open("/f", O_RDONLY);
  ASSERT_OK(open);
  ASSERT_OK(Unlink("/f"));
  ASSERT_OK(Unlink("/g"));
  ASSERT_OK(Unlink("/sl3"));
  EXPECT_EQ((*open)->Stat()->st_nlink, 0u);
  EXPECT_EQ(ReadAll(**open), "data");
  EXPECT_ERRNO(Unlink("/f"), kENOENT);
  EXPECT_ERRNO(Unlink("/d"), kEISDIR);
  EXPECT_ERRNO(Unlink("/"), kEISDIR);
  WriteFile("/f", "");
  EXPECT_ERRNO(Unlink("/f/"), kENOTDIR);
  EXPECT_ERRNO(Unlink("/d/"), kEISDIR);
  EXPECT_ERRNO(vfs::UnlinkAt(Base(), "/f", 0x1), kEINVAL);
}

TEST_F(NameiTest, Rmdir) {
  ASSERT_OK(Mkdir("/d"));
  ASSERT_OK(Mkdir("/d/sub"));
  EXPECT_ERRNO(Rmdir("/d"), kENOTEMPTY);
  EXPECT_ERRNO(Rmdir("/d/sub/."), kEINVAL);
  EXPECT_ERRNO(Rmdir("/d/sub/.."), kENOTEMPTY);
  EXPECT_ERRNO(Rmdir("/"), kEBUSY);
  WriteFile("/f", "");
  EXPECT_ERRNO(Rmdir("/f"), kENOTDIR);
  EXPECT_EQ(Stat("/d").st_nlink, 3u);
  ASSERT_OK(Rmdir("/d/sub/"));
  EXPECT_EQ(Stat("/d").st_nlink, 2u);
  ASSERT_OK(Rmdir("/d"));
  EXPECT_ERRNO(Rmdir("/d"), kENOENT);
  EXPECT_EQ(Stat("/").st_nlink, 2u);
}

TEST_F(NameiTest, StickyDirectory) {
  ASSERT_OK(Mkdir("/tmp", 01777));
  ASSERT_OK(OpenAs(user_, "/tmp/mine", O_CREAT | O_RDWR));
  EXPECT_ERRNO(vfs::UnlinkAt(Base(user2_), "/tmp/mine", 0), kEPERM);
  EXPECT_ERRNO(
      vfs::RenameAt(Base(user2_), "/tmp/mine", Base(user2_), "/tmp/theirs", 0),
      kEPERM);
  EXPECT_OK(vfs::UnlinkAt(Base(user_), "/tmp/mine", 0));
  // Without the sticky bit anyone with write permission may.
  ASSERT_OK(Mkdir("/pub", 0777));
  ASSERT_OK(OpenAs(user_, "/pub/mine", O_CREAT | O_RDWR));
  EXPECT_OK(vfs::UnlinkAt(Base(user2_), "/pub/mine", 0));
  // No write permission on the directory: EACCES.
  ASSERT_OK(Mkdir("/ro", 0755));
  WriteFile("/ro/f", "");
  EXPECT_ERRNO(vfs::UnlinkAt(Base(user_), "/ro/f", 0), kEACCES);
}

TEST_F(NameiTest, MountPointsAreBusy) {
  ASSERT_OK(Mkdir("/mnt"));
  ASSERT_OK(Mkdir("/other"));
  ASSERT_OK(ns_->MountAt(vfs::Resolve(Base(), "/mnt", {}).value(),
                         Filesystem::Create(*mf_), 0));
  EXPECT_ERRNO(Rmdir("/mnt"), kEBUSY);
  EXPECT_ERRNO(Rename("/mnt", "/mnt2"), kEBUSY);
  EXPECT_ERRNO(Rename("/other", "/mnt"), kEBUSY);
  WriteFile("/f", "");
  WriteFile("/mnt/g", "");
  EXPECT_ERRNO(Rename("/f", "/mnt/f"), kEXDEV);
  EXPECT_ERRNO(Link("/f", "/mnt/f"), kEXDEV);
  EXPECT_ERRNO(Link("/mnt/g", "/g"), kEXDEV);
}

TEST_F(NameiTest, ReadOnlyMount) {
  ASSERT_OK(Mkdir("/ro"));
  auto fs = Filesystem::Create(*mf_);
  auto m = ns_->MountAt(vfs::Resolve(Base(), "/ro", {}).value(), fs, 0);
  ASSERT_OK(m);
  ASSERT_OK(Mkdir("/ro/d"));
  WriteFile("/ro/f", "x");
  (*m)->set_flags(vfs::kMountReadOnly);
  EXPECT_ERRNO(Mkdir("/ro/e"), kEROFS);
  EXPECT_ERRNO(Mkdir("/ro/d"), kEEXIST);  // EEXIST first
  EXPECT_ERRNO(Open("/ro/g", O_CREAT | O_RDWR), kEROFS);
  EXPECT_ERRNO(Open("/ro/f", O_RDWR), kEROFS);
  EXPECT_OK(Open("/ro/f", O_RDONLY));
  EXPECT_ERRNO(Unlink("/ro/f"), kEROFS);
  EXPECT_ERRNO(Rename("/ro/f", "/ro/g"), kEROFS);
  EXPECT_ERRNO(vfs::ChmodAt(Base(), "/ro/f", 0600, 0), kEROFS);
  EXPECT_ERRNO(vfs::TruncateAt(Base(), "/ro/f", 0), kEROFS);
  EXPECT_ERRNO(vfs::AccessAt(Base(), "/ro/f", W_OK, 0), kEROFS);
}

TEST_F(NameiTest, RenameFiles) {
  WriteFile("/a", "A");
  WriteFile("/b", "B");
  ASSERT_OK(Rename("/a", "/c"));
  EXPECT_EQ(Contents("/c"), "A");
  EXPECT_ERRNO(Rename("/a", "/d"), kENOENT);
  ASSERT_OK(Rename("/c", "/b"));  // replaces
  EXPECT_EQ(Contents("/b"), "A");
  WriteFile("/c", "C");
  EXPECT_ERRNO(Rename("/c", "/b", RENAME_NOREPLACE), kEEXIST);
  ASSERT_OK(Rename("/c", "/b", RENAME_EXCHANGE));
  EXPECT_EQ(Contents("/b"), "C");
  EXPECT_EQ(Contents("/c"), "A");
  EXPECT_ERRNO(Rename("/c", "/none", RENAME_EXCHANGE), kENOENT);
  EXPECT_ERRNO(Rename("/c", "/b", RENAME_EXCHANGE | RENAME_NOREPLACE), kEINVAL);
  EXPECT_ERRNO(Rename("/c", "/b", 0x100), kEINVAL);
  // Hard links to the same inode: a no-op that succeeds.
  ASSERT_OK(Link("/c", "/c2"));
  ASSERT_OK(Rename("/c", "/c2"));
  EXPECT_OK(vfs::StatAt(Base(), "/c", 0));
  EXPECT_ERRNO(Rename("/c/", "/e"), kENOTDIR);
  EXPECT_ERRNO(Rename("/c", "/e/"), kENOTDIR);
  EXPECT_ERRNO(Rename("/c", "/."), kEBUSY);
  EXPECT_ERRNO(Rename("/", "/x"), kEBUSY);
}

TEST_F(NameiTest, RenameDirectories) {
  ASSERT_OK(Mkdir("/a"));
  ASSERT_OK(Mkdir("/a/b"));
  ASSERT_OK(Mkdir("/e"));
  WriteFile("/f", "");
  EXPECT_ERRNO(Rename("/a", "/a/b/c"), kEINVAL);
  EXPECT_ERRNO(Rename("/a", "/a/c"), kEINVAL);
  EXPECT_ERRNO(Rename("/a/b", "/a"), kENOTEMPTY);
  EXPECT_ERRNO(Rename("/a", "/f"), kENOTDIR);
  EXPECT_ERRNO(Rename("/f", "/a"), kEISDIR);
  EXPECT_ERRNO(Rename("/e", "/a"), kENOTEMPTY);
  // Keep an open handle on /a/b and a cwd inside: they follow the move.
  cwd_ = vfs::Resolve(Base(), "/a/b", {}).value();
  ASSERT_OK(Rename("/a/b", "/e/b2"));
  EXPECT_EQ(vfs::GetCwd(root_vd_, cwd_).value(), "/e/b2");
  EXPECT_EQ(Stat("/a").st_nlink, 2u);
  EXPECT_EQ(Stat("/e").st_nlink, 3u);
  EXPECT_EQ(Stat("..").st_ino, Stat("/e").st_ino);
  cwd_ = {};
  // Replacing an empty directory.
  ASSERT_OK(Mkdir("/empty"));
  ASSERT_OK(Rename("/e", "/empty"));
  EXPECT_EQ(Stat("/empty/b2").st_nlink, 2u);
  EXPECT_EQ(Stat("/").st_nlink, 4u);  // ., .., a, empty
  EXPECT_THAT(List("/"), UnorderedElementsAre(".", "..", "a", "empty", "f"));
  // Exchange a file and a directory across parents.
  WriteFile("/a/file", "x");
  ASSERT_OK(Rename("/a/file", "/empty/b2", RENAME_EXCHANGE));
  EXPECT_TRUE(S_ISDIR(Stat("/a/file").st_mode));
  EXPECT_TRUE(S_ISREG(Stat("/empty/b2").st_mode));
  EXPECT_EQ(Stat("/a").st_nlink, 3u);
  EXPECT_EQ(Stat("/empty").st_nlink, 2u);
  EXPECT_EQ(Stat("/a/file/..").st_ino, Stat("/a").st_ino);
}

TEST_F(NameiTest, RenameDirectoryNeedsWriteOnItWhenMoving) {
  ASSERT_OK(Mkdir("/pub", 0777));
  ASSERT_OK(Mkdir("/pub/x", 0777));
  ASSERT_OK(Mkdir("/pub/dst", 0777));
  ASSERT_OK(Mkdir("/pub/rootdir", 0555));
  // Same parent: no write needed on the directory itself.
  EXPECT_OK(vfs::RenameAt(Base(user_), "/pub/rootdir", Base(user_),
                          "/pub/rootdir2", 0));
  EXPECT_ERRNO(
      vfs::RenameAt(Base(user_), "/pub/rootdir2", Base(user_), "/pub/dst/r", 0),
      kEACCES);
}

TEST_F(NameiTest, GetdentsListsDotsAndEntries) {
  ASSERT_OK(Mkdir("/d"));
  WriteFile("/d/f", "");
  ASSERT_OK(Mkdir("/d/s"));
  ASSERT_OK(Symlink("x", "/d/l"));
  auto f = Open("/d", O_RDONLY | O_DIRECTORY);
  ASSERT_OK(f);
  std::vector<std::pair<std::string, uint8_t>> got;
  std::vector<uint64_t> inos;
  ASSERT_OK((*f)->IterDirents([&](const vfs::DirEntry& e) {
    got.emplace_back(std::string(e.name), e.type);
    inos.push_back(e.ino);
    return true;
  }));
  EXPECT_THAT(got, ElementsAre(std::pair<std::string, uint8_t>(".", DT_DIR),
                               std::pair<std::string, uint8_t>("..", DT_DIR),
                               std::pair<std::string, uint8_t>("f", DT_REG),
                               std::pair<std::string, uint8_t>("s", DT_DIR),
                               std::pair<std::string, uint8_t>("l", DT_LNK)));
  EXPECT_EQ(inos[0], Stat("/d").st_ino);
  EXPECT_EQ(inos[1], Stat("/").st_ino);
  EXPECT_EQ(inos[2], Stat("/d/f").st_ino);
  // Exhausted: nothing more until rewound.
  int more = 0;
  ASSERT_OK(
      (*f)->IterDirents([&](const vfs::DirEntry&) { return ++more, true; }));
  EXPECT_EQ(more, 0);
  ASSERT_OK((*f)->Seek(0, SEEK_SET));
  EXPECT_EQ(List("/d").size(), 5u);
  EXPECT_ERRNO((*f)->Seek(0, SEEK_END), kEINVAL);
  vfs::IoContext ctx;
  uint8_t b[1];
  EXPECT_ERRNO((*f)->Read(ctx, absl::MakeSpan(b)), kEISDIR);
}

TEST_F(NameiTest, GetdentsOffsetsStableAcrossUnlink) {
  ASSERT_OK(Mkdir("/d"));
  for (int i = 0; i < 10; ++i) WriteFile("/d/f" + std::to_string(i), "");
  auto f = Open("/d", O_RDONLY | O_DIRECTORY);
  ASSERT_OK(f);
  std::vector<std::string> first;
  int64_t resume = 0;
  // Take ".", "..", f0..f3, then stop as a full buffer would.
  ASSERT_OK((*f)->IterDirents([&](const vfs::DirEntry& e) {
    if (first.size() == 6) return false;
    first.emplace_back(e.name);
    resume = e.next_offset;
    return true;
  }));
  EXPECT_THAT(first, ElementsAre(".", "..", "f0", "f1", "f2", "f3"));
  // Remove some seen and some unseen entries, add a new one.
  ASSERT_OK(Unlink("/d/f1"));
  ASSERT_OK(Unlink("/d/f3"));
  ASSERT_OK(Unlink("/d/f4"));
  ASSERT_OK(Unlink("/d/f7"));
  WriteFile("/d/new", "");
  std::vector<std::string> rest;
  ASSERT_OK((*f)->IterDirents([&](const vfs::DirEntry& e) {
    rest.emplace_back(e.name);
    return true;
  }));
  EXPECT_THAT(rest, ElementsAre("f5", "f6", "f8", "f9", "new"));
  // Seeking back to a saved cookie resumes there.
  ASSERT_OK((*f)->Seek(resume, SEEK_SET));
  rest.clear();
  ASSERT_OK((*f)->IterDirents([&](const vfs::DirEntry& e) {
    rest.emplace_back(e.name);
    return true;
  }));
  EXPECT_THAT(rest, ElementsAre("f5", "f6", "f8", "f9", "new"));
}

TEST_F(NameiTest, AppendDirent64Layout) {
  uint8_t buf[64];
  size_t used = 0;
  vfs::DirEntry e{"abc", 7, DT_REG, 42};
  ASSERT_TRUE(vfs::AppendDirent64(absl::MakeSpan(buf), &used, e));
  EXPECT_EQ(used, 24u);  // 19 + 4 rounded to 8
  uint16_t reclen;
  memcpy(&reclen, buf + 16, 2);
  EXPECT_EQ(reclen, 24);
  EXPECT_EQ(buf[18], DT_REG);
  EXPECT_STREQ(reinterpret_cast<char*>(buf + 19), "abc");
  ASSERT_TRUE(vfs::AppendDirent64(absl::MakeSpan(buf), &used, e));
  EXPECT_FALSE(vfs::AppendDirent64(absl::MakeSpan(buf), &used, e));
  EXPECT_EQ(used, 48u);
}

}  // namespace
}  // namespace sandbox::fs::tmpfs
