// Name operations: mkdir, rmdir, unlink, rename(at2), link(at), symlink,
// readlink, mknod, on temporary files; errors as Linux gives them.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

bool Exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

TEST(NameiTest, MkdirRmdir) {
  std::string d = NewTempPath();
  ASSERT_THAT(mkdir(d.c_str(), 0755), SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(stat(d.c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_nlink, 2u);
  EXPECT_THAT(mkdir(d.c_str(), 0755), SyscallFailsWithErrno(EEXIST));
  ASSERT_THAT(mkdir((d + "/sub").c_str(), 0755), SyscallSucceeds());
  ASSERT_THAT(stat(d.c_str(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_nlink, 3u);
  EXPECT_THAT(rmdir(d.c_str()), SyscallFailsWithErrno(ENOTEMPTY));
  EXPECT_THAT(rmdir((d + "/sub/.").c_str()), SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(rmdir((d + "/sub").c_str()), SyscallSucceeds());
  ASSERT_THAT(rmdir(d.c_str()), SyscallSucceeds());
  EXPECT_FALSE(Exists(d));
  EXPECT_THAT(rmdir(d.c_str()), SyscallFailsWithErrno(ENOENT));
}

TEST(NameiTest, MkdirErrors) {
  TempPath file = TempPath::CreateFile();
  EXPECT_THAT(mkdir((file.path() + "/x").c_str(), 0755),
              SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(mkdir((NewTempPath() + "/a/b").c_str(), 0755),
              SyscallFailsWithErrno(ENOENT));
  std::string longname = TempDir() + "/" + std::string(NAME_MAX + 1, 'x');
  EXPECT_THAT(mkdir(longname.c_str(), 0755),
              SyscallFailsWithErrno(ENAMETOOLONG));
  EXPECT_THAT(mkdir("", 0755), SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(syscall(SYS_mkdir, reinterpret_cast<char*>(8), 0755),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(rmdir(file.path().c_str()), SyscallFailsWithErrno(ENOTDIR));
}

TEST(NameiTest, MkdirAppliesUmask) {
  std::string d = NewTempPath();
  mode_t old = umask(027);
  int r = mkdir(d.c_str(), 0777);
  umask(old);
  ASSERT_THAT(r, SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(stat(d.c_str(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  ASSERT_THAT(rmdir(d.c_str()), SyscallSucceeds());
}

TEST(NameiTest, UnlinkFileNotDirectory) {
  TempPath dir = TempPath::CreateDir();
  std::string f = dir.path() + "/f";
  FileDescriptor fd(open(f.c_str(), O_CREAT | O_RDWR, 0644));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  EXPECT_THAT(unlink(dir.path().c_str()), SyscallFailsWithErrno(EISDIR));
  EXPECT_THAT(unlinkat(AT_FDCWD, f.c_str(), AT_REMOVEDIR),
              SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(unlinkat(AT_FDCWD, f.c_str(), 0x1000),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(unlink(f.c_str()), SyscallSucceeds());
  EXPECT_THAT(unlink(f.c_str()), SyscallFailsWithErrno(ENOENT));
  // The open file lives on without a name.
  ASSERT_THAT(write(fd.get(), "abc", 3), SyscallSucceedsWithValue(3));
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_nlink, 0u);
  EXPECT_EQ(st.st_size, 3);
}

TEST(NameiTest, UnlinkatRemovesDirectoryWithFlag) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(dfd.valid());
  ASSERT_THAT(mkdirat(dfd.get(), "d", 0700), SyscallSucceeds());
  EXPECT_THAT(unlinkat(dfd.get(), "d", 0), SyscallFailsWithErrno(EISDIR));
  EXPECT_THAT(unlinkat(dfd.get(), "d", AT_REMOVEDIR), SyscallSucceeds());
  EXPECT_FALSE(Exists(dir.path() + "/d"));
}

TEST(NameiTest, RenameMovesAndReplaces) {
  TempPath dir = TempPath::CreateDir();
  std::string a = dir.path() + "/a", b = dir.path() + "/b";
  {
    FileDescriptor fd(open(a.c_str(), O_CREAT | O_WRONLY, 0644));
    ASSERT_THAT(write(fd.get(), "A", 1), SyscallSucceeds());
    FileDescriptor fd2(open(b.c_str(), O_CREAT | O_WRONLY, 0644));
  }
  struct stat sa;
  ASSERT_THAT(stat(a.c_str(), &sa), SyscallSucceeds());
  ASSERT_THAT(rename(a.c_str(), b.c_str()), SyscallSucceeds());
  EXPECT_FALSE(Exists(a));
  struct stat sb;
  ASSERT_THAT(stat(b.c_str(), &sb), SyscallSucceeds());
  EXPECT_EQ(sa.st_ino, sb.st_ino);
  EXPECT_EQ(sb.st_size, 1);
  // Renaming onto itself is a no-op.
  EXPECT_THAT(rename(b.c_str(), b.c_str()), SyscallSucceeds());
  EXPECT_THAT(rename(a.c_str(), b.c_str()), SyscallFailsWithErrno(ENOENT));
}

TEST(NameiTest, RenameDirectoryRules) {
  TempPath dir = TempPath::CreateDir();
  std::string d1 = dir.path() + "/d1", d2 = dir.path() + "/d2",
              f = dir.path() + "/f";
  ASSERT_THAT(mkdir(d1.c_str(), 0755), SyscallSucceeds());
  ASSERT_THAT(mkdir(d2.c_str(), 0755), SyscallSucceeds());
  ASSERT_THAT(mkdir((d2 + "/x").c_str(), 0755), SyscallSucceeds());
  FileDescriptor fd(open(f.c_str(), O_CREAT | O_WRONLY, 0644));
  EXPECT_THAT(rename(d1.c_str(), d2.c_str()), SyscallFailsWithErrno(ENOTEMPTY));
  EXPECT_THAT(rename(d1.c_str(), f.c_str()), SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(rename(f.c_str(), d1.c_str()), SyscallFailsWithErrno(EISDIR));
  EXPECT_THAT(rename(d1.c_str(), (d1 + "/in").c_str()),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(rmdir((d2 + "/x").c_str()), SyscallSucceeds());
  EXPECT_THAT(rename(d1.c_str(), d2.c_str()), SyscallSucceeds());
  EXPECT_FALSE(Exists(d1));
}

TEST(NameiTest, Renameat2Flags) {
  TempPath dir = TempPath::CreateDir();
  std::string a = dir.path() + "/a", b = dir.path() + "/b";
  { FileDescriptor fa(open(a.c_str(), O_CREAT | O_WRONLY, 0600)); }
  ASSERT_THAT(mkdir(b.c_str(), 0700), SyscallSucceeds());
  EXPECT_THAT(syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(),
                      RENAME_NOREPLACE),
              SyscallFailsWithErrno(EEXIST));
  EXPECT_THAT(syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(),
                      RENAME_NOREPLACE | RENAME_EXCHANGE),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(
      syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), 0x100),
      SyscallFailsWithErrno(EINVAL));
  // RENAME_EXCHANGE swaps a file and a directory.
  ASSERT_THAT(syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(),
                      RENAME_EXCHANGE),
              SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(stat(a.c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_THAT(stat(b.c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISREG(st.st_mode));
  std::string c = dir.path() + "/c";
  EXPECT_THAT(syscall(SYS_renameat2, AT_FDCWD, c.c_str(), AT_FDCWD, b.c_str(),
                      RENAME_EXCHANGE),
              SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(syscall(SYS_renameat2, AT_FDCWD, b.c_str(), AT_FDCWD, c.c_str(),
                      RENAME_NOREPLACE),
              SyscallSucceeds());
}

TEST(NameiTest, RenameWhiteoutLeavesACharacterDevice) {
  // tmpfs supports whiteouts for every user (overlayfs upper layers).
  std::string dir = "/dev/shm/namei_wh_" + std::to_string(getpid());
  ASSERT_THAT(mkdir(dir.c_str(), 0755), SyscallSucceeds());
  std::string a = dir + "/a", b = dir + "/b";
  { FileDescriptor fd(open(a.c_str(), O_CREAT | O_WRONLY, 0600)); }
  ASSERT_THAT(syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(),
                      RENAME_WHITEOUT),
              SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(lstat(a.c_str(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_mode, static_cast<mode_t>(S_IFCHR));
  EXPECT_EQ(st.st_rdev, 0u);
  ASSERT_THAT(lstat(b.c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_THAT(syscall(SYS_renameat2, AT_FDCWD, b.c_str(), AT_FDCWD, a.c_str(),
                      RENAME_WHITEOUT | RENAME_EXCHANGE),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(unlink(a.c_str()), SyscallSucceeds());
  ASSERT_THAT(unlink(b.c_str()), SyscallSucceeds());
  ASSERT_THAT(rmdir(dir.c_str()), SyscallSucceeds());
}

TEST(NameiTest, RenameAcrossTmpfsMountsIsExdev) {
  // /dev/shm is its own tmpfs; the test directory is elsewhere.
  std::string shm = "/dev/shm/namei_test_" + std::to_string(getpid());
  TempPath file = TempPath::CreateFile();
  EXPECT_THAT(rename(file.path().c_str(), shm.c_str()),
              SyscallFailsWithErrno(EXDEV));
  EXPECT_THAT(link(file.path().c_str(), shm.c_str()),
              SyscallFailsWithErrno(EXDEV));
}

TEST(NameiTest, HardLinks) {
  TempPath dir = TempPath::CreateDir();
  std::string a = dir.path() + "/a", b = dir.path() + "/b";
  { FileDescriptor fa(open(a.c_str(), O_CREAT | O_WRONLY, 0600)); }
  ASSERT_THAT(link(a.c_str(), b.c_str()), SyscallSucceeds());
  struct stat sa, sb;
  ASSERT_THAT(stat(a.c_str(), &sa), SyscallSucceeds());
  ASSERT_THAT(stat(b.c_str(), &sb), SyscallSucceeds());
  EXPECT_EQ(sa.st_ino, sb.st_ino);
  EXPECT_EQ(sa.st_nlink, 2u);
  EXPECT_THAT(link(a.c_str(), b.c_str()), SyscallFailsWithErrno(EEXIST));
  EXPECT_THAT(link(dir.path().c_str(), (dir.path() + "/d").c_str()),
              SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(linkat(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), 0x8000),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(unlink(a.c_str()), SyscallSucceeds());
  ASSERT_THAT(stat(b.c_str(), &sb), SyscallSucceeds());
  EXPECT_EQ(sb.st_nlink, 1u);
}

TEST(NameiTest, LinkatFollowsSymlinkOnlyWithFlag) {
  TempPath dir = TempPath::CreateDir();
  std::string f = dir.path() + "/f", l = dir.path() + "/l";
  { FileDescriptor fd(open(f.c_str(), O_CREAT | O_WRONLY, 0600)); }
  ASSERT_THAT(symlink(f.c_str(), l.c_str()), SyscallSucceeds());
  std::string h1 = dir.path() + "/h1", h2 = dir.path() + "/h2";
  ASSERT_THAT(linkat(AT_FDCWD, l.c_str(), AT_FDCWD, h1.c_str(), 0),
              SyscallSucceeds());
  ASSERT_THAT(
      linkat(AT_FDCWD, l.c_str(), AT_FDCWD, h2.c_str(), AT_SYMLINK_FOLLOW),
      SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(lstat(h1.c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_THAT(lstat(h2.c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST(NameiTest, SymlinkAndReadlink) {
  TempPath dir = TempPath::CreateDir();
  std::string l = dir.path() + "/l";
  ASSERT_THAT(symlink("some/target", l.c_str()), SyscallSucceeds());
  char buf[64] = {};
  EXPECT_THAT(readlink(l.c_str(), buf, sizeof(buf)),
              SyscallSucceedsWithValue(11));
  EXPECT_STREQ(buf, "some/target");
  // Truncated to the buffer, without a NUL.
  char small[4] = {'x', 'x', 'x', 'x'};
  EXPECT_THAT(readlink(l.c_str(), small, 4), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(small, 4), "some");
  EXPECT_THAT(readlink(l.c_str(), buf, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(readlink(dir.path().c_str(), buf, sizeof(buf)),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(readlink((dir.path() + "/none").c_str(), buf, sizeof(buf)),
              SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(symlink("x", l.c_str()), SyscallFailsWithErrno(EEXIST));
  EXPECT_THAT(symlink("", (dir.path() + "/e").c_str()),
              SyscallFailsWithErrno(ENOENT));
  // readlinkat with an empty path reads an O_PATH descriptor of the link.
  FileDescriptor pfd(open(l.c_str(), O_PATH | O_NOFOLLOW));
  ASSERT_TRUE(pfd.valid()) << strerror(errno);
  memset(buf, 0, sizeof(buf));
  EXPECT_THAT(readlinkat(pfd.get(), "", buf, sizeof(buf)),
              SyscallSucceedsWithValue(11));
  EXPECT_THAT(syscall(SYS_readlink, l.c_str(), reinterpret_cast<char*>(8), 10),
              SyscallFailsWithErrno(EFAULT));
}

TEST(NameiTest, SymlinkLoopIsEloop) {
  TempPath dir = TempPath::CreateDir();
  std::string a = dir.path() + "/a", b = dir.path() + "/b";
  ASSERT_THAT(symlink(b.c_str(), a.c_str()), SyscallSucceeds());
  ASSERT_THAT(symlink(a.c_str(), b.c_str()), SyscallSucceeds());
  struct stat st;
  EXPECT_THAT(stat(a.c_str(), &st), SyscallFailsWithErrno(ELOOP));
  EXPECT_THAT(open((a + "/x").c_str(), O_RDONLY), SyscallFailsWithErrno(ELOOP));
  EXPECT_THAT(lstat(a.c_str(), &st), SyscallSucceeds());
}

TEST(NameiTest, MknodRegularAndFifo) {
  TempPath dir = TempPath::CreateDir();
  std::string r = dir.path() + "/r", p = dir.path() + "/p";
  ASSERT_THAT(mknod(r.c_str(), S_IFREG | 0640, 0), SyscallSucceeds());
  ASSERT_THAT(mknod(p.c_str(), S_IFIFO | 0600, 0), SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(stat(r.c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISREG(st.st_mode));
  ASSERT_THAT(stat(p.c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_THAT(mknod((dir.path() + "/d").c_str(), S_IFDIR | 0700, 0),
              SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(mknod((dir.path() + "/bad").c_str(), 0170000 | 0600, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(mknod(r.c_str(), S_IFREG | 0600, 0),
              SyscallFailsWithErrno(EEXIST));
}

TEST(NameiTest, WithoutCapabilitiesReadOnlyDirectoryIsEacces) {
  TempPath dir = TempPath::CreateDir(0755);
  std::string f = dir.path() + "/f";
  { FileDescriptor fd(open(f.c_str(), O_CREAT | O_WRONLY, 0644)); }
  ASSERT_THAT(chmod(dir.path().c_str(), 0555), SyscallSucceeds());
  EXPECT_THAT(
      InForkedChild([&] {
        if (!DropCapabilities(false)) _exit(2);
        if (mkdir((dir.path() + "/d").c_str(), 0755) == 0 || errno != EACCES) {
          _exit(3);
        }
        if (unlink(f.c_str()) == 0 || errno != EACCES) _exit(4);
        if (rename(f.c_str(), (dir.path() + "/g").c_str()) == 0 ||
            errno != EACCES) {
          _exit(5);
        }
        if (symlink("x", (dir.path() + "/s").c_str()) == 0 || errno != EACCES) {
          _exit(6);
        }
      }),
      ExitedWithCode(0));
  ASSERT_THAT(chmod(dir.path().c_str(), 0755), SyscallSucceeds());
}

}  // namespace
}  // namespace sandbox::testutil
