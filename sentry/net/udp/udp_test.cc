// Unit tests of UDP and ping sockets through the socket API (no task):
// concurrent senders against one receiver (every datagram delivered or
// counted as a drop), a receiver closed under its senders, a faulting
// receive buffer, hostile addresses and cmsgs, the ICMPv6 echo reply's
// checksum.
#include "sentry/net/udp/udp.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/net/inet/address.h"
#include "sentry/net/namespace.h"

namespace sandbox::net::udp {
namespace {

// A MessageIo whose every copy faults.
class FaultIo final : public MessageIo {
 public:
  explicit FaultIo(size_t n) : n_(n) {}
  size_t size() const override { return n_; }
  KResult<size_t> CopyIn(size_t, absl::Span<uint8_t>) override {
    return kEFAULT;
  }
  KResult<size_t> CopyOut(size_t, absl::Span<const uint8_t>) override {
    return kEFAULT;
  }

 private:
  size_t n_;
};

class UdpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c_.ucred = {1, 0, 0};
    c_.netns = new NetNamespace();  // leaked: sockets may outlive the test
  }
  std::shared_ptr<DgramSocket> Make(int family, bool ping = false) {
    KResult<SocketRef> s = ping ? NewPingSocket(c_, family, O_RDWR)
                                : NewUdpSocket(c_, family, O_RDWR);
    EXPECT_TRUE(s.ok());
    if (!s.ok()) return nullptr;
    auto d = std::dynamic_pointer_cast<DgramSocket>(*s);
    d->AttachNamespace(*c_.netns);
    return d;
  }
  SockAddr Loopback(int family, uint16_t port = 0) {
    inet::InetAddr a;
    a.ip = family == AF_INET ? inet::IpAddr::LoopbackV4()
                             : inet::IpAddr::LoopbackV6();
    a.port = port;
    return inet::ToSockAddr(family, a);
  }
  SockAddr BindLoopback(DgramSocket& s) {
    EXPECT_TRUE(s.Bind(c_, Loopback(s.family())).ok());
    KResult<SockAddr> a = s.GetSockName(c_);
    EXPECT_TRUE(a.ok());
    return *a;
  }
  KResult<size_t> SendTo(DgramSocket& s, const SockAddr& to,
                         absl::Span<const uint8_t> d, int flags = 0) {
    SpanIo io(d);
    SendRequest req;
    req.flags = flags;
    req.to = to;
    return s.SendMsg(c_, io, req);
  }
  KResult<size_t> Recv(DgramSocket& s, std::vector<uint8_t>* out,
                       int flags = MSG_DONTWAIT) {
    out->resize(65536);
    SpanIo io(absl::MakeSpan(*out));
    RecvRequest req;
    req.flags = flags;
    KResult<size_t> n = s.RecvMsg(c_, io, req);
    out->resize(n.ok() ? *n : 0);
    return n;
  }

  Caller c_;
};

TEST_F(UdpTest, ConcurrentSendersEveryDatagramCounted) {
  for (int family : {AF_INET, AF_INET6}) {
    auto r = Make(family);
    SockAddr to = BindLoopback(*r);
    constexpr int kThreads = 4, kEach = 500;
    std::atomic<int> received{0};
    std::atomic<bool> done{false};
    std::thread reader([&] {
      std::vector<uint8_t> buf;
      while (!done.load()) {
        if (Recv(*r, &buf).ok()) received.fetch_add(1);
      }
      while (Recv(*r, &buf).ok()) received.fetch_add(1);
    });
    std::vector<std::thread> senders;
    std::atomic<int> sent{0};
    for (int t = 0; t < kThreads; ++t) {
      senders.emplace_back([&] {
        auto s = Make(family);
        const uint8_t d[100] = {};
        for (int i = 0; i < kEach; ++i) {
          if (SendTo(*s, to, d).ok()) sent.fetch_add(1);
        }
      });
    }
    for (auto& t : senders) t.join();
    done = true;
    reader.join();
    EXPECT_EQ(sent.load(), kThreads * kEach);
    EXPECT_EQ(received.load() + static_cast<int>(r->drops()), kThreads * kEach);
  }
}

