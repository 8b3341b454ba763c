#include "sentry/net/udp/datagram.h"

#include <linux/errqueue.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "gtest/gtest.h"

namespace sandbox::net::udp {
namespace {

ControlMessages::Raw IntMsg(int level, int type, int v) {
  ControlMessages::Raw r;
  r.level = level;
  r.type = type;
  r.data.resize(sizeof(int));
  memcpy(r.data.data(), &v, sizeof(v));
  return r;
}

TEST(DatagramTest, SendCmsgsV4) {
  std::vector<ControlMessages::Raw> m = {IntMsg(SOL_IP, IP_TTL, 9),
                                         IntMsg(SOL_IP, IP_TOS, 0x10)};
  KResult<SendParams> p = ParseSendCmsgs(m, true);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ttl, 9);
  EXPECT_EQ(p->tos, 0x10);
  // A one-byte IP_TOS is fine too; others' levels are skipped.
  ControlMessages::Raw tos1{SOL_IP, IP_TOS, {0x20}};
  std::vector<ControlMessages::Raw> m2 = {tos1,
                                          IntMsg(SOL_IPV6, IPV6_TCLASS, 999)};
  p = ParseSendCmsgs(m2, true);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->tos, 0x20);
  for (int bad : {0, 256, -1}) {
    std::vector<ControlMessages::Raw> b = {IntMsg(SOL_IP, IP_TTL, bad)};
    EXPECT_EQ(ParseSendCmsgs(b, true).error(), kEINVAL) << bad;
  }
  std::vector<ControlMessages::Raw> unknown = {IntMsg(SOL_IP, 4242, 1)};
  EXPECT_EQ(ParseSendCmsgs(unknown, true).error(), kEINVAL);
  ControlMessages::Raw shortpi{SOL_IP, IP_PKTINFO, {1, 2, 3}};
  std::vector<ControlMessages::Raw> sp = {shortpi};
  EXPECT_EQ(ParseSendCmsgs(sp, true).error(), kEINVAL);
}

TEST(DatagramTest, SendCmsgsV6) {
  std::vector<ControlMessages::Raw> m = {IntMsg(SOL_IPV6, IPV6_HOPLIMIT, -1),
                                         IntMsg(SOL_IPV6, IPV6_TCLASS, 0x28)};
  KResult<SendParams> p = ParseSendCmsgs(m, false);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ttl, -1);
  EXPECT_EQ(p->tos, 0x28);
  std::vector<ControlMessages::Raw> b = {IntMsg(SOL_IPV6, IPV6_HOPLIMIT, 256)};
  EXPECT_EQ(ParseSendCmsgs(b, false).error(), kEINVAL);
  ControlMessages::Raw hl{SOL_IPV6, IPV6_HOPLIMIT, {1}};
  std::vector<ControlMessages::Raw> s = {hl};
  EXPECT_EQ(ParseSendCmsgs(s, false).error(), kEINVAL);
}

TEST(DatagramTest, Checksum) {
  // RFC 1071's example: 0001 f203 f4f5 f6f7 sums to ddf2.
  std::vector<uint8_t> d = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(InetChecksum(d), static_cast<uint16_t>(~0xddf2));
  // A message with its checksum in place sums to zero.
  std::vector<uint8_t> m = {0, 0, 0, 0, 0x12, 0x34, 0, 1, 'a', 'b', 'c'};
  uint16_t c = InetChecksum(m);
  m[2] = c >> 8;
  m[3] = c & 0xff;
  EXPECT_EQ(InetChecksum(m), 0);
}

TEST(DatagramTest, TrueSizeGrowsWithLength) {
  EXPECT_GT(TrueSize(0), 0);
  EXPECT_LE(TrueSize(1), TrueSize(1000));
  EXPECT_LT(TrueSize(1000), TrueSize(65507));
  EXPECT_GE(TrueSize(65507), 65507);
}

TEST(DatagramTest, ErrCmsgLayout) {
  ErrReport e;
  e.v4 = true;
  e.err = ECONNREFUSED;
  e.type = 3;
  e.code = 3;
  e.offender = inet::IpAddr::LoopbackV4();
  ControlMessages::Raw r = ErrCmsg(e, AF_INET);
  EXPECT_EQ(r.level, SOL_IP);
  EXPECT_EQ(r.type, IP_RECVERR);
  ASSERT_EQ(r.data.size(), sizeof(sock_extended_err) + sizeof(sockaddr_in));
  sock_extended_err ee;
  memcpy(&ee, r.data.data(), sizeof(ee));
  EXPECT_EQ(ee.ee_errno, static_cast<uint32_t>(ECONNREFUSED));
  EXPECT_EQ(ee.ee_origin, SO_EE_ORIGIN_ICMP);
  sockaddr_in off;
  memcpy(&off, r.data.data() + sizeof(ee), sizeof(off));
  EXPECT_EQ(off.sin_family, AF_INET);
  EXPECT_EQ(ntohl(off.sin_addr.s_addr), 0x7f000001u);
  ControlMessages::Raw r6 = ErrCmsg(e, AF_INET6);
  EXPECT_EQ(r6.level, SOL_IPV6);
  EXPECT_EQ(r6.data.size(), sizeof(sock_extended_err) + sizeof(sockaddr_in6));
}

TEST(DatagramTest, RecvCmsgsOrder) {
  Datagram d;
  d.v4 = true;
  d.dst.ip = inet::IpAddr::V4(0x7f000003);
  d.dst.port = 99;
  d.ttl = 7;
  d.tos = 0x10;
  inet::IpOptions ip;
  ip.pktinfo = ip.recvttl = ip.recvtos = true;
  Socket::SolFlags sol;
  sol.rcvtstamp = true;
  std::vector<ControlMessages::Raw> out;
  AppendRecvCmsgs(d, AF_INET, ip, sol, &out);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].type, SCM_TIMESTAMP);
  EXPECT_EQ(out[1].type, IP_PKTINFO);
  EXPECT_EQ(out[2].type, IP_TTL);
  EXPECT_EQ(out[3].type, IP_TOS);
  EXPECT_EQ(out[3].data.size(), 1u);
}

}  // namespace
}  // namespace sandbox::net::udp
