#include "sentry/net/netlink/netlink.h"

#include <sys/socket.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/net/netlink/message.h"
#include "sentry/net/proc_net.h"

namespace sandbox::net::netlink {
namespace {

using ::testing::HasSubstr;

struct SockaddrNl {
  uint16_t family, pad;
  uint32_t pid, groups;
};

SockAddr Nl(uint32_t pid, uint32_t groups = 0) {
  SockaddrNl a = {AF_NETLINK, 0, pid, groups};
  return SockAddr::From(&a, sizeof(a));
}

SockaddrNl Parse(const SockAddr& a) {
  SockaddrNl n{};
  memcpy(&n, a.bytes, std::min<size_t>(a.len, sizeof(n)));
  return n;
}

std::string LinkDump(uint32_t seq) {
  Builder b;
  size_t at = b.Begin(18, kFRequest | kFDump, seq, 0);
  uint8_t ifi[16] = {};
  b.Append(ifi, sizeof(ifi));
  b.End(at);
  return b.Take();
}

template <typename T>
T V(KResult<T> r) {
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return T{};
  return std::move(r).value();
}

class NetlinkTest : public ::testing::Test {
 protected:
  NetlinkTest() {
    c.ucred = {100, 0, 0};
    c.netns = &ns;
  }
  SocketRef New(int protocol = kNetlinkRoute, int type = SOCK_RAW) {
    KResult<SocketRef> s = NetlinkSocket::Create(c, type, protocol, O_RDWR);
    EXPECT_TRUE(s.ok());
    return s.ok() ? *s : nullptr;
  }
  KResult<size_t> Send(Socket& s, const std::string& bytes,
                       std::optional<SockAddr> to = std::nullopt) {
    SpanIo io(absl::MakeConstSpan(
        reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    SendRequest req;
    req.to = to;
    return s.SendMsg(c, io, req);
  }
  // One recvmsg with MSG_DONTWAIT and `flags`, into `size` bytes.
  KResult<std::string> Recv(Socket& s, size_t size, int flags = 0,
                            RecvRequest* out = nullptr) {
    std::vector<uint8_t> buf(size);
    SpanIo io{absl::MakeSpan(buf)};
    RecvRequest req;
    req.flags = flags | MSG_DONTWAIT;
    TRY(size_t n, s.RecvMsg(c, io, req));
    if (out != nullptr) *out = req;
    return std::string(reinterpret_cast<char*>(buf.data()), std::min(n, size));
  }
  NetNamespace ns;
  Caller c;
};

TEST_F(NetlinkTest, CreateChecksTypeAndProtocol) {
  EXPECT_EQ(NetlinkSocket::Create(c, SOCK_STREAM, 0, O_RDWR).error(),
            kESOCKTNOSUPPORT);
  EXPECT_EQ(NetlinkSocket::Create(c, SOCK_RAW, 32, O_RDWR).error(),
            kEPROTONOSUPPORT);
  EXPECT_EQ(NetlinkSocket::Create(c, SOCK_RAW, 16, O_RDWR).error(),
            kEPROTONOSUPPORT);
  EXPECT_TRUE(NetlinkSocket::Create(c, SOCK_DGRAM, 15, O_RDWR).ok());
}

TEST_F(NetlinkTest, AutobindTgidThenNegative) {
  SocketRef a = New(), b = New();
  EXPECT_EQ(Parse(V(a->GetSockName(c))).pid, 0u);
  ASSERT_TRUE(a->Bind(c, Nl(0)).ok());
  EXPECT_EQ(Parse(V(a->GetSockName(c))).pid, 100u);
  ASSERT_TRUE(b->Bind(c, Nl(0)).ok());
  int32_t pb = static_cast<int32_t>(Parse(V(b->GetSockName(c))).pid);
  EXPECT_LT(pb, -4096);
  // Rebinding to another id, a taken id, short addresses.
  EXPECT_EQ(a->Bind(c, Nl(5)).error(), kEINVAL);
  SocketRef d = New();
  EXPECT_EQ(d->Bind(c, Nl(100)).error(), kEADDRINUSE);
  EXPECT_EQ(d->Bind(c, SockAddr::From("\x10\x00", 2)).error(), kEINVAL);
  ASSERT_TRUE(d->Bind(c, Nl(777, 0x5)).ok());
  EXPECT_EQ(Parse(V(d->GetSockName(c))).groups, 0x5u);
  // Another protocol has its own ids.
  SocketRef u = New(kNetlinkKobjectUevent);
  EXPECT_TRUE(u->Bind(c, Nl(100)).ok());
  // A closed socket's id is free again.
  a.reset();
  SocketRef e = New();
  EXPECT_TRUE(e->Bind(c, Nl(100)).ok());
}

TEST_F(NetlinkTest, DumpTruncationPeekAndDone) {
  SocketRef s = New();
  ASSERT_EQ(V(Send(*s, LinkDump(11))), LinkDump(11).size());
  // Sending autobinds.
  EXPECT_EQ(Parse(V(s->GetSockName(c))).pid, 100u);
  RecvRequest r;
  KResult<std::string> peek = Recv(*s, 0, MSG_PEEK | MSG_TRUNC, &r);
  ASSERT_TRUE(peek.ok());
  EXPECT_TRUE(r.msg_flags & MSG_TRUNC);
  KResult<size_t> full_len = [&]() -> KResult<size_t> {
    std::vector<uint8_t> none;
    SpanIo io{absl::MakeSpan(none)};
    RecvRequest q;
    q.flags = MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT;
    return s->RecvMsg(c, io, q);
  }();
  ASSERT_TRUE(full_len.ok());
  EXPECT_GT(V(full_len), 600u);
  KResult<std::string> small = Recv(*s, 100, 0, &r);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->size(), 100u);
  EXPECT_TRUE(r.msg_flags & MSG_TRUNC);
  EXPECT_EQ(Parse(r.from).pid, 0u);  // from the kernel
  KResult<std::string> done = Recv(*s, 4096, 0, &r);
  ASSERT_TRUE(done.ok());
  std::vector<Message> m = SplitMessages(absl::MakeConstSpan(
      reinterpret_cast<const uint8_t*>(done->data()), done->size()));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].hdr.type, kNlmsgDone);
  EXPECT_EQ(m[0].hdr.seq, 11u);
  EXPECT_EQ(m[0].hdr.pid, 100u);
  EXPECT_FALSE(r.msg_flags & MSG_TRUNC);
  EXPECT_EQ(Recv(*s, 4096).error(), kEAGAIN);
  EXPECT_EQ(s->Readiness(vfs::kPollIn | vfs::kPollOut), vfs::kPollOut);
}

TEST_F(NetlinkTest, SendErrors) {
  SocketRef s = New();
  EXPECT_EQ(Send(*s, "").error(), kENODATA);
  EXPECT_EQ(Send(*s, std::string(20, 'x'), SockAddr::From("\x10\0", 2)).error(),
            kEINVAL);
  EXPECT_EQ(Send(*s, std::string(20, 'x'), Nl(424242)).error(), kECONNREFUSED);
  // Garbage to the kernel is consumed without a reply.
  EXPECT_EQ(V(Send(*s, "\x01\x02\x03")), 3u);
  EXPECT_EQ(Recv(*s, 100).error(), kEAGAIN);
}

TEST_F(NetlinkTest, UserToUser) {
  SocketRef a = New(), b = New();
  ASSERT_TRUE(a->Bind(c, Nl(0)).ok());
  ASSERT_TRUE(b->Bind(c, Nl(0)).ok());
  uint32_t pb = Parse(V(b->GetSockName(c))).pid;
  ASSERT_EQ(V(Send(*a, "hello", Nl(pb))), 5u);
  RecvRequest r;
  EXPECT_EQ(V(Recv(*b, 100, 0, &r)), "hello");
  EXPECT_EQ(Parse(r.from).pid, 100u);
  ASSERT_TRUE(a->Connect(c, Nl(pb)).ok());
  EXPECT_EQ(Parse(V(a->GetPeerName(c))).pid, pb);
  ASSERT_EQ(V(Send(*a, "again")), 5u);
  EXPECT_EQ(V(Recv(*b, 100)), "again");
  SockAddr unspec = SockAddr::From("\0\0", 2);
  ASSERT_TRUE(a->Connect(c, unspec).ok());
  EXPECT_EQ(Parse(V(a->GetPeerName(c))).pid, 0u);
}

TEST_F(NetlinkTest, Multicast) {
  SocketRef a = New(), b = New();
  ASSERT_TRUE(a->Bind(c, Nl(0)).ok());
  ASSERT_TRUE(b->Bind(c, Nl(0, 1)).ok());  // RTNLGRP_LINK
  ASSERT_EQ(V(Send(*a, "event", Nl(0, 1))), 5u);
  RecvRequest r;
  EXPECT_EQ(V(Recv(*b, 100, 0, &r)), "event");
  EXPECT_EQ(Parse(r.from).groups, 1u);
}

TEST_F(NetlinkTest, Options) {
  SocketRef s = New();
  uint32_t one = 1;
  auto set = [&](int name, uint32_t v) {
    return s->SetSockOpt(
        c, kSolNetlink, name,
        absl::MakeConstSpan(reinterpret_cast<uint8_t*>(&v), 4));
  };
  auto get = [&](int name) -> KResult<int> {
    uint8_t buf[4];
    TRY(size_t n, s->GetSockOpt(c, kSolNetlink, name, absl::MakeSpan(buf)));
    int v;
    memcpy(&v, buf, std::min<size_t>(n, 4));
    return v;
  };
  ASSERT_TRUE(set(11, one).ok());  // NETLINK_EXT_ACK
  EXPECT_EQ(V(get(11)), 1);
  ASSERT_TRUE(set(12, 5).ok());  // NETLINK_GET_STRICT_CHK
  EXPECT_EQ(V(get(12)), 1);
  EXPECT_EQ(set(99, 1).error(), kENOPROTOOPT);
  EXPECT_EQ(set(1, 0).error(), kEINVAL);   // group 0
  EXPECT_EQ(set(1, 40).error(), kEINVAL);  // beyond RTNLGRP_MAX
  ASSERT_TRUE(set(1, 39).ok());
  uint8_t groups[8] = {};
  KResult<size_t> n = s->GetSockOpt(c, kSolNetlink, 9, absl::MakeSpan(groups));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(V(n), 8u);
  EXPECT_EQ(groups[4], 0x40);
  uint8_t two[2];
  EXPECT_EQ(s->GetSockOpt(c, kSolNetlink, 11, absl::MakeSpan(two)).error(),
            kEINVAL);
  // A short value clears the flag (Linux reads 0).
  ASSERT_TRUE(s->SetSockOpt(c, kSolNetlink, 11, absl::MakeConstSpan(two)).ok());
  EXPECT_EQ(V(get(11)), 0);
}

TEST_F(NetlinkTest, LinkChangesAreMulticast) {
  SocketRef listener = New(), admin = New();
  // RTMGRP_LINK | RTMGRP_IPV6_IFADDR.
  ASSERT_TRUE(listener->Bind(c, Nl(0, 0x1 | 0x100)).ok());
  Builder b;
  size_t at = b.Begin(16, kFRequest | kFAck, 5, 0);
  struct {
    uint8_t family, pad;
    uint16_t type;
    int32_t index;
    uint32_t flags, change;
  } ifi = {0, 0, 0, 1, 0, 1};  // lo down
  b.AppendStruct(ifi);
  b.End(at);
  ASSERT_TRUE(Send(*admin, b.Take()).ok());
  RecvRequest r;
  KResult<std::string> link = Recv(*listener, 4096, 0, &r);
  ASSERT_TRUE(link.ok());
  EXPECT_EQ(Parse(r.from).groups, 1u);
  std::vector<Message> m = SplitMessages(absl::MakeConstSpan(
      reinterpret_cast<const uint8_t*>(link->data()), link->size()));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].hdr.type, 16);
  EXPECT_EQ(m[0].hdr.seq, 0u);
  EXPECT_EQ(m[0].payload[8] & 1, 0);  // ifi_flags without IFF_UP
  KResult<std::string> addr = Recv(*listener, 4096, 0, &r);
  ASSERT_TRUE(addr.ok());
  EXPECT_EQ(Parse(r.from).groups, 0x100u);
  m = SplitMessages(absl::MakeConstSpan(
      reinterpret_cast<const uint8_t*>(addr->data()), addr->size()));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].hdr.type, 21);  // RTM_DELADDR
  EXPECT_EQ(Recv(*listener, 4096).error(), kEAGAIN);
}

