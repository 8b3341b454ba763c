#include "sentry/fs/pipe/pipe.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sentry/fs/pipe/pipe_file.h"
#include "sentry/vfs/dentry.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::fs::pipe {
namespace {

#define EXPECT_ERRNO(expr, err)                                        \
  do {                                                                 \
    auto _r = (expr);                                                  \
    ASSERT_FALSE(_r.ok()) << #expr " succeeded";                       \
    EXPECT_EQ(_r.error(), err) << #expr ": got " << _r.error().name(); \
  } while (0)
#define ASSERT_OK(expr)                                                       \
  do {                                                                        \
    auto _r = (expr);                                                         \
    ASSERT_TRUE(_r.ok()) << #expr ": " << (_r.ok() ? "" : _r.error().name()); \
  } while (0)

absl::Span<const uint8_t> Bytes(const std::string& s) {
  return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()),
                             s.size());
}

// Reads up to n bytes without blocking.
std::string ReadNow(Pipe& p, size_t n) {
  std::string s(n, '\0');
  auto r =
      p.Read(-1, absl::MakeSpan(reinterpret_cast<uint8_t*>(s.data()), n), true);
  if (!r.ok()) return "<" + std::string(r.error().name()) + ">";
  s.resize(r.value());
  return s;
}

class PipeTest : public ::testing::Test {
 protected:
  PipeTest() {
    p.AddReader();
    p.AddWriter();
  }
  Pipe p;
};

TEST_F(PipeTest, RoundTripAndShortRead) {
  EXPECT_EQ(p.Write(-1, Bytes("hello"), true, false).value(), 5u);
  EXPECT_EQ(p.Queued(), 5u);
  EXPECT_EQ(ReadNow(p, 2), "he");
  EXPECT_EQ(ReadNow(p, 10), "llo");
  EXPECT_EQ(ReadNow(p, 10), "<EAGAIN>");
}

TEST_F(PipeTest, EofAndEpipe) {
  p.RemoveWriter();
  EXPECT_EQ(ReadNow(p, 1), "");
  p.RemoveReader();
  EXPECT_ERRNO(p.Write(-1, Bytes("x"), true, false), kEPIPE);
  // A null write succeeds even then.
  EXPECT_EQ(p.Write(-1, Bytes(""), true, false).value(), 0u);
}

TEST_F(PipeTest, CapacityIsSixteenPagesAndSmallWritesAreAtomic) {
  EXPECT_EQ(p.Capacity(), 65536u);
  std::string page(kPageSize, 'a');
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(p.Write(-1, Bytes(page), true, false).value(), kPageSize);
  }
  EXPECT_ERRNO(p.Write(-1, Bytes("x"), true, false), kEAGAIN);
  // One byte out leaves a partly used first buffer: still no free slot, so
  // a 2-byte write (atomic) cannot go in, as in Linux.
  EXPECT_EQ(ReadNow(p, 1), "a");
  EXPECT_ERRNO(p.Write(-1, Bytes("xy"), true, false), kEAGAIN);
  // Reads go on across buffers: this one frees the first.
  EXPECT_EQ(ReadNow(p, kPageSize).size(), kPageSize);
  EXPECT_EQ(p.Write(-1, Bytes("xy"), true, false).value(), 2u);
}

TEST_F(PipeTest, LargeNonblockingWriteIsPartial) {
  std::string big(100000, 'b');
  EXPECT_EQ(p.Write(-1, Bytes(big), true, false).value(), 65536u);
  EXPECT_EQ(p.Queued(), 65536u);
}

TEST_F(PipeTest, SmallWritesMergeIntoOnePage) {
  for (int i = 0; i < 4096; ++i) {
    ASSERT_EQ(p.Write(-1, Bytes("z"), true, false).value(), 1u);
  }
  // One buffer in use: 15 pages of room remain.
  std::string rest(15 * kPageSize, 'q');
  EXPECT_EQ(p.Write(-1, Bytes(rest), true, false).value(), rest.size());
  EXPECT_ERRNO(p.Write(-1, Bytes("z"), true, false), kEAGAIN);
}

TEST_F(PipeTest, PacketModeReadsOnePacketAndDropsTheRest) {
  ASSERT_OK(p.Write(-1, Bytes("first"), true, true));
  ASSERT_OK(p.Write(-1, Bytes("second"), true, true));
  EXPECT_EQ(ReadNow(p, 100), "first");
  EXPECT_EQ(ReadNow(p, 3), "sec");
  EXPECT_EQ(ReadNow(p, 100), "<EAGAIN>");
}

