// pipe(2), pipe2(2), pipe buffers (PIPE_BUF atomicity, capacity,
// F_GETPIPE_SZ/F_SETPIPE_SZ, FIONREAD, packet mode), splice(2), tee(2),
// vmsplice(2).
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

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
    r.reset(fds[0]);
    w.reset(fds[1]);
  }
  FileDescriptor r;
  FileDescriptor w;
};

// The lowest free descriptor number (what the next open would get).
int LowestFreeFd() {
  int fd = dup(0);
  if (fd >= 0) close(fd);
  return fd;
}

// Reads until n bytes arrived or EOF/error.
std::string ReadAll(int fd, size_t n) {
  std::string s;
  char buf[4096];
  while (s.size() < n) {
    ssize_t r = read(fd, buf, std::min(sizeof(buf), n - s.size()));
    if (r <= 0) break;
    s.append(buf, r);
  }
  return s;
}

TEST(PipeTest, EndsHaveTheirAccessModesAndFlags) {
  Pipe p(O_NONBLOCK);
  EXPECT_THAT(fcntl(p.r.get(), F_GETFL),
              SyscallSucceedsWithValue(O_RDONLY | O_NONBLOCK));
  EXPECT_THAT(fcntl(p.w.get(), F_GETFL),
              SyscallSucceedsWithValue(O_WRONLY | O_NONBLOCK));
  EXPECT_THAT(fcntl(p.r.get(), F_GETFD), SyscallSucceedsWithValue(FD_CLOEXEC));
  EXPECT_THAT(fcntl(p.w.get(), F_GETFD), SyscallSucceedsWithValue(FD_CLOEXEC));
}

TEST(PipeTest, PipeWithoutFlagsIsBlockingAndInheritable) {
  int fds[2] = {-1, -1};
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  FileDescriptor r(fds[0]), w(fds[1]);
  EXPECT_THAT(fcntl(r.get(), F_GETFL), SyscallSucceedsWithValue(O_RDONLY));
  EXPECT_THAT(fcntl(w.get(), F_GETFD), SyscallSucceedsWithValue(0));
}

