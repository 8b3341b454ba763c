#include "sentry/kernel/timer_service.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace sandbox::kernel {
namespace {

TEST(DeadlineQueueTest, TakesDueEntriesEarliestFirstAndStableOnTies) {
  DeadlineQueue q;
  std::vector<int> order;
  q.Add(30, [&] { order.push_back(3); });
  q.Add(10, [&] { order.push_back(1); });
  q.Add(20, [&] { order.push_back(2); });
  q.Add(20, [&] { order.push_back(22); });
  EXPECT_EQ(q.NextDeadline(), 10);
  auto due = q.TakeExpired(20);
  ASSERT_EQ(due.size(), 3u);
  for (auto& f : due) f();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 22}));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.NextDeadline(), 30);
  EXPECT_TRUE(q.TakeExpired(29).empty());
}

TEST(DeadlineQueueTest, RemoveOnlyOnce) {
  DeadlineQueue q;
  auto a = q.Add(5, [] {});
  auto b = q.Add(7, [] {});
  EXPECT_NE(a, b);
  EXPECT_TRUE(q.Remove(a));
  EXPECT_FALSE(q.Remove(a));
  EXPECT_EQ(q.NextDeadline(), 7);
  EXPECT_EQ(q.TakeExpired(100).size(), 1u);
  EXPECT_FALSE(q.Remove(b));  // already taken
  EXPECT_FALSE(q.NextDeadline().has_value());
}

TEST(TimerServiceTest, RunsInDeadlineOrderNotBefore) {
  TimerService s;
  std::atomic<int> ran{0};
  std::vector<int> order;
  std::mutex mu;
  absl::Notification done;
  const int64_t start = TimerService::Now();
  int64_t first_at = 0;
  s.Schedule(start + 60'000'000, [&] {
    std::lock_guard<std::mutex> l(mu);
    order.push_back(2);
    if (++ran == 2) done.Notify();
  });
  s.Schedule(start + 20'000'000, [&] {
    std::lock_guard<std::mutex> l(mu);
    first_at = TimerService::Now();
    order.push_back(1);
    if (++ran == 2) done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  std::lock_guard<std::mutex> l(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_GE(first_at - start, 20'000'000);
}

TEST(TimerServiceTest, CancelledEntryNeverRuns) {
  TimerService s;
  std::atomic<bool> ran{false};
  absl::Notification later;
  auto id = s.Schedule(TimerService::Now() + 10'000'000, [&] { ran = true; });
  s.Cancel(id);
  s.Schedule(TimerService::Now() + 40'000'000, [&] { later.Notify(); });
  ASSERT_TRUE(later.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_FALSE(ran);
  EXPECT_EQ(s.Pending(), 0u);
}

TEST(TimerServiceTest, CallbackMayRescheduleItself) {
  TimerService s;
  std::atomic<int> n{0};
  absl::Notification done;
  std::function<void()> tick = [&] {
    if (++n == 5) {
      done.Notify();
      return;
    }
    s.Schedule(TimerService::Now() + 1'000'000, tick);
  };
  s.Schedule(TimerService::Now(), tick);
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(n.load(), 5);
}

TEST(TimerServiceTest, FarDeadlineNeitherRunsNorBlocksANearerOne) {
  TimerService s;
  std::atomic<bool> far_ran{false};
  absl::Notification near;
  s.Schedule(INT64_MAX, [&] { far_ran = true; });
  s.Schedule(TimerService::Now() + 5'000'000, [&] { near.Notify(); });
  ASSERT_TRUE(near.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_FALSE(far_ran);
  EXPECT_EQ(s.Pending(), 1u);
}

}  // namespace
}  // namespace sandbox::kernel