TEST_F(PipeTest, SetCapacityRules) {
  EXPECT_EQ(p.SetCapacity(1, false).value(), kPageSize);
  EXPECT_EQ(p.SetCapacity(3 * kPageSize, false).value(), 4 * kPageSize);
  EXPECT_EQ(p.SetCapacity(kPipeMaxSize, false).value(), kPipeMaxSize);
  EXPECT_ERRNO(p.SetCapacity(2 * kPipeMaxSize, false), kEPERM);
  EXPECT_EQ(p.SetCapacity(2 * kPipeMaxSize, true).value(), 2 * kPipeMaxSize);
  EXPECT_ERRNO(p.SetCapacity(0x80000001u, true), kEINVAL);
  std::string data(3 * kPageSize, 'd');
  ASSERT_OK(p.Write(-1, Bytes(data), true, false));
  EXPECT_ERRNO(p.SetCapacity(2 * kPageSize, false), kEBUSY);
  EXPECT_EQ(p.SetCapacity(4 * kPageSize, false).value(), 4 * kPageSize);
  EXPECT_EQ(p.Capacity(), 4 * kPageSize);
}

TEST_F(PipeTest, BlockingReadWakesOnWrite) {
  std::string got;
  std::thread t([&] {
    uint8_t buf[16];
    auto r = p.Read(-1, absl::MakeSpan(buf), false);
    ASSERT_OK(r);
    got.assign(reinterpret_cast<char*>(buf), r.value());
  });
  absl::SleepFor(absl::Milliseconds(20));
  ASSERT_OK(p.Write(-1, Bytes("wake"), false, false));
  t.join();
  EXPECT_EQ(got, "wake");
}

TEST_F(PipeTest, BlockingWriteFinishesAsReaderDrains) {
  std::string big(200000, 'w');
  std::thread t([&] {
    auto r = p.Write(-1, Bytes(big), false, false);
    ASSERT_OK(r);
    EXPECT_EQ(r.value(), big.size());
  });
  size_t total = 0;
  std::vector<uint8_t> buf(10000);
  while (total < big.size()) {
    auto r = p.Read(-1, absl::MakeSpan(buf), false);
    ASSERT_OK(r);
    total += r.value();
  }
  t.join();
  EXPECT_EQ(total, big.size());
}

TEST_F(PipeTest, InterruptedReadIsErestartsys) {
  int efd = eventfd(0, EFD_CLOEXEC);
  std::thread t([&] {
    uint8_t c;
    EXPECT_ERRNO(p.Read(efd, absl::MakeSpan(&c, 1), false), kERestartSys);
  });
  absl::SleepFor(absl::Milliseconds(20));
  uint64_t one = 1;
  ASSERT_EQ(write(efd, &one, 8), 8);
  t.join();
  close(efd);
}

TEST_F(PipeTest, InterruptedLargeWriteReturnsWhatWasWritten) {
  int efd = eventfd(0, EFD_CLOEXEC);
  uint64_t one = 1;
  ASSERT_EQ(write(efd, &one, 8), 8);  // Already pending.
  std::string big(100000, 'i');
  auto r = p.Write(efd, Bytes(big), false, false);
  ASSERT_OK(r);
  EXPECT_EQ(r.value(), 65536u);
  EXPECT_ERRNO(p.Write(efd, Bytes("x"), false, false), kERestartSys);
  close(efd);
}

TEST_F(PipeTest, LastReaderCloseWakesBlockedWriterWithEpipe) {
  std::string big(100000, 'e');
  std::thread t([&] {
    auto r = p.Write(-1, Bytes(big), false, false);
    // Some data went in before the reader left: the partial count.
    ASSERT_OK(r);
    EXPECT_EQ(r.value(), 65536u);
  });
  absl::SleepFor(absl::Milliseconds(20));
  p.RemoveReader();
  t.join();
}

TEST(PipeSpliceTest, SpliceMovesAndTeeCopies) {
  Pipe a, b;
  a.AddReader();
  a.AddWriter();
  b.AddReader();
  b.AddWriter();
  ASSERT_OK(a.Write(-1, Bytes("abcdef"), true, false));
  EXPECT_EQ(Pipe::Tee(a, b, 4, true, -1).value(), 4u);
  EXPECT_EQ(a.Queued(), 6u);
  EXPECT_EQ(ReadNow(b, 100), "abcd");
  EXPECT_EQ(Pipe::Splice(a, b, 2, true, -1).value(), 2u);
  EXPECT_EQ(Pipe::Splice(a, b, 100, true, -1).value(), 4u);
  EXPECT_EQ(ReadNow(b, 100), "abcdef");
  EXPECT_ERRNO(Pipe::Splice(a, b, 100, true, -1), kEAGAIN);
  a.RemoveWriter();
  EXPECT_EQ(Pipe::Splice(a, b, 100, true, -1).value(), 0u);
  b.RemoveReader();
  ASSERT_OK(a.Write(-1, Bytes(""), true, false));
}

