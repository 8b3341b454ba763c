#include "sentry/fs/epoll/epoll.h"

#include <fcntl.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/fs/eventfd/eventfd.h"

namespace sandbox::fs::epoll {
namespace {

using eventfd::EventFd;

constexpr uint32_t kIn = vfs::kPollIn, kOut = vfs::kPollOut;
constexpr uint32_t kErrHup = vfs::kPollErr | vfs::kPollHup;

void Put(EventFd& e, uint64_t v) {
  vfs::IoContext ctx;
  uint8_t b[8];
  memcpy(b, &v, 8);
  ASSERT_TRUE(e.Write(ctx, absl::MakeSpan(b)).ok());
}

void Take(EventFd& e) {
  vfs::IoContext ctx;
  uint8_t b[8];
  ASSERT_TRUE(e.Read(ctx, absl::MakeSpan(b)).ok());
}

std::vector<Event> CollectAll(EpollFile& ep) {
  std::vector<Event> out;
  EXPECT_TRUE(ep.Collect(64, [&](absl::Span<const Event> evs) {
                  out.assign(evs.begin(), evs.end());
                  return evs.size();
                }).ok());
  return out;
}

TEST(EpollTest, LevelTriggeredReportsUntilConsumed) {
  EpollFile ep(O_RDWR);
  auto e = std::make_shared<EventFd>(0, false, O_RDWR | O_NONBLOCK);
  ASSERT_TRUE(ep.Add(e, 5, kIn | kErrHup, 42).ok());
  EXPECT_TRUE(CollectAll(ep).empty());
  Put(*e, 1);
  for (int i = 0; i < 2; ++i) {
    auto ev = CollectAll(ep);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].events, kIn);
    EXPECT_EQ(ev[0].data, 42u);
  }
  Take(*e);
  EXPECT_TRUE(CollectAll(ep).empty());
}

TEST(EpollTest, EdgeTriggeredReportsOncePerChange) {
  EpollFile ep(O_RDWR);
  auto e = std::make_shared<EventFd>(0, false, O_RDWR | O_NONBLOCK);
  ASSERT_TRUE(ep.Add(e, 5, kIn | kEpollEt | kErrHup, 1).ok());
  Put(*e, 1);
  EXPECT_EQ(CollectAll(ep).size(), 1u);
  EXPECT_TRUE(CollectAll(ep).empty());
  Put(*e, 1);  // a new edge
  EXPECT_EQ(CollectAll(ep).size(), 1u);
}

TEST(EpollTest, OneshotDisablesUntilModify) {
  EpollFile ep(O_RDWR);
  auto e = std::make_shared<EventFd>(1, false, O_RDWR | O_NONBLOCK);
  ASSERT_TRUE(ep.Add(e, 5, kIn | kEpollOneshot | kErrHup, 1).ok());
  EXPECT_EQ(CollectAll(ep).size(), 1u);
  Put(*e, 1);
  EXPECT_TRUE(CollectAll(ep).empty());
  ASSERT_TRUE(ep.Modify(e, 5, kIn | kOut | kErrHup, 2).ok());
  auto ev = CollectAll(ep);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].events, kIn | kOut);
  EXPECT_EQ(ev[0].data, 2u);
}

TEST(EpollTest, CtlErrors) {
  EpollFile ep(O_RDWR);
  auto e = std::make_shared<EventFd>(0, false, O_RDWR);
  EXPECT_EQ(ep.Modify(e, 3, kIn, 0).error(), kENOENT);
  EXPECT_EQ(ep.Delete(e, 3).error(), kENOENT);
  ASSERT_TRUE(ep.Add(e, 3, kIn, 0).ok());
  EXPECT_EQ(ep.Add(e, 3, kIn, 0).error(), kEEXIST);
  EXPECT_TRUE(ep.Add(e, 4, kIn, 0).ok());  // same description, other fd
  EXPECT_TRUE(ep.Delete(e, 3).ok());
  EXPECT_EQ(ep.ItemCount(), 1u);
}

TEST(EpollTest, ReleasedDescriptionLeavesTheSet) {
  EpollFile ep(O_RDWR);
  auto e = std::make_shared<EventFd>(1, false, O_RDWR);
  ASSERT_TRUE(ep.Add(e, 3, kIn, 0).ok());
  e.reset();
  EXPECT_TRUE(CollectAll(ep).empty());
  EXPECT_EQ(ep.ItemCount(), 0u);
}

TEST(EpollTest, NestedLoopsAndDepth) {
  std::vector<std::shared_ptr<EpollFile>> eps;
  for (int i = 0; i < 7; ++i)
    eps.push_back(std::make_shared<EpollFile>(O_RDWR));
  ASSERT_TRUE(eps[0]->Add(eps[1], 1, kIn, 0).ok());
  EXPECT_EQ(eps[1]->Add(eps[0], 0, kIn, 0).error(), kELOOP);
  // A chain of five epolls is the deepest allowed.
  for (int i = 1; i < 4; ++i)
    ASSERT_TRUE(eps[i]->Add(eps[i + 1], i, kIn, 0).ok());
  EXPECT_EQ(eps[4]->Add(eps[5], 5, kIn, 0).error(), kELOOP);
}

TEST(EpollTest, NestedEpollIsReadableAndWaitWakes) {
  auto inner = std::make_shared<EpollFile>(O_RDWR);
  EpollFile outer(O_RDWR);
  auto e = std::make_shared<EventFd>(0, false, O_RDWR);
  ASSERT_TRUE(inner->Add(e, 3, kIn, 7).ok());
  ASSERT_TRUE(outer.Add(inner, 4, kIn, 8).ok());
  EXPECT_EQ(inner->Readiness(vfs::kAllEvents), 0u);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    Put(*e, 1);
  });
  std::vector<Event> got;
  KResult<size_t> n = outer.Wait(8, -1, -1, [&](absl::Span<const Event> evs) {
    got.assign(evs.begin(), evs.end());
    return evs.size();
  });
  t.join();
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data, 8u);
  EXPECT_EQ(got[0].events, kIn);
}

TEST(EpollTest, WaitTimesOutAndFaultsKeepEvents) {
  EpollFile ep(O_RDWR);
  auto e = std::make_shared<EventFd>(1, false, O_RDWR);
  KResult<size_t> n =
      ep.Wait(8, vfs::MonotonicNowNs() + 10000000, -1,
              [](absl::Span<const Event> e) { return e.size(); });
  EXPECT_EQ(n.value(), 0u);
  ASSERT_TRUE(ep.Add(e, 3, kIn | kEpollEt, 0).ok());
  EXPECT_EQ(
      ep.Collect(8, [](absl::Span<const Event>) { return size_t{0}; }).error(),
      kEFAULT);
  EXPECT_EQ(CollectAll(ep).size(), 1u);  // still ready after the fault
}

}  // namespace
}  // namespace sandbox::fs::epoll
