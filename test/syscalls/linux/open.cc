// open(2)/openat(2)/creat(2) on temporary files: creation, flags, errors.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

}  // namespace
}  // namespace sandbox::testutil
