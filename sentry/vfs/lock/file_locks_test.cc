#include "sentry/vfs/lock/file_locks.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace sandbox::vfs::lock {
namespace {

#define EXPECT_ERRNO(expr, err)                  \
  do {                                           \
    auto _r = (expr);                            \
    ASSERT_FALSE(_r.ok()) << #expr " succeeded"; \
    EXPECT_EQ(_r.error(), err) << #expr;         \
  } while (0)
#define ASSERT_OK(expr)                                                       \
  do {                                                                        \
    auto _r = (expr);                                                         \
    ASSERT_TRUE(_r.ok()) << #expr ": " << (_r.ok() ? "" : _r.error().name()); \
  } while (0)

constexpr LockType kR = LockType::kRead;
constexpr LockType kW = LockType::kWrite;
constexpr LockType kU = LockType::kUnlock;

int table_a, table_b, table_c;  // POSIX owner identities (FD tables)
const Owner kA{&table_a, 100, false};
const Owner kB{&table_b, 200, false};
const Owner kC{&table_c, 300, false};

std::string Dump(const FileLocks& f) {
  std::string s;
  for (const RangeLock& l : f.RangeLocks()) {
    s += l.owner.id == &table_a ? "A" : l.owner.id == &table_b ? "B" : "?";
    s += l.type == kW ? "w" : "r";
    s += "[" + std::to_string(l.start) + "," +
         (l.end == kOffsetMax ? std::string("max") : std::to_string(l.end)) +
         "] ";
  }
  return s;
}

TEST(FileLocksTest, UnlockInTheMiddleSplits) {
  FileLocks f;
  ASSERT_OK(f.SetRange(kA, kW, 0, 99, false, -1));
  ASSERT_OK(f.SetRange(kA, kU, 40, 59, false, -1));
  EXPECT_EQ(Dump(f), "Aw[0,39] Aw[60,99] ");
  EXPECT_FALSE(f.TestRange(kB, kW, 40, 59).has_value());
  auto c = f.TestRange(kB, kR, 50, 70);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->start, 60);
  EXPECT_EQ(c->owner.pid, 100);
}

TEST(FileLocksTest, AdjacentSameTypeMerges) {
  FileLocks f;
  ASSERT_OK(f.SetRange(kA, kR, 0, 9, false, -1));
  ASSERT_OK(f.SetRange(kA, kR, 20, 29, false, -1));
  ASSERT_OK(f.SetRange(kA, kR, 10, 19, false, -1));
  EXPECT_EQ(Dump(f), "Ar[0,29] ");
}

TEST(FileLocksTest, OtherTypeInTheMiddleSplitsWithoutMerging) {
  FileLocks f;
  ASSERT_OK(f.SetRange(kA, kR, 0, kOffsetMax, false, -1));
  ASSERT_OK(f.SetRange(kA, kW, 10, 19, false, -1));
  EXPECT_EQ(Dump(f), "Ar[0,9] Aw[10,19] Ar[20,max] ");
  ASSERT_OK(f.SetRange(kA, kR, 10, 19, false, -1));
  EXPECT_EQ(Dump(f), "Ar[0,max] ");
}

TEST(FileLocksTest, ReadersShareWritersConflict) {
  FileLocks f;
  ASSERT_OK(f.SetRange(kA, kR, 0, 9, false, -1));
  ASSERT_OK(f.SetRange(kB, kR, 5, 14, false, -1));
  EXPECT_ERRNO(f.SetRange(kB, kW, 0, 0, false, -1), kEAGAIN);
  EXPECT_ERRNO(f.SetRange(kA, kW, 5, 5, false, -1), kEAGAIN);
  // Not overlapping B's lock: the upgrade works.
  ASSERT_OK(f.SetRange(kA, kW, 0, 4, false, -1));
  EXPECT_EQ(Dump(f), "Aw[0,4] Ar[5,9] Br[5,14] ");
}

