#include "sentry/fs/host/host_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace sandbox::fs::host {
namespace {

class BufferMemory : public vfs::UserMemory {
 public:
  std::vector<uint8_t> mem = std::vector<uint8_t>(4096);
  KResult<void> CopyInFull(uint64_t addr, void* dst, size_t n) override {
    if (addr + n > mem.size()) return kEFAULT;
    memcpy(dst, mem.data() + addr, n);
    return OkResult();
  }
  KResult<void> CopyOutFull(uint64_t addr, const void* src, size_t n) override {
    if (addr + n > mem.size()) return kEFAULT;
    memcpy(mem.data() + addr, src, n);
    return OkResult();
  }
};

TEST(HostFileTest, PipeReadWrite) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  auto r = HostFile::Create(p[0]);
  auto w = HostFile::Create(p[1]);
  ASSERT_TRUE(r.ok() && w.ok());
  EXPECT_TRUE(r.value()->readable());
  EXPECT_FALSE(r.value()->writable());
  EXPECT_TRUE(r.value()->MayBlock());
  vfs::IoContext ctx;
  const std::string msg = "hello";
  auto n = w.value()->Write(
      ctx, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(msg.data()),
                               msg.size()));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 5u);
  uint8_t buf[16];
  auto m = r.value()->Read(ctx, absl::MakeSpan(buf));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), m.value()), "hello");
  EXPECT_EQ(r.value()->PRead(ctx, absl::MakeSpan(buf), 0).error(), kESPIPE);
  EXPECT_EQ(r.value()->Seek(0, SEEK_SET).error(), kESPIPE);
  EXPECT_EQ(r.value()->Ioctl(ctx, TCGETS, 0).error(), kENOTTY);
  EXPECT_EQ(r.value()->Ioctl(ctx, 0x1234, 0).error(), kENOTTY);
  auto st = r.value()->Stat();
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(S_ISFIFO(st.value().st_mode));
}

TEST(HostFileTest, GuestNonblockIsEmulatedNotSetOnHost) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  auto r = HostFile::Create(p[0]);
  ASSERT_TRUE(r.ok());
  r.value()->SetStatusFlags(O_NONBLOCK);
  EXPECT_EQ(fcntl(p[0], F_GETFL) & O_NONBLOCK, 0);
  vfs::IoContext ctx;
  uint8_t buf[4];
  EXPECT_EQ(r.value()->Read(ctx, absl::MakeSpan(buf)).error(), kEAGAIN);
  close(p[1]);
}

TEST(HostFileTest, HostNonblockIsNotInherited) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_NONBLOCK), 0);
  auto r = HostFile::Create(p[0]);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value()->nonblocking());
  // A blocking read waits for data even though the host FD is O_NONBLOCK.
  std::thread writer([&] {
    usleep(20000);
    ASSERT_EQ(write(p[1], "x", 1), 1);
  });
  vfs::IoContext ctx;
  uint8_t buf[4];
  auto n = r.value()->Read(ctx, absl::MakeSpan(buf));
  writer.join();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 1u);
  close(p[1]);
}

TEST(HostFileTest, BlockedReadIsInterruptible) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  auto r = HostFile::Create(p[0]);
  ASSERT_TRUE(r.ok());
  int efd = eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  std::thread interrupter([&] {
    usleep(20000);
    uint64_t one = 1;
    ASSERT_EQ(write(efd, &one, 8), 8);
  });
  vfs::IoContext ctx{.interrupt_fd = efd};
  uint8_t buf[4];
  auto n = r.value()->Read(ctx, absl::MakeSpan(buf));
  interrupter.join();
  EXPECT_EQ(n.error(), kERestartSys);
  close(efd);
  close(p[1]);
}

