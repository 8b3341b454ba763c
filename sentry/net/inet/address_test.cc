// The sockaddr_in/sockaddr_in6 codec and IpAddr's classes.
#include "sentry/net/inet/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "gtest/gtest.h"

namespace sandbox::net::inet {
namespace {

SockAddr Sin(const char* ip, uint16_t port, uint16_t fam = AF_INET,
             uint32_t len = sizeof(sockaddr_in)) {
  sockaddr_in sin = {};
  sin.sin_family = fam;
  sin.sin_port = htons(port);
  inet_pton(AF_INET, ip, &sin.sin_addr);
  SockAddr a = SockAddr::From(&sin, sizeof(sin));
  a.len = len;
  return a;
}

SockAddr Sin6(const char* ip, uint16_t port, uint16_t fam = AF_INET6,
              uint32_t len = sizeof(sockaddr_in6), uint32_t scope = 0) {
  sockaddr_in6 sin6 = {};
  sin6.sin6_family = fam;
  sin6.sin6_port = htons(port);
  sin6.sin6_scope_id = scope;
  inet_pton(AF_INET6, ip, &sin6.sin6_addr);
  SockAddr a = SockAddr::From(&sin6, sizeof(sin6));
  a.len = len;
  return a;
}

TEST(IpAddrTest, Classes) {
  EXPECT_TRUE(IpAddr::AnyV4().is_v4());
  EXPECT_TRUE(IpAddr::AnyV4().IsAny());
  EXPECT_FALSE(IpAddr::AnyV6().is_v4());
  EXPECT_TRUE(IpAddr::AnyV6().IsAny());
  EXPECT_NE(IpAddr::AnyV4(), IpAddr::AnyV6());
  EXPECT_TRUE(IpAddr::V4(0x7f000002).IsLoopback());
  EXPECT_TRUE(IpAddr::LoopbackV6().IsLoopback());
  EXPECT_FALSE(IpAddr::V4(0x80000001).IsLoopback());
  EXPECT_TRUE(IpAddr::V4(0xe0000001).IsMulticast());
  EXPECT_FALSE(IpAddr::V4(0xf0000001).IsMulticast());
  EXPECT_TRUE(IpAddr::V4(0xffffffff).IsLimitedBroadcast());
  uint8_t ll[16] = {0xfe, 0x80};
  EXPECT_TRUE(IpAddr::FromV6Bytes(ll).IsLinkLocalV6());
  uint8_t mc[16] = {0xff, 0x02};
  EXPECT_TRUE(IpAddr::FromV6Bytes(mc).IsMulticast());
  EXPECT_EQ(IpAddr::V4(0x7f000001).v4(), 0x7f000001u);
  EXPECT_EQ(IpAddr::LoopbackV4().ToString(), "127.0.0.1");
  EXPECT_EQ(IpAddr::LoopbackV6().ToString(), "::1");
  EXPECT_EQ((InetAddr{IpAddr::LoopbackV6(), 80}).ToString(), "[::1]:80");
  EXPECT_EQ((InetAddr{IpAddr::LoopbackV4(), 80}).ToString(), "127.0.0.1:80");
}

TEST(ParseTest, V4) {
  auto r = ParseSockAddr(AF_INET, Sin("127.0.0.1", 80), AddrUse::kBind);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ip, IpAddr::LoopbackV4());
  EXPECT_EQ(r->port, 80);
  EXPECT_EQ(
      ParseSockAddr(AF_INET, Sin("127.0.0.1", 80, AF_INET, 15), AddrUse::kBind)
          .error(),
      kEINVAL);
  EXPECT_EQ(
      ParseSockAddr(AF_INET, Sin("127.0.0.1", 80, AF_INET6), AddrUse::kBind)
          .error(),
      kEAFNOSUPPORT);
  // AF_UNSPEC: bind only with INADDR_ANY; sendto always; connect never.
  EXPECT_TRUE(
      ParseSockAddr(AF_INET, Sin("0.0.0.0", 5, AF_UNSPEC), AddrUse::kBind)
          .ok());
  EXPECT_EQ(
      ParseSockAddr(AF_INET, Sin("127.0.0.1", 5, AF_UNSPEC), AddrUse::kBind)
          .error(),
      kEAFNOSUPPORT);
  EXPECT_TRUE(
      ParseSockAddr(AF_INET, Sin("127.0.0.1", 5, AF_UNSPEC), AddrUse::kSendTo)
          .ok());
  EXPECT_EQ(
      ParseSockAddr(AF_INET, Sin("127.0.0.1", 5, AF_UNSPEC), AddrUse::kConnect)
          .error(),
      kEAFNOSUPPORT);
}

TEST(ParseTest, V6) {
  auto r = ParseSockAddr(AF_INET6, Sin6("::1", 443), AddrUse::kBind);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ip, IpAddr::LoopbackV6());
  EXPECT_EQ(r->port, 443);
  // v4-mapped -> IPv4.
  r = ParseSockAddr(AF_INET6, Sin6("::ffff:127.0.0.1", 1), AddrUse::kConnect);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ip.is_v4());
  EXPECT_EQ(r->ip, IpAddr::LoopbackV4());
  // 24 bytes (RFC 2133) is enough, without the scope id.
  r = ParseSockAddr(AF_INET6, Sin6("fe80::1", 1, AF_INET6, 24, 7),
                    AddrUse::kBind);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->scope_id, 0u);
  r = ParseSockAddr(AF_INET6, Sin6("fe80::1", 1, AF_INET6, 28, 7),
                    AddrUse::kBind);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->scope_id, 7u);
  EXPECT_EQ(
      ParseSockAddr(AF_INET6, Sin6("::1", 1, AF_INET6, 23), AddrUse::kBind)
          .error(),
      kEINVAL);
  EXPECT_EQ(
      ParseSockAddr(AF_INET6, Sin6("::1", 1, AF_INET), AddrUse::kBind).error(),
      kEAFNOSUPPORT);
  EXPECT_EQ(ParseSockAddr(AF_INET6, Sin6("::1", 1, AF_UNSPEC), AddrUse::kSendTo)
                .error(),
            kEINVAL);
  // An AF_INET6 datagram socket connects or sends to a sockaddr_in.
  r = ParseSockAddr(AF_INET6, Sin("127.0.0.1", 9), AddrUse::kDgramConnect);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ip, IpAddr::LoopbackV4());
  EXPECT_TRUE(
      ParseSockAddr(AF_INET6, Sin("127.0.0.1", 9), AddrUse::kSendTo).ok());
  EXPECT_EQ(
      ParseSockAddr(AF_INET6, Sin("127.0.0.1", 9), AddrUse::kConnect).error(),
      kEINVAL);  // 16 < 24
  SockAddr one;
  one.len = 1;
  EXPECT_EQ(ParseSockAddr(AF_INET6, one, AddrUse::kSendTo).error(), kEINVAL);
}