TEST(PipeTest, BadFlagsAreEinval) {
  int fds[2] = {-1, -1};
  EXPECT_THAT(pipe2(fds, O_APPEND), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(pipe2(fds, O_TRUNC), SyscallFailsWithErrno(EINVAL));
  EXPECT_EQ(fds[0], -1);
}

TEST(PipeTest, BadArrayPointerIsEfaultAndLeaksNoDescriptor) {
  int before = LowestFreeFd();
  EXPECT_THAT(syscall(SYS_pipe2, reinterpret_cast<int*>(1), 0),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(syscall(SYS_pipe, reinterpret_cast<int*>(1)),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_EQ(LowestFreeFd(), before);
}

TEST(PipeTest, NoDescriptorsLeftIsEmfile) {
  EXPECT_THAT(InForkedChild([] {
                int fds[2];
                // Room for exactly one more descriptor.
                int next = LowestFreeFd();
                struct rlimit rl = {static_cast<rlim_t>(next + 1),
                                    static_cast<rlim_t>(next + 1)};
                if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(2);
                if (pipe(fds) != -1 || errno != EMFILE) _exit(3);
                // The first descriptor was not kept.
                if (LowestFreeFd() != next) _exit(4);
              }),
              ExitedWithCode(0));
}

TEST(PipeTest, FstatIsAFifoOwnedByTheCreator) {
  Pipe p;
  struct stat rs = {}, ws = {};
  ASSERT_THAT(fstat(p.r.get(), &rs), SyscallSucceeds());
  ASSERT_THAT(fstat(p.w.get(), &ws), SyscallSucceeds());
  EXPECT_TRUE(S_ISFIFO(rs.st_mode));
  EXPECT_EQ(rs.st_mode & 07777, 0600u);
  EXPECT_EQ(rs.st_uid, geteuid());
  EXPECT_EQ(rs.st_gid, getegid());
  EXPECT_EQ(rs.st_nlink, 1u);
  EXPECT_EQ(rs.st_size, 0);
  EXPECT_EQ(rs.st_blksize, 4096);
  EXPECT_EQ(rs.st_ino, ws.st_ino);
  EXPECT_EQ(rs.st_dev, ws.st_dev);
  Pipe other;
  struct stat os = {};
  ASSERT_THAT(fstat(other.r.get(), &os), SyscallSucceeds());
  EXPECT_NE(os.st_ino, rs.st_ino);
}

TEST(PipeTest, SeekAndPositionalIoAreEspipe) {
  Pipe p;
  char c = 'x';
  EXPECT_THAT(lseek(p.r.get(), 0, SEEK_CUR), SyscallFailsWithErrno(ESPIPE));
  EXPECT_THAT(pwrite(p.w.get(), &c, 1, 0), SyscallFailsWithErrno(ESPIPE));
  EXPECT_THAT(pread(p.r.get(), &c, 1, 0), SyscallFailsWithErrno(ESPIPE));
}

TEST(PipeTest, FionreadCountsQueuedBytes) {
  Pipe p;
  int n = -1;
  ASSERT_THAT(ioctl(p.r.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 0);
  ASSERT_THAT(write(p.w.get(), "0123456789", 10), SyscallSucceedsWithValue(10));
  ASSERT_THAT(ioctl(p.r.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 10);
  ASSERT_THAT(ioctl(p.w.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 10);
  EXPECT_THAT(syscall(SYS_ioctl, p.r.get(), FIONREAD, nullptr),
              SyscallFailsWithErrno(EFAULT));
}

// Past fs.pipe-user-pages-soft pages in the user's pipes (other programs'
// big pipes count), Linux gives an unprivileged user's new pipes 2 pages.
constexpr char kSmallPipes[] =
    "new pipes are below 64 KiB here: the user is past "
    "fs.pipe-user-pages-soft";

TEST(PipeTest, DefaultCapacityIs64KiB) {
  Pipe p(O_NONBLOCK);
  if (fcntl(p.w.get(), F_GETPIPE_SZ) < 65536) GTEST_SKIP() << kSmallPipes;
  EXPECT_THAT(fcntl(p.w.get(), F_GETPIPE_SZ), SyscallSucceedsWithValue(65536));
  std::vector<char> big(200000, 'b');
  EXPECT_THAT(write(p.w.get(), big.data(), big.size()),
              SyscallSucceedsWithValue(65536));
  EXPECT_THAT(write(p.w.get(), "x", 1), SyscallFailsWithErrno(EAGAIN));
}

TEST(PipeTest, SmallWriteIsAtomicWhenAlmostFull) {
  Pipe p(O_NONBLOCK);
  if (fcntl(p.w.get(), F_GETPIPE_SZ) < 65536) GTEST_SKIP() << kSmallPipes;
  std::vector<char> fill(65536 - 100, 'f');
  ASSERT_THAT(write(p.w.get(), fill.data(), fill.size()),
              SyscallSucceedsWithValue(fill.size()));
  // 100 bytes of room, but the 200-byte write does not fit in the last
  // buffer and no buffer is free: nothing is written.
  std::vector<char> small(200, 's');
  EXPECT_THAT(write(p.w.get(), small.data(), small.size()),
              SyscallFailsWithErrno(EAGAIN));
  int n = -1;
  ASSERT_THAT(ioctl(p.r.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 65536 - 100);
  // A write that fits in the last buffer goes in.
  EXPECT_THAT(write(p.w.get(), small.data(), 100),
              SyscallSucceedsWithValue(100));
}

TEST(PipeTest, SetPipeSizeRoundsUpToPowerOfTwoPages) {
  Pipe p;
  EXPECT_THAT(fcntl(p.w.get(), F_SETPIPE_SZ, 1),
              SyscallSucceedsWithValue(4096));
  EXPECT_THAT(fcntl(p.r.get(), F_GETPIPE_SZ), SyscallSucceedsWithValue(4096));
  EXPECT_THAT(fcntl(p.w.get(), F_SETPIPE_SZ, 3 * 4096),
              SyscallSucceedsWithValue(4 * 4096));
  EXPECT_THAT(fcntl(p.w.get(), F_SETPIPE_SZ, 5 * 4096 + 1),
              SyscallSucceedsWithValue(8 * 4096));
  EXPECT_THAT(fcntl(p.w.get(), F_SETPIPE_SZ, 1 << 20),
              SyscallSucceedsWithValue(1 << 20));
}

TEST(PipeTest, SetPipeSizeBelowTheDataHeldIsEbusy) {
  Pipe p(O_NONBLOCK);
  std::vector<char> data(3 * 4096, 'd');
  ASSERT_THAT(write(p.w.get(), data.data(), data.size()),
              SyscallSucceedsWithValue(data.size()));
  EXPECT_THAT(fcntl(p.w.get(), F_SETPIPE_SZ, 2 * 4096),
              SyscallFailsWithErrno(EBUSY));
  EXPECT_THAT(fcntl(p.w.get(), F_SETPIPE_SZ, 4 * 4096),
              SyscallSucceedsWithValue(4 * 4096));
  // Smaller now: one more page fits, then it is full.
  EXPECT_THAT(write(p.w.get(), data.data(), data.size()),
              SyscallSucceedsWithValue(4096));
}

TEST(PipeTest, SetPipeSizeTooLargeIsEinval) {
  Pipe p;
  EXPECT_THAT(fcntl(p.w.get(), F_SETPIPE_SZ, 0x80000001u),
              SyscallFailsWithErrno(EINVAL));
}

TEST(PipeTest, SetPipeSizeAboveMaxNeedsCapSysResource) {
  if (geteuid() == 0) GTEST_SKIP() << "root has CAP_SYS_RESOURCE";
  Pipe p;
  EXPECT_THAT(fcntl(p.w.get(), F_SETPIPE_SZ, 2 << 20),
              SyscallFailsWithErrno(EPERM));
}

TEST(PipeTest, PipeSizeOfANonPipeIsEbadf) {
  // stdin is /dev/null under the test runner.
  EXPECT_THAT(fcntl(0, F_GETPIPE_SZ), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(fcntl(0, F_SETPIPE_SZ, 4096), SyscallFailsWithErrno(EBADF));
}

TEST(PipeTest, PacketModeKeepsWriteBoundaries) {
  Pipe p(O_DIRECT | O_NONBLOCK);
  ASSERT_THAT(write(p.w.get(), "abc", 3), SyscallSucceedsWithValue(3));
  ASSERT_THAT(write(p.w.get(), "defg", 4), SyscallSucceedsWithValue(4));
  ASSERT_THAT(write(p.w.get(), "0123456789", 10), SyscallSucceedsWithValue(10));
  char buf[64];
  EXPECT_THAT(read(p.r.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(3));
  EXPECT_THAT(read(p.r.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "defg");
  // A short read takes the start of the packet and drops the rest.
  EXPECT_THAT(read(p.r.get(), buf, 4), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "0123");
  EXPECT_THAT(read(p.r.get(), buf, sizeof(buf)), SyscallFailsWithErrno(EAGAIN));
}

TEST(PipeTest, EofOnlyAfterEveryWriterCloses) {
  Pipe p(O_NONBLOCK);
  FileDescriptor w2(dup(p.w.get()));
  ASSERT_TRUE(w2.valid());
  p.w.reset();
  char c;
  EXPECT_THAT(read(p.r.get(), &c, 1), SyscallFailsWithErrno(EAGAIN));
  w2.reset();
  EXPECT_THAT(read(p.r.get(), &c, 1), SyscallSucceedsWithValue(0));
}

TEST(PipeTest, BlockingReadWaitsForAnotherProcess) {
  Pipe p;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    usleep(100 * 1000);
    _exit(write(p.w.get(), "late", 4) == 4 ? 0 : 1);
  }
  char buf[8] = {};
  EXPECT_THAT(read(p.r.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "late");
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(PipeTest, BlockingWriteLargerThanThePipeCompletes) {
  Pipe p;
  constexpr size_t kSize = 1 << 20;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    p.w.reset();
    std::string got = ReadAll(p.r.get(), kSize + 1);
    bool ok = got.size() == kSize;
    for (size_t i = 0; ok && i < got.size(); ++i) {
      ok = got[i] == static_cast<char>(i % 251);
    }
    _exit(ok ? 0 : 1);
  }
  p.r.reset();
  std::vector<char> data(kSize);
  for (size_t i = 0; i < kSize; ++i) data[i] = static_cast<char>(i % 251);
  EXPECT_THAT(write(p.w.get(), data.data(), data.size()),
              SyscallSucceedsWithValue(kSize));
  p.w.reset();
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(PipeTest, ConcurrentPipeBufWritesDoNotInterleave) {
  Pipe p;
  constexpr int kWriters = 3, kWrites = 40;
  constexpr size_t kChunk = 4096;  // PIPE_BUF
  std::vector<pid_t> pids;
  for (int i = 0; i < kWriters; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::vector<char> chunk(kChunk, static_cast<char>('A' + i));
      for (int j = 0; j < kWrites; ++j) {
        if (write(p.w.get(), chunk.data(), kChunk) != kChunk) _exit(1);
      }
      _exit(0);
    }
    pids.push_back(pid);
  }
  p.w.reset();
  std::string all = ReadAll(p.r.get(), kWriters * kWrites * kChunk);
  ASSERT_EQ(all.size(), kWriters * kWrites * kChunk);
  for (size_t off = 0; off < all.size(); off += kChunk) {
    std::string chunk = all.substr(off, kChunk);
    ASSERT_EQ(chunk, std::string(kChunk, chunk[0])) << "at " << off;
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
    EXPECT_THAT(status, ExitedWithCode(0));
  }
}

// ---- Blocking writes larger than any internal buffer (4 MiB). ----

constexpr size_t k4MiB = 4 << 20;

char PatternAt(size_t i) { return static_cast<char>((i * 7 + i / 4093) % 251); }

std::vector<char> Pattern(size_t n) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = PatternAt(i);
  return v;
}

// Reads `fd` in chunks of varying sizes until EOF; counts the bytes and
// the first offset whose byte is not the pattern's (npos if none).
struct ReadResult {
  size_t total = 0;
  size_t first_bad = std::string::npos;
  int error = 0;
};
ReadResult ReadPatternUntilEof(int fd) {
  ReadResult r;
  std::vector<char> buf(70001);
  const size_t sizes[] = {1, 4096, 70001, 333, 65536, 12345};
  for (size_t k = 0;; ++k) {
    ssize_t n = read(fd, buf.data(), sizes[k % 6]);
    if (n < 0) {
      r.error = errno;
      return r;
    }
    if (n == 0) return r;
    for (ssize_t i = 0; i < n && r.first_bad == std::string::npos; ++i) {
      if (buf[i] != PatternAt(r.total + i)) r.first_bad = r.total + i;
    }
    r.total += n;
  }
}

TEST(PipeTest, BlockingWriteOf4MiBIsWholeWithAConcurrentReader) {
  Pipe p;
  ReadResult got;
  std::thread reader([&] { got = ReadPatternUntilEof(p.r.get()); });
  std::vector<char> data = Pattern(k4MiB);
  EXPECT_THAT(write(p.w.get(), data.data(), data.size()),
              SyscallSucceedsWithValue(k4MiB));
  p.w.reset();
  reader.join();
  EXPECT_EQ(got.error, 0);
  EXPECT_EQ(got.total, k4MiB);
  EXPECT_EQ(got.first_bad, std::string::npos);
}

TEST(PipeTest, BlockingWritevOf4MiBIsWholeWithAConcurrentReader) {
  Pipe p;
  ReadResult got;
  std::thread reader([&] { got = ReadPatternUntilEof(p.r.get()); });
  std::vector<char> data = Pattern(k4MiB);
  // Uneven pieces, one of them empty, crossing every 1 MiB boundary.
  const size_t cuts[] = {0, 1, 1500000, 1500000, 2621441, k4MiB};
  std::vector<struct iovec> iov;
  for (size_t i = 0; i + 1 < sizeof(cuts) / sizeof(cuts[0]); ++i) {
    iov.push_back({data.data() + cuts[i], cuts[i + 1] - cuts[i]});
  }
  EXPECT_THAT(writev(p.w.get(), iov.data(), iov.size()),
              SyscallSucceedsWithValue(k4MiB));
  p.w.reset();
  reader.join();
  EXPECT_EQ(got.error, 0);
  EXPECT_EQ(got.total, k4MiB);
  EXPECT_EQ(got.first_bad, std::string::npos);
}

TEST(PipeTest, BlockingWriteOf4MiBToAFifoIsWhole) {
  std::string path = NewTempPath();
  ASSERT_THAT(mkfifo(path.c_str(), 0600), SyscallSucceeds());
  ReadResult got;
  std::thread reader([&] {
    FileDescriptor r(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!r.valid()) {
      got.error = errno;
      return;
    }
    got = ReadPatternUntilEof(r.get());
  });
  FileDescriptor w(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(w.valid());
  std::vector<char> data = Pattern(k4MiB);
  EXPECT_THAT(write(w.get(), data.data(), data.size()),
              SyscallSucceedsWithValue(k4MiB));
  w.reset();
  reader.join();
  unlink(path.c_str());
  EXPECT_EQ(got.error, 0);
  EXPECT_EQ(got.total, k4MiB);
  EXPECT_EQ(got.first_bad, std::string::npos);
}

std::atomic<int> usr1_count{0};
void CountUsr1(int) { usr1_count.fetch_add(1); }

// ReadAll, but gives up when no byte comes for 10 s.
std::string ReadAllWithin10s(int fd, size_t n) {
  std::string s;
  char buf[4096];
  while (s.size() < n) {
    struct pollfd pfd = {fd, POLLIN, 0};
    if (poll(&pfd, 1, 10000) != 1) break;
    ssize_t r = read(fd, buf, std::min(sizeof(buf), n - s.size()));
    if (r <= 0) break;
    s.append(buf, r);
  }
  return s;
}

// Waits (up to 10 s) until the pipe holds `n` bytes.
bool WaitQueued(int rfd, int n) {
  for (int i = 0; i < 10000; ++i) {
    int q = -1;
    if (ioctl(rfd, FIONREAD, &q) != 0) return false;
    if (q == n) return true;
    usleep(1000);
  }
  return false;
}

// A signal (no SA_RESTART) that stops a blocked 4 MiB write after 3 MiB
// went in (2 MiB read, a full 1 MiB pipe) gives the partial count, and
// nothing beyond it was queued.
TEST(PipeTest, SignalMidWriteGivesThePartialCount) {
  Pipe p;
  constexpr int kCapacity = 1 << 20;  // pipe-max-size: no privilege needed
  ASSERT_THAT(fcntl(p.w.get(), F_SETPIPE_SZ, kCapacity),
              SyscallSucceedsWithValue(kCapacity));
  struct sigaction sa = {}, old;
  sa.sa_handler = CountUsr1;  // no SA_RESTART
  sigemptyset(&sa.sa_mask);
  ASSERT_THAT(sigaction(SIGUSR1, &sa, &old), SyscallSucceeds());
  usr1_count = 0;
  const pthread_t writer = pthread_self();
  constexpr size_t kRead = 2 << 20;
  std::string first;
  bool full = false;
  std::thread helper([&] {
    first = ReadAllWithin10s(p.r.get(), kRead);
    full = WaitQueued(p.r.get(), kCapacity);
    usleep(50 * 1000);  // let the writer go to sleep
    pthread_kill(writer, SIGUSR1);
  });
  std::vector<char> data = Pattern(k4MiB);
  ssize_t n = write(p.w.get(), data.data(), data.size());
  int err = errno;
  helper.join();
  sigaction(SIGUSR1, &old, nullptr);
  ASSERT_TRUE(full);
  EXPECT_EQ(usr1_count.load(), 1);
  EXPECT_EQ(n, static_cast<ssize_t>(kRead + kCapacity)) << strerror(err);
  ASSERT_EQ(first.size(), kRead);
  EXPECT_EQ(first, std::string(data.data(), kRead));
  p.w.reset();
  std::string rest = ReadAll(p.r.get(), k4MiB);
  EXPECT_EQ(rest, std::string(data.data() + kRead, kCapacity));
}

// Before any byte went in, the same signal gives EINTR. (The helper
// signals until the write returns: a signal that comes before the write
// started interrupts nothing.)
TEST(PipeTest, SignalBeforeAnyByteIsEintr) {
  Pipe p;
  std::vector<char> fill(65536, 'f');
  ASSERT_THAT(write(p.w.get(), fill.data(), fill.size()),
              SyscallSucceedsWithValue(fill.size()));
  struct sigaction sa = {}, old;
  sa.sa_handler = CountUsr1;  // no SA_RESTART
  sigemptyset(&sa.sa_mask);
  ASSERT_THAT(sigaction(SIGUSR1, &sa, &old), SyscallSucceeds());
  usr1_count = 0;
  const pthread_t writer = pthread_self();
  std::atomic<bool> returned{false};
  std::thread helper([&] {
    for (int i = 0; i < 200 && !returned; ++i) {
      usleep(50 * 1000);
      if (!returned) pthread_kill(writer, SIGUSR1);
    }
  });
  std::vector<char> data = Pattern(k4MiB);
  ssize_t n = write(p.w.get(), data.data(), data.size());
  int err = errno;
  returned = true;
  helper.join();
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_EQ(n, -1);
  EXPECT_EQ(err, EINTR) << strerror(err);
  EXPECT_GE(usr1_count.load(), 1);
}

// Non-blocking: as much as fits, then EAGAIN, however large the write.
TEST(PipeTest, NonblockingWriteOf4MiBIsPartial) {
  Pipe p(O_NONBLOCK);
  constexpr int kCapacity = 1 << 20;
  ASSERT_THAT(fcntl(p.w.get(), F_SETPIPE_SZ, kCapacity),
              SyscallSucceedsWithValue(kCapacity));
  std::vector<char> data = Pattern(k4MiB);
  EXPECT_THAT(write(p.w.get(), data.data(), data.size()),
              SyscallSucceedsWithValue(kCapacity));
  EXPECT_THAT(write(p.w.get(), data.data(), data.size()),
              SyscallFailsWithErrno(EAGAIN));
  EXPECT_EQ(ReadAll(p.r.get(), kCapacity), std::string(data.data(), kCapacity));
}

// ---- splice, tee, vmsplice between pipes. ----

TEST(SpliceTest, MovesDataBetweenPipes) {
  Pipe a, b;
  ASSERT_THAT(write(a.w.get(), "hello world", 11),
              SyscallSucceedsWithValue(11));
  EXPECT_THAT(splice(a.r.get(), nullptr, b.w.get(), nullptr, 5, 0),
              SyscallSucceedsWithValue(5));
  EXPECT_EQ(ReadAll(b.r.get(), 5), "hello");
  EXPECT_THAT(splice(a.r.get(), nullptr, b.w.get(), nullptr, 100, 0),
              SyscallSucceedsWithValue(6));
  EXPECT_EQ(ReadAll(b.r.get(), 6), " world");
}

TEST(SpliceTest, ZeroLengthIsZeroBeforeAnyCheck) {
  EXPECT_THAT(splice(-1, nullptr, -1, nullptr, 0, 0xff),
              SyscallSucceedsWithValue(0));
}

TEST(SpliceTest, Errors) {
  Pipe a(O_NONBLOCK), b;
  loff_t off = 0;
  EXPECT_THAT(splice(a.r.get(), nullptr, b.w.get(), nullptr, 1, 0x100),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(splice(-1, nullptr, b.w.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(splice(a.r.get(), nullptr, 12345, nullptr, 1, 0),
              SyscallFailsWithErrno(EBADF));
  // Wrong ends.
  EXPECT_THAT(splice(a.w.get(), nullptr, b.w.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(splice(a.r.get(), nullptr, b.r.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(EBADF));
  // Offsets on pipes.
  EXPECT_THAT(splice(a.r.get(), &off, b.w.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(ESPIPE));
  EXPECT_THAT(splice(a.r.get(), nullptr, b.w.get(), &off, 1, 0),
              SyscallFailsWithErrno(ESPIPE));
  // A pipe into itself.
  EXPECT_THAT(splice(a.r.get(), nullptr, a.w.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(EINVAL));
  // Neither end a pipe (stdin is /dev/null).
  EXPECT_THAT(splice(0, nullptr, 0, nullptr, 1, 0),
              SyscallFailsWithErrno(EBADF));
  // Empty input with a writer: EAGAIN when non-blocking.
  EXPECT_THAT(splice(a.r.get(), nullptr, b.w.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(EAGAIN));
  EXPECT_THAT(
      splice(a.r.get(), nullptr, b.w.get(), nullptr, 1, SPLICE_F_NONBLOCK),
      SyscallFailsWithErrno(EAGAIN));
}

TEST(SpliceTest, EofWhenTheInputHasNoWriter) {
  Pipe a, b;
  a.w.reset();
  EXPECT_THAT(splice(a.r.get(), nullptr, b.w.get(), nullptr, 10, 0),
              SyscallSucceedsWithValue(0));
}

TEST(SpliceTest, OutputWithoutReaderIsEpipe) {
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_THAT(sigaction(SIGPIPE, &ignore, &old), SyscallSucceeds());
  Pipe a, b;
  ASSERT_THAT(write(a.w.get(), "x", 1), SyscallSucceedsWithValue(1));
  b.r.reset();
  EXPECT_THAT(splice(a.r.get(), nullptr, b.w.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(EPIPE));
  sigaction(SIGPIPE, &old, nullptr);
}

TEST(SpliceTest, FullOutputIsEagainWithNonblock) {
  Pipe a, b(O_NONBLOCK);
  ASSERT_THAT(fcntl(b.w.get(), F_SETPIPE_SZ, 4096), SyscallSucceeds());
  std::vector<char> page(4096, 'p');
  ASSERT_THAT(write(b.w.get(), page.data(), page.size()),
              SyscallSucceedsWithValue(4096));
  ASSERT_THAT(write(a.w.get(), "x", 1), SyscallSucceedsWithValue(1));
  EXPECT_THAT(
      splice(a.r.get(), nullptr, b.w.get(), nullptr, 1, SPLICE_F_NONBLOCK),
      SyscallFailsWithErrno(EAGAIN));
}

TEST(TeeTest, CopiesWithoutConsuming) {
  Pipe a, b;
  ASSERT_THAT(write(a.w.get(), "abcdef", 6), SyscallSucceedsWithValue(6));
  EXPECT_THAT(tee(a.r.get(), b.w.get(), 4, 0), SyscallSucceedsWithValue(4));
  EXPECT_EQ(ReadAll(b.r.get(), 4), "abcd");
  EXPECT_EQ(ReadAll(a.r.get(), 6), "abcdef");
}

TEST(TeeTest, Errors) {
  Pipe a(O_NONBLOCK), b;
  EXPECT_THAT(tee(a.r.get(), b.w.get(), 1, 0x100),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(tee(a.r.get(), b.w.get(), 0, 0), SyscallSucceedsWithValue(0));
  EXPECT_THAT(tee(-1, b.w.get(), 1, 0), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(tee(a.w.get(), b.w.get(), 1, 0), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(tee(a.r.get(), a.w.get(), 1, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(tee(0, b.w.get(), 1, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(tee(a.r.get(), b.w.get(), 1, 0), SyscallFailsWithErrno(EAGAIN));
  a.w.reset();
  EXPECT_THAT(tee(a.r.get(), b.w.get(), 1, 0), SyscallSucceedsWithValue(0));
}

TEST(VmspliceTest, IntoAndOutOfAPipe) {
  Pipe p;
  char part1[] = "vm", part2[] = "splice";
  struct iovec in[2] = {{part1, 2}, {part2, 6}};
  EXPECT_THAT(vmsplice(p.w.get(), in, 2, 0), SyscallSucceedsWithValue(8));
  char o1[3] = {}, o2[10] = {};
  struct iovec out[2] = {{o1, 3}, {o2, 10}};
  EXPECT_THAT(vmsplice(p.r.get(), out, 2, 0), SyscallSucceedsWithValue(8));
  EXPECT_EQ(std::string(o1, 3), "vms");
  EXPECT_EQ(std::string(o2, 5), "plice");
}

TEST(VmspliceTest, Errors) {
  Pipe p(O_NONBLOCK);
  char c = 'c';
  struct iovec v = {&c, 1};
  EXPECT_THAT(vmsplice(p.w.get(), &v, 1, 0x100), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(vmsplice(-1, &v, 1, 0), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(vmsplice(0, &v, 1, 0), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(vmsplice(p.r.get(), &v, 1, SPLICE_F_NONBLOCK),
              SyscallFailsWithErrno(EAGAIN));
  EXPECT_THAT(vmsplice(p.w.get(), &v, 0, 0), SyscallSucceedsWithValue(0));
}

// ---- splice between a pipe and a regular file. ----

class SpliceFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = NewTempPath();
    f_.reset(open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_TRUE(f_.valid()) << strerror(errno);
  }
  void TearDown() override { unlink(path_.c_str()); }
  std::string path_;
  FileDescriptor f_;
};

TEST_F(SpliceFileTest, FileToPipeAtAnOffsetOrThePosition) {
  ASSERT_THAT(write(f_.get(), "0123456789", 10), SyscallSucceedsWithValue(10));
  Pipe p;
  loff_t off = 2;
  EXPECT_THAT(splice(f_.get(), &off, p.w.get(), nullptr, 5, 0),
              SyscallSucceedsWithValue(5));
  EXPECT_EQ(off, 7);
  EXPECT_THAT(lseek(f_.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(10));
  EXPECT_EQ(ReadAll(p.r.get(), 5), "23456");
  ASSERT_THAT(lseek(f_.get(), 8, SEEK_SET), SyscallSucceedsWithValue(8));
  EXPECT_THAT(splice(f_.get(), nullptr, p.w.get(), nullptr, 100, 0),
              SyscallSucceedsWithValue(2));
  EXPECT_THAT(lseek(f_.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(10));
  EXPECT_EQ(ReadAll(p.r.get(), 2), "89");
  // At the end of the file.
  EXPECT_THAT(splice(f_.get(), nullptr, p.w.get(), nullptr, 100, 0),
              SyscallSucceedsWithValue(0));
}

TEST_F(SpliceFileTest, PipeToFileAtAnOffsetOrThePosition) {
  Pipe p;
  ASSERT_THAT(write(p.w.get(), "abcdef", 6), SyscallSucceedsWithValue(6));
  loff_t off = 3;
  EXPECT_THAT(splice(p.r.get(), nullptr, f_.get(), &off, 4, 0),
              SyscallSucceedsWithValue(4));
  EXPECT_EQ(off, 7);
  EXPECT_THAT(lseek(f_.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(0));
  EXPECT_THAT(splice(p.r.get(), nullptr, f_.get(), nullptr, 10, 0),
              SyscallSucceedsWithValue(2));
  EXPECT_THAT(lseek(f_.get(), 0, SEEK_CUR), SyscallSucceedsWithValue(2));
  char buf[16] = {};
  ASSERT_THAT(pread(f_.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(7));
  EXPECT_EQ(std::string(buf, 7), std::string("ef\0abcd", 7));
}

TEST_F(SpliceFileTest, Errors) {
  Pipe p;
  ASSERT_THAT(write(p.w.get(), "x", 1), SyscallSucceedsWithValue(1));
  loff_t negative = -1;
  EXPECT_THAT(splice(p.r.get(), nullptr, f_.get(), &negative, 1, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(splice(f_.get(), &negative, p.w.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(
      splice(f_.get(), reinterpret_cast<loff_t*>(1), p.w.get(), nullptr, 1, 0),
      SyscallFailsWithErrno(EFAULT));
  // File to file.
  EXPECT_THAT(splice(f_.get(), nullptr, f_.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(EINVAL));
  // An O_APPEND output.
  FileDescriptor app(open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  ASSERT_TRUE(app.valid());
  EXPECT_THAT(splice(p.r.get(), nullptr, app.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(EINVAL));
  // A read-only output.
  FileDescriptor ro(open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_THAT(splice(p.r.get(), nullptr, ro.get(), nullptr, 1, 0),
              SyscallFailsWithErrno(EBADF));
}

}  // namespace
}  // namespace sandbox::testutil
