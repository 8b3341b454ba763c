// read(2), write(2), pread64/pwrite64, readv/writev on pipes and files.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

class Pipe {
 public:
  explicit Pipe(int flags = 0) {
    int fds[2] = {-1, -1};  // Stay invalid if pipe2 fails.
    EXPECT_THAT(pipe2(fds, flags | O_CLOEXEC), SyscallSucceeds());
    read_end.reset(fds[0]);
    write_end.reset(fds[1]);
  }
  FileDescriptor read_end;
  FileDescriptor write_end;
};

TEST(ReadWriteTest, PipeRoundTrip) {
  Pipe p;
  constexpr char kMsg[] = "hello, pipe";
  ASSERT_THAT(write(p.write_end.get(), kMsg, sizeof(kMsg)),
              SyscallSucceedsWithValue(sizeof(kMsg)));
  char buf[64] = {};
  ASSERT_THAT(read(p.read_end.get(), buf, sizeof(buf)),
              SyscallSucceedsWithValue(sizeof(kMsg)));
  EXPECT_STREQ(buf, kMsg);
}

TEST(ReadWriteTest, PipeShortReadReturnsWhatIsThere) {
  Pipe p;
  ASSERT_THAT(write(p.write_end.get(), "abc", 3), SyscallSucceedsWithValue(3));
  char buf[2];
  EXPECT_THAT(read(p.read_end.get(), buf, 2), SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(buf, 2), "ab");
  EXPECT_THAT(read(p.read_end.get(), buf, 2), SyscallSucceedsWithValue(1));
  EXPECT_EQ(buf[0], 'c');
}

TEST(ReadWriteTest, EmptyNonblockingPipeIsEagain) {
  Pipe p(O_NONBLOCK);
  char c;
  EXPECT_THAT(read(p.read_end.get(), &c, 1), SyscallFailsWithErrno(EAGAIN));
}

TEST(ReadWriteTest, PipeEofAfterWriterCloses) {
  Pipe p;
  p.write_end.reset();
  char c;
  EXPECT_THAT(read(p.read_end.get(), &c, 1), SyscallSucceedsWithValue(0));
}

TEST(ReadWriteTest, WriteToPipeWithoutReaderIsEpipe) {
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_THAT(sigaction(SIGPIPE, &ignore, &old), SyscallSucceeds());
  Pipe p;
  p.read_end.reset();
  EXPECT_THAT(write(p.write_end.get(), "x", 1), SyscallFailsWithErrno(EPIPE));
  sigaction(SIGPIPE, &old, nullptr);
}

TEST(ReadWriteTest, WriteToPipeWithoutReaderRaisesSigpipe) {
  Pipe p;
  p.read_end.reset();
  int wfd = p.write_end.get();
  EXPECT_THAT(InForkedChild([wfd] {
                signal(SIGPIPE, SIG_DFL);
                (void)!write(wfd, "x", 1);
              }),
              KilledBySignal(SIGPIPE));
}

TEST(ReadWriteTest, ZeroLengthReadAndWrite) {
  Pipe p;
  char c;
  EXPECT_THAT(read(p.read_end.get(), &c, 0), SyscallSucceedsWithValue(0));
  EXPECT_THAT(write(p.write_end.get(), &c, 0), SyscallSucceedsWithValue(0));
}

