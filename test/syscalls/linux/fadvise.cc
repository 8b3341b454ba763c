// fadvise64(2): advice is accepted for files, refused for pipes, checked.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

long Fadvise(int fd, long offset, long len, int advice) {
  return syscall(SYS_fadvise64, fd, offset, len, advice);
}

TEST(FadviseTest, EveryAdviceOnAFile) {
  TempPath f = TempPath::CreateFile();
  int fd = open(f.path().c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "abc", 3), 3);
  for (int advice :
       {POSIX_FADV_NORMAL, POSIX_FADV_RANDOM, POSIX_FADV_SEQUENTIAL,
        POSIX_FADV_WILLNEED, POSIX_FADV_DONTNEED, POSIX_FADV_NOREUSE}) {
    EXPECT_THAT(Fadvise(fd, 0, 0, advice), SyscallSucceeds()) << advice;
    EXPECT_THAT(Fadvise(fd, 1 << 20, 4096, advice), SyscallSucceeds());
  }
  // Advice changes nothing visible.
  char buf[4] = {};
  EXPECT_EQ(pread(fd, buf, 3, 0), 3);
  EXPECT_STREQ(buf, "abc");
  close(fd);
}

TEST(FadviseTest, Errors) {
  TempPath f = TempPath::CreateFile();
  int fd = open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_THAT(Fadvise(fd, 0, 0, 6), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Fadvise(fd, 0, 0, -1), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Fadvise(fd, 0, -1, POSIX_FADV_NORMAL),
              SyscallFailsWithErrno(EINVAL));
  close(fd);
  EXPECT_THAT(Fadvise(fd, 0, 0, POSIX_FADV_NORMAL),
              SyscallFailsWithErrno(EBADF));
  int path_fd = open(f.path().c_str(), O_PATH | O_CLOEXEC);
  ASSERT_GE(path_fd, 0);
  EXPECT_THAT(Fadvise(path_fd, 0, 0, POSIX_FADV_NORMAL),
              SyscallFailsWithErrno(EBADF));
  close(path_fd);
  // A pipe: ESPIPE, before the advice is looked at.
  int p[2];
  ASSERT_THAT(pipe(p), SyscallSucceeds());
  EXPECT_THAT(Fadvise(p[0], 0, 0, POSIX_FADV_NORMAL),
              SyscallFailsWithErrno(ESPIPE));
  EXPECT_THAT(Fadvise(p[1], 0, 0, 99), SyscallFailsWithErrno(ESPIPE));
  close(p[0]);
  close(p[1]);
}

}  // namespace
}  // namespace sandbox::testutil
