// stat(2), fstat(2), lstat(2), fstatat(2) on temporary files.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

mode_t CurrentUmask() {
  mode_t m = umask(0);
  umask(m);
  return m;
}

TEST(StatTest, StatAndFstatAgree) {
  TempPath file = TempPath::CreateFile(0640);
  FileDescriptor fd(open(file.path().c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  ASSERT_THAT(write(fd.get(), "12345", 5), SyscallSucceedsWithValue(5));
  struct stat a, b;
  // (0640 & ~umask is what CreateFile asked for.)
  ASSERT_THAT(stat(file.path().c_str(), &a), SyscallSucceeds());
  ASSERT_THAT(fstat(fd.get(), &b), SyscallSucceeds());
  EXPECT_EQ(a.st_dev, b.st_dev);
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_mode, b.st_mode);
  EXPECT_EQ(a.st_size, 5);
  EXPECT_EQ(b.st_size, 5);
  EXPECT_EQ(a.st_nlink, 1u);
  EXPECT_TRUE(S_ISREG(a.st_mode));
  EXPECT_EQ(a.st_uid, geteuid());
  EXPECT_GT(a.st_blksize, 0);
}

TEST(StatTest, DirectoryIsADirectory) {
  TempPath dir = TempPath::CreateDir(0750);
  struct stat st;
  ASSERT_THAT(stat(dir.path().c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0750u & ~CurrentUmask());
  EXPECT_GE(st.st_nlink, 2u);
}

TEST(StatTest, WriteUpdatesSizeAndMtime) {
  TempPath file = TempPath::CreateFile();
  struct stat before;
  ASSERT_THAT(stat(file.path().c_str(), &before), SyscallSucceeds());
  // Make sure the clock moves past the creation time's granularity.
  struct timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, nullptr);
  FileDescriptor fd(open(file.path().c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  ASSERT_THAT(write(fd.get(), "abc", 3), SyscallSucceedsWithValue(3));
  struct stat after;
  ASSERT_THAT(fstat(fd.get(), &after), SyscallSucceeds());
  EXPECT_EQ(after.st_size, 3);
  auto ns = [](const struct timespec& t) {
    return static_cast<long long>(t.tv_sec) * 1000000000 + t.tv_nsec;
  };
  EXPECT_GE(ns(after.st_mtim), ns(before.st_mtim));
}

TEST(StatTest, LstatSeesTheSymlinkStatFollowsIt) {
  TempPath file = TempPath::CreateFile();
  std::string link = NewTempPath();
  ASSERT_THAT(symlink(file.path().c_str(), link.c_str()), SyscallSucceeds());
  struct stat l, s, f;
  ASSERT_THAT(lstat(link.c_str(), &l), SyscallSucceeds());
  ASSERT_THAT(stat(link.c_str(), &s), SyscallSucceeds());
  ASSERT_THAT(stat(file.path().c_str(), &f), SyscallSucceeds());
  EXPECT_TRUE(S_ISLNK(l.st_mode));
  EXPECT_EQ(l.st_size, static_cast<off_t>(file.path().size()));
  EXPECT_TRUE(S_ISREG(s.st_mode));
  EXPECT_EQ(s.st_ino, f.st_ino);
  EXPECT_NE(l.st_ino, f.st_ino);
  EXPECT_THAT(unlink(link.c_str()), SyscallSucceeds());
}

TEST(StatTest, DanglingSymlinkIsEnoentForStatOnly) {
  std::string link = NewTempPath();
  ASSERT_THAT(symlink("/nonexistent/target", link.c_str()), SyscallSucceeds());
  struct stat st;
  EXPECT_THAT(stat(link.c_str(), &st), SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(lstat(link.c_str(), &st), SyscallSucceeds());
  EXPECT_THAT(unlink(link.c_str()), SyscallSucceeds());
}

TEST(StatTest, Errors) {
  struct stat st;
  std::string missing = NewTempPath();
  EXPECT_THAT(stat(missing.c_str(), &st), SyscallFailsWithErrno(ENOENT));
  TempPath file = TempPath::CreateFile();
  EXPECT_THAT(stat((file.path() + "/x").c_str(), &st),
              SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(fstat(-1, &st), SyscallFailsWithErrno(EBADF));
}

TEST(StatTest, BadPointersAreEfault) {
  TempPath file = TempPath::CreateFile();
  struct stat st;
  // Bad path.
  EXPECT_THAT(
      syscall(SYS_newfstatat, AT_FDCWD, reinterpret_cast<char*>(8), &st, 0),
      SyscallFailsWithErrno(EFAULT));
  // Bad result buffer.
  EXPECT_THAT(
      syscall(SYS_stat, file.path().c_str(), reinterpret_cast<struct stat*>(8)),
      SyscallFailsWithErrno(EFAULT));
  FileDescriptor fd(open(file.path().c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  EXPECT_THAT(syscall(SYS_fstat, fd.get(), reinterpret_cast<struct stat*>(8)),
              SyscallFailsWithErrno(EFAULT));
}

TEST(StatTest, FstatatEmptyPathNeedsFlag) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  struct stat st, want;
  ASSERT_THAT(fstat(fd.get(), &want), SyscallSucceeds());
  EXPECT_THAT(fstatat(fd.get(), "", &st, 0), SyscallFailsWithErrno(ENOENT));
  ASSERT_THAT(fstatat(fd.get(), "", &st, AT_EMPTY_PATH), SyscallSucceeds());
  EXPECT_EQ(st.st_ino, want.st_ino);
}

TEST(StatTest, PipeIsAFifo) {
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  FileDescriptor r(fds[0]), w(fds[1]);
  struct stat st;
  ASSERT_THAT(fstat(r.get(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(StatTest, StatxMatchesStat) {
  TempPath file = TempPath::CreateFile();
  ASSERT_THAT(truncate(file.path().c_str(), 1234), SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(stat(file.path().c_str(), &st), SyscallSucceeds());
  struct statx sx;
  memset(&sx, 0xff, sizeof(sx));
  ASSERT_THAT(statx(AT_FDCWD, file.path().c_str(), 0, STATX_BASIC_STATS, &sx),
              SyscallSucceeds());
  EXPECT_EQ(sx.stx_mask & STATX_BASIC_STATS, STATX_BASIC_STATS);
  EXPECT_EQ(sx.stx_ino, st.st_ino);
  EXPECT_EQ(sx.stx_size, 1234u);
  EXPECT_EQ(sx.stx_mode, st.st_mode);
  EXPECT_EQ(sx.stx_nlink, st.st_nlink);
  EXPECT_EQ(sx.stx_uid, st.st_uid);
  EXPECT_EQ(makedev(sx.stx_dev_major, sx.stx_dev_minor), st.st_dev);
  EXPECT_EQ(sx.stx_mtime.tv_sec, st.st_mtim.tv_sec);
  EXPECT_EQ(sx.stx_mtime.tv_nsec, st.st_mtim.tv_nsec);
  // AT_EMPTY_PATH on a descriptor, O_PATH included.
  FileDescriptor fd(open(file.path().c_str(), O_PATH));
  ASSERT_TRUE(fd.valid());
  struct statx sx2;
  ASSERT_THAT(statx(fd.get(), "", AT_EMPTY_PATH, STATX_INO, &sx2),
              SyscallSucceeds());
  EXPECT_EQ(sx2.stx_ino, st.st_ino);
  EXPECT_THAT(statx(fd.get(), "", 0, STATX_INO, &sx2),
              SyscallFailsWithErrno(ENOENT));
}

TEST(StatTest, StatxFlagErrors) {
  TempPath file = TempPath::CreateFile();
  struct statx sx;
  EXPECT_THAT(statx(AT_FDCWD, file.path().c_str(), 0x10000000, 0, &sx),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(statx(AT_FDCWD, file.path().c_str(), AT_STATX_SYNC_TYPE, 0, &sx),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(statx(AT_FDCWD, file.path().c_str(), 0, 0x80000000u, &sx),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(
      statx(AT_FDCWD, file.path().c_str(), AT_STATX_FORCE_SYNC, STATX_ALL, &sx),
      SyscallSucceeds());
  EXPECT_THAT(syscall(SYS_statx, AT_FDCWD, file.path().c_str(), 0,
                      STATX_BASIC_STATS, reinterpret_cast<void*>(8)),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(statx(AT_FDCWD, NewTempPath().c_str(), 0, STATX_BASIC_STATS, &sx),
              SyscallFailsWithErrno(ENOENT));
}

TEST(StatTest, NofollowSeesSymlink) {
  TempPath file = TempPath::CreateFile();
  std::string l = NewTempPath();
  ASSERT_THAT(symlink(file.path().c_str(), l.c_str()), SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(fstatat(AT_FDCWD, l.c_str(), &st, AT_SYMLINK_NOFOLLOW),
              SyscallSucceeds());
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(st.st_size, static_cast<off_t>(file.path().size()));
  struct statx sx;
  ASSERT_THAT(statx(AT_FDCWD, l.c_str(), AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx),
              SyscallSucceeds());
  EXPECT_TRUE(S_ISLNK(sx.stx_mode));
  EXPECT_THAT(fstatat(AT_FDCWD, l.c_str(), &st, 0x8000),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(unlink(l.c_str()), SyscallSucceeds());
}

TEST(StatTest, LongPathIsEnametoolong) {
  std::string p(PATH_MAX + 10, 'a');
  struct stat st;
  EXPECT_THAT(stat(p.c_str(), &st), SyscallFailsWithErrno(ENAMETOOLONG));
}

TEST(StatTest, TmpfsDirectorySizeCountsEntries) {
  std::string d = "/dev/shm/stat_test_" + std::to_string(getpid());
  ASSERT_THAT(mkdir(d.c_str(), 0755), SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(stat(d.c_str(), &st), SyscallSucceeds());
  // tmpfs: 20 bytes per entry, "." and ".." included; no blocks.
  EXPECT_EQ(st.st_size, 40);
  EXPECT_EQ(st.st_blocks, 0);
  ASSERT_THAT(mkdir((d + "/a").c_str(), 0755), SyscallSucceeds());
  ASSERT_THAT(symlink("x", (d + "/b").c_str()), SyscallSucceeds());
  ASSERT_THAT(stat(d.c_str(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_size, 80);
  ASSERT_THAT(rmdir((d + "/a").c_str()), SyscallSucceeds());
  ASSERT_THAT(unlink((d + "/b").c_str()), SyscallSucceeds());
  ASSERT_THAT(stat(d.c_str(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_size, 40);
  ASSERT_THAT(rmdir(d.c_str()), SyscallSucceeds());
}

}  // namespace
}  // namespace sandbox::testutil
