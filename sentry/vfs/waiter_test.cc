#include "sentry/vfs/waiter.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <thread>

#include "gtest/gtest.h"

namespace sandbox::vfs {
namespace {

struct CountingEntry : WaitEntry {
  void Callback(uint32_t events) override {
    ++calls;
    last = events;
  }
  int calls = 0;
  uint32_t last = 0;
};

TEST(WaitQueueTest, NotifyRunsEntriesWhoseMaskMeetsTheEvents) {
  WaitQueue q;
  CountingEntry in, out;
  q.Register(&in, kPollIn);
  q.Register(&out, kPollOut | kPollHup);
  q.Notify(kPollIn | kPollRdNorm);
  EXPECT_EQ(in.calls, 1);
  EXPECT_EQ(in.last, kPollIn);  // only the entry's events
  EXPECT_EQ(out.calls, 0);
  q.Notify(kPollHup);
  EXPECT_EQ(out.calls, 1);
  EXPECT_EQ(out.last, kPollHup);
  out.Unregister();
  q.Notify(kAllEvents);
  EXPECT_EQ(out.calls, 1);
  EXPECT_EQ(in.calls, 2);
  EXPECT_TRUE(q.HasWaiters());
  in.Unregister();
  EXPECT_FALSE(q.HasWaiters());
}

TEST(WaitQueueTest, UnregisterAfterTheQueueIsGoneIsSafe) {
  CountingEntry e;
  {
    WaitQueue q;
    q.Register(&e, kPollIn);
    EXPECT_TRUE(e.registered());
  }
  e.Unregister();
  EXPECT_FALSE(e.registered());
}

TEST(WaitQueueTest, RegisterMovesTheEntry) {
  WaitQueue a, b;
  CountingEntry e;
  a.Register(&e, kPollIn);
  b.Register(&e, kPollIn);
  a.Notify(kPollIn);
  EXPECT_EQ(e.calls, 0);
  b.Notify(kPollIn);
  EXPECT_EQ(e.calls, 1);
}

TEST(ThreadWaiterTest, AWakeUpBeforeTheSleepIsKept) {
  WaitQueue q;
  ThreadWaiter w;
  q.Register(&w, kPollIn);
  q.Notify(kPollIn);
  EXPECT_EQ(w.Sleep(-1, MonotonicNowNs() + 5000000000LL),
            WakeReason::kNotified);
}

TEST(ThreadWaiterTest, TimesOut) {
  ThreadWaiter w;
  int64_t start = MonotonicNowNs();
  EXPECT_EQ(w.Sleep(-1, start + 20000000), WakeReason::kTimedOut);
  EXPECT_GE(MonotonicNowNs() - start, 20000000);
  EXPECT_EQ(w.Sleep(-1, 0), WakeReason::kTimedOut);  // already past
}

TEST(ThreadWaiterTest, TheInterruptWins) {
  int irq = eventfd(1, EFD_CLOEXEC);
  ASSERT_GE(irq, 0);
  WaitQueue q;
  ThreadWaiter w;
  q.Register(&w, kPollIn);
  q.Notify(kPollIn);
  EXPECT_EQ(w.Sleep(irq, -1), WakeReason::kInterrupted);
  close(irq);
}

TEST(ThreadWaiterTest, AnotherThreadWakesTheSleeper) {
  WaitQueue q;
  std::atomic<bool> registered{false};
  std::thread t([&] {
    while (!registered.load()) std::this_thread::yield();
    q.Notify(kPollOut);
  });
  ThreadWaiter w;
  q.Register(&w, kPollOut);
  registered = true;
  EXPECT_EQ(w.Sleep(-1, MonotonicNowNs() + 10000000000LL),
            WakeReason::kNotified);
  t.join();
}

TEST(ThreadWaiterTest, AHostFdEndsTheSleep) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(write(fds[1], "x", 1), 1);
  ThreadWaiter w;
  pollfd p = {fds[0], POLLIN, 0};
  EXPECT_EQ(w.Sleep(-1, MonotonicNowNs() + 10000000000LL, {&p, 1}),
            WakeReason::kNotified);
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace sandbox::vfs
