// fcntl(2) record locks: POSIX locks (F_GETLK/F_SETLK/F_SETLKW, owned by
// the process, dropped when it closes any descriptor of the file) and OFD
// locks (F_OFD_*, owned by the open file description).
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

struct flock Lock(short type, off_t start, off_t len, short whence = SEEK_SET) {
  struct flock fl = {};
  fl.l_type = type;
  fl.l_whence = whence;
  fl.l_start = start;
  fl.l_len = len;
  return fl;
}

class FcntlLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = NewTempPath();
    fd_.reset(open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_TRUE(fd_.valid()) << strerror(errno);
  }
  void TearDown() override { unlink(path_.c_str()); }

  FileDescriptor Open(int flags = O_RDWR) {
    return FileDescriptor(open(path_.c_str(), flags | O_CLOEXEC));
  }
  int SetLk(int fd, short type, off_t start, off_t len, int cmd = F_SETLK) {
    struct flock fl = Lock(type, start, len);
    return fcntl(fd, cmd, &fl);
  }
  // Runs fn in another process (which owns no lock) and returns its wait
  // status; fn reports failures by _exit(nonzero).
  int InOtherProcess(const std::function<void()>& fn) {
    return InForkedChild(fn);
  }
  // F_GETLK from another process for a write lock on [start, start+len).
  struct flock GetLkElsewhere(off_t start, off_t len) {
    struct flock result = {};
    int p[2];
    if (pipe(p) != 0) return result;
    int fd = fd_.get();
    InForkedChild([&] {
      struct flock fl = Lock(F_WRLCK, start, len);
      if (fcntl(fd, F_GETLK, &fl) != 0) fl.l_type = -1;
      if (write(p[1], &fl, sizeof(fl)) != sizeof(fl)) _exit(1);
    });
    if (read(p[0], &result, sizeof(result)) != sizeof(result)) result = {};
    close(p[0]);
    close(p[1]);
    return result;
  }

  std::string path_;
  FileDescriptor fd_;
};

TEST_F(FcntlLockTest, GetlkReportsAnotherProcesssLock) {
  ASSERT_THAT(SetLk(fd_.get(), F_WRLCK, 10, 20), SyscallSucceeds());
  struct flock fl = GetLkElsewhere(0, 0);
  EXPECT_EQ(fl.l_type, F_WRLCK);
  EXPECT_EQ(fl.l_whence, SEEK_SET);
  EXPECT_EQ(fl.l_start, 10);
  EXPECT_EQ(fl.l_len, 20);
  EXPECT_EQ(fl.l_pid, getpid());
  // The owner itself sees no conflict.
  struct flock own = Lock(F_WRLCK, 0, 0);
  ASSERT_THAT(fcntl(fd_.get(), F_GETLK, &own), SyscallSucceeds());
  EXPECT_EQ(own.l_type, F_UNLCK);
}

TEST_F(FcntlLockTest, ConflictingSetlkIsEagain) {
  ASSERT_THAT(SetLk(fd_.get(), F_RDLCK, 0, 100), SyscallSucceeds());
  int fd = fd_.get();
  EXPECT_THAT(InOtherProcess([fd] {
                struct flock w = Lock(F_WRLCK, 50, 1);
                if (fcntl(fd, F_SETLK, &w) != -1 || errno != EAGAIN) _exit(1);
                struct flock r = Lock(F_RDLCK, 50, 1);
                if (fcntl(fd, F_SETLK, &r) != 0) _exit(2);  // Readers share.
                struct flock w2 = Lock(F_WRLCK, 100, 10);
                if (fcntl(fd, F_SETLK, &w2) != 0) _exit(3);  // Past the lock.
              }),
              ExitedWithCode(0));
}

TEST_F(FcntlLockTest, UnlockInTheMiddleSplitsTheLock) {
  ASSERT_THAT(SetLk(fd_.get(), F_WRLCK, 0, 100), SyscallSucceeds());
  ASSERT_THAT(SetLk(fd_.get(), F_UNLCK, 40, 20), SyscallSucceeds());
  EXPECT_EQ(GetLkElsewhere(40, 20).l_type, F_UNLCK);
  struct flock left = GetLkElsewhere(30, 20);
  EXPECT_EQ(left.l_type, F_WRLCK);
  EXPECT_EQ(left.l_start, 0);
  EXPECT_EQ(left.l_len, 40);
  struct flock right = GetLkElsewhere(50, 50);
  EXPECT_EQ(right.l_start, 60);
  EXPECT_EQ(right.l_len, 40);
}