TEST(PipeSpliceTest, SpliceToFilePutsBackWhatWasNotWritten) {
  Pipe p;
  p.AddReader();
  p.AddWriter();
  ASSERT_OK(p.Write(-1, Bytes("0123456789"), true, false));
  std::string out;
  auto write3 = [&](absl::Span<const uint8_t> s) -> KResult<size_t> {
    size_t n = std::min<size_t>(3, s.size());
    out.append(reinterpret_cast<const char*>(s.data()), n);
    return n;
  };
  EXPECT_EQ(p.SpliceToFile(-1, 100, true, false, write3).value(), 3u);
  EXPECT_EQ(p.SpliceToFile(-1, 100, true, true, write3).value(), 3u);
  EXPECT_EQ(out, "012345");
  EXPECT_EQ(ReadNow(p, 100), "6789");
}

TEST(PipeSpliceTest, SpliceFromFileIsBoundedByRoom) {
  Pipe p;
  p.AddReader();
  p.AddWriter();
  ASSERT_OK(p.SetCapacity(kPageSize, false));
  size_t asked = 0;
  auto fill = [&](absl::Span<uint8_t> s) -> KResult<size_t> {
    asked = s.size();
    memset(s.data(), 'f', s.size());
    return s.size();
  };
  EXPECT_EQ(p.SpliceFromFile(-1, 100000, true, true, fill).value(), kPageSize);
  EXPECT_EQ(asked, kPageSize);
  EXPECT_ERRNO(p.SpliceFromFile(-1, 10, true, true, fill), kEAGAIN);
}

TEST(PipeFileTest, EndsCountAndStat) {
  auto [r, w] = NewPipe(O_NONBLOCK, 1000, 1001);
  Pipe& p = r->pipe();
  EXPECT_EQ(&p, &w->pipe());
  EXPECT_EQ(p.readers(), 1u);
  EXPECT_EQ(p.writers(), 1u);
  EXPECT_TRUE(r->readable());
  EXPECT_FALSE(r->writable());
  EXPECT_TRUE(w->writable());
  EXPECT_TRUE(r->nonblocking());
  abi::Stat st = r->Stat().value();
  EXPECT_EQ(st.st_mode, S_IFIFO | 0600u);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_gid, 1001u);
  EXPECT_EQ(st.st_blksize, 4096);
  EXPECT_EQ(st.st_ino, w->Stat().value().st_ino);
  EXPECT_EQ(PipeOf(*r), &p);
  w.reset();
  EXPECT_EQ(p.writers(), 0u);
}

// The pipefs inode (where /proc/PID/fd/N jumps) reopens the same pipe
// with the new access mode, as fifo_open.
TEST(PipeFileTest, LocationReopensThePipe) {
  auto [r, w] = NewPipe(0, 1000, 1001);
  const vfs::VirtualDentry& loc = *w->location();
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc.dentry.get(), r->location()->dentry.get());
  vfs::Inode& inode = loc.dentry->inode();
  EXPECT_TRUE(IsPipeFsInode(inode));
  EXPECT_EQ(inode.Stat().st_ino, r->Stat().value().st_ino);
  EXPECT_EQ(inode.Stat().st_dev, PipeFsDev());
  EXPECT_EQ(loc.mount->fs().type_name(), "pipefs");
  {
    auto f = inode.Open(loc, O_RDONLY);
    ASSERT_OK(f);
    EXPECT_EQ(PipeOf(**f), &r->pipe());
    EXPECT_TRUE((*f)->readable());
    EXPECT_FALSE((*f)->writable());
    EXPECT_EQ(r->pipe().readers(), 2u);
    abi::Stat st = (*f)->Stat().value();
    EXPECT_EQ(st.st_mode, S_IFIFO | 0600u);
    EXPECT_EQ(st.st_uid, 1000u);
  }
  EXPECT_EQ(w->pipe().readers(), 1u);
  {
    auto f = inode.Open(loc, O_RDWR);
    ASSERT_OK(f);
    EXPECT_EQ(w->pipe().readers(), 2u);
    EXPECT_EQ(w->pipe().writers(), 2u);
  }
  Pipe& p = w->pipe();
  r.reset();
  EXPECT_EQ(p.readers(), 0u);
  // A pipe (unlike a FIFO) has no ENXIO and no wait for a partner.
  {
    auto f = inode.Open(loc, O_WRONLY | O_NONBLOCK);
    ASSERT_OK(f);
    EXPECT_EQ(p.writers(), 2u);
  }
  EXPECT_ERRNO(inode.Open(loc, 3), kEINVAL);
}

