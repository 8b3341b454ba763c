// HostStream and HostTcpSocket over host TCP sockets made here as the
// broker makes them (non-blocking connect to a listener on 127.0.0.1).
#include "sentry/net/hostinet/host_stream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "gtest/gtest.h"
#include "platform/host_fds.h"
#include "sentry/net/hostinet/host_tcp_socket.h"

namespace sandbox::net::hostinet {
namespace {

struct Listener {
  Listener() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(listen(fd, 4), 0);
    socklen_t len = sizeof(a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() { close(fd); }
  int fd = -1;
  uint16_t port = 0;
};

broker::Endpoint Loopback(uint16_t port) {
  broker::Endpoint e;
  e.ip.bytes = {127, 0, 0, 1};
  e.port = port;
  return e;
}

// What the broker donates: a non-blocking socket with connect started.
HostConnection Connecting(uint16_t port) {
  platform::HostFdBudget::Configure(4096);
  HostConnection c;
  c.hold = platform::HostFdHold::Take(1);
  c.fd.reset(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  int r = connect(c.fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a));
  c.in_progress = r != 0 && errno == EINPROGRESS;
  EXPECT_TRUE(r == 0 || errno == EINPROGRESS || errno == ECONNREFUSED);
  return c;
}

std::shared_ptr<HostTcpSocket> Wrap(HostConnection c, uint16_t port,
                                    int family = AF_INET,
                                    uint32_t flags = O_RDWR) {
  auto s = std::make_shared<HostStream>(std::move(c), family, SOCK_STREAM,
                                        Loopback(port));
  return std::make_shared<HostTcpSocket>(s, family, flags, Ucred{},
                                         ToGuestSockAddr(family, Loopback(80)));
}

TEST(HostStream, ConnectThenBytesBothWays) {
  Listener l;
  auto sock = Wrap(Connecting(l.port), l.port);
  Caller c;
  ASSERT_TRUE(sock->stream()->WaitConnected(*sock, c, false).ok());
  int a = accept(l.fd, nullptr, nullptr);
  ASSERT_GE(a, 0);
  const uint8_t msg[] = "hello";
  SpanIo in(absl::MakeConstSpan(msg, 5));
  SendRequest sreq;
  KResult<size_t> n = sock->SendMsg(c, in, sreq);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 5u);
  char buf[8] = {};
  ASSERT_EQ(read(a, buf, sizeof(buf)), 5);
  ASSERT_EQ(write(a, "world!", 6), 6);
  uint8_t out[16];
  SpanIo o(absl::MakeSpan(out, sizeof(out)));
  RecvRequest rreq;
  rreq.want_from = true;
  n = sock->RecvMsg(c, o, rreq);  // blocks until the bytes are there
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 6u);
  EXPECT_EQ(std::memcmp(out, "world!", 6), 0);
  EXPECT_EQ(rreq.from.len, sizeof(sockaddr_in));
  // TCP_NODELAY reaches the host socket.
  int one = 1;
  ASSERT_TRUE(
      sock->SetSockOpt(c, IPPROTO_TCP, TCP_NODELAY,
                       absl::MakeConstSpan(reinterpret_cast<uint8_t*>(&one), 4))
          .ok());
  int v = 0;
  socklen_t len = sizeof(v);
  getsockopt(sock->HostPollFd(), IPPROTO_TCP, TCP_NODELAY, &v, &len);
  EXPECT_EQ(v, 1);
  // Half-close: the host peer reads EOF, the guest can still read.
  ASSERT_TRUE(sock->Shutdown(c, SHUT_WR).ok());
  EXPECT_EQ(read(a, buf, sizeof(buf)), 0);
  close(a);
  SpanIo o2(absl::MakeSpan(out, sizeof(out)));
  RecvRequest r2;
  n = sock->RecvMsg(c, o2, r2);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);  // EOF
}

TEST(HostStream, NonBlockingConnectAndRefusal) {
  Listener l;
  const uint16_t closed = l.port;
  close(l.fd);
  l.fd = -1;
  auto sock = Wrap(Connecting(closed), closed, AF_INET, O_RDWR | O_NONBLOCK);
  Caller c;
  KResult<void> r = sock->stream()->WaitConnected(*sock, c, true);
  // Loopback refuses at once or just after: EINPROGRESS, then the error.
  for (int i = 0; i < 100 && !r.ok() &&
                  (r.error() == kEINPROGRESS || r.error() == kEALREADY);
       ++i) {
    usleep(10000);
    r = sock->stream()->WaitConnected(*sock, c, true);
  }
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kECONNREFUSED);
}

TEST(HostStream, V4MappedNamesForAnInet6Socket) {
  Listener l;
  auto sock = Wrap(Connecting(l.port), l.port, AF_INET6);
  Caller c;
  ASSERT_TRUE(sock->stream()->WaitConnected(*sock, c, false).ok());
  KResult<SockAddr> peer = sock->GetPeerName(c);
  ASSERT_TRUE(peer.ok());
  ASSERT_EQ(peer->len, sizeof(sockaddr_in6));
  sockaddr_in6 s6;
  std::memcpy(&s6, peer->bytes, sizeof(s6));
  char text[64];
  inet_ntop(AF_INET6, &s6.sin6_addr, text, sizeof(text));
  EXPECT_STREQ(text, "::ffff:127.0.0.1");
  EXPECT_EQ(ntohs(s6.sin6_port), l.port);
  KResult<SockAddr> local = sock->GetSockName(c);
  ASSERT_TRUE(local.ok());
  std::memcpy(&s6, local->bytes, sizeof(s6));
  EXPECT_EQ(ntohs(s6.sin6_port), 80);
  EXPECT_EQ(sock->Listen(c, 1).error(), kEINVAL);
  EXPECT_EQ(sock->Connect(c, *peer).error(), kEISCONN);
}

TEST(HostStream, NonBlockingRecvAndReadiness) {
  Listener l;
  auto sock = Wrap(Connecting(l.port), l.port, AF_INET, O_RDWR | O_NONBLOCK);
  Caller c;
  ASSERT_TRUE(sock->stream()->WaitConnected(*sock, c, false).ok());
  int a = accept(l.fd, nullptr, nullptr);
  uint8_t out[4];
  SpanIo o(absl::MakeSpan(out, sizeof(out)));
  RecvRequest rreq;
  KResult<size_t> n = sock->RecvMsg(c, o, rreq);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error(), kEAGAIN);
  EXPECT_EQ(sock->Readiness(POLLIN), 0u);
  EXPECT_EQ(sock->Readiness(POLLOUT), uint32_t{POLLOUT});
  ASSERT_EQ(write(a, "x", 1), 1);
  for (int i = 0; i < 100 && sock->Readiness(POLLIN) == 0; ++i) usleep(1000);
  EXPECT_EQ(sock->Readiness(POLLIN), uint32_t{POLLIN});
  close(a);
}

}  // namespace
}  // namespace sandbox::net::hostinet