// The guest's description is blocking: a write takes all of its chunk
// even though the host pipe is O_NONBLOCK and holds only 64 KiB.
TEST(HostFileTest, BlockingWriteIsWholeOverANonblockingHostPipe) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_NONBLOCK), 0);
  auto w = HostFile::Create(p[1]);
  ASSERT_TRUE(w.ok());
  const size_t kSize = 1 << 20;
  std::vector<uint8_t> data(kSize);
  for (size_t i = 0; i < kSize; ++i) data[i] = static_cast<uint8_t>(i % 253);
  std::vector<uint8_t> got;
  std::thread reader([&] {
    uint8_t buf[65536];
    while (got.size() < kSize) {
      ssize_t n = read(p[0], buf, sizeof(buf));
      if (n > 0) {
        got.insert(got.end(), buf, buf + n);
      } else if (n == 0 || errno != EAGAIN) {
        break;
      } else {
        usleep(1000);
      }
    }
  });
  vfs::IoContext ctx;
  auto n = w.value()->Write(ctx, absl::MakeConstSpan(data));
  reader.join();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), kSize);
  EXPECT_TRUE(got == data);
  close(p[0]);
}

// Interrupted after some bytes went in: their count, not ERESTARTSYS.
TEST(HostFileTest, InterruptedWriteGivesThePartialCount) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_NONBLOCK), 0);
  auto w = HostFile::Create(p[1]);
  ASSERT_TRUE(w.ok());
  const int capacity = fcntl(p[1], F_GETPIPE_SZ);
  ASSERT_GT(capacity, 0);
  int efd = eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  std::thread interrupter([&] {
    usleep(20000);
    uint64_t one = 1;
    ASSERT_EQ(write(efd, &one, 8), 8);
  });
  vfs::IoContext ctx{.interrupt_fd = efd};
  std::vector<uint8_t> data(1 << 20, 'w');
  auto n = w.value()->Write(ctx, absl::MakeConstSpan(data));
  interrupter.join();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), static_cast<size_t>(capacity));
  close(efd);
  close(p[0]);
}

TEST(HostFileTest, RegularFileSharesHostOffset) {
  char path[] = "/tmp/hostfileXXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  int dup_fd = dup(fd);
  auto f = HostFile::Create(dup_fd);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f.value()->MayBlock());
  vfs::IoContext ctx;
  const uint8_t data[] = {'a', 'b', 'c'};
  ASSERT_EQ(f.value()->Write(ctx, absl::MakeConstSpan(data)).value(), 3u);
  // The caller's FD sees the offset move (shared description).
  EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 3);
  EXPECT_EQ(f.value()->Seek(1, SEEK_SET).value(), 1);
  uint8_t buf[4];
  EXPECT_EQ(f.value()->Read(ctx, absl::MakeSpan(buf)).value(), 2u);
  EXPECT_EQ(f.value()->PRead(ctx, absl::MakeSpan(buf), 0).value(), 3u);
  EXPECT_EQ(f.value()->Stat().value().st_size, 3);
  close(fd);
}

TEST(HostFileTest, TerminalIoctls) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0)
    GTEST_SKIP() << "no pseudo-terminals here: " << strerror(errno);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  if (slave < 0)
    GTEST_SKIP() << "cannot open the pty slave: " << strerror(errno);
  winsize ws = {.ws_row = 24, .ws_col = 80};
  ASSERT_EQ(ioctl(slave, TIOCSWINSZ, &ws), 0);
  auto f = HostFile::Create(slave);
  ASSERT_TRUE(f.ok());
  BufferMemory mem;
  vfs::IoContext ctx{.user = &mem};
  ASSERT_TRUE(f.value()->Ioctl(ctx, TIOCGWINSZ, 100).ok());
  abi::Winsize got;
  memcpy(&got, mem.mem.data() + 100, sizeof(got));
  EXPECT_EQ(got.ws_row, 24);
  EXPECT_EQ(got.ws_col, 80);
  ASSERT_TRUE(f.value()->Ioctl(ctx, TCGETS, 200).ok());
  EXPECT_EQ(f.value()->Ioctl(ctx, TCGETS, 4095).error(), kEFAULT);
  // Not on the allowlist.
  EXPECT_EQ(f.value()->Ioctl(ctx, TIOCSWINSZ, 100).error(), kENOTTY);
  close(master);
}

}  // namespace
}  // namespace sandbox::fs::host
