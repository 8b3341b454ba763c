// Attributes: access/faccessat2, chmod family, chown family, utimensat and
// friends, truncate/ftruncate, fallocate, umask.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>
#include <utime.h>

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

namespace sandbox::testutil {
namespace {

struct stat Stat(const std::string& p) {
  struct stat st = {};
  EXPECT_EQ(lstat(p.c_str(), &st), 0) << p << ": " << strerror(errno);
  return st;
}

TEST(AttrTest, ChmodAndFchmod) {
  TempPath file = TempPath::CreateFile(0644);
  ASSERT_THAT(chmod(file.path().c_str(), 04711), SyscallSucceeds());
  EXPECT_EQ(Stat(file.path()).st_mode & 07777, 04711u);
  FileDescriptor fd(open(file.path().c_str(), O_RDONLY));
  ASSERT_TRUE(fd.valid());
  ASSERT_THAT(fchmod(fd.get(), 0600), SyscallSucceeds());
  EXPECT_EQ(Stat(file.path()).st_mode & 07777, 0600u);
  ASSERT_THAT(fchmodat(AT_FDCWD, file.path().c_str(), 0640, 0),
              SyscallSucceeds());
  EXPECT_EQ(Stat(file.path()).st_mode & 07777, 0640u);
  // The type bits of the argument are ignored.
  ASSERT_THAT(chmod(file.path().c_str(), S_IFDIR | 0444), SyscallSucceeds());
  EXPECT_TRUE(S_ISREG(Stat(file.path()).st_mode));
  EXPECT_THAT(chmod(NewTempPath().c_str(), 0644),
              SyscallFailsWithErrno(ENOENT));
  FileDescriptor pfd(open(file.path().c_str(), O_PATH));
  EXPECT_THAT(fchmod(pfd.get(), 0644), SyscallFailsWithErrno(EBADF));
}

TEST(AttrTest, Fchmodat2NoFollowOnSymlinkIsEopnotsupp) {
  TempPath dir = TempPath::CreateDir();
  std::string l = dir.path() + "/l";
  ASSERT_THAT(symlink("target", l.c_str()), SyscallSucceeds());
  if (syscall(SYS_fchmodat2, AT_FDCWD, dir.path().c_str(), 0755, 0) == -1 &&
      errno == ENOSYS) {
    GTEST_SKIP() << "no fchmodat2 (new in Linux 6.6)";
  }
  EXPECT_THAT(
      syscall(SYS_fchmodat2, AT_FDCWD, l.c_str(), 0644, AT_SYMLINK_NOFOLLOW),
      SyscallFailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(syscall(SYS_fchmodat2, AT_FDCWD, l.c_str(), 0644, 0x4),
              SyscallFailsWithErrno(EINVAL));
}

// Whether ids other than 0 exist here (a user namespace may map only 0).
bool OtherIdsMapped(const std::string& path) {
  return chown(path.c_str(), 65534, 65534) == 0 &&
         chown(path.c_str(), 0, 0) == 0;
}

TEST(AttrTest, ChownByRoot) {
  TempPath file = TempPath::CreateFile();
  if (!OtherIdsMapped(file.path())) GTEST_SKIP() << "only uid 0 is mapped";
  ASSERT_THAT(chmod(file.path().c_str(), 06755), SyscallSucceeds());
  ASSERT_THAT(chown(file.path().c_str(), 1234, 5678), SyscallSucceeds());
  struct stat st = Stat(file.path());
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 5678u);
  // chown clears set-id bits of an executable.
  EXPECT_EQ(st.st_mode & 06000, 0u);
  // -1 leaves an id alone.
  ASSERT_THAT(chown(file.path().c_str(), -1, 42), SyscallSucceeds());
  st = Stat(file.path());
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 42u);
}

TEST(AttrTest, ChownToSelfStillClearsSetId) {
  TempPath file = TempPath::CreateFile();
  ASSERT_THAT(chmod(file.path().c_str(), 06755), SyscallSucceeds());
  ASSERT_THAT(chown(file.path().c_str(), 0, 0), SyscallSucceeds());
  EXPECT_EQ(Stat(file.path()).st_mode & 07777, 0755u);
  // A directory keeps them.
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(chmod(dir.path().c_str(), 02755), SyscallSucceeds());
  ASSERT_THAT(chown(dir.path().c_str(), 0, 0), SyscallSucceeds());
  EXPECT_EQ(Stat(dir.path()).st_mode & 07777, 02755u);
}

TEST(AttrTest, LchownChangesTheLink) {
  TempPath file = TempPath::CreateFile();
  if (!OtherIdsMapped(file.path())) GTEST_SKIP() << "only uid 0 is mapped";
  std::string l = NewTempPath();
  ASSERT_THAT(symlink(file.path().c_str(), l.c_str()), SyscallSucceeds());
  ASSERT_THAT(lchown(l.c_str(), 77, 88), SyscallSucceeds());
  EXPECT_EQ(Stat(l).st_uid, 77u);
  EXPECT_EQ(Stat(file.path()).st_uid, 0u);
  EXPECT_THAT(fchownat(AT_FDCWD, l.c_str(), 1, 1, 0x1),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(unlink(l.c_str()), SyscallSucceeds());
}

TEST(AttrTest, AccessChecksRealIds) {
  TempPath file = TempPath::CreateFile(0600);
  EXPECT_THAT(access(file.path().c_str(), R_OK | W_OK), SyscallSucceeds());
  // Root may not execute a file without any execute bit.
  EXPECT_THAT(access(file.path().c_str(), X_OK), SyscallFailsWithErrno(EACCES));
  EXPECT_THAT(access(file.path().c_str(), 8), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(access(NewTempPath().c_str(), F_OK),
              SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(
      syscall(SYS_faccessat2, AT_FDCWD, file.path().c_str(), R_OK, AT_EACCESS),
      SyscallSucceeds());
  EXPECT_THAT(syscall(SYS_faccessat2, AT_FDCWD, file.path().c_str(), R_OK, 0x1),
              SyscallFailsWithErrno(EINVAL));
  // access() checks with the real ids: a root real uid keeps its
  // permitted capabilities there even when the effective set is empty;
  // AT_EACCESS checks the effective set.
  ASSERT_THAT(chmod(file.path().c_str(), 0), SyscallSucceeds());
  EXPECT_THAT(InForkedChild([&] {
                if (!DropCapabilities(true)) _exit(2);
                if (access(file.path().c_str(), R_OK) != 0) _exit(3);
                if (syscall(SYS_faccessat2, AT_FDCWD, file.path().c_str(), R_OK,
                            AT_EACCESS) == 0 ||
                    errno != EACCES) {
                  _exit(4);
                }
                if (!DropCapabilities(false)) _exit(5);
                if (access(file.path().c_str(), R_OK) == 0 || errno != EACCES) {
                  _exit(6);
                }
                if (access(file.path().c_str(), F_OK) != 0) _exit(7);
              }),
              ExitedWithCode(0));
}

TEST(AttrTest, UtimensatSetsAndOmits) {
  TempPath file = TempPath::CreateFile();
  struct timespec ts[2] = {{1000, 5}, {2000, 7}};
  ASSERT_THAT(utimensat(AT_FDCWD, file.path().c_str(), ts, 0),
              SyscallSucceeds());
  struct stat st = Stat(file.path());
  EXPECT_EQ(st.st_atim.tv_sec, 1000);
  EXPECT_EQ(st.st_atim.tv_nsec, 5);
  EXPECT_EQ(st.st_mtim.tv_sec, 2000);
  EXPECT_EQ(st.st_mtim.tv_nsec, 7);
  struct timespec omit[2] = {{0, UTIME_OMIT}, {3000, 0}};
  ASSERT_THAT(utimensat(AT_FDCWD, file.path().c_str(), omit, 0),
              SyscallSucceeds());
  st = Stat(file.path());
  EXPECT_EQ(st.st_atim.tv_sec, 1000);
  EXPECT_EQ(st.st_mtim.tv_sec, 3000);
  struct timespec bad[2] = {{0, 1000000000}, {0, 0}};
  EXPECT_THAT(utimensat(AT_FDCWD, file.path().c_str(), bad, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(utimensat(AT_FDCWD, file.path().c_str(), nullptr, 0x4),
              SyscallFailsWithErrno(EINVAL));
  // Now: mtime moves forward.
  ASSERT_THAT(utimensat(AT_FDCWD, file.path().c_str(), nullptr, 0),
              SyscallSucceeds());
  EXPECT_GT(Stat(file.path()).st_mtim.tv_sec, 3000);
  // futimens: a NULL path with a descriptor; flags are then EINVAL.
  FileDescriptor fd(open(file.path().c_str(), O_RDONLY));
  ASSERT_THAT(syscall(SYS_utimensat, fd.get(), nullptr, ts, 0),
              SyscallSucceeds());
  EXPECT_EQ(Stat(file.path()).st_mtim.tv_sec, 2000);
  EXPECT_THAT(
      syscall(SYS_utimensat, fd.get(), nullptr, ts, AT_SYMLINK_NOFOLLOW),
      SyscallFailsWithErrno(EINVAL));
}

TEST(AttrTest, UtimesAndUtime) {
  TempPath file = TempPath::CreateFile();
  struct timeval tv[2] = {{100, 3}, {200, 4}};
  ASSERT_THAT(utimes(file.path().c_str(), tv), SyscallSucceeds());
  struct stat st = Stat(file.path());
  EXPECT_EQ(st.st_mtim.tv_sec, 200);
  EXPECT_EQ(st.st_mtim.tv_nsec, 4000);
  struct timeval badtv[2] = {{1, 1000000}, {1, 0}};
  EXPECT_THAT(utimes(file.path().c_str(), badtv),
              SyscallFailsWithErrno(EINVAL));
  struct utimbuf ub = {300, 400};
  ASSERT_THAT(utime(file.path().c_str(), &ub), SyscallSucceeds());
  st = Stat(file.path());
  EXPECT_EQ(st.st_atim.tv_sec, 300);
  EXPECT_EQ(st.st_mtim.tv_sec, 400);
  EXPECT_EQ(st.st_mtim.tv_nsec, 0);
}

TEST(AttrTest, UtimensatByOwnerWithoutCapabilities) {
  TempPath file = TempPath::CreateFile(0444);
  ASSERT_THAT(chmod(file.path().c_str(), 0444), SyscallSucceeds());
  EXPECT_THAT(InForkedChild([&] {
                if (!DropCapabilities(false)) _exit(2);
                // The owner may set any times, even without write access.
                struct timespec ts[2] = {{5, 0}, {6, 0}};
                if (utimensat(AT_FDCWD, file.path().c_str(), ts, 0) != 0) {
                  _exit(3);
                }
              }),
              ExitedWithCode(0));
  EXPECT_EQ(Stat(file.path()).st_mtim.tv_sec, 6);
}

TEST(AttrTest, TruncateAndFtruncate) {
  TempPath file = TempPath::CreateFile();
  ASSERT_THAT(truncate(file.path().c_str(), 10000), SyscallSucceeds());
  EXPECT_EQ(Stat(file.path()).st_size, 10000);
  FileDescriptor fd(open(file.path().c_str(), O_RDWR));
  ASSERT_TRUE(fd.valid());
  char buf[16];
  ASSERT_THAT(pread(fd.get(), buf, sizeof(buf), 5000),
              SyscallSucceedsWithValue(16));
  EXPECT_EQ(buf[0], 0);
  ASSERT_THAT(ftruncate(fd.get(), 3), SyscallSucceeds());
  EXPECT_EQ(Stat(file.path()).st_size, 3);
  EXPECT_THAT(ftruncate(fd.get(), -1), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(truncate(file.path().c_str(), -1), SyscallFailsWithErrno(EINVAL));
  TempPath dir = TempPath::CreateDir();
  EXPECT_THAT(truncate(dir.path().c_str(), 0), SyscallFailsWithErrno(EISDIR));
  FileDescriptor ro(open(file.path().c_str(), O_RDONLY));
  EXPECT_THAT(ftruncate(ro.get(), 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(ftruncate(-1, 0), SyscallFailsWithErrno(EBADF));
}

TEST(AttrTest, Fallocate) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR));
  ASSERT_TRUE(fd.valid());
  ASSERT_THAT(fallocate(fd.get(), 0, 0, 8192), SyscallSucceeds());
  EXPECT_EQ(Stat(file.path()).st_size, 8192);
  ASSERT_THAT(fallocate(fd.get(), FALLOC_FL_KEEP_SIZE, 8192, 4096),
              SyscallSucceeds());
  EXPECT_EQ(Stat(file.path()).st_size, 8192);
  EXPECT_THAT(fallocate(fd.get(), 0, -1, 10), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(fallocate(fd.get(), 0, 0, 0), SyscallFailsWithErrno(EINVAL));
  FileDescriptor ro(open(file.path().c_str(), O_RDONLY));
  EXPECT_THAT(fallocate(ro.get(), 0, 0, 10), SyscallFailsWithErrno(EBADF));
}

TEST(AttrTest, UmaskReturnsOld) {
  mode_t old = umask(077);
  EXPECT_EQ(umask(022), 077u);
  umask(old);
}

}  // namespace
}  // namespace sandbox::testutil