TEST(ReadWriteTest, FileWriteSeekRead) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  ASSERT_THAT(write(fd.get(), "0123456789", 10), SyscallSucceedsWithValue(10));
  EXPECT_THAT(lseek(fd.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(10));
  char buf[16] = {};
  // At EOF.
  EXPECT_THAT(read(fd.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(0));
  ASSERT_THAT(lseek(fd.get(), 3, SEEK_SET), SyscallSucceedsWithValue(3));
  EXPECT_THAT(read(fd.get(), buf, 4), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "3456");
  EXPECT_THAT(lseek(fd.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(7));
}

// Reads of hundreds of KiB and more may be split between threads (the
// Sentry's work aside for long copies): every byte must land where one
// read would put it, the count must be one read's, and nothing may be
// written past a count that stops at the end of the file.
TEST(ReadWriteTest, LargeReadsMatchTheFile) {
  constexpr size_t kSize = (5u << 20) + 12345;
  auto pattern = [](size_t i) -> uint8_t {
    return static_cast<uint8_t>(i * 131 + (i >> 12) * 7 + (i >> 20));
  };
  std::string data(kSize, '\0');
  for (size_t i = 0; i < kSize; ++i) data[i] = static_cast<char>(pattern(i));
  TempPath file = TempPath::CreateFile();
  {
    FileDescriptor w(open(file.path().c_str(), O_WRONLY | O_CLOEXEC));
    ASSERT_TRUE(w.valid()) << strerror(errno);
    ASSERT_THAT(write(w.get(), data.data(), kSize),
                SyscallSucceedsWithValue(kSize));
  }
  FileDescriptor fd(open(file.path().c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  // One more page than the largest read, to look past short counts.
  constexpr size_t kBuf = (3u << 20) + 3 * 4096;
  std::string buf(kBuf + 64, '\0');
  auto check = [&](size_t got, size_t off, char* at, size_t want_len) {
    const size_t expect = std::min(want_len, kSize - std::min(kSize, off));
    ASSERT_EQ(got, expect) << "read of " << want_len << " at " << off;
    for (size_t i = 0; i < got; ++i) {
      ASSERT_EQ(static_cast<uint8_t>(at[i]), pattern(off + i))
          << "byte " << i << " of a read of " << want_len << " at " << off;
    }
    for (size_t i = got; i < want_len && i < got + 8192; ++i) {
      ASSERT_EQ(at[i], '\x5a') << "written past the count: byte " << i
                               << " of a read of " << want_len << " at " << off;
    }
  };
  // Sequential read(2)s of several sizes, into aligned and unaligned
  // buffers, streaming (the Sentry helps only once a guest streams).
  for (size_t len : {size_t{256} << 10, size_t{1} << 20,
                     (size_t{1} << 20) + 4097, size_t{3} << 20}) {
    for (size_t misalign : {size_t{0}, size_t{13}}) {
      ASSERT_THAT(lseek(fd.get(), 0, SEEK_SET), SyscallSucceedsWithValue(0));
      size_t off = 0;
      for (;;) {
        char* at = buf.data() + misalign;
        memset(at, 0x5a,
               len + 8192 < buf.size() - misalign ? len + 8192
                                                  : buf.size() - misalign);
        ssize_t n = read(fd.get(), at, len);
        ASSERT_GE(n, 0) << strerror(errno);
        check(static_cast<size_t>(n), off, at, len);
        if (n == 0) break;
        off += static_cast<size_t>(n);
      }
      EXPECT_EQ(off, kSize);
    }
  }
  // pread(2)s that end at, across and past the end of the file, with the
  // end in the first part of the read or in its last quarter.
  for (size_t len : {size_t{1} << 20, (size_t{2} << 20) + 100}) {
    for (size_t back : {size_t{0}, size_t{1}, size_t{4096}, len / 2, len / 8,
                        len - 1, len, len + 1}) {
      const size_t off = kSize - std::min(kSize, back);
      char* at = buf.data() + 7;
      memset(at, 0x5a, len + 8192);
      ssize_t n = pread(fd.get(), at, len, static_cast<off_t>(off));
      ASSERT_GE(n, 0) << strerror(errno);
      check(static_cast<size_t>(n), off, at, len);
    }
  }
}

TEST(ReadWriteTest, PreadPwriteDoNotMoveOffset) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  ASSERT_THAT(pwrite(fd.get(), "abcdef", 6, 100), SyscallSucceedsWithValue(6));
  EXPECT_THAT(lseek(fd.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(0));
  char buf[6];
  ASSERT_THAT(pread(fd.get(), buf, 6, 100), SyscallSucceedsWithValue(6));
  EXPECT_EQ(std::string(buf, 6), "abcdef");
  // The hole reads as zeros.
  ASSERT_THAT(pread(fd.get(), buf, 6, 50), SyscallSucceedsWithValue(6));
  EXPECT_EQ(std::string(buf, 6), std::string(6, '\0'));
  EXPECT_THAT(pread(fd.get(), buf, 6, -1), SyscallFailsWithErrno(EINVAL));
}

TEST(ReadWriteTest, AppendWritesAtEnd) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR | O_APPEND | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  ASSERT_THAT(write(fd.get(), "abc", 3), SyscallSucceedsWithValue(3));
  ASSERT_THAT(lseek(fd.get(), 0, SEEK_SET), SyscallSucceedsWithValue(0));
  ASSERT_THAT(write(fd.get(), "de", 2), SyscallSucceedsWithValue(2));
  char buf[8];
  ASSERT_THAT(pread(fd.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(5));
  EXPECT_EQ(std::string(buf, 5), "abcde");
}

TEST(ReadWriteTest, ReadvWritevScatterGather) {
  Pipe p;
  char a[] = "abc", b[] = "defg";
  struct iovec out[2] = {{a, 3}, {b, 4}};
  ASSERT_THAT(writev(p.write_end.get(), out, 2), SyscallSucceedsWithValue(7));
  char x[2], y[5];
  struct iovec in[2] = {{x, 2}, {y, 5}};
  ASSERT_THAT(readv(p.read_end.get(), in, 2), SyscallSucceedsWithValue(7));
  EXPECT_EQ(std::string(x, 2), "ab");
  EXPECT_EQ(std::string(y, 5), "cdefg");
}

TEST(ReadWriteTest, BadFdIsEbadf) {
  char c;
  EXPECT_THAT(read(-1, &c, 1), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(write(-1, &c, 1), SyscallFailsWithErrno(EBADF));
  // An fd number nothing is open on.
  EXPECT_THAT(read(1000000, &c, 1), SyscallFailsWithErrno(EBADF));
}

TEST(ReadWriteTest, WrongAccessModeIsEbadf) {
  Pipe p;
  char c = 'x';
  EXPECT_THAT(write(p.read_end.get(), &c, 1), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(read(p.write_end.get(), &c, 1), SyscallFailsWithErrno(EBADF));
}

TEST(ReadWriteTest, BadBufferIsEfault) {
  Pipe p;
  ASSERT_THAT(write(p.write_end.get(), "x", 1), SyscallSucceedsWithValue(1));
  // Raw syscalls: libc wrappers might touch the buffer themselves.
  EXPECT_THAT(
      syscall(SYS_read, p.read_end.get(), reinterpret_cast<void*>(8), 1),
      SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(
      syscall(SYS_write, p.write_end.get(), reinterpret_cast<void*>(8), 1),
      SyscallFailsWithErrno(EFAULT));
}

// Regular files copy straight between their pages and the buffer (tmpfs
// in the sandbox): a buffer that stops being accessible gives the count
// before it (EFAULT if none), and the offset moves by that count only.
TEST(ReadWriteTest, FileTransfersStopWhereTheBufferFaults) {
  const size_t page = sysconf(_SC_PAGESIZE);
  TempPath p = TempPath::CreateFile();
  FileDescriptor fd(open(p.path().c_str(), O_RDWR));
  ASSERT_TRUE(fd.valid());
  std::string data(2 * page, 'd');
  ASSERT_THAT(write(fd.get(), data.data(), data.size()),
              SyscallSucceedsWithValue(2 * page));
  char* buf = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(buf, MAP_FAILED);
  ASSERT_THAT(munmap(buf + page, page), SyscallSucceeds());
  char* edge = buf + page - 100;  // 100 good bytes, then a hole
  ASSERT_THAT(lseek(fd.get(), 0, SEEK_SET), SyscallSucceeds());
  EXPECT_THAT(syscall(SYS_read, fd.get(), edge, 1000),
              SyscallSucceedsWithValue(100));
  EXPECT_THAT(lseek(fd.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(100));
  EXPECT_THAT(syscall(SYS_read, fd.get(), buf + page, 10),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(lseek(fd.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(100));
  // At the end of file nothing is copied: 0, even into a bad buffer.
  EXPECT_THAT(syscall(SYS_pread64, fd.get(), buf + page, 10, 2 * page),
              SyscallSucceedsWithValue(0));
  // readv: the second iovec faults, the first counts.
  struct iovec iov[2] = {{buf, 50}, {buf + page, 50}};
  EXPECT_THAT(syscall(SYS_preadv, fd.get(), iov, 2, 0, 0),
              SyscallSucceedsWithValue(50));
  // A read-only buffer cannot be read into, but can be written from.
  ASSERT_THAT(mprotect(buf, page, PROT_READ), SyscallSucceeds());
  EXPECT_THAT(syscall(SYS_pread64, fd.get(), buf, 10, 0),
              SyscallFailsWithErrno(EFAULT));
  TempPath q = TempPath::CreateFile();
  FileDescriptor out(open(q.path().c_str(), O_RDWR));
  ASSERT_TRUE(out.valid());
  EXPECT_THAT(syscall(SYS_write, out.get(), edge, 1000),
              SyscallSucceedsWithValue(100));
  EXPECT_THAT(syscall(SYS_write, out.get(), buf + page, 10),
              SyscallFailsWithErrno(EFAULT));
  struct stat st;
  ASSERT_THAT(fstat(out.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_size, 100);
  char back[100];
  ASSERT_THAT(pread(out.get(), back, sizeof(back), 0),
              SyscallSucceedsWithValue(100));
  EXPECT_EQ(std::string(back, 100), std::string(100, 'd'));
  munmap(buf, page);
}

TEST(ReadWriteTest, ReadFromDirectoryIsEisdir) {
  FileDescriptor fd(open(TempDir().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  char c;
  EXPECT_THAT(read(fd.get(), &c, 1), SyscallFailsWithErrno(EISDIR));
}

TEST(ReadWriteTest, PreadvPwritev) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR));
  ASSERT_TRUE(fd.valid());
  char a[] = "abc", b[] = "defg";
  struct iovec w[2] = {{a, 3}, {b, 4}};
  EXPECT_THAT(pwritev(fd.get(), w, 2, 10), SyscallSucceedsWithValue(7));
  EXPECT_THAT(lseek(fd.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(0));
  char x[4] = {}, y[4] = {};
  struct iovec r[2] = {{x, 2}, {y, 4}};
  EXPECT_THAT(preadv(fd.get(), r, 2, 10), SyscallSucceedsWithValue(6));
  EXPECT_EQ(std::string(x, 2), "ab");
  EXPECT_EQ(std::string(y, 4), "cdef");
  EXPECT_THAT(preadv(fd.get(), r, 2, -1), SyscallFailsWithErrno(EINVAL));
  // preadv2 with offset -1 reads at the file offset and moves it.
  ASSERT_THAT(lseek(fd.get(), 12, SEEK_SET), SyscallSucceeds());
  EXPECT_THAT(preadv2(fd.get(), r, 1, -1, 0), SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(x, 2), "cd");
  EXPECT_THAT(lseek(fd.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(14));
}

TEST(ReadWriteTest, Pwritev2Flags) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR));
  ASSERT_TRUE(fd.valid());
  char a[] = "0123";
  struct iovec v = {a, 4};
  ASSERT_THAT(pwritev2(fd.get(), &v, 1, 0, 0), SyscallSucceedsWithValue(4));
  // RWF_APPEND writes at the end whatever the offset.
  ASSERT_THAT(pwritev2(fd.get(), &v, 1, 0, RWF_APPEND),
              SyscallSucceedsWithValue(4));
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_size, 8);
  EXPECT_THAT(pwritev2(fd.get(), &v, 1, 0, RWF_DSYNC | RWF_SYNC | RWF_HIPRI),
              SyscallSucceedsWithValue(4));
  EXPECT_THAT(pwritev2(fd.get(), &v, 1, 0, 0x10000),
              SyscallFailsWithErrno(EOPNOTSUPP));
}

// RWF_NOAPPEND writes at the offset of an O_APPEND description (since
// Linux 6.9: EOPNOTSUPP before, as for any unknown flag).
TEST(ReadWriteTest, Pwritev2NoAppend) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR));
  ASSERT_TRUE(fd.valid());
  ASSERT_THAT(write(fd.get(), "01234567", 8), SyscallSucceedsWithValue(8));
  FileDescriptor app(open(file.path().c_str(), O_WRONLY | O_APPEND));
  ASSERT_TRUE(app.valid());
  char z[] = "Z";
  struct iovec zv = {z, 1};
  ssize_t n = pwritev2(app.get(), &zv, 1, 0, RWF_NOAPPEND);
  if (n == -1 && errno == EOPNOTSUPP) {
    GTEST_SKIP() << "RWF_NOAPPEND is new in Linux 6.9";
  }
  ASSERT_THAT(n, SyscallSucceedsWithValue(1));
  char c;
  struct stat st;
  ASSERT_THAT(pread(fd.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'Z');
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_size, 8);
}

TEST(ReadWriteTest, SeekDataAndHole) {
  std::string path = "/dev/shm/rw_test_" + std::to_string(getpid());
  FileDescriptor fd(open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  unlink(path.c_str());
  ASSERT_THAT(pwrite(fd.get(), "x", 1, 65536), SyscallSucceedsWithValue(1));
  // tmpfs: a hole up to the page with data.
  EXPECT_THAT(lseek(fd.get(), 0, SEEK_DATA), SyscallSucceedsWithValue(65536));
  EXPECT_THAT(lseek(fd.get(), 0, SEEK_HOLE), SyscallSucceedsWithValue(0));
  EXPECT_THAT(lseek(fd.get(), 65536, SEEK_HOLE),
              SyscallSucceedsWithValue(65537));
  EXPECT_THAT(lseek(fd.get(), 65537, SEEK_DATA), SyscallFailsWithErrno(ENXIO));
  EXPECT_THAT(lseek(fd.get(), 0, 17), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(lseek(fd.get(), -1, SEEK_SET), SyscallFailsWithErrno(EINVAL));
}

TEST(ReadWriteTest, WriteWithoutFsetidClearsSetuid) {
  TempPath file = TempPath::CreateFile(0666);
  ASSERT_THAT(chmod(file.path().c_str(), 04777), SyscallSucceeds());
  EXPECT_THAT(InForkedChild([&] {
                // Without CAP_FSETID a write drops S_ISUID.
                if (!DropCapabilities(false)) _exit(2);
                int fd = open(file.path().c_str(), O_WRONLY);
                if (fd < 0) _exit(3);
                if (write(fd, "x", 1) != 1) _exit(4);
                struct stat st;
                if (fstat(fd, &st) != 0 || (st.st_mode & 07777) != 0777) {
                  _exit(5);
                }
              }),
              ExitedWithCode(0));
}

}  // namespace
}  // namespace sandbox::testutil