TEST_F(FcntlLockTest, AdjacentLocksOfOneTypeMerge) {
  ASSERT_THAT(SetLk(fd_.get(), F_WRLCK, 0, 10), SyscallSucceeds());
  ASSERT_THAT(SetLk(fd_.get(), F_WRLCK, 10, 10), SyscallSucceeds());
  struct flock fl = GetLkElsewhere(0, 0);
  EXPECT_EQ(fl.l_start, 0);
  EXPECT_EQ(fl.l_len, 20);
}

TEST_F(FcntlLockTest, DowngradeInTheMiddleKeepsThreeLocks) {
  ASSERT_THAT(SetLk(fd_.get(), F_WRLCK, 0, 30), SyscallSucceeds());
  ASSERT_THAT(SetLk(fd_.get(), F_RDLCK, 10, 10), SyscallSucceeds());
  struct flock fl = GetLkElsewhere(10, 10);
  // A write request conflicts with the read lock in the middle.
  EXPECT_EQ(fl.l_type, F_RDLCK);
  EXPECT_EQ(fl.l_start, 10);
  EXPECT_EQ(fl.l_len, 10);
  int fd = fd_.get();
  EXPECT_THAT(InOtherProcess([fd] {
                struct flock r = Lock(F_RDLCK, 10, 10);
                if (fcntl(fd, F_SETLK, &r) != 0) _exit(1);
                struct flock r2 = Lock(F_RDLCK, 0, 11);
                if (fcntl(fd, F_SETLK, &r2) != -1 || errno != EAGAIN) _exit(2);
              }),
              ExitedWithCode(0));
}

TEST_F(FcntlLockTest, RangesFromCurEndAndNegativeLength) {
  ASSERT_THAT(ftruncate(fd_.get(), 50), SyscallSucceeds());
  ASSERT_THAT(lseek(fd_.get(), 100, SEEK_SET), SyscallSucceedsWithValue(100));
  struct flock cur = Lock(F_WRLCK, 5, 10, SEEK_CUR);
  ASSERT_THAT(fcntl(fd_.get(), F_SETLK, &cur), SyscallSucceeds());
  struct flock fl = GetLkElsewhere(100, 100);
  EXPECT_EQ(fl.l_start, 105);
  EXPECT_EQ(fl.l_len, 10);
  ASSERT_THAT(SetLk(fd_.get(), F_UNLCK, 0, 0), SyscallSucceeds());

  struct flock end = Lock(F_WRLCK, -10, 5, SEEK_END);
  ASSERT_THAT(fcntl(fd_.get(), F_SETLK, &end), SyscallSucceeds());
  fl = GetLkElsewhere(0, 0);
  EXPECT_EQ(fl.l_start, 40);
  EXPECT_EQ(fl.l_len, 5);
  ASSERT_THAT(SetLk(fd_.get(), F_UNLCK, 0, 0), SyscallSucceeds());

  // l_len < 0: the bytes before l_start.
  ASSERT_THAT(SetLk(fd_.get(), F_WRLCK, 10, -5), SyscallSucceeds());
  fl = GetLkElsewhere(0, 0);
  EXPECT_EQ(fl.l_start, 5);
  EXPECT_EQ(fl.l_len, 5);
}

TEST_F(FcntlLockTest, InvalidArgumentsAreEinval) {
  struct flock bad_type = Lock(42, 0, 0);
  EXPECT_THAT(fcntl(fd_.get(), F_SETLK, &bad_type),
              SyscallFailsWithErrno(EINVAL));
  struct flock bad_whence = Lock(F_WRLCK, 0, 0, 7);
  EXPECT_THAT(fcntl(fd_.get(), F_SETLK, &bad_whence),
              SyscallFailsWithErrno(EINVAL));
  struct flock negative = Lock(F_WRLCK, -1, 1);
  EXPECT_THAT(fcntl(fd_.get(), F_SETLK, &negative),
              SyscallFailsWithErrno(EINVAL));
  struct flock before_zero = Lock(F_WRLCK, 2, -3);
  EXPECT_THAT(fcntl(fd_.get(), F_SETLK, &before_zero),
              SyscallFailsWithErrno(EINVAL));
  struct flock getlk_unlock = Lock(F_UNLCK, 0, 0);
  EXPECT_THAT(fcntl(fd_.get(), F_GETLK, &getlk_unlock),
              SyscallFailsWithErrno(EINVAL));
  struct flock overflow = Lock(F_WRLCK, INT64_MAX, 2);
  EXPECT_THAT(fcntl(fd_.get(), F_SETLK, &overflow),
              SyscallFailsWithErrno(EOVERFLOW));
  EXPECT_THAT(fcntl(fd_.get(), F_SETLK, nullptr),
              SyscallFailsWithErrno(EFAULT));
  struct flock ok = Lock(F_WRLCK, 0, 0);
  EXPECT_THAT(fcntl(-1, F_SETLK, &ok), SyscallFailsWithErrno(EBADF));
}