TEST(ToSockAddrTest, Forms) {
  SockAddr a = ToSockAddr(AF_INET, {IpAddr::LoopbackV4(), 80});
  ASSERT_EQ(a.len, sizeof(sockaddr_in));
  sockaddr_in sin;
  memcpy(&sin, a.bytes, sizeof(sin));
  EXPECT_EQ(sin.sin_family, AF_INET);
  EXPECT_EQ(ntohs(sin.sin_port), 80);
  EXPECT_EQ(ntohl(sin.sin_addr.s_addr), 0x7f000001u);

  a = ToSockAddr(AF_INET6, {IpAddr::LoopbackV4(), 81});
  ASSERT_EQ(a.len, sizeof(sockaddr_in6));
  sockaddr_in6 sin6;
  memcpy(&sin6, a.bytes, sizeof(sin6));
  EXPECT_EQ(sin6.sin6_family, AF_INET6);
  EXPECT_EQ(ntohs(sin6.sin6_port), 81);
  char buf[64];
  inet_ntop(AF_INET6, &sin6.sin6_addr, buf, sizeof(buf));
  EXPECT_STREQ(buf, "::ffff:127.0.0.1");
  // Round trip.
  auto r = ParseSockAddr(AF_INET6, a, AddrUse::kBind);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ip, IpAddr::LoopbackV4());
  EXPECT_EQ(r->port, 81);
}

}  // namespace
}  // namespace sandbox::net::inet