TEST(FileLocksTest, OfdAndPosixOwnersConflict) {
  FileLocks f;
  int desc;
  Owner ofd{&desc, 0, true};
  ASSERT_OK(f.SetRange(ofd, kW, 0, 0, false, -1));
  auto c = f.TestRange(kA, kR, 0, 0);
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->owner.ofd);
  EXPECT_ERRNO(f.SetRange(kA, kR, 0, 0, false, -1), kEAGAIN);
  f.ReleasePosix(&desc);  // Not a POSIX owner: nothing goes.
  EXPECT_ERRNO(f.SetRange(kA, kR, 0, 0, false, -1), kEAGAIN);
  f.ReleaseDescription(&desc);
  ASSERT_OK(f.SetRange(kA, kR, 0, 0, false, -1));
}

TEST(FileLocksTest, ReleasePosixDropsOnlyThatOwner) {
  FileLocks f;
  ASSERT_OK(f.SetRange(kA, kR, 0, 9, false, -1));
  ASSERT_OK(f.SetRange(kB, kR, 0, 9, false, -1));
  f.ReleasePosix(&table_a);
  EXPECT_EQ(Dump(f), "Br[0,9] ");
}

TEST(FileLocksTest, BlockedWriterWakesOnUnlock) {
  FileLocks f;
  ASSERT_OK(f.SetRange(kA, kW, 0, 0, false, -1));
  std::atomic<bool> got{false};
  std::thread t([&] {
    ASSERT_OK(f.SetRange(kB, kW, 0, 0, true, -1));
    got = true;
  });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(got);
  ASSERT_OK(f.SetRange(kA, kU, 0, kOffsetMax, false, -1));
  t.join();
  EXPECT_TRUE(got);
  EXPECT_EQ(Dump(f), "Bw[0,0] ");
}

TEST(FileLocksTest, InterruptEndsTheWait) {
  FileLocks f;
  ASSERT_OK(f.SetRange(kA, kW, 0, 0, false, -1));
  int efd = eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  std::thread t(
      [&] { EXPECT_ERRNO(f.SetRange(kB, kR, 0, 0, true, efd), kERestartSys); });
  absl::SleepFor(absl::Milliseconds(20));
  uint64_t one = 1;
  ASSERT_EQ(write(efd, &one, sizeof(one)), 8);
  t.join();
  close(efd);
  EXPECT_EQ(Dump(f), "Aw[0,0] ");
}

TEST(FileLocksTest, DeadlockAcrossFilesIsEdeadlk) {
  FileLocks f1, f2;
  ASSERT_OK(f1.SetRange(kA, kW, 0, 0, false, -1));
  ASSERT_OK(f2.SetRange(kB, kW, 0, 0, false, -1));
  std::thread t([&] { ASSERT_OK(f2.SetRange(kA, kW, 0, 0, true, -1)); });
  // Wait until A is blocked on B, then B asking for A's lock is a cycle.
  while (!OwnerIsBlocked(&table_a)) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_ERRNO(f1.SetRange(kB, kW, 0, 0, true, -1), kEDEADLK);
  // A non-blocking request is never a deadlock, just a conflict.
  EXPECT_ERRNO(f1.SetRange(kB, kW, 0, 0, false, -1), kEAGAIN);
  f2.ReleasePosix(&table_b);
  t.join();
}

TEST(FileLocksTest, FlockSharedExclusiveAndConversion) {
  FileLocks f;
  int d1, d2;
  ASSERT_OK(f.Flock(&d1, kR, false, -1));
  ASSERT_OK(f.Flock(&d2, kR, false, -1));
  EXPECT_ERRNO(f.Flock(&d2, kW, false, -1), kEAGAIN);
  // The failed conversion dropped d2's shared lock, as Linux does.
  ASSERT_OK(f.Flock(&d1, kW, false, -1));
  ASSERT_OK(f.Flock(&d1, kW, false, -1));  // Same type again: no-op.
  EXPECT_ERRNO(f.Flock(&d2, kR, false, -1), kEAGAIN);
  f.ReleaseDescription(&d1);
  ASSERT_OK(f.Flock(&d2, kW, false, -1));
  ASSERT_OK(f.Flock(&d2, kU, false, -1));
  ASSERT_OK(f.Flock(&d1, kW, false, -1));
}

TEST(FileLocksTest, FlockAndPosixDoNotInteract) {
  FileLocks f;
  int d1;
  ASSERT_OK(f.Flock(&d1, kW, false, -1));
  ASSERT_OK(f.SetRange(kA, kW, 0, kOffsetMax, false, -1));
}

}  // namespace
}  // namespace sandbox::vfs::lock