TEST_F(FcntlLockTest, LockTypeNeedsTheMatchingAccessMode) {
  FileDescriptor ro = Open(O_RDONLY);
  FileDescriptor wo = Open(O_WRONLY);
  EXPECT_THAT(SetLk(ro.get(), F_WRLCK, 0, 1), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(SetLk(wo.get(), F_RDLCK, 0, 1), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(SetLk(ro.get(), F_RDLCK, 0, 1), SyscallSucceeds());
  EXPECT_THAT(SetLk(wo.get(), F_WRLCK, 2, 1), SyscallSucceeds());
  // F_GETLK asks nothing of the access mode.
  struct flock fl = Lock(F_WRLCK, 0, 0);
  EXPECT_THAT(fcntl(ro.get(), F_GETLK, &fl), SyscallSucceeds());
}

TEST_F(FcntlLockTest, ClosingAnyDescriptorOfTheFileReleases) {
  ASSERT_THAT(SetLk(fd_.get(), F_WRLCK, 0, 0), SyscallSucceeds());
  FileDescriptor other = Open();
  ASSERT_TRUE(other.valid());
  EXPECT_EQ(GetLkElsewhere(0, 0).l_type, F_WRLCK);
  other.reset();  // Not the descriptor that locked.
  EXPECT_EQ(GetLkElsewhere(0, 0).l_type, F_UNLCK);
}

TEST_F(FcntlLockTest, LocksAreNotInheritedAndGoAtExit) {
  ASSERT_THAT(SetLk(fd_.get(), F_WRLCK, 0, 10), SyscallSucceeds());
  int fd = fd_.get();
  EXPECT_THAT(InOtherProcess([fd] {
                struct flock w = Lock(F_WRLCK, 0, 1);
                if (fcntl(fd, F_SETLK, &w) != -1 || errno != EAGAIN) _exit(1);
                struct flock w2 = Lock(F_WRLCK, 20, 1);
                if (fcntl(fd, F_SETLK, &w2) != 0) _exit(2);
                // Exiting drops the child's lock.
              }),
              ExitedWithCode(0));
  EXPECT_THAT(SetLk(fd_.get(), F_UNLCK, 0, 0), SyscallSucceeds());
  EXPECT_EQ(GetLkElsewhere(0, 0).l_type, F_UNLCK);
}

TEST_F(FcntlLockTest, SetlkwWaitsForTheHolder) {
  ASSERT_THAT(SetLk(fd_.get(), F_WRLCK, 0, 1), SyscallSucceeds());
  int p[2];
  ASSERT_THAT(pipe(p), SyscallSucceeds());
  int fd = fd_.get();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(p[0]);
    struct flock w = Lock(F_WRLCK, 0, 1);
    if (fcntl(fd, F_SETLK, &w) != -1 || errno != EAGAIN) _exit(1);
    if (write(p[1], "w", 1) != 1) _exit(2);
    if (fcntl(fd, F_SETLKW, &w) != 0) _exit(3);
    if (write(p[1], "g", 1) != 1) _exit(4);
    _exit(0);
  }
  close(p[1]);
  FileDescriptor rd(p[0]);
  char c;
  ASSERT_THAT(read(rd.get(), &c, 1), SyscallSucceedsWithValue(1));
  usleep(100 * 1000);
  ASSERT_THAT(SetLk(fd_.get(), F_UNLCK, 0, 1), SyscallSucceeds());
  ASSERT_THAT(read(rd.get(), &c, 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'g');
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST_F(FcntlLockTest, SetlkwDeadlockIsEdeadlk) {
  ASSERT_THAT(SetLk(fd_.get(), F_WRLCK, 0, 1), SyscallSucceeds());
  int p[2];
  ASSERT_THAT(pipe(p), SyscallSucceeds());
  int fd = fd_.get();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(p[0]);
    struct flock b1 = Lock(F_WRLCK, 1, 1);
    if (fcntl(fd, F_SETLK, &b1) != 0) _exit(1);
    if (write(p[1], "1", 1) != 1) _exit(2);
    struct flock b0 = Lock(F_WRLCK, 0, 1);
    // Sleeps until the parent, refused with EDEADLK, unlocks byte 0.
    if (fcntl(fd, F_SETLKW, &b0) != 0) _exit(3);
    _exit(0);
  }
  close(p[1]);
  FileDescriptor rd(p[0]);
  char c;
  ASSERT_THAT(read(rd.get(), &c, 1), SyscallSucceedsWithValue(1));
  usleep(200 * 1000);  // Let the child go to sleep on byte 0.
  EXPECT_THAT(SetLk(fd_.get(), F_WRLCK, 1, 1, F_SETLKW),
              SyscallFailsWithErrno(EDEADLK));
  ASSERT_THAT(SetLk(fd_.get(), F_UNLCK, 0, 1), SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
}

// ---- OFD locks. ----

TEST_F(FcntlLockTest, OfdLockNeedsZeroPid) {
  struct flock fl = Lock(F_WRLCK, 0, 0);
  fl.l_pid = 1;
  EXPECT_THAT(fcntl(fd_.get(), F_OFD_SETLK, &fl),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(fcntl(fd_.get(), F_OFD_GETLK, &fl),
              SyscallFailsWithErrno(EINVAL));
}

TEST_F(FcntlLockTest, OfdLocksConflictBetweenDescriptionsOfOneProcess) {
  struct flock fl = Lock(F_WRLCK, 0, 10);
  ASSERT_THAT(fcntl(fd_.get(), F_OFD_SETLK, &fl), SyscallSucceeds());
  FileDescriptor other = Open();
  struct flock fl2 = Lock(F_RDLCK, 5, 1);
  EXPECT_THAT(fcntl(other.get(), F_OFD_SETLK, &fl2),
              SyscallFailsWithErrno(EAGAIN));
  struct flock get = Lock(F_RDLCK, 0, 0);
  ASSERT_THAT(fcntl(other.get(), F_OFD_GETLK, &get), SyscallSucceeds());
  EXPECT_EQ(get.l_type, F_WRLCK);
  EXPECT_EQ(get.l_pid, -1);
  EXPECT_EQ(get.l_len, 10);
  // And with this process's POSIX locks.
  EXPECT_THAT(SetLk(other.get(), F_RDLCK, 0, 1), SyscallFailsWithErrno(EAGAIN));
  // A duplicate is the same description: no conflict.
  FileDescriptor dup1(dup(fd_.get()));
  struct flock fl3 = Lock(F_RDLCK, 0, 1);
  EXPECT_THAT(fcntl(dup1.get(), F_OFD_SETLK, &fl3), SyscallSucceeds());
}

TEST_F(FcntlLockTest, OfdLockSurvivesOtherClosesAndGoesWithTheDescription) {
  struct flock fl = Lock(F_WRLCK, 0, 0);
  ASSERT_THAT(fcntl(fd_.get(), F_OFD_SETLK, &fl), SyscallSucceeds());
  FileDescriptor other = Open();
  FileDescriptor dup1(dup(fd_.get()));
  other.reset();
  dup1.reset();
  FileDescriptor third = Open();
  struct flock fl2 = Lock(F_WRLCK, 0, 0);
  EXPECT_THAT(fcntl(third.get(), F_OFD_SETLK, &fl2),
              SyscallFailsWithErrno(EAGAIN));
  fd_.reset();
  EXPECT_THAT(fcntl(third.get(), F_OFD_SETLK, &fl2), SyscallSucceeds());
}

TEST_F(FcntlLockTest, OfdSetlkwWaitsForAnotherDescription) {
  struct flock fl = Lock(F_WRLCK, 0, 1);
  ASSERT_THAT(fcntl(fd_.get(), F_OFD_SETLK, &fl), SyscallSucceeds());
  int p[2];
  ASSERT_THAT(pipe(p), SyscallSucceeds());
  std::string path = path_;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(p[0]);
    int fd = open(path.c_str(), O_RDWR);
    if (fd < 0) _exit(1);
    if (write(p[1], "w", 1) != 1) _exit(2);
    struct flock w = Lock(F_WRLCK, 0, 1);
    if (fcntl(fd, F_OFD_SETLKW, &w) != 0) _exit(3);
    if (write(p[1], "g", 1) != 1) _exit(4);
    _exit(0);
  }
  close(p[1]);
  FileDescriptor rd(p[0]);
  char c;
  ASSERT_THAT(read(rd.get(), &c, 1), SyscallSucceedsWithValue(1));
  usleep(100 * 1000);
  struct flock un = Lock(F_UNLCK, 0, 1);
  ASSERT_THAT(fcntl(fd_.get(), F_OFD_SETLK, &un), SyscallSucceeds());
  ASSERT_THAT(read(rd.get(), &c, 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'g');
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
}

}  // namespace
}  // namespace sandbox::testutil
