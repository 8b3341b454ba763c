// /dev: the memory devices, tty, and the /proc/self/fd links.
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

TEST(DevTest, DeviceNumbers) {
  struct {
    const char* path;
    unsigned maj, min;
  } devs[] = {{"/dev/null", 1, 3},    {"/dev/zero", 1, 5},
              {"/dev/full", 1, 7},    {"/dev/random", 1, 8},
              {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0},
              {"/dev/ptmx", 5, 2}};
  for (const auto& d : devs) {
    struct stat st;
    ASSERT_THAT(stat(d.path, &st), SyscallSucceeds()) << d.path;
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << d.path;
    // A /dev/ptmx that links to pts/ptmx has devpts's ptmxmode (0000 by
    // default), not 0666.
    struct stat lst;
    ASSERT_THAT(lstat(d.path, &lst), SyscallSucceeds()) << d.path;
    if (!S_ISLNK(lst.st_mode)) EXPECT_EQ(st.st_mode & 0777, 0666u) << d.path;
    EXPECT_EQ(major(st.st_rdev), d.maj) << d.path;
    EXPECT_EQ(minor(st.st_rdev), d.min) << d.path;
  }
}

TEST(DevTest, NullReadsEofAndSwallowsWrites) {
  FileDescriptor fd(open("/dev/null", O_RDWR));
  ASSERT_TRUE(fd.valid());
  char buf[64];
  memset(buf, 'x', sizeof(buf));
  EXPECT_THAT(read(fd.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(0));
  EXPECT_THAT(write(fd.get(), buf, sizeof(buf)),
              SyscallSucceedsWithValue(sizeof(buf)));
  EXPECT_THAT(pread(fd.get(), buf, sizeof(buf), 100),
              SyscallSucceedsWithValue(0));
  EXPECT_THAT(lseek(fd.get(), 1000, SEEK_SET), SyscallSucceedsWithValue(0));
}

TEST(DevTest, ZeroReadsZeros) {
  FileDescriptor fd(open("/dev/zero", O_RDWR));
  ASSERT_TRUE(fd.valid());
  char buf[4096];
  memset(buf, 'x', sizeof(buf));
  EXPECT_THAT(read(fd.get(), buf, sizeof(buf)),
              SyscallSucceedsWithValue(sizeof(buf)));
  for (char c : buf) ASSERT_EQ(c, 0);
  EXPECT_THAT(write(fd.get(), buf, 10), SyscallSucceedsWithValue(10));
}

TEST(DevTest, FullGivesEnospcOnWriteAndZerosOnRead) {
  FileDescriptor fd(open("/dev/full", O_RDWR));
  ASSERT_TRUE(fd.valid());
  char buf[128];
  memset(buf, 'x', sizeof(buf));
  EXPECT_THAT(write(fd.get(), buf, sizeof(buf)), SyscallFailsWithErrno(ENOSPC));
  EXPECT_THAT(read(fd.get(), buf, sizeof(buf)),
              SyscallSucceedsWithValue(sizeof(buf)));
  for (char c : buf) ASSERT_EQ(c, 0);
}

// Linux's write_null/write_zero/write_full never touch the buffer, and
// read_null returns 0 without touching it: a bad pointer is fine.
TEST(DevTest, NullZeroFullIgnoreTheBufferOfAWrite) {
  void* bad = reinterpret_cast<void*>(8);
  FileDescriptor null(open("/dev/null", O_RDWR));
  FileDescriptor zero(open("/dev/zero", O_RDWR));
  FileDescriptor full(open("/dev/full", O_RDWR));
  ASSERT_TRUE(null.valid() && zero.valid() && full.valid());
  EXPECT_THAT(write(null.get(), bad, 1 << 20),
              SyscallSucceedsWithValue(1 << 20));
  EXPECT_THAT(write(zero.get(), bad, 100), SyscallSucceedsWithValue(100));
  EXPECT_THAT(write(full.get(), bad, 100), SyscallFailsWithErrno(ENOSPC));
  EXPECT_THAT(read(null.get(), bad, 100), SyscallSucceedsWithValue(0));
  EXPECT_THAT(read(zero.get(), bad, 100), SyscallFailsWithErrno(EFAULT));
}

// read_iter_zero clears the pages it can and stops where the buffer
// faults: a read across a page boundary into an unmapped page is short.
TEST(DevTest, ZeroReadIsShortWhereTheBufferFaults) {
  const size_t page = sysconf(_SC_PAGESIZE);
  char* p = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_EQ(munmap(p + page, page), 0);
  memset(p, 'x', page);
  FileDescriptor fd(open("/dev/zero", O_RDONLY));
  ASSERT_TRUE(fd.valid());
  EXPECT_THAT(read(fd.get(), p + page - 100, 1000),
              SyscallSucceedsWithValue(100));
  for (size_t i = page - 100; i < page; ++i) ASSERT_EQ(p[i], 0) << i;
  EXPECT_EQ(p[page - 101], 'x');
  // A large read clears every byte (whole pages included).
  std::vector<char> big(1 << 20, 'y');
  EXPECT_THAT(read(fd.get(), big.data(), big.size()),
              SyscallSucceedsWithValue(big.size()));
  for (char c : big) ASSERT_EQ(c, 0);
  munmap(p, page);
}

TEST(DevTest, RandomNeverBlocks) {
  for (const char* path : {"/dev/random", "/dev/urandom"}) {
    FileDescriptor fd(open(path, O_RDONLY | O_NONBLOCK));
    ASSERT_TRUE(fd.valid()) << path;
    unsigned char a[64], b[64];
    ASSERT_THAT(read(fd.get(), a, sizeof(a)),
                SyscallSucceedsWithValue(sizeof(a)));
    ASSERT_THAT(read(fd.get(), b, sizeof(b)),
                SyscallSucceedsWithValue(sizeof(b)));
    EXPECT_NE(memcmp(a, b, sizeof(a)), 0) << path;
  }
}

TEST(DevTest, TtyWithoutControllingTerminalIsEnxio) {
  int fd = open("/dev/tty", O_RDWR);
  if (fd >= 0) {
    close(fd);
    GTEST_SKIP() << "this process has a controlling terminal";
  }
  EXPECT_EQ(errno, ENXIO);
}

std::string Readlink(const std::string& path) {
  char buf[4096];
  ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, n);
}