TEST(PipeFileTest, FifoOpenRules) {
  Pipe p;
  EXPECT_ERRNO(p.OpenFifoEnd(O_WRONLY | O_NONBLOCK), kENXIO);
  EXPECT_ERRNO(p.OpenFifoEnd(3), kEINVAL);
  auto rd = p.OpenFifoEnd(O_RDONLY | O_NONBLOCK);
  ASSERT_OK(rd);
  EXPECT_EQ(rd.value().kind, Pipe::OpenWait::kNone);
  auto rd2 = p.OpenFifoEnd(O_RDONLY);
  ASSERT_OK(rd2);
  EXPECT_EQ(rd2.value().kind, Pipe::OpenWait::kWriter);
  std::thread t([&] { ASSERT_OK(p.WaitForPartner(rd2.value(), -1)); });
  absl::SleepFor(absl::Milliseconds(20));
  auto wr = p.OpenFifoEnd(O_WRONLY | O_NONBLOCK);  // Readers exist now.
  ASSERT_OK(wr);
  EXPECT_EQ(wr.value().kind, Pipe::OpenWait::kNone);
  t.join();
  auto rw = p.OpenFifoEnd(O_RDWR);
  ASSERT_OK(rw);
  EXPECT_EQ(rw.value().kind, Pipe::OpenWait::kNone);
}

TEST(PipeFileTest, FifoWriterWaitIsInterruptible) {
  Pipe p;
  auto wr = p.OpenFifoEnd(O_WRONLY);
  ASSERT_OK(wr);
  EXPECT_EQ(wr.value().kind, Pipe::OpenWait::kReader);
  int efd = eventfd(1, EFD_CLOEXEC);
  EXPECT_ERRNO(p.WaitForPartner(wr.value(), efd), kERestartSys);
  close(efd);
}

struct RecordingEntry : vfs::WaitEntry {
  void Callback(uint32_t events) override { seen |= events; }
  uint32_t seen = 0;
};

// pipe_poll, and the notifications that readiness changes send.
TEST_F(PipeTest, ReadinessAndNotifications) {
  constexpr uint32_t kAll = vfs::kAllEvents;
  EXPECT_EQ(p.Readiness(true, false, 0, kAll), 0u);
  EXPECT_EQ(p.Readiness(false, true, 0, kAll),
            vfs::kPollOut | vfs::kPollWrNorm);
  RecordingEntry in, out;
  p.EventRegister(&in, vfs::kPollIn | vfs::kPollHup);
  p.EventRegister(&out, vfs::kPollOut | vfs::kPollErr);
  ASSERT_OK(p.Write(-1, Bytes("ab"), true, false));
  EXPECT_EQ(in.seen, vfs::kPollIn);
  EXPECT_EQ(out.seen, 0u);
  EXPECT_EQ(p.Readiness(true, false, 0, kAll), vfs::kPollIn | vfs::kPollRdNorm);
  EXPECT_EQ(ReadNow(p, 1), "a");
  EXPECT_EQ(out.seen, vfs::kPollOut);
  p.RemoveWriter();
  EXPECT_TRUE(in.seen & vfs::kPollHup);
  EXPECT_EQ(p.Readiness(true, false, 0, kAll),
            vfs::kPollIn | vfs::kPollRdNorm | vfs::kPollHup);
  p.RemoveReader();
  EXPECT_TRUE(out.seen & vfs::kPollErr);
  EXPECT_EQ(
      p.Readiness(false, true, 0, kAll & ~vfs::kPollOut & ~vfs::kPollWrNorm),
      vfs::kPollErr);
  in.Unregister();
  out.Unregister();
}

// A FIFO reader opened O_NONBLOCK before any writer sees no POLLHUP until
// a writer has come and gone (f_version).
TEST(PipeFileTest, FifoPollVersion) {
  Pipe p;
  auto rd = p.OpenFifoEnd(O_RDONLY | O_NONBLOCK);
  ASSERT_OK(rd);
  const uint64_t v = rd.value().poll_version;
  EXPECT_EQ(p.Readiness(true, false, v, vfs::kAllEvents), 0u);
  auto wr = p.OpenFifoEnd(O_WRONLY);
  ASSERT_OK(wr);
  p.RemoveWriter();
  EXPECT_EQ(p.Readiness(true, false, v, vfs::kAllEvents), vfs::kPollHup);
}

}  // namespace
}  // namespace sandbox::fs::pipe
