// eventfd(2), eventfd2(2): counter and semaphore reads, 8-byte rules,
// overflow, flags, readiness, blocking, fstat, fdinfo, /proc fd link.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr uint64_t kMax = ~uint64_t{0};

ssize_t Put(int fd, uint64_t v) { return write(fd, &v, sizeof(v)); }

TEST(EventfdTest, CounterReadsAndResets) {
  FileDescriptor e(eventfd(3, EFD_NONBLOCK | EFD_CLOEXEC));
  ASSERT_TRUE(e.valid());
  ASSERT_THAT(Put(e.get(), 4), SyscallSucceedsWithValue(8));
  uint64_t v = 0;
  ASSERT_THAT(read(e.get(), &v, sizeof(v)), SyscallSucceedsWithValue(8));
  EXPECT_EQ(v, 7u);
  EXPECT_THAT(read(e.get(), &v, sizeof(v)), SyscallFailsWithErrno(EAGAIN));
}

TEST(EventfdTest, SemaphoreReadsOne) {
  FileDescriptor e(eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC));
  ASSERT_TRUE(e.valid());
  uint64_t v = 0;
  ASSERT_THAT(read(e.get(), &v, sizeof(v)), SyscallSucceedsWithValue(8));
  EXPECT_EQ(v, 1u);
  ASSERT_THAT(read(e.get(), &v, sizeof(v)), SyscallSucceedsWithValue(8));
  EXPECT_EQ(v, 1u);
  EXPECT_THAT(read(e.get(), &v, sizeof(v)), SyscallFailsWithErrno(EAGAIN));
}

TEST(EventfdTest, SizesAndLimits) {
  FileDescriptor e(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  ASSERT_TRUE(e.valid());
  char small[7] = {};
  EXPECT_THAT(read(e.get(), small, sizeof(small)),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(write(e.get(), small, sizeof(small)),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Put(e.get(), kMax), SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(Put(e.get(), kMax - 1), SyscallSucceedsWithValue(8));
  EXPECT_THAT(Put(e.get(), 1), SyscallFailsWithErrno(EAGAIN));
  EXPECT_THAT(Put(e.get(), 0), SyscallSucceedsWithValue(8));
  // A larger buffer reads and writes 8 bytes.
  uint64_t big[2] = {0, 0};
  EXPECT_THAT(read(e.get(), big, sizeof(big)), SyscallSucceedsWithValue(8));
  EXPECT_EQ(big[0], kMax - 1);
  EXPECT_THAT(read(e.get(), reinterpret_cast<void*>(8), 8),
              SyscallFailsWithErrno(EAGAIN));
  ASSERT_THAT(Put(e.get(), 1), SyscallSucceedsWithValue(8));
  EXPECT_THAT(write(e.get(), reinterpret_cast<void*>(8), 8),
              SyscallFailsWithErrno(EFAULT));
}

TEST(EventfdTest, Flags) {
  EXPECT_THAT(syscall(SYS_eventfd2, 0, 0x10), SyscallFailsWithErrno(EINVAL));
  FileDescriptor e(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ASSERT_TRUE(e.valid());
  EXPECT_THAT(fcntl(e.get(), F_GETFD), SyscallSucceedsWithValue(FD_CLOEXEC));
  EXPECT_THAT(fcntl(e.get(), F_GETFL),
              SyscallSucceedsWithValue(O_RDWR | O_NONBLOCK));
  FileDescriptor plain(syscall(SYS_eventfd, 5));
  ASSERT_TRUE(plain.valid());
  EXPECT_THAT(fcntl(plain.get(), F_GETFD), SyscallSucceedsWithValue(0));
  EXPECT_THAT(fcntl(plain.get(), F_GETFL), SyscallSucceedsWithValue(O_RDWR));
}

TEST(EventfdTest, Readiness) {
  FileDescriptor e(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  ASSERT_TRUE(e.valid());
  pollfd p = {e.get(), POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM, 0};
  ASSERT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents, POLLOUT);
  ASSERT_THAT(Put(e.get(), kMax - 1), SyscallSucceedsWithValue(8));
  ASSERT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents, POLLIN);
}

TEST(EventfdTest, BlockingReadAndWrite) {
  FileDescriptor e(eventfd(0, EFD_CLOEXEC));
  ASSERT_TRUE(e.valid());
  std::thread t([&] {
    usleep(30000);
    ASSERT_EQ(Put(e.get(), 9), 8);
  });
  uint64_t v = 0;
  ASSERT_THAT(read(e.get(), &v, sizeof(v)), SyscallSucceedsWithValue(8));
  EXPECT_EQ(v, 9u);
  t.join();
  // A write that would overflow waits for a read.
  ASSERT_THAT(Put(e.get(), kMax - 1), SyscallSucceedsWithValue(8));
  std::thread r([&] {
    usleep(30000);
    uint64_t x;
    ASSERT_EQ(read(e.get(), &x, sizeof(x)), 8);
  });
  ASSERT_THAT(Put(e.get(), 2), SyscallSucceedsWithValue(8));
  r.join();
  ASSERT_THAT(read(e.get(), &v, sizeof(v)), SyscallSucceedsWithValue(8));
  EXPECT_EQ(v, 2u);
}

TEST(EventfdTest, StatLseekAndProc) {
  FileDescriptor e(eventfd(42, EFD_CLOEXEC));
  ASSERT_TRUE(e.valid());
  struct stat st;
  ASSERT_THAT(fstat(e.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_mode, 0600u);  // an anonymous inode: no type bits
  EXPECT_THAT(lseek(e.get(), 10, SEEK_SET), SyscallSucceedsWithValue(0));
  char link[64] = {};
  std::string path = "/proc/self/fd/" + std::to_string(e.get());
  ASSERT_THAT(readlink(path.c_str(), link, sizeof(link) - 1),
              SyscallSucceeds());
  EXPECT_STREQ(link, "anon_inode:[eventfd]");
  std::ifstream info("/proc/self/fdinfo/" + std::to_string(e.get()));
  std::stringstream ss;
  ss << info.rdbuf();
  std::string text = ss.str();
  size_t at = text.find("eventfd-count:");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(std::stoull(text.substr(at + 14), nullptr, 16), 42u) << text;
}

}  // namespace
}  // namespace sandbox::testutil
