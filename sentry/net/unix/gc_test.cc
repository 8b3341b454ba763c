// The collector of unreachable cycles of sockets in flight (unix_gc).
#include "sentry/net/unix/gc.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "gtest/gtest.h"
#include "sentry/net/unix/testing.h"

namespace sandbox::net::unix {
namespace {

using testing::Received;
using testing::UnixTest;

class GcTest : public UnixTest {
 protected:
  void SetUp() override {
    UnixTest::SetUp();
    SetBackgroundCollection(false);
    CollectGarbage();
    live_ = LiveEndpoints();
    open_ = OpenEndpoints();
    files_ = InflightDescriptors();
  }
  // Nothing of the test is left.
  void ExpectClean() {
    EXPECT_EQ(LiveEndpoints(), live_);
    EXPECT_EQ(OpenEndpoints(), open_);
    EXPECT_EQ(InflightDescriptors(), files_);
    EXPECT_EQ(InflightSockets(), 0);
  }
  void TearDown() override { SetBackgroundCollection(true); }
  int64_t live_ = 0, open_ = 0, files_ = 0;
};

TEST_F(GcTest, BackgroundCollectorFreesAClosedCycle) {
  SetBackgroundCollection(true);
  {
    auto [a, b] = MakePair(SOCK_DGRAM);
    ASSERT_TRUE(Send(*a, "x", 0, {a}).ok());
    ASSERT_TRUE(Send(*b, "y", 0, {b}).ok());
  }
  for (int i = 0; i < 500 && OpenEndpoints() != open_; ++i) usleep(10000);
  ExpectClean();
}

TEST_F(GcTest, PairHoldingEachOtherIsCollected) {
  {
    auto [a, b] = MakePair(SOCK_STREAM);
    // a's file in b's queue, b's file in a's queue.
    ASSERT_TRUE(Send(*a, "x", 0, {a}).ok());
    ASSERT_TRUE(Send(*b, "y", 0, {b}).ok());
    EXPECT_EQ(InflightSockets(), 2);
  }
  // Only the cycle holds them now.
  EXPECT_EQ(LiveEndpoints(), live_ + 2);
  EXPECT_EQ(OpenEndpoints(), open_ + 2);
  CollectGarbage();
  ExpectClean();
}

TEST_F(GcTest, SocketInItsOwnQueueIsCollectedWhenAnotherCloses) {
  {
    auto [a, b] = MakePair(SOCK_DGRAM);
    ASSERT_TRUE(Send(*a, "x", 0, {b}).ok());  // b holds itself
    b.reset();
    EXPECT_EQ(OpenEndpoints(), open_ + 2);
    // Releasing a (not in flight) runs the collector, as Linux's
    // unix_release_sock does.
  }
  ExpectClean();
}

TEST_F(GcTest, ReachableFromALiveSocketIsKept) {
  auto [keep_a, keep_b] = MakePair(SOCK_STREAM);
  {
    auto [a, b] = MakePair(SOCK_STREAM);
    ASSERT_TRUE(Send(*a, "x", 0, {a}).ok());
    ASSERT_TRUE(Send(*b, "y", 0, {b}).ok());
    // The cycle is also referenced from a live socket's queue.
    ASSERT_TRUE(Send(*keep_a, "z", 0, {a}).ok());
  }
  CollectGarbage();
  EXPECT_EQ(OpenEndpoints(), open_ + 4);
  // Receiving it brings the cycle back into a descriptor.
  Received r = Recv(*keep_b, 1);
  ASSERT_EQ(r.control.rights.size(), 1u);
  auto* a = AsUnixSocket(r.control.rights[0].get());
  ASSERT_NE(a, nullptr);
  r.control.rights.clear();
  CollectGarbage();
  keep_a.reset();
  keep_b.reset();
  CollectGarbage();
  ExpectClean();
}

TEST_F(GcTest, CycleThroughAPendingConnection) {
  {
    auto l = Make(SOCK_STREAM);
    ASSERT_TRUE(l->Bind(c_, Abstract("gc-listen")).ok());
    ASSERT_TRUE(l->Listen(c_, 4).ok());
    auto cl = Make(SOCK_STREAM);
    ASSERT_TRUE(cl->Connect(c_, Abstract("gc-listen")).ok());
    // The connection not yet accepted holds the listener; the client's
    // own file too.
    ASSERT_TRUE(Send(*cl, "x", 0, {l, cl}).ok());
  }
  CollectGarbage();
  ExpectClean();
}

TEST_F(GcTest, LongChainIsReleasedIteratively) {
  {
    // Each pair's reader end is queued in the next pair: dropping the
    // head releases 2000 sockets one after another, without recursion.
    std::shared_ptr<UnixSocket> prev;
    for (int i = 0; i < 1000; ++i) {
      auto [a, b] = MakePair(SOCK_DGRAM);
      if (prev != nullptr) {
        ASSERT_TRUE(Send(*a, "", 0, {prev}).ok());
      }
      prev = b;
    }
  }
  CollectGarbage();
  ExpectClean();
}

TEST_F(GcTest, PeekedRightsAreCopies) {
  {
    auto [a, b] = MakePair(SOCK_STREAM);
    ASSERT_TRUE(Send(*a, "x", 0, {a, b}).ok());
    Received p = Recv(*b, 1, MSG_PEEK);
    EXPECT_EQ(p.control.rights.size(), 2u);
    EXPECT_EQ(InflightSockets(), 2);
  }
  CollectGarbage();
  ExpectClean();
}

TEST_F(GcTest, ReleaseOfAQueuedMessageUncounts) {
  {
    auto [a, b] = MakePair(SOCK_SEQPACKET);
    auto [x, y] = MakePair(SOCK_STREAM);
    ASSERT_TRUE(Send(*a, "x", 0, {x, y}).ok());
    EXPECT_EQ(InflightSockets(), 2);
    b.reset();  // the queue with the rights goes
    EXPECT_EQ(InflightSockets(), 0);
  }
  ExpectClean();
}

}  // namespace
}  // namespace sandbox::net::unix
