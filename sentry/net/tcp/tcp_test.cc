// Unit tests of TCP sockets through the socket API (no task): a reader
// closed under a bulk writer, a faulting receive buffer, many blocking
// connectors against a backlog of one, a listener closed with connectors
// waiting in its syn queue, hostile option lengths.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/net/inet/address.h"
#include "sentry/net/namespace.h"
#include "sentry/net/tcp/tcp_socket.h"

namespace sandbox::net::tcp {
namespace {

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

class TcpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c_.ucred = {1, 0, 0};
    c_.netns = new NetNamespace();  // leaked: sockets may outlive the test
  }
  std::shared_ptr<TcpSocket> Make(int family = AF_INET,
                                  uint32_t flags = O_RDWR) {
    KResult<SocketRef> s = NewSocket(c_, family, flags);
    EXPECT_TRUE(s.ok());
    auto t = std::dynamic_pointer_cast<TcpSocket>(*s);
    t->AttachNamespace(*c_.netns);
    return t;
  }
  SockAddr Loopback(int family = AF_INET, uint16_t port = 0) {
    inet::InetAddr a;
    a.ip = family == AF_INET ? inet::IpAddr::LoopbackV4()
                             : inet::IpAddr::LoopbackV6();
    a.port = port;
    return inet::ToSockAddr(family, a);
  }
  SockAddr Listen(TcpSocket& l, int backlog = 16) {
    EXPECT_TRUE(l.Bind(c_, Loopback(l.family())).ok());
    EXPECT_TRUE(l.Listen(c_, backlog).ok());
    KResult<SockAddr> a = l.GetSockName(c_);
    return a.ok() ? *a : SockAddr();
  }
  std::shared_ptr<Socket> Accept(TcpSocket& l) {
    KResult<vfs::FileRef> f = l.Accept(c_, 0, nullptr);
    EXPECT_TRUE(f.ok());
    if (!f.ok()) return nullptr;
    return std::dynamic_pointer_cast<Socket>(*f);
  }
  KResult<size_t> Send(Socket& s, absl::Span<const uint8_t> d, int flags = 0) {
    SpanIo io(d);
    SendRequest req;
    req.flags = flags | MSG_NOSIGNAL;
    return s.SendMsg(c_, io, req);
  }
  KResult<size_t> Recv(Socket& s, absl::Span<uint8_t> d, int flags = 0) {
    SpanIo io(d);
    RecvRequest req;
    req.flags = flags;
    return s.RecvMsg(c_, io, req);
  }

  Caller c_;
};

TEST_F(TcpTest, ReaderClosedUnderBulkWriter) {
  auto l = Make();
  SockAddr la = Listen(*l);
  auto c = Make();
  ASSERT_TRUE(c->Connect(c_, la).ok());
  auto s = Accept(*l);
  ASSERT_NE(s, nullptr);
  std::atomic<bool> stop{false};
  KResult<size_t> last = size_t{0};
  std::thread writer([&] {
    std::vector<uint8_t> buf(65536, 7);
    while (!stop.load()) {
      last = Send(*c, buf);
      if (!last.ok()) return;
    }
  });
  std::vector<uint8_t> rbuf(100000);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(Recv(*s, absl::MakeSpan(rbuf)).ok());
  s.reset();  // unread data: a RST under the writer
  writer.join();
  stop = true;
  ASSERT_FALSE(last.ok());
  EXPECT_TRUE(last.error() == kECONNRESET || last.error() == kEPIPE);
}

