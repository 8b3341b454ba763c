// flock(2): whole-file locks owned by the open file description.
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

class FlockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = NewTempPath();
    fd1_.reset(open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_TRUE(fd1_.valid()) << strerror(errno);
    fd2_ = Open();
    ASSERT_TRUE(fd2_.valid()) << strerror(errno);
  }
  void TearDown() override { unlink(path_.c_str()); }
  // Another open file description of the same file.
  FileDescriptor Open(int flags = O_RDWR) {
    return FileDescriptor(open(path_.c_str(), flags | O_CLOEXEC));
  }
  std::string path_;
  FileDescriptor fd1_, fd2_;
};

TEST_F(FlockTest, ExclusiveExcludesOtherDescriptions) {
  ASSERT_THAT(flock(fd1_.get(), LOCK_EX), SyscallSucceeds());
  EXPECT_THAT(flock(fd2_.get(), LOCK_EX | LOCK_NB),
              SyscallFailsWithErrno(EWOULDBLOCK));
  EXPECT_THAT(flock(fd2_.get(), LOCK_SH | LOCK_NB),
              SyscallFailsWithErrno(EWOULDBLOCK));
  ASSERT_THAT(flock(fd1_.get(), LOCK_UN), SyscallSucceeds());
  EXPECT_THAT(flock(fd2_.get(), LOCK_EX | LOCK_NB), SyscallSucceeds());
}

TEST_F(FlockTest, SharedLocksCoexist) {
  ASSERT_THAT(flock(fd1_.get(), LOCK_SH), SyscallSucceeds());
  EXPECT_THAT(flock(fd2_.get(), LOCK_SH | LOCK_NB), SyscallSucceeds());
  FileDescriptor fd3 = Open();
  EXPECT_THAT(flock(fd3.get(), LOCK_EX | LOCK_NB),
              SyscallFailsWithErrno(EWOULDBLOCK));
}

TEST_F(FlockTest, RelockingTheSameTypeIsANoOp) {
  ASSERT_THAT(flock(fd1_.get(), LOCK_EX), SyscallSucceeds());
  EXPECT_THAT(flock(fd1_.get(), LOCK_EX | LOCK_NB), SyscallSucceeds());
}

TEST_F(FlockTest, DupSharesTheLock) {
  ASSERT_THAT(flock(fd1_.get(), LOCK_EX), SyscallSucceeds());
  FileDescriptor dup1(dup(fd1_.get()));
  EXPECT_THAT(flock(dup1.get(), LOCK_EX | LOCK_NB), SyscallSucceeds());
  // Closing a duplicate keeps the description, hence the lock.
  dup1.reset();
  EXPECT_THAT(flock(fd2_.get(), LOCK_EX | LOCK_NB),
              SyscallFailsWithErrno(EWOULDBLOCK));
}

TEST_F(FlockTest, LastCloseReleases) {
  ASSERT_THAT(flock(fd1_.get(), LOCK_EX), SyscallSucceeds());
  fd1_.reset();
  EXPECT_THAT(flock(fd2_.get(), LOCK_EX | LOCK_NB), SyscallSucceeds());
}

TEST_F(FlockTest, FailedConversionLosesTheOldLock) {
  ASSERT_THAT(flock(fd1_.get(), LOCK_SH), SyscallSucceeds());
  ASSERT_THAT(flock(fd2_.get(), LOCK_SH), SyscallSucceeds());
  // The shared lock goes before the exclusive one is tried (not atomic).
  EXPECT_THAT(flock(fd1_.get(), LOCK_EX | LOCK_NB),
              SyscallFailsWithErrno(EWOULDBLOCK));
  ASSERT_THAT(flock(fd2_.get(), LOCK_UN), SyscallSucceeds());
  FileDescriptor fd3 = Open();
  EXPECT_THAT(flock(fd3.get(), LOCK_EX | LOCK_NB), SyscallSucceeds());
}

TEST_F(FlockTest, ReadOnlyAndWriteOnlyDescriptionsCanLock) {
  FileDescriptor ro = Open(O_RDONLY);
  FileDescriptor wo = Open(O_WRONLY);
  EXPECT_THAT(flock(ro.get(), LOCK_EX | LOCK_NB), SyscallSucceeds());
  EXPECT_THAT(flock(ro.get(), LOCK_UN), SyscallSucceeds());
  EXPECT_THAT(flock(wo.get(), LOCK_SH | LOCK_NB), SyscallSucceeds());
}

TEST_F(FlockTest, BadOperationIsEinvalBadFdIsEbadf) {
  EXPECT_THAT(flock(fd1_.get(), 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(flock(fd1_.get(), LOCK_SH | LOCK_EX),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(flock(fd1_.get(), LOCK_NB), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(flock(-1, LOCK_SH), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(flock(-1, 0), SyscallFailsWithErrno(EINVAL));
}

TEST_F(FlockTest, ForkedChildSharesTheDescriptionsLock) {
  ASSERT_THAT(flock(fd1_.get(), LOCK_EX), SyscallSucceeds());
  int fd1 = fd1_.get(), fd2 = fd2_.get();
  EXPECT_THAT(
      InForkedChild([fd1, fd2] {
        if (flock(fd1, LOCK_EX | LOCK_NB) != 0) _exit(1);
        if (flock(fd2, LOCK_EX | LOCK_NB) != -1 || errno != EWOULDBLOCK) {
          _exit(2);
        }
      }),
      ExitedWithCode(0));
}

TEST_F(FlockTest, BlockingLockWaitsForTheHolder) {
  ASSERT_THAT(flock(fd1_.get(), LOCK_EX), SyscallSucceeds());
  int pipefd[2];
  ASSERT_THAT(pipe(pipefd), SyscallSucceeds());
  std::string path = path_;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pipefd[0]);
    int fd = open(path.c_str(), O_RDWR);
    if (fd < 0) _exit(1);
    if (flock(fd, LOCK_EX | LOCK_NB) != -1 || errno != EWOULDBLOCK) _exit(2);
    if (write(pipefd[1], "w", 1) != 1) _exit(3);
    if (flock(fd, LOCK_EX) != 0) _exit(4);  // Blocks until released.
    if (write(pipefd[1], "g", 1) != 1) _exit(5);
    _exit(0);
  }
  close(pipefd[1]);
  FileDescriptor rd(pipefd[0]);
  char c;
  ASSERT_THAT(read(rd.get(), &c, 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'w');
  usleep(100 * 1000);
  ASSERT_THAT(flock(fd1_.get(), LOCK_UN), SyscallSucceeds());
  ASSERT_THAT(read(rd.get(), &c, 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'g');
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST_F(FlockTest, FlockAndFcntlLocksDoNotInteract) {
  ASSERT_THAT(flock(fd1_.get(), LOCK_EX), SyscallSucceeds());
  int fd2 = fd2_.get();
  EXPECT_THAT(InForkedChild([fd2] {
                struct flock fl = {};
                fl.l_type = F_WRLCK;
                fl.l_whence = SEEK_SET;
                if (fcntl(fd2, F_SETLK, &fl) != 0) _exit(1);
              }),
              ExitedWithCode(0));
}

TEST(FlockPipeTest, PipesCanBeLocked) {
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  FileDescriptor r(fds[0]), w(fds[1]);
  EXPECT_THAT(flock(r.get(), LOCK_EX | LOCK_NB), SyscallSucceeds());
  // The other end is another description of the same inode.
  EXPECT_THAT(flock(w.get(), LOCK_EX | LOCK_NB),
              SyscallFailsWithErrno(EWOULDBLOCK));
}

}  // namespace
}  // namespace sandbox::testutil
