// open(2)/openat(2)/creat(2) on temporary files: creation, flags, errors.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <linux/openat2.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

TEST(OpenTest, CreateMakesAnEmptyFileWithModeMinusUmask) {
  std::string path = NewTempPath();
  mode_t old = umask(022);
  FileDescriptor fd(open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0666));
  umask(old);
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_EQ(st.st_size, 0);
  EXPECT_THAT(unlink(path.c_str()), SyscallSucceeds());
}

TEST(OpenTest, MissingFileIsEnoent) {
  std::string path = NewTempPath();
  EXPECT_THAT(open(path.c_str(), O_RDONLY), SyscallFailsWithErrno(ENOENT));
  // Missing parent directory, even with O_CREAT.
  EXPECT_THAT(open((path + "/child").c_str(), O_CREAT | O_RDWR, 0644),
              SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(open("", O_RDONLY), SyscallFailsWithErrno(ENOENT));
}

TEST(OpenTest, ExclusiveCreateOfExistingIsEexist) {
  TempPath file = TempPath::CreateFile();
  EXPECT_THAT(open(file.path().c_str(), O_CREAT | O_EXCL | O_RDWR, 0644),
              SyscallFailsWithErrno(EEXIST));
  // Without O_EXCL the existing file is simply opened.
  FileDescriptor fd(open(file.path().c_str(), O_CREAT | O_RDWR, 0644));
  EXPECT_TRUE(fd.valid()) << strerror(errno);
}

TEST(OpenTest, DirectoryForWritingIsEisdir) {
  TempPath dir = TempPath::CreateDir();
  EXPECT_THAT(open(dir.path().c_str(), O_WRONLY),
              SyscallFailsWithErrno(EISDIR));
  EXPECT_THAT(open(dir.path().c_str(), O_RDWR), SyscallFailsWithErrno(EISDIR));
  // Read-only is fine.
  FileDescriptor fd(open(dir.path().c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(fd.valid()) << strerror(errno);
}

TEST(OpenTest, FileAsDirectoryComponentIsEnotdir) {
  TempPath file = TempPath::CreateFile();
  EXPECT_THAT(open((file.path() + "/x").c_str(), O_RDONLY),
              SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(open((file.path() + "/x").c_str(), O_CREAT | O_RDWR, 0644),
              SyscallFailsWithErrno(ENOTDIR));
  // O_DIRECTORY on a regular file.
  EXPECT_THAT(open(file.path().c_str(), O_RDONLY | O_DIRECTORY),
              SyscallFailsWithErrno(ENOTDIR));
}

TEST(OpenTest, BadPathPointerIsEfault) {
  EXPECT_THAT(
      syscall(SYS_openat, AT_FDCWD, reinterpret_cast<char*>(8), O_RDONLY),
      SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(syscall(SYS_open, reinterpret_cast<char*>(8), O_RDONLY),
              SyscallFailsWithErrno(EFAULT));
}

TEST(OpenTest, OverlongComponentIsEnametoolong) {
  std::string path = TempDir() + "/" + std::string(NAME_MAX + 1, 'n');
  EXPECT_THAT(open(path.c_str(), O_CREAT | O_RDWR, 0644),
              SyscallFailsWithErrno(ENAMETOOLONG));
}

TEST(OpenTest, TruncEmptiesTheFile) {
  TempPath file = TempPath::CreateFile();
  {
    FileDescriptor fd(open(file.path().c_str(), O_WRONLY | O_CLOEXEC));
    ASSERT_TRUE(fd.valid()) << strerror(errno);
    ASSERT_THAT(write(fd.get(), "data", 4), SyscallSucceedsWithValue(4));
  }
  FileDescriptor fd(open(file.path().c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_size, 0);
}

TEST(OpenTest, AccessModeIsEnforced) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor ro(open(file.path().c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(ro.valid()) << strerror(errno);
  EXPECT_THAT(write(ro.get(), "x", 1), SyscallFailsWithErrno(EBADF));
  FileDescriptor wo(open(file.path().c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(wo.valid()) << strerror(errno);
  char c;
  EXPECT_THAT(read(wo.get(), &c, 1), SyscallFailsWithErrno(EBADF));
  EXPECT_EQ(fcntl(ro.get(), F_GETFL) & O_ACCMODE, O_RDONLY);
  EXPECT_EQ(fcntl(wo.get(), F_GETFL) & O_ACCMODE, O_WRONLY);
}

TEST(OpenTest, CloexecFlagIsReported) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor a(open(file.path().c_str(), O_RDONLY | O_CLOEXEC));
  FileDescriptor b(open(file.path().c_str(), O_RDONLY));
  ASSERT_TRUE(a.valid() && b.valid()) << strerror(errno);
  EXPECT_EQ(fcntl(a.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  EXPECT_EQ(fcntl(b.get(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST(OpenTest, LowestFreeDescriptorIsUsed) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor a(open(file.path().c_str(), O_RDONLY));
  FileDescriptor b(open(file.path().c_str(), O_RDONLY));
  ASSERT_TRUE(a.valid() && b.valid()) << strerror(errno);
  int freed = a.get();
  a.reset();
  FileDescriptor c(open(file.path().c_str(), O_RDONLY));
  EXPECT_EQ(c.get(), freed);
}

TEST(OpenTest, OpenatRelativeToDirectoryFd) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(dfd.valid()) << strerror(errno);
  FileDescriptor fd(openat(dfd.get(), "inner", O_CREAT | O_RDWR, 0600));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  struct stat st;
  EXPECT_THAT(stat((dir.path() + "/inner").c_str(), &st), SyscallSucceeds());
  // A regular file as the directory fd.
  EXPECT_THAT(openat(fd.get(), "x", O_RDONLY), SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(openat(-5, "x", O_RDONLY), SyscallFailsWithErrno(EBADF));
}

TEST(OpenTest, CreatIsWriteOnlyCreateTruncate) {
  std::string path = NewTempPath();
  FileDescriptor fd(creat(path.c_str(), 0600));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  EXPECT_EQ(fcntl(fd.get(), F_GETFL) & O_ACCMODE, O_WRONLY);
  EXPECT_THAT(unlink(path.c_str()), SyscallSucceeds());
}

TEST(OpenTest, FlagsReportLargefile) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR | O_APPEND));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  // The kernel's O_LARGEFILE (0100000) is forced on 64-bit; O_CREAT-like
  // flags are not kept.
  EXPECT_EQ(fcntl(fd.get(), F_GETFL), O_RDWR | O_APPEND | 0100000);
}

TEST(OpenTest, OPathAllowsOnlyPathOperations) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_PATH | O_RDWR | O_TRUNC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  EXPECT_EQ(fcntl(fd.get(), F_GETFL), O_PATH);
  char c;
  EXPECT_THAT(read(fd.get(), &c, 1), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(write(fd.get(), &c, 1), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(lseek(fd.get(), 0, SEEK_SET), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(fcntl(fd.get(), F_SETFL, O_NONBLOCK),
              SyscallFailsWithErrno(EBADF));
  struct stat st;
  EXPECT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  FileDescriptor dup_fd(dup(fd.get()));
  EXPECT_TRUE(dup_fd.valid());
  // A symlink itself with O_NOFOLLOW.
  std::string l = NewTempPath();
  ASSERT_THAT(symlink(file.path().c_str(), l.c_str()), SyscallSucceeds());
  FileDescriptor lfd(open(l.c_str(), O_PATH | O_NOFOLLOW));
  ASSERT_TRUE(lfd.valid()) << strerror(errno);
  ASSERT_THAT(fstat(lfd.get(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_THAT(unlink(l.c_str()), SyscallSucceeds());
}

TEST(OpenTest, NofollowOnSymlinkIsEloop) {
  TempPath file = TempPath::CreateFile();
  std::string l = NewTempPath();
  ASSERT_THAT(symlink(file.path().c_str(), l.c_str()), SyscallSucceeds());
  EXPECT_THAT(open(l.c_str(), O_RDONLY | O_NOFOLLOW),
              SyscallFailsWithErrno(ELOOP));
  // O_CREAT through a symlink creates its target.
  std::string target = NewTempPath();
  std::string l2 = NewTempPath();
  ASSERT_THAT(symlink(target.c_str(), l2.c_str()), SyscallSucceeds());
  FileDescriptor fd(open(l2.c_str(), O_CREAT | O_WRONLY, 0600));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  struct stat st;
  EXPECT_THAT(stat(target.c_str(), &st), SyscallSucceeds());
  EXPECT_THAT(open(l2.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600),
              SyscallFailsWithErrno(EEXIST));
  unlink(l.c_str());
  unlink(l2.c_str());
  unlink(target.c_str());
}

TEST(OpenTest, CreateDirectoryFlagIsEinval) {
  EXPECT_THAT(open(NewTempPath().c_str(), O_CREAT | O_DIRECTORY | O_RDWR, 0600),
              SyscallFailsWithErrno(EINVAL));
}

TEST(OpenTest, TrailingSlashOnFile) {
  TempPath file = TempPath::CreateFile();
  EXPECT_THAT(open((file.path() + "/").c_str(), O_RDONLY),
              SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(open((NewTempPath() + "/").c_str(), O_CREAT | O_RDWR, 0600),
              SyscallFailsWithErrno(EISDIR));
}

TEST(OpenTest, TmpfileIsUnnamedUntilLinked) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor fd(open(dir.path().c_str(), O_TMPFILE | O_RDWR, 0600));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_nlink, 0u);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  ASSERT_THAT(write(fd.get(), "tmp", 3), SyscallSucceedsWithValue(3));
  std::string name = dir.path() + "/named";
  ASSERT_THAT(linkat(fd.get(), "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH),
              SyscallSucceeds());
  ASSERT_THAT(stat(name.c_str(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_size, 3);
  EXPECT_EQ(st.st_nlink, 1u);
  // O_EXCL: never linkable.
  FileDescriptor ex(
      open(dir.path().c_str(), O_TMPFILE | O_RDWR | O_EXCL, 0600));
  ASSERT_TRUE(ex.valid()) << strerror(errno);
  EXPECT_THAT(linkat(ex.get(), "", AT_FDCWD, (dir.path() + "/x").c_str(),
                     AT_EMPTY_PATH),
              SyscallFailsWithErrno(ENOENT));
  // Read-only or with O_CREAT: EINVAL.
  EXPECT_THAT(open(dir.path().c_str(), O_TMPFILE | O_RDONLY, 0600),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(open(dir.path().c_str(), O_TMPFILE | O_CREAT | O_RDWR, 0600),
              SyscallFailsWithErrno(EINVAL));
  TempPath file = TempPath::CreateFile();
  EXPECT_THAT(open(file.path().c_str(), O_TMPFILE | O_RDWR, 0600),
              SyscallFailsWithErrno(ENOTDIR));
  ASSERT_THAT(unlink(name.c_str()), SyscallSucceeds());
}

long Openat2(int dirfd, const char* path, struct open_how* how, size_t size) {
  return syscall(SYS_openat2, dirfd, path, how, size);
}

TEST(OpenTest, Openat2StructAndFlags) {
  TempPath file = TempPath::CreateFile();
  struct open_how how = {};
  how.flags = O_RDONLY | O_CLOEXEC;
  long fd = Openat2(AT_FDCWD, file.path().c_str(), &how, sizeof(how));
  ASSERT_GE(fd, 0) << strerror(errno);
  EXPECT_EQ(fcntl(fd, F_GETFL), O_RDONLY | 0100000);
  close(fd);
  // Size rules.
  EXPECT_THAT(Openat2(AT_FDCWD, file.path().c_str(), &how, 16),
              SyscallFailsWithErrno(EINVAL));
  struct {
    struct open_how how;
    uint64_t extra;
  } big = {how, 1};
  EXPECT_THAT(Openat2(AT_FDCWD, file.path().c_str(), &big.how, sizeof(big)),
              SyscallFailsWithErrno(E2BIG));
  big.extra = 0;
  fd = Openat2(AT_FDCWD, file.path().c_str(), &big.how, sizeof(big));
  EXPECT_GE(fd, 0) << strerror(errno);
  close(fd);
  EXPECT_THAT(Openat2(AT_FDCWD, file.path().c_str(), &how, 8192),
              SyscallFailsWithErrno(E2BIG));
  // Unknown flags, a mode without O_CREAT, bad resolve bits: EINVAL.
  how.flags = O_RDONLY | (1ull << 40);
  EXPECT_THAT(Openat2(AT_FDCWD, file.path().c_str(), &how, sizeof(how)),
              SyscallFailsWithErrno(EINVAL));
  how.flags = O_RDONLY;
  how.mode = 0600;
  EXPECT_THAT(Openat2(AT_FDCWD, file.path().c_str(), &how, sizeof(how)),
              SyscallFailsWithErrno(EINVAL));
  how.mode = 0;
  how.resolve = 1ull << 20;
  EXPECT_THAT(Openat2(AT_FDCWD, file.path().c_str(), &how, sizeof(how)),
              SyscallFailsWithErrno(EINVAL));
  how.resolve = RESOLVE_BENEATH | RESOLVE_IN_ROOT;
  EXPECT_THAT(Openat2(AT_FDCWD, file.path().c_str(), &how, sizeof(how)),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_openat2, AT_FDCWD, file.path().c_str(),
                      reinterpret_cast<void*>(8), sizeof(how)),
              SyscallFailsWithErrno(EFAULT));
}

TEST(OpenTest, Openat2Resolve) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(mkdir((dir.path() + "/sub").c_str(), 0755), SyscallSucceeds());
  ASSERT_THAT(symlink("/", (dir.path() + "/abs").c_str()), SyscallSucceeds());
  FileDescriptor dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(dfd.valid());
  struct open_how how = {};
  how.flags = O_RDONLY;
  how.resolve = RESOLVE_BENEATH;
  long fd = Openat2(dfd.get(), "sub/..", &how, sizeof(how));
  EXPECT_GE(fd, 0) << strerror(errno);
  if (fd >= 0) close(fd);
  EXPECT_THAT(Openat2(dfd.get(), "..", &how, sizeof(how)),
              SyscallFailsWithErrno(EXDEV));
  EXPECT_THAT(Openat2(dfd.get(), "abs", &how, sizeof(how)),
              SyscallFailsWithErrno(EXDEV));
  how.resolve = RESOLVE_NO_SYMLINKS;
  EXPECT_THAT(Openat2(dfd.get(), "abs", &how, sizeof(how)),
              SyscallFailsWithErrno(ELOOP));
  // RESOLVE_IN_ROOT: ".." and "/" stop at the directory.
  how.resolve = RESOLVE_IN_ROOT;
  fd = Openat2(dfd.get(), "../../sub", &how, sizeof(how));
  EXPECT_GE(fd, 0) << strerror(errno);
  if (fd >= 0) close(fd);
}

TEST(OpenTest, WithoutCapabilitiesOwnerBitsApply) {
  TempPath file = TempPath::CreateFile(0200);
  ASSERT_THAT(chmod(file.path().c_str(), 0200), SyscallSucceeds());
  EXPECT_THAT(
      InForkedChild([&] {
        if (!DropCapabilities(false)) _exit(2);
        // Write-only for the owner: reading is EACCES.
        if (open(file.path().c_str(), O_RDONLY) >= 0 || errno != EACCES) {
          _exit(3);
        }
        int fd = open(file.path().c_str(), O_WRONLY);
        if (fd < 0) _exit(4);
      }),
      ExitedWithCode(0));
}

TEST(OpenTest, CloseRange) {
  TempPath file = TempPath::CreateFile();
  int fds[4];
  for (int& fd : fds) {
    fd = open(file.path().c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
  }
  // Mark the middle two close-on-exec, then close them all.
  ASSERT_THAT(syscall(SYS_close_range, fds[1], fds[2], CLOSE_RANGE_CLOEXEC),
              SyscallSucceeds());
  EXPECT_EQ(fcntl(fds[0], F_GETFD), 0);
  EXPECT_EQ(fcntl(fds[1], F_GETFD), FD_CLOEXEC);
  EXPECT_EQ(fcntl(fds[2], F_GETFD), FD_CLOEXEC);
  EXPECT_THAT(syscall(SYS_close_range, fds[2], fds[1], 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_close_range, fds[0], fds[3], 0x8),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(syscall(SYS_close_range, fds[0], fds[3], CLOSE_RANGE_UNSHARE),
              SyscallSucceeds());
  for (int fd : fds) {
    EXPECT_THAT(fcntl(fd, F_GETFD), SyscallFailsWithErrno(EBADF));
  }
}

TEST(OpenTest, FcntlAndIoctlFlags) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR));
  ASSERT_TRUE(fd.valid());
  int on = 1;
  ASSERT_THAT(ioctl(fd.get(), FIONBIO, &on), SyscallSucceeds());
  EXPECT_TRUE(fcntl(fd.get(), F_GETFL) & O_NONBLOCK);
  on = 0;
  ASSERT_THAT(ioctl(fd.get(), FIONBIO, &on), SyscallSucceeds());
  EXPECT_FALSE(fcntl(fd.get(), F_GETFL) & O_NONBLOCK);
  ASSERT_THAT(ioctl(fd.get(), FIOCLEX), SyscallSucceeds());
  EXPECT_EQ(fcntl(fd.get(), F_GETFD), FD_CLOEXEC);
  ASSERT_THAT(ioctl(fd.get(), FIONCLEX), SyscallSucceeds());
  EXPECT_EQ(fcntl(fd.get(), F_GETFD), 0);
  ASSERT_THAT(write(fd.get(), "12345", 5), SyscallSucceeds());
  ASSERT_THAT(lseek(fd.get(), 1, SEEK_SET), SyscallSucceeds());
  int avail = -1;
  ASSERT_THAT(ioctl(fd.get(), FIONREAD, &avail), SyscallSucceeds());
  EXPECT_EQ(avail, 4);
  // F_SETFL changes O_APPEND/O_NONBLOCK, never the access mode.
  ASSERT_THAT(fcntl(fd.get(), F_SETFL, O_APPEND | O_WRONLY), SyscallSucceeds());
  EXPECT_EQ(fcntl(fd.get(), F_GETFL) & (O_ACCMODE | O_APPEND),
            O_RDWR | O_APPEND);
  int nfd = fcntl(fd.get(), F_DUPFD_CLOEXEC, 100);
  ASSERT_GE(nfd, 100);
  EXPECT_EQ(fcntl(nfd, F_GETFD), FD_CLOEXEC);
  close(nfd);
  EXPECT_THAT(fcntl(fd.get(), F_DUPFD, -1), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(ioctl(fd.get(), FIONBIO, reinterpret_cast<int*>(8)),
              SyscallFailsWithErrno(EFAULT));
}

TEST(OpenTest, Dup3) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDONLY));
  ASSERT_TRUE(fd.valid());
  EXPECT_THAT(dup3(fd.get(), fd.get(), 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(dup3(fd.get(), 200, 0x1), SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(dup3(fd.get(), 200, O_CLOEXEC), SyscallSucceedsWithValue(200));
  EXPECT_EQ(fcntl(200, F_GETFD), FD_CLOEXEC);
  close(200);
}

TEST(OpenTest, FullTableIsEmfileBeforeTheWalk) {
  std::string missing = NewTempPath();
  EXPECT_THAT(InForkedChild([&] {
                struct rlimit lim = {8, 8};
                if (setrlimit(RLIMIT_NOFILE, &lim) != 0) _exit(2);
                for (int i = 0; i < 8; ++i) {
                  if (fcntl(i, F_GETFD) < 0 && open("/", O_RDONLY) < 0) {
                    _exit(3);
                  }
                }
                // Full: EMFILE, not ENOENT, and nothing is created.
                if (open(missing.c_str(), O_RDONLY) >= 0 || errno != EMFILE) {
                  _exit(4);
                }
                if (open(missing.c_str(), O_CREAT | O_RDWR, 0600) >= 0 ||
                    errno != EMFILE) {
                  _exit(5);
                }
                if (access(missing.c_str(), F_OK) == 0) _exit(6);
              }),
              ExitedWithCode(0));
}

}  // namespace
}  // namespace sandbox::testutil
