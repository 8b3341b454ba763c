// FIFOs (mkfifo/mknod S_IFIFO): open semantics (fifo_open), one pipe per
// inode shared by every opener, data discarded when the last one closes.
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

class FifoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = NewTempPath();
    ASSERT_THAT(mkfifo(path_.c_str(), 0600), SyscallSucceeds());
  }
  void TearDown() override { unlink(path_.c_str()); }
  std::string path_;
};

TEST_F(FifoTest, IsAFifo) {
  struct stat st = {};
  ASSERT_THAT(stat(path_.c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  FileDescriptor fd(open(path_.c_str(), O_RDWR));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  struct stat fst = {};
  ASSERT_THAT(fstat(fd.get(), &fst), SyscallSucceeds());
  EXPECT_TRUE(S_ISFIFO(fst.st_mode));
  EXPECT_EQ(fst.st_ino, st.st_ino);
  EXPECT_EQ(fst.st_dev, st.st_dev);
}

TEST_F(FifoTest, MknodMakesAFifoToo) {
  std::string p = NewTempPath();
  ASSERT_THAT(mknod(p.c_str(), S_IFIFO | 0600, 0), SyscallSucceeds());
  FileDescriptor fd(open(p.c_str(), O_RDWR | O_NONBLOCK));
  EXPECT_TRUE(fd.valid()) << strerror(errno);
  unlink(p.c_str());
}

TEST_F(FifoTest, NonblockingReadOpenNeedsNoWriter) {
  FileDescriptor fd(open(path_.c_str(), O_RDONLY | O_NONBLOCK));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  // No writer: end of file, not EAGAIN.
  char c;
  EXPECT_THAT(read(fd.get(), &c, 1), SyscallSucceedsWithValue(0));
}

TEST_F(FifoTest, NonblockingWriteOpenWithoutReaderIsEnxio) {
  EXPECT_THAT(open(path_.c_str(), O_WRONLY | O_NONBLOCK),
              SyscallFailsWithErrno(ENXIO));
  FileDescriptor r(open(path_.c_str(), O_RDONLY | O_NONBLOCK));
  ASSERT_TRUE(r.valid());
  FileDescriptor w(open(path_.c_str(), O_WRONLY | O_NONBLOCK));
  EXPECT_TRUE(w.valid()) << strerror(errno);
}

TEST_F(FifoTest, ReadWriteOpenNeverBlocksAndTalksToItself) {
  FileDescriptor fd(open(path_.c_str(), O_RDWR));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  ASSERT_THAT(write(fd.get(), "self", 4), SyscallSucceedsWithValue(4));
  int n = -1;
  ASSERT_THAT(ioctl(fd.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 4);
  char buf[8] = {};
  EXPECT_THAT(read(fd.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "self");
}

TEST_F(FifoTest, OpenersShareOnePipe) {
  FileDescriptor r(open(path_.c_str(), O_RDONLY | O_NONBLOCK));
  ASSERT_TRUE(r.valid());
  FileDescriptor w(open(path_.c_str(), O_WRONLY | O_NONBLOCK));
  ASSERT_TRUE(w.valid());
  ASSERT_THAT(write(w.get(), "shared", 6), SyscallSucceedsWithValue(6));
  char buf[8] = {};
  EXPECT_THAT(read(r.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(6));
  EXPECT_EQ(std::string(buf, 6), "shared");
  EXPECT_THAT(fcntl(w.get(), F_GETPIPE_SZ), SyscallSucceedsWithValue(65536));
  EXPECT_THAT(lseek(r.get(), 0, SEEK_SET), SyscallFailsWithErrno(ESPIPE));
}

TEST_F(FifoTest, DataIsDiscardedWhenTheLastOpenerCloses) {
  {
    FileDescriptor fd(open(path_.c_str(), O_RDWR));
    ASSERT_TRUE(fd.valid());
    ASSERT_THAT(write(fd.get(), "lost", 4), SyscallSucceedsWithValue(4));
  }
  FileDescriptor fd(open(path_.c_str(), O_RDWR | O_NONBLOCK));
  ASSERT_TRUE(fd.valid());
  char c;
  EXPECT_THAT(read(fd.get(), &c, 1), SyscallFailsWithErrno(EAGAIN));
}

TEST_F(FifoTest, WriterWithoutReadersGetsEpipe) {
  FileDescriptor r(open(path_.c_str(), O_RDONLY | O_NONBLOCK));
  FileDescriptor w(open(path_.c_str(), O_WRONLY | O_NONBLOCK));
  ASSERT_TRUE(w.valid());
  r.reset();
  EXPECT_THAT(InForkedChild([&] {
                signal(SIGPIPE, SIG_IGN);
                if (write(w.get(), "x", 1) != -1 || errno != EPIPE) _exit(1);
              }),
              ExitedWithCode(0));
}

TEST_F(FifoTest, BlockingReadOpenWaitsForAWriter) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    usleep(100 * 1000);
    int fd = open(path_.c_str(), O_WRONLY);
    if (fd < 0) _exit(1);
    _exit(write(fd, "fifo", 4) == 4 ? 0 : 2);
  }
  FileDescriptor r(open(path_.c_str(), O_RDONLY));
  ASSERT_TRUE(r.valid()) << strerror(errno);
  char buf[8] = {};
  EXPECT_THAT(read(r.get(), buf, 4), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "fifo");
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
  // The writer has gone: end of file.
  EXPECT_THAT(read(r.get(), buf, 1), SyscallSucceedsWithValue(0));
}

TEST_F(FifoTest, BlockingWriteOpenWaitsForAReader) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    usleep(100 * 1000);
    int fd = open(path_.c_str(), O_RDONLY);
    if (fd < 0) _exit(1);
    char buf[4];
    _exit(read(fd, buf, 4) == 4 && std::string(buf, 4) == "back" ? 0 : 2);
  }
  FileDescriptor w(open(path_.c_str(), O_WRONLY));
  ASSERT_TRUE(w.valid()) << strerror(errno);
  EXPECT_THAT(write(w.get(), "back", 4), SyscallSucceedsWithValue(4));
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST_F(FifoTest, AccessModeThreeIsEinval) {
  // O_ACCMODE as the access mode: neither read nor write (fifo_open).
  EXPECT_THAT(open(path_.c_str(), O_ACCMODE | O_NONBLOCK),
              SyscallFailsWithErrno(EINVAL));
}

}  // namespace
}  // namespace sandbox::testutil
