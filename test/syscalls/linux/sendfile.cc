// sendfile(2) and copy_file_range(2) between regular files.
#include <errno.h>
#include <fcntl.h>
#include <sys/sendfile.h>
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

FileDescriptor FileWith(const std::string& path, const std::string& data) {
  FileDescriptor fd(open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644));
  EXPECT_TRUE(fd.valid()) << strerror(errno);
  EXPECT_EQ(write(fd.get(), data.data(), data.size()),
            static_cast<ssize_t>(data.size()));
  return fd;
}

std::string Contents(int fd) {
  std::string out(4096, '\0');
  ssize_t n = pread(fd, out.data(), out.size(), 0);
  out.resize(n < 0 ? 0 : n);
  return out;
}

TEST(SendfileTest, CopiesAndMovesOffsets) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor in = FileWith(dir.path() + "/in", "0123456789");
  FileDescriptor out = FileWith(dir.path() + "/out", "");
  ASSERT_THAT(lseek(in.get(), 2, SEEK_SET), SyscallSucceeds());
  EXPECT_THAT(sendfile(out.get(), in.get(), nullptr, 5),
              SyscallSucceedsWithValue(5));
  EXPECT_THAT(lseek(in.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(7));
  EXPECT_EQ(Contents(out.get()), "23456");
  // With an offset pointer the input offset stays and the pointer moves.
  off_t off = 8;
  EXPECT_THAT(sendfile(out.get(), in.get(), &off, 100),
              SyscallSucceedsWithValue(2));
  EXPECT_EQ(off, 10);
  EXPECT_THAT(lseek(in.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(7));
  EXPECT_EQ(Contents(out.get()), "2345689");
  // At EOF: 0.
  EXPECT_THAT(sendfile(out.get(), in.get(), &off, 10),
              SyscallSucceedsWithValue(0));
}

TEST(SendfileTest, Errors) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor in = FileWith(dir.path() + "/in", "abc");
  FileDescriptor out = FileWith(dir.path() + "/out", "");
  FileDescriptor wo(open((dir.path() + "/in").c_str(), O_WRONLY));
  FileDescriptor ro(open((dir.path() + "/out").c_str(), O_RDONLY));
  EXPECT_THAT(sendfile(out.get(), wo.get(), nullptr, 1),
              SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(sendfile(ro.get(), in.get(), nullptr, 1),
              SyscallFailsWithErrno(EBADF));
  FileDescriptor app(open((dir.path() + "/out").c_str(), O_WRONLY | O_APPEND));
  EXPECT_THAT(sendfile(app.get(), in.get(), nullptr, 1),
              SyscallFailsWithErrno(EINVAL));
  off_t neg = -1;
  EXPECT_THAT(sendfile(out.get(), in.get(), &neg, 1),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_sendfile, out.get(), in.get(),
                      reinterpret_cast<off_t*>(8), 1),
              SyscallFailsWithErrno(EFAULT));
}

TEST(CopyFileRangeTest, CopiesBetweenFiles) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor in = FileWith(dir.path() + "/in", "hello world");
  FileDescriptor out = FileWith(dir.path() + "/out", "");
  loff_t oi = 6, oo = 0;
  EXPECT_THAT(copy_file_range(in.get(), &oi, out.get(), &oo, 100, 0),
              SyscallSucceedsWithValue(5));
  EXPECT_EQ(oi, 11);
  EXPECT_EQ(oo, 5);
  EXPECT_EQ(Contents(out.get()), "world");
  // Without pointers the file offsets are used and moved.
  ASSERT_THAT(lseek(in.get(), 0, SEEK_SET), SyscallSucceeds());
  EXPECT_THAT(copy_file_range(in.get(), nullptr, out.get(), nullptr, 5, 0),
              SyscallSucceedsWithValue(5));
  EXPECT_THAT(lseek(in.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(5));
  EXPECT_EQ(Contents(out.get()), "hello");
  EXPECT_THAT(copy_file_range(in.get(), nullptr, out.get(), nullptr, 5, 1),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(copy_file_range(in.get(), nullptr, out.get(), nullptr, 0, 0),
              SyscallSucceedsWithValue(0));
}

TEST(CopyFileRangeTest, Errors) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor in = FileWith(dir.path() + "/in", "0123456789");
  FileDescriptor d(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  EXPECT_THAT(copy_file_range(d.get(), nullptr, in.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(EISDIR));
  // Overlapping ranges of one file.
  loff_t a = 0, b = 2;
  EXPECT_THAT(copy_file_range(in.get(), &a, in.get(), &b, 5, 0),
              SyscallFailsWithErrno(EINVAL));
  FileDescriptor app(open((dir.path() + "/in").c_str(), O_WRONLY | O_APPEND));
  a = 0;
  EXPECT_THAT(copy_file_range(in.get(), &a, app.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(EBADF));
  // Another tmpfs instance (/dev/shm) is another super block.
  std::string shm = "/dev/shm/sendfile_test_" + std::to_string(getpid());
  FileDescriptor other = FileWith(shm, "");
  unlink(shm.c_str());
  struct stat s1, s2;
  ASSERT_THAT(fstat(in.get(), &s1), SyscallSucceeds());
  ASSERT_THAT(fstat(other.get(), &s2), SyscallSucceeds());
  if (s1.st_dev != s2.st_dev) {
    a = 0;
    EXPECT_THAT(copy_file_range(in.get(), &a, other.get(), nullptr, 1, 0),
                SyscallFailsWithErrno(EXDEV));
  }
}

}  // namespace
}  // namespace sandbox::testutil
