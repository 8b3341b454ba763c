#include "sentry/fs/eventfd/eventfd.h"

#include <fcntl.h>

#include <cstring>
#include <thread>

#include "gtest/gtest.h"

namespace sandbox::fs::eventfd {
namespace {

KResult<size_t> Put(EventFd& e, uint64_t v) {
  vfs::IoContext ctx;
  uint8_t b[8];
  memcpy(b, &v, 8);
  return e.Write(ctx, absl::MakeSpan(b));
}

KResult<uint64_t> Get(EventFd& e) {
  vfs::IoContext ctx;
  uint8_t b[8];
  TRY(size_t n, e.Read(ctx, absl::MakeSpan(b)));
  EXPECT_EQ(n, 8u);
  uint64_t v;
  memcpy(&v, b, 8);
  return v;
}

TEST(EventFdTest, CounterAndSemaphore) {
  EventFd e(3, false, O_RDWR | O_NONBLOCK);
  ASSERT_TRUE(Put(e, 4).ok());
  EXPECT_EQ(Get(e).value(), 7u);
  EXPECT_EQ(Get(e).error(), kEAGAIN);
  EventFd s(2, true, O_RDWR | O_NONBLOCK);
  EXPECT_EQ(Get(s).value(), 1u);
  EXPECT_EQ(Get(s).value(), 1u);
  EXPECT_EQ(Get(s).error(), kEAGAIN);
}

TEST(EventFdTest, SizesAndLimits) {
  EventFd e(0, false, O_RDWR | O_NONBLOCK);
  vfs::IoContext ctx;
  uint8_t b[7] = {};
  EXPECT_EQ(e.Read(ctx, absl::MakeSpan(b)).error(), kEINVAL);
  EXPECT_EQ(e.Write(ctx, absl::MakeSpan(b)).error(), kEINVAL);
  EXPECT_EQ(Put(e, ~uint64_t{0}).error(), kEINVAL);
  ASSERT_TRUE(Put(e, ~uint64_t{0} - 1).ok());
  EXPECT_EQ(Put(e, 1).error(), kEAGAIN);  // would overflow
  EXPECT_EQ(e.Readiness(vfs::kAllEvents), vfs::kPollIn);
  EXPECT_TRUE(Put(e, 0).ok());  // adding 0 always fits
}

TEST(EventFdTest, ReadinessAndNotify) {
  EventFd e(0, false, O_RDWR);
  EXPECT_EQ(e.Readiness(vfs::kAllEvents), vfs::kPollOut);
  vfs::ThreadWaiter w;
  e.EventRegister(&w, vfs::kPollIn);
  std::thread t([&] { ASSERT_TRUE(Put(e, 5).ok()); });
  while (e.Readiness(vfs::kPollIn) == 0) {
    w.Sleep(-1, vfs::MonotonicNowNs() + 1000000000);
  }
  t.join();
  e.EventUnregister(&w);
  EXPECT_EQ(Get(e).value(), 5u);  // blocking read, ready
}

TEST(EventFdTest, BlockingReadWaitsForAWrite) {
  EventFd e(0, false, O_RDWR);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(Put(e, 9).ok());
  });
  EXPECT_EQ(Get(e).value(), 9u);
  t.join();
}

TEST(EventFdTest, Fdinfo) {
  EventFd e(0x2a, true, O_RDWR);
  std::string s = e.FdInfo();
  EXPECT_NE(s.find("eventfd-count:               2a\n"), std::string::npos)
      << s;
  EXPECT_NE(s.find("eventfd-semaphore: 1\n"), std::string::npos) << s;
}

}  // namespace
}  // namespace sandbox::fs::eventfd