TEST_F(NetlinkTest, ProcNetNetlinkListsBoundSockets) {
  SocketRef s = New();
  ASSERT_TRUE(s->Bind(c, Nl(0, 1)).ok());
  std::string text = ProcNetNetlink(ns);
  EXPECT_THAT(text, HasSubstr("sk               Eth Pid        Groups   "));
  EXPECT_THAT(text, HasSubstr(" 0   100        00000001 "));
  EXPECT_THAT(text, HasSubstr(absl::StrCat(s->ino())));
}

TEST_F(NetlinkTest, KernelRepliesOverrun) {
  SocketRef s = New();
  // A tiny receive buffer: ACKs beyond it are dropped, and the next
  // recvmsg reports ENOBUFS once.
  SocketRef big = New();
  Builder b;
  for (int i = 0; i < 2000; ++i) {
    size_t at = b.Begin(kNlmsgNoop, kFRequest | kFAck, i, 0);
    b.End(at);
  }
  std::string batch = b.Take();
  ASSERT_TRUE(Send(*s, batch).ok());
  EXPECT_EQ(Recv(*s, 100).error(), kENOBUFS);
  int got = 0;
  while (Recv(*s, 100).ok()) ++got;
  EXPECT_GT(got, 0);
  EXPECT_LT(got, 2000);
}

}  // namespace
}  // namespace sandbox::net::netlink