TEST(DevTest, FdLinks) {
  EXPECT_EQ(Readlink("/dev/fd"), "/proc/self/fd");
  EXPECT_EQ(Readlink("/dev/stdin"), "/proc/self/fd/0");
  EXPECT_EQ(Readlink("/dev/stdout"), "/proc/self/fd/1");
  EXPECT_EQ(Readlink("/dev/stderr"), "/proc/self/fd/2");
}

TEST(DevTest, DevFdReopensAFile) {
  TempPath p = TempPath::CreateFile();
  {
    FileDescriptor w(open(p.path().c_str(), O_WRONLY));
    ASSERT_TRUE(w.valid());
    ASSERT_THAT(write(w.get(), "hello", 5), SyscallSucceedsWithValue(5));
  }
  FileDescriptor fd(open(p.path().c_str(), O_RDONLY));
  ASSERT_TRUE(fd.valid());
  std::string again = "/dev/fd/" + std::to_string(fd.get());
  FileDescriptor fd2(open(again.c_str(), O_RDONLY));
  ASSERT_TRUE(fd2.valid()) << strerror(errno);
  char buf[8];
  EXPECT_THAT(read(fd2.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(5));
  EXPECT_EQ(std::string(buf, 5), "hello");
}

TEST(DevTest, ShmIsADirectory) {
  struct stat st;
  ASSERT_THAT(stat("/dev/shm", &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISDIR(st.st_mode));
}

}  // namespace
}  // namespace sandbox::testutil