TEST_F(UdpTest, ReceiverClosedUnderSenders) {
  auto r = Make(AF_INET);
  SockAddr to = BindLoopback(*r);
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    auto s = Make(AF_INET);
    const uint8_t d[8] = {};
    for (int i = 0; i < 20000 && !stop.load(); ++i) (void)SendTo(*s, to, d);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  r.reset();  // the last reference: unbound; later sends find nobody
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop = true;
  sender.join();
}

TEST_F(UdpTest, FaultingBuffersAreEfault) {
  auto r = Make(AF_INET);
  SockAddr to = BindLoopback(*r);
  auto s = Make(AF_INET);
  FaultIo in(10);
  SendRequest sreq;
  sreq.to = to;
  EXPECT_EQ(s->SendMsg(c_, in, sreq).error(), kEFAULT);
  const uint8_t d[4] = {1, 2, 3, 4};
  ASSERT_TRUE(SendTo(*s, to, d).ok());
  FaultIo out(10);
  RecvRequest rreq;
  rreq.flags = MSG_DONTWAIT;
  EXPECT_EQ(r->RecvMsg(c_, out, rreq).error(), kEFAULT);
  // The datagram was consumed and counted as a drop (udp_recvmsg).
  EXPECT_EQ(r->drops(), 1u);
  std::vector<uint8_t> buf;
  EXPECT_EQ(Recv(*r, &buf).error(), kEAGAIN);
}

TEST_F(UdpTest, HostileAddressesAndCmsgs) {
  auto s = Make(AF_INET6);
  const uint8_t d[1] = {0};
  SockAddr a;
  a.len = 1;
  EXPECT_EQ(SendTo(*s, a, d).error(), kEINVAL);
  a = SockAddr::From("\x01\x00garbage", 9);  // AF_UNIX
  EXPECT_EQ(SendTo(*s, a, d).error(), kEINVAL);
  SockAddr port0 = Loopback(AF_INET6, 0);
  EXPECT_EQ(SendTo(*s, port0, d).error(), kEINVAL);
  SpanIo io(absl::MakeConstSpan(d));
  SendRequest req;
  req.to = Loopback(AF_INET6, 9);
  req.control.raw.push_back({SOL_IPV6, IPV6_HOPLIMIT, {1, 2, 3}});
  EXPECT_EQ(s->SendMsg(c_, io, req).error(), kEINVAL);
  req.control.raw = {{SOL_IPV6, IPV6_PKTINFO, std::vector<uint8_t>(3)}};
  EXPECT_EQ(s->SendMsg(c_, io, req).error(), kEINVAL);
  auto p = Make(AF_INET6, /*ping=*/true);
  const uint8_t short_echo[4] = {128, 0, 0, 0};
  EXPECT_EQ(SendTo(*p, Loopback(AF_INET6), short_echo).error(), kEINVAL);
  std::vector<uint8_t> big(0x10000, 0);
  big[0] = 128;
  EXPECT_EQ(SendTo(*p, Loopback(AF_INET6), big).error(), kEMSGSIZE);
}

TEST_F(UdpTest, Icmp6EchoReplyChecksumIsValid) {
  auto p = Make(AF_INET6, /*ping=*/true);
  const uint8_t echo[12] = {128, 0, 0, 0, 0, 0, 0, 5, 'a', 'b', 'c', 'd'};
  ASSERT_TRUE(SendTo(*p, Loopback(AF_INET6), echo).ok());
  std::vector<uint8_t> r;
  ASSERT_TRUE(Recv(*p, &r).ok());
  ASSERT_EQ(r.size(), sizeof(echo));
  EXPECT_EQ(r[0], 129);
  const inet::IpAddr lo = inet::IpAddr::LoopbackV6();
  EXPECT_EQ(InetChecksum(r, Icmp6PseudoSum(lo, lo, r.size())), 0);
}

}  // namespace
}  // namespace sandbox::net::udp
