#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "sentry/net/unix/gc.h"
#include "sentry/net/unix/testing.h"

namespace sandbox::net::unix {
namespace {

using testing::Received;
using testing::UnixTest;

constexpr uint32_t kIn = POLLIN | POLLRDNORM;

template <typename T>
T V(KResult<T> r) {
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return T{};
  return std::move(r).value();
}
constexpr uint32_t kOut = POLLOUT | POLLWRNORM | POLLWRBAND;

TEST_F(UnixTest, CreateChecksProtocolThenType) {
  EXPECT_EQ(CreateSocket(c_, AF_UNIX, SOCK_STREAM, 2, O_RDWR).error(),
            kEPROTONOSUPPORT);
  EXPECT_EQ(CreateSocket(c_, AF_UNIX, SOCK_PACKET, 2, O_RDWR).error(),
            kEPROTONOSUPPORT);
  EXPECT_EQ(CreateSocket(c_, AF_UNIX, SOCK_PACKET, 0, O_RDWR).error(),
            kESOCKTNOSUPPORT);
  EXPECT_EQ(CreateSocket(c_, AF_UNIX, SOCK_RDM, PF_UNIX, O_RDWR).error(),
            kESOCKTNOSUPPORT);
  auto raw = Make(SOCK_RAW);
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(raw->type(), SOCK_DGRAM);
  EXPECT_EQ(raw->family(), AF_UNIX);
  EXPECT_EQ(raw->protocol(), 0);
  auto p = CreateSocketPair(c_, AF_UNIX, SOCK_SEQPACKET, 0, O_RDWR);
  ASSERT_TRUE(p.ok());
}

TEST_F(UnixTest, StreamPairMovesBytesAndPollBits) {
  auto [a, b] = MakePair(SOCK_STREAM);
  EXPECT_EQ(Poll(*a), kOut);
  ASSERT_EQ(V(Send(*a, "hello")), 5u);
  EXPECT_EQ(Poll(*b), kIn | kOut);
  EXPECT_EQ(Ioctl(*b, SIOCINQ), 5);
  EXPECT_GT(Ioctl(*a, SIOCOUTQ), 5);
  ASSERT_EQ(V(Send(*a, " world")), 6u);
  Received r = Recv(*b, 3);
  EXPECT_EQ(r.data, "hel");
  EXPECT_EQ(Ioctl(*b, SIOCINQ), 8);
  r = Recv(*b, 100);
  EXPECT_EQ(r.data, "lo world");  // reads across writes
  EXPECT_EQ(Ioctl(*a, SIOCOUTQ), 0);
  EXPECT_EQ(Poll(*b), kOut);
  EXPECT_EQ(Recv(*b, 10, MSG_DONTWAIT).n.error(), kEAGAIN);
}

TEST_F(UnixTest, FreshStreamSocketIsHungUpAndWritable) {
  auto s = Make(SOCK_STREAM);
  EXPECT_EQ(Poll(*s), kOut | POLLHUP);
  EXPECT_EQ(Recv(*s, 1).n.error(), kEINVAL);
  EXPECT_EQ(Send(*s, "x").error(), kENOTCONN);
  SockAddr to = Abstract("nowhere");
  EXPECT_EQ(Send(*s, "x", 0, {}, &to).error(), kEOPNOTSUPP);
  EXPECT_EQ(s->GetPeerName(c_).error(), kENOTCONN);
  EXPECT_EQ(s->GetSockName(c_)->len, 2u);
  EXPECT_EQ(s->Listen(c_, 1).error(), kEINVAL);  // unbound
  EXPECT_EQ(s->Accept(c_, 0, nullptr).error(), kEINVAL);
  EXPECT_TRUE(s->Shutdown(c_, SHUT_RDWR).ok());  // unconnected is fine
}

TEST_F(UnixTest, ShutdownAndClose) {
  auto [a, b] = MakePair(SOCK_STREAM);
  ASSERT_TRUE(a->Shutdown(c_, SHUT_WR).ok());
  EXPECT_EQ(Poll(*b), kIn | kOut | POLLRDHUP);
  EXPECT_EQ(V(Recv(*b, 10).n), 0u);  // EOF
  EXPECT_EQ(Send(*a, "x").error(), kEPIPE);
  ASSERT_EQ(V(Send(*b, "yz")), 2u);  // the other direction still works
  EXPECT_EQ(Recv(*a, 10).data, "yz");
  ASSERT_TRUE(b->Shutdown(c_, SHUT_WR).ok());
  EXPECT_EQ(Poll(*a), kIn | kOut | POLLRDHUP | POLLHUP);
  b.reset();
  EXPECT_EQ(Poll(*a), kIn | kOut | POLLRDHUP | POLLHUP);
}

TEST_F(UnixTest, PeerCloseWithUnreadDataResets) {
  auto [a, b] = MakePair(SOCK_STREAM);
  ASSERT_EQ(V(Send(*a, "unread")), 6u);
  ASSERT_EQ(V(Send(*b, "for a")), 5u);
  b.reset();
  EXPECT_EQ(Poll(*a), kIn | kOut | POLLRDHUP | POLLHUP | POLLERR);
  // Queued data first, then the error once, then EOF.
  EXPECT_EQ(Recv(*a, 10).data, "for a");
  EXPECT_EQ(Recv(*a, 10).n.error(), kECONNRESET);
  EXPECT_EQ(V(Recv(*a, 10).n), 0u);
  EXPECT_EQ(Send(*a, "x").error(), kEPIPE);
  // The dead peer's name stays visible.
  EXPECT_TRUE(a->GetPeerName(c_).ok());
}

TEST_F(UnixTest, ListenConnectAcceptAbstract) {
  auto l = Make(SOCK_STREAM);
  ASSERT_TRUE(l->Bind(c_, Abstract("srv")).ok());
  EXPECT_EQ(l->Bind(c_, Abstract("other")).error(), kEINVAL);
  auto dup = Make(SOCK_STREAM);
  EXPECT_EQ(dup->Bind(c_, Abstract("srv")).error(), kEADDRINUSE);
  // The abstract table is per type: a datagram socket may use the name.
  auto dg = Make(SOCK_DGRAM);
  EXPECT_TRUE(dg->Bind(c_, Abstract("srv")).ok());
  Caller lc = c_;
  lc.ucred = {7, 70, 71};
  ASSERT_TRUE(l->Listen(lc, 5).ok());
  EXPECT_EQ(Poll(*l), 0u);
  auto cl = Make(SOCK_STREAM);
  auto refused = Make(SOCK_STREAM);
  EXPECT_EQ(refused->Connect(c_, Abstract("nobody")).error(), kECONNREFUSED);
  auto seq = Make(SOCK_SEQPACKET);
  EXPECT_EQ(seq->Connect(c_, Abstract("srv")).error(), kECONNREFUSED);
  ASSERT_TRUE(cl->Connect(c_, Abstract("srv")).ok());
  EXPECT_EQ(cl->Connect(c_, Abstract("srv")).error(), kEISCONN);
  EXPECT_EQ(Poll(*l), kIn);
  ASSERT_EQ(V(Send(*cl, "early")), 5u);  // before accept
  SockAddr peer;
  auto f = l->Accept(c_, O_NONBLOCK, &peer);
  ASSERT_TRUE(f.ok());
  auto* s = AsUnixSocket(f->get());
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->nonblocking());
  EXPECT_EQ(peer.len, 2u);  // the client is unnamed
  EXPECT_EQ(NameOf(V(s->GetSockName(c_))), std::string("\0srv", 4));
  EXPECT_EQ(NameOf(V(cl->GetPeerName(c_))), std::string("\0srv", 4));
  EXPECT_EQ(s->GetPeerName(c_)->len, 2u);
  EXPECT_EQ(Recv(*s, 10).data, "early");
  // SO_PEERCRED: the connector's ids for the accepted socket, the
  // listener's (at listen) for the connector.
  uint32_t cred[3];
  auto span = absl::MakeSpan(reinterpret_cast<uint8_t*>(cred), sizeof(cred));
  ASSERT_EQ(V(s->GetSockOpt(c_, SOL_SOCKET, SO_PEERCRED, span)), 12u);
  EXPECT_EQ(cred[0], 42u);
  EXPECT_EQ(cred[1], 1000u);
  ASSERT_EQ(V(cl->GetSockOpt(c_, SOL_SOCKET, SO_PEERCRED, span)), 12u);
  EXPECT_EQ(cred[0], 7u);
  EXPECT_EQ(cred[1], 70u);
  EXPECT_EQ(cred[2], 71u);
  ASSERT_EQ(V(l->GetSockOpt(c_, SOL_SOCKET, SO_PEERCRED, span)), 12u);
  EXPECT_EQ(cred[0], 7u);
  auto fresh = Make(SOCK_STREAM);
  ASSERT_EQ(V(fresh->GetSockOpt(c_, SOL_SOCKET, SO_PEERCRED, span)), 12u);
  EXPECT_EQ(cred[0], 0u);
  EXPECT_EQ(cred[1], ~0u);
}

TEST_F(UnixTest, BacklogIsLinuxs) {
  auto l = Make(SOCK_STREAM);
  ASSERT_TRUE(l->Bind(c_, Abstract("bl")).ok());
  ASSERT_TRUE(l->Listen(c_, 1).ok());
  // unix_recvq_full: more than the backlog queued; so backlog + 1 fit.
  std::vector<std::shared_ptr<UnixSocket>> cs;
  for (int i = 0; i < 2; ++i) {
    cs.push_back(Make(SOCK_STREAM, O_RDWR | O_NONBLOCK));
    ASSERT_TRUE(cs.back()->Connect(c_, Abstract("bl")).ok()) << i;
  }
  auto extra = Make(SOCK_STREAM, O_RDWR | O_NONBLOCK);
  EXPECT_EQ(extra->Connect(c_, Abstract("bl")).error(), kEAGAIN);
  EXPECT_EQ(Poll(*extra), kOut | POLLHUP);
  // A blocking connect waits until accept makes room.
  auto blocking = Make(SOCK_STREAM);
  std::atomic<bool> done{false};
  std::thread t([&] {
    EXPECT_TRUE(blocking->Connect(c_, Abstract("bl")).ok());
    done = true;
  });
  usleep(50 * 1000);
  EXPECT_FALSE(done);
  ASSERT_TRUE(l->Accept(c_, 0, nullptr).ok());
  t.join();
  EXPECT_TRUE(done);
  // The refused socket is untouched and may try again.
  ASSERT_TRUE(l->Accept(c_, 0, nullptr).ok());
  ASSERT_TRUE(extra->Connect(c_, Abstract("bl")).ok());
  EXPECT_EQ(Poll(*extra), kOut);
  ASSERT_TRUE(Send(*extra, "ok").ok());
  // Closing the listener resets the connections never accepted.
  l.reset();
  EXPECT_EQ(Recv(*extra, 1).n.error(), kECONNRESET);
  EXPECT_EQ(V(Recv(*extra, 1).n), 0u);
}

TEST_F(UnixTest, ConnectInterruptedIsRestart) {
  auto l = Make(SOCK_STREAM);
  ASSERT_TRUE(l->Bind(c_, Abstract("intr")).ok());
  ASSERT_TRUE(l->Listen(c_, 0).ok());
  auto first = Make(SOCK_STREAM);
  ASSERT_TRUE(first->Connect(c_, Abstract("intr")).ok());
  int efd = eventfd(1, EFD_NONBLOCK);
  Caller ic = c_;
  ic.io.interrupt_fd = efd;
  auto second = Make(SOCK_STREAM);
  EXPECT_EQ(second->Connect(ic, Abstract("intr")).error(), kERestartSys);
  close(efd);
}

TEST_F(UnixTest, AutobindNames) {
  auto s = Make(SOCK_DGRAM);
  SockAddr empty;
  uint16_t f = AF_UNIX;
  memcpy(empty.bytes, &f, 2);
  empty.len = 2;
  ASSERT_TRUE(s->Bind(c_, empty).ok());
  SockAddr name = V(s->GetSockName(c_));
  ASSERT_EQ(name.len, 8u);
  EXPECT_EQ(name.bytes[2], 0);
  for (int i = 3; i < 8; ++i) EXPECT_TRUE(isxdigit(name.bytes[i])) << i;
  EXPECT_TRUE(s->Bind(c_, empty).ok());  // a bound socket: nothing to do
  EXPECT_EQ(s->Bind(c_, Abstract("x")).error(), kEINVAL);
  // Reachable by that name.
  auto o = Make(SOCK_DGRAM);
  ASSERT_EQ(V(Send(*o, "to auto", 0, {}, &name)), 7u);
  EXPECT_EQ(Recv(*s, 20).data, "to auto");
}

TEST_F(UnixTest, DatagramBoundariesTruncAndEmpty) {
  auto [a, b] = MakePair(SOCK_DGRAM);
  EXPECT_EQ(Poll(*a), kOut);  // a datagram pair is writable, never hung up
  ASSERT_EQ(V(Send(*a, "first")), 5u);
  ASSERT_EQ(V(Send(*a, "")), 0u);
  ASSERT_EQ(V(Send(*a, "third")), 5u);
  EXPECT_EQ(Ioctl(*b, SIOCINQ), 5);  // the next datagram
  Received r = Recv(*b, 3);
  EXPECT_EQ(r.data, "fir");
  EXPECT_EQ(*r.n, 3u);
  EXPECT_EQ(r.msg_flags & MSG_TRUNC, MSG_TRUNC);
  r = Recv(*b, 3);
  EXPECT_EQ(*r.n, 0u);  // the empty datagram
  EXPECT_EQ(r.msg_flags, 0);
  r = Recv(*b, 2, MSG_TRUNC);
  EXPECT_EQ(*r.n, 5u);  // the real length
  EXPECT_EQ(r.data, "th");
  EXPECT_EQ(Recv(*b, 2, MSG_DONTWAIT).n.error(), kEAGAIN);
}

TEST_F(UnixTest, DatagramAddressesConnectAndDisconnect) {
  auto srv = Make(SOCK_DGRAM);
  ASSERT_TRUE(srv->Bind(c_, Abstract("dg")).ok());
  auto cli = Make(SOCK_DGRAM);
  SockAddr to = Abstract("dg");
  SockAddr nobody = Abstract("nobody");
  EXPECT_EQ(Send(*cli, "x").error(), kENOTCONN);
  EXPECT_EQ(Send(*cli, "x", 0, {}, &nobody).error(), kECONNREFUSED);
  ASSERT_EQ(V(Send(*cli, "one", 0, {}, &to)), 3u);
  Received r = Recv(*srv, 10);
  EXPECT_EQ(r.data, "one");
  EXPECT_EQ(r.from.len, 0u);  // unnamed sender: no address
  ASSERT_TRUE(cli->Bind(c_, Abstract("cli")).ok());
  ASSERT_TRUE(cli->Connect(c_, to).ok());
  EXPECT_EQ(NameOf(V(cli->GetPeerName(c_))), std::string("\0dg", 3));
  ASSERT_EQ(V(Send(*cli, "two")), 3u);
  r = Recv(*srv, 10);
  EXPECT_EQ(NameOf(r.from), std::string("\0cli", 4));
  // A socket connected elsewhere refuses others (unix_may_send).
  auto third = Make(SOCK_DGRAM);
  ASSERT_TRUE(third->Bind(c_, Abstract("third")).ok());
  ASSERT_TRUE(srv->Connect(c_, Abstract("third")).ok());
  EXPECT_EQ(Send(*cli, "x").error(), kEPERM);
  SockAddr t3 = Abstract("third");
  EXPECT_EQ(cli->Connect(c_, t3).ok(), true);  // third's peer is none
  SockAddr unspec;
  unspec.len = 2;
  ASSERT_TRUE(cli->Connect(c_, unspec).ok());
  EXPECT_EQ(cli->GetPeerName(c_).error(), kENOTCONN);
  EXPECT_EQ(Send(*cli, "x").error(), kENOTCONN);
  SockAddr bad;
  bad.len = 1;
  EXPECT_EQ(cli->Connect(c_, bad).error(), kEINVAL);
  EXPECT_EQ(srv->Listen(c_, 1).error(), kEOPNOTSUPP);
  EXPECT_EQ(srv->Accept(c_, 0, nullptr).error(), kEOPNOTSUPP);
}

TEST_F(UnixTest, DatagramToDeadPeerIsRefusedOnce) {
  auto a = Make(SOCK_DGRAM);
  auto b = Make(SOCK_DGRAM);
  ASSERT_TRUE(b->Bind(c_, Abstract("dead")).ok());
  ASSERT_TRUE(a->Connect(c_, Abstract("dead")).ok());
  b.reset();
  EXPECT_EQ(Send(*a, "x").error(), kECONNREFUSED);
  EXPECT_EQ(Send(*a, "x").error(), kENOTCONN);
}

TEST_F(UnixTest, DatagramQueueLimitAndMsgSize) {
  ns_.sysctl().max_dgram_qlen = 3;
  auto srv = Make(SOCK_DGRAM);
  ASSERT_TRUE(srv->Bind(c_, Abstract("q")).ok());
  auto cli = Make(SOCK_DGRAM, O_RDWR | O_NONBLOCK);
  ASSERT_TRUE(cli->Connect(c_, Abstract("q")).ok());
  int sent = 0;
  for (; sent < 10; ++sent) {
    auto r = Send(*cli, "d");
    if (!r.ok()) {
      EXPECT_EQ(r.error(), kEAGAIN);
      break;
    }
  }
  EXPECT_EQ(sent, 4);  // more than max_dgram_qlen is full
  EXPECT_EQ(Poll(*cli) & kOut, 0u);
  EXPECT_TRUE(Recv(*srv, 1).n.ok());
  EXPECT_EQ(Poll(*cli) & kOut, kOut);
  // A blocking sender waits for the receiver.
  auto blocking = Make(SOCK_DGRAM);
  ASSERT_TRUE(blocking->Connect(c_, Abstract("q")).ok());
  ASSERT_TRUE(Send(*blocking, "e").ok());
  std::atomic<bool> done{false};
  std::thread t([&] {
    EXPECT_TRUE(Send(*blocking, "f").ok());
    done = true;
  });
  usleep(50 * 1000);
  EXPECT_FALSE(done);
  EXPECT_TRUE(Recv(*srv, 1).n.ok());
  t.join();
  // EMSGSIZE above sndbuf - 32.
  std::string big(cli->sndbuf() - 31, 'x');
  EXPECT_EQ(Send(*cli, big).error(), kEMSGSIZE);
}

TEST_F(UnixTest, SeqpacketRecordsAndHangUp) {
  auto [a, b] = MakePair(SOCK_SEQPACKET);
  EXPECT_EQ(Poll(*a), kOut);
  ASSERT_EQ(V(Send(*a, "rec1")), 4u);
  ASSERT_EQ(V(Send(*a, "record2")), 7u);
  EXPECT_EQ(Ioctl(*b, SIOCINQ), 11);  // SEQPACKET sums, as stream
  Received r = Recv(*b, 2);
  EXPECT_EQ(r.data, "re");
  EXPECT_TRUE(r.msg_flags & MSG_TRUNC);
  EXPECT_EQ(Recv(*b, 100).data, "record2");
  a.reset();
  EXPECT_EQ(Poll(*b), kIn | kOut | POLLRDHUP | POLLHUP);
  EXPECT_EQ(V(Recv(*b, 10).n), 0u);
  EXPECT_EQ(V(Recv(*b, 10, MSG_DONTWAIT).n), 0u);
  EXPECT_EQ(Send(*b, "x").error(), kEPIPE);
  auto lone = Make(SOCK_SEQPACKET);
  EXPECT_EQ(Send(*lone, "x").error(), kENOTCONN);
  EXPECT_EQ(Recv(*lone, 1).n.error(), kENOTCONN);
  EXPECT_EQ(Poll(*lone), kOut | POLLHUP);
}

TEST_F(UnixTest, StreamPeekOffset) {
  auto [a, b] = MakePair(SOCK_STREAM);
  ASSERT_EQ(V(Send(*a, "abc")), 3u);
  ASSERT_EQ(V(Send(*a, "def")), 3u);
  int32_t off = 2;
  ASSERT_TRUE(
      b->SetSockOpt(c_, SOL_SOCKET, SO_PEEK_OFF,
                    absl::MakeConstSpan(reinterpret_cast<uint8_t*>(&off), 4))
          .ok());
  EXPECT_EQ(Recv(*b, 2, MSG_PEEK).data, "cd");
  EXPECT_EQ(Recv(*b, 2, MSG_PEEK).data, "ef");
  EXPECT_EQ(Recv(*b, 3).data, "abc");
  int32_t got = 0;
  auto span = absl::MakeSpan(reinterpret_cast<uint8_t*>(&got), 4);
  ASSERT_EQ(V(b->GetSockOpt(c_, SOL_SOCKET, SO_PEEK_OFF, span)), 4u);
  EXPECT_EQ(got, 3);
  EXPECT_EQ(Recv(*b, 1, MSG_PEEK | MSG_DONTWAIT).n.error(), kEAGAIN);
  off = 1;
  ASSERT_TRUE(
      b->SetSockOpt(c_, SOL_SOCKET, SO_PEEK_OFF,
                    absl::MakeConstSpan(reinterpret_cast<uint8_t*>(&off), 4))
          .ok());
  EXPECT_EQ(Recv(*b, 5, MSG_PEEK).data, "ef");
  EXPECT_EQ(Recv(*b, 5).data, "def");
  // Without an offset, MSG_PEEK looks at the start every time.
  auto [c, d] = MakePair(SOCK_STREAM);
  ASSERT_EQ(V(Send(*c, "xyz")), 3u);
  EXPECT_EQ(Recv(*d, 2, MSG_PEEK).data, "xy");
  EXPECT_EQ(Recv(*d, 2, MSG_PEEK).data, "xy");
  EXPECT_EQ(Recv(*d, 5).data, "xyz");
}

TEST_F(UnixTest, DatagramPeekOffset) {
  auto [a, b] = MakePair(SOCK_DGRAM);
  ASSERT_EQ(V(Send(*a, "aaaa")), 4u);
  ASSERT_EQ(V(Send(*a, "bbbb")), 4u);
  int32_t off = 0;
  ASSERT_TRUE(
      b->SetSockOpt(c_, SOL_SOCKET, SO_PEEK_OFF,
                    absl::MakeConstSpan(reinterpret_cast<uint8_t*>(&off), 4))
          .ok());
  EXPECT_EQ(Recv(*b, 2, MSG_PEEK).data, "aa");
  EXPECT_EQ(Recv(*b, 10, MSG_PEEK).data, "aa");  // the rest of the first
  EXPECT_EQ(Recv(*b, 10, MSG_PEEK).data, "bbbb");
  EXPECT_EQ(Recv(*b, 10).data, "aaaa");
}

TEST_F(UnixTest, WaitAllAndBlockingReader) {
  auto [a, b] = MakePair(SOCK_STREAM);
  std::thread t([&, a = a] {
    usleep(20 * 1000);
    EXPECT_TRUE(Send(*a, "12").ok());
    usleep(20 * 1000);
    EXPECT_TRUE(Send(*a, "345").ok());
  });
  Received r = Recv(*b, 5, MSG_WAITALL);
  EXPECT_EQ(r.data, "12345");
  t.join();
  // A blocked reader is interrupted.
  int efd = eventfd(0, EFD_NONBLOCK);
  Caller ic = c_;
  ic.io.interrupt_fd = efd;
  std::thread k([efd] {
    usleep(20 * 1000);
    uint64_t one = 1;
    EXPECT_EQ(write(efd, &one, 8), 8);
  });
  std::vector<uint8_t> buf(4);
  SpanIo io(absl::MakeSpan(buf));
  RecvRequest req;
  EXPECT_EQ(b->RecvMsg(ic, io, req).error(), kERestartSys);
  k.join();
  close(efd);
}

TEST_F(UnixTest, StreamWriterBlocksOnSndbufAndResumes) {
  auto [a, b] = MakePair(SOCK_STREAM);
  const size_t total = 4 << 20;
  std::string data(total, 'q');
  for (size_t i = 0; i < total; ++i) data[i] = static_cast<char>(i * 7);
  std::thread w([&, a = a] {
    auto n = Send(*a, data);
    EXPECT_TRUE(n.ok());
    if (n.ok()) {
      EXPECT_EQ(*n, total);
    }
  });
  std::string got;
  while (got.size() < total) {
    Received r = Recv(*b, 65536);
    ASSERT_TRUE(r.n.ok());
    ASSERT_GT(*r.n, 0u);
    got += r.data;
  }
  w.join();
  EXPECT_EQ(got, data);
  // Non-blocking: EAGAIN once the send buffer is full, a partial count
  // before.
  auto [c, d] = MakePair(SOCK_STREAM, O_RDWR | O_NONBLOCK);
  auto n = Send(*c, std::string(1 << 20, 'x'));
  ASSERT_TRUE(n.ok());
  EXPECT_LT(*n, size_t{1} << 20);
  EXPECT_GT(*n, size_t{100000});
  EXPECT_EQ(Send(*c, "y").error(), kEAGAIN);
  EXPECT_EQ(Poll(*c) & kOut, 0u);
}

TEST_F(UnixTest, RightsTravelAsFileRefs) {
  auto [a, b] = MakePair(SOCK_STREAM);
  auto [x, y] = MakePair(SOCK_DGRAM);
  int64_t before = InflightDescriptors();
  ASSERT_EQ(V(Send(*a, "fd", 0, {x, y})), 2u);
  EXPECT_EQ(InflightDescriptors(), before + 2);
  EXPECT_EQ(InflightSockets(), 2);
  Received p = Recv(*b, 1, MSG_PEEK);
  ASSERT_EQ(p.control.rights.size(), 2u);
  EXPECT_EQ(InflightDescriptors(), before + 2);  // a peek copies
  p.control.rights.clear();
  Received r = Recv(*b, 10);
  EXPECT_EQ(r.data, "fd");
  ASSERT_EQ(r.control.rights.size(), 2u);
  EXPECT_EQ(r.control.rights[0].get(), x.get());
  EXPECT_EQ(r.control.rights[1].get(), y.get());
  EXPECT_EQ(InflightDescriptors(), before);
  // Messages with rights are not glued to the next one.
  ASSERT_EQ(V(Send(*a, "one", 0, {x})), 3u);
  ASSERT_EQ(V(Send(*a, "two")), 3u);
  r = Recv(*b, 10);
  EXPECT_EQ(r.data, "one");
  EXPECT_EQ(r.control.rights.size(), 1u);
  EXPECT_EQ(Recv(*b, 10).data, "two");
  // Datagram: the rights go with the record; a dropped record drops them.
  ASSERT_EQ(V(Send(*x, "r", 0, {a})), 1u);
  y.reset();
  EXPECT_EQ(InflightDescriptors(), before);
}

TEST_F(UnixTest, ProcNetUnixLists) {
  auto l = Make(SOCK_STREAM);
  ASSERT_TRUE(l->Bind(c_, Abstract("proc")).ok());
  ASSERT_TRUE(l->Listen(c_, 1).ok());
  auto [a, b] = MakePair(SOCK_DGRAM);
  std::vector<UnixSocketInfo> list = ListSockets(ns_);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].path, "@proc");
  EXPECT_EQ(list[0].flags, 1u << 16);
  EXPECT_EQ(list[0].type, SOCK_STREAM);
  EXPECT_EQ(list[0].state, 1);
  EXPECT_EQ(list[0].inode, l->ino());
  std::string text = FormatProcNetUnix(ns_);
  EXPECT_EQ(
      text.find("Num       RefCount Protocol Flags    Type St Inode Path\n"),
      0u);
  EXPECT_NE(text.find("00010000 0001 01"), std::string::npos);
  EXPECT_NE(text.find(" @proc\n"), std::string::npos);
  l.reset();
  EXPECT_EQ(ListSockets(ns_).size(), 2u);
}

}  // namespace
}  // namespace sandbox::net::unix