TEST_F(TcpTest, FaultingReceiveConsumesNothing) {
  auto l = Make(AF_INET6);
  SockAddr la = Listen(*l);
  auto c = Make(AF_INET6);
  ASSERT_TRUE(c->Connect(c_, la).ok());
  auto s = Accept(*l);
  const uint8_t d[5] = {'a', 'b', 'c', 'd', 'e'};
  KResult<size_t> sent = Send(*c, d);
  ASSERT_TRUE(sent.ok());
  ASSERT_EQ(*sent, 5u);
  FaultIo bad(5);
  RecvRequest req;
  KResult<size_t> r = s->RecvMsg(c_, bad, req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kEFAULT);
  uint8_t out[8] = {};
  KResult<size_t> got = Recv(*s, out, MSG_DONTWAIT);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(*got, 5u);
  EXPECT_EQ(memcmp(out, d, 5), 0);
  FaultIo bad_send(10);
  SendRequest sreq;
  KResult<size_t> w = c->SendMsg(c_, bad_send, sreq);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error(), kEFAULT);
}

TEST_F(TcpTest, ManyConnectorsThroughBacklogOfOne) {
  auto l = Make();
  SockAddr la = Listen(*l, /*backlog=*/1);
  constexpr int kConnectors = 16;
  std::atomic<int> connected{0};
  std::vector<std::thread> ts;
  std::vector<std::shared_ptr<TcpSocket>> cs(kConnectors);
  for (int i = 0; i < kConnectors; ++i) cs[i] = Make();
  for (int i = 0; i < kConnectors; ++i) {
    ts.emplace_back([&, i] {
      if (cs[i]->Connect(c_, la).ok()) connected.fetch_add(1);
    });
  }
  std::vector<std::shared_ptr<Socket>> accepted;
  for (int i = 0; i < kConnectors; ++i) accepted.push_back(Accept(*l));
  for (auto& t : ts) t.join();
  EXPECT_EQ(connected.load(), kConnectors);
  for (auto& a : accepted) EXPECT_NE(a, nullptr);
}

TEST_F(TcpTest, ListenerClosedRefusesItsSynQueue) {
  auto l = Make();
  SockAddr la = Listen(*l, /*backlog=*/0);
  auto first = Make();
  ASSERT_TRUE(first->Connect(c_, la).ok());  // fills the queue
  std::vector<std::shared_ptr<TcpSocket>> waiting;
  for (int i = 0; i < 4; ++i) {
    auto w = Make(AF_INET, O_RDWR | O_NONBLOCK);
    KResult<void> r = w->Connect(c_, la);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error(), kEINPROGRESS);
    waiting.push_back(w);
  }
  l.reset();
  for (auto& w : waiting) {
    uint8_t v[4] = {};
    KResult<size_t> n = w->GetSockOpt(c_, SOL_SOCKET, SO_ERROR, v);
    ASSERT_TRUE(n.ok());
    int32_t e;
    memcpy(&e, v, 4);
    EXPECT_EQ(e, ECONNREFUSED);
  }
  uint8_t b[4];
  KResult<size_t> r = Recv(*first, b, MSG_DONTWAIT);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kECONNRESET);
}

TEST_F(TcpTest, HostileOptionLengths) {
  auto s = Make();
  const uint8_t one[1] = {1};
  EXPECT_EQ(s->SetSockOpt(c_, IPPROTO_TCP, TCP_NODELAY, one).error(), kEINVAL);
  EXPECT_EQ(s->SetSockOpt(c_, IPPROTO_TCP, TCP_CONGESTION,
                          absl::Span<const uint8_t>())
                .error(),
            kEINVAL);
  std::vector<uint8_t> longname(4096, 'c');
  EXPECT_EQ(s->SetSockOpt(c_, IPPROTO_TCP, TCP_CONGESTION, longname).error(),
            kENOENT);
  uint8_t small[3] = {};
  KResult<size_t> n = s->GetSockOpt(c_, IPPROTO_TCP, TCP_INFO, small);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 3u);
  EXPECT_EQ(small[0], kClose);
  std::vector<uint8_t> big(4096);
  n = s->GetSockOpt(c_, IPPROTO_TCP, TCP_INFO, absl::MakeSpan(big));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 248u);
  KResult<size_t> z =
      s->GetSockOpt(c_, IPPROTO_TCP, TCP_MAXSEG, absl::Span<uint8_t>());
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(*z, 0u);
}

}  // namespace
}  // namespace sandbox::net::tcp
