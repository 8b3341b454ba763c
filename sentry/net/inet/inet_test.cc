// socket(2)'s protocol choice for AF_INET/AF_INET6, and InetSocket: the
// SOL_IP/SOL_IPV6 options and bind(2)'s checks.
#include "sentry/net/inet/inet.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <memory>

#include "gtest/gtest.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/net/family.h"
#include "sentry/net/inet/inet_socket.h"
#include "sentry/net/namespace.h"
#include "sentry/net/stack/interfaces.h"

namespace sandbox::net::inet {
namespace {

constexpr int IP_LOCAL_PORT_RANGE = 51;  // newer than some libcs
constexpr int IP_PROTOCOL = 52;

class TestInet : public InetSocket {
 public:
  TestInet(int family, int type, Proto proto, Ucred owner = {})
      : InetSocket(family, type,
                   proto == Proto::kTcp   ? IPPROTO_TCP
                   : proto == Proto::kUdp ? IPPROTO_UDP
                                          : IPPROTO_ICMP,
                   O_RDWR, owner, proto) {}
  ProcRow proc_row() const override { return {}; }
};

KResult<SocketRef> MakeTcp(Caller&, int family, uint32_t) {
  return SocketRef(
      std::make_shared<TestInet>(family, SOCK_STREAM, Proto::kTcp));
}
KResult<SocketRef> MakeUdp(Caller&, int family, uint32_t) {
  return SocketRef(std::make_shared<TestInet>(family, SOCK_DGRAM, Proto::kUdp));
}
KResult<SocketRef> MakePing(Caller&, int family, uint32_t) {
  return SocketRef(
      std::make_shared<TestInet>(family, SOCK_DGRAM, Proto::kPing));
}

Errno CreateErr(Caller& c, int family, int type, int protocol) {
  auto r = CreateSocket(c, family, type, protocol, O_RDWR);
  return r.ok() ? Errno(0) : r.error();
}

TEST(CreateTest, NoProtocolsYet) {
  RegisteredProtocols() = Protocols{};
  Register();
  Caller c;
  EXPECT_EQ(CreateErr(c, AF_INET, SOCK_STREAM, 0), kESOCKTNOSUPPORT);
  EXPECT_EQ(CreateErr(c, AF_INET6, SOCK_DGRAM, 0), kESOCKTNOSUPPORT);
  EXPECT_EQ(CreateErr(c, AF_INET, SOCK_RAW, IPPROTO_ICMP), kEPERM);
  EXPECT_EQ(CreateErr(c, AF_INET, SOCK_RAW, 0), kEPROTONOSUPPORT);
  EXPECT_EQ(CreateErr(c, AF_PACKET, SOCK_RAW, 0), kEPERM);
  EXPECT_EQ(CreateErr(c, AF_INET, SOCK_PACKET, 0), kEPERM);
}

TEST(CreateTest, LinuxErrnos) {
  RegisteredProtocols() = Protocols{&MakeTcp, &MakeUdp, &MakePing};
  Register();
  Caller c;
  for (int f : {AF_INET, AF_INET6}) {
    EXPECT_EQ(CreateErr(c, f, SOCK_STREAM, 0), Errno(0));
    EXPECT_EQ(CreateErr(c, f, SOCK_STREAM, IPPROTO_TCP), Errno(0));
    EXPECT_EQ(CreateErr(c, f, SOCK_DGRAM, 0), Errno(0));
    EXPECT_EQ(CreateErr(c, f, SOCK_DGRAM, IPPROTO_UDP), Errno(0));
    EXPECT_EQ(CreateErr(c, f, SOCK_STREAM, IPPROTO_UDP), kEPROTONOSUPPORT);
    EXPECT_EQ(CreateErr(c, f, SOCK_DGRAM, IPPROTO_TCP), kEPROTONOSUPPORT);
    EXPECT_EQ(CreateErr(c, f, SOCK_STREAM, IPPROTO_SCTP), kEPROTONOSUPPORT);
    EXPECT_EQ(CreateErr(c, f, SOCK_SEQPACKET, 0), kESOCKTNOSUPPORT);
    EXPECT_EQ(CreateErr(c, f, SOCK_SEQPACKET, IPPROTO_SCTP), kESOCKTNOSUPPORT);
    EXPECT_EQ(CreateErr(c, f, SOCK_DCCP, 0), kESOCKTNOSUPPORT);
    EXPECT_EQ(CreateErr(c, f, SOCK_DGRAM, IPPROTO_UDPLITE), kEPROTONOSUPPORT);
    EXPECT_EQ(CreateErr(c, f, SOCK_RAW, IPPROTO_UDP), kEPERM);
    EXPECT_EQ(CreateErr(c, f, SOCK_STREAM, -1), kEINVAL);
    EXPECT_EQ(CreateErr(c, f, SOCK_STREAM, 263), kEINVAL);
    EXPECT_EQ(CreateSocketPair(c, f, SOCK_STREAM, 0, O_RDWR).error(),
              kEOPNOTSUPP);
  }
  EXPECT_EQ(CreateErr(c, AF_INET, SOCK_DGRAM, IPPROTO_ICMP), Errno(0));
  EXPECT_EQ(CreateErr(c, AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6), Errno(0));
  EXPECT_EQ(CreateErr(c, AF_INET6, SOCK_DGRAM, IPPROTO_ICMP), kEPROTONOSUPPORT);
  EXPECT_EQ(CreateErr(c, AF_INET, SOCK_DGRAM, IPPROTO_ICMPV6),
            kEPROTONOSUPPORT);
  {
    // ping_init_sock: an AF_INET6 ping socket is IPv6-only; others follow
    // net.ipv6.bindv6only.
    auto p6 = CreateSocket(c, AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6, O_RDWR);
    ASSERT_TRUE(p6.ok());
    EXPECT_TRUE(AsInetSocket(p6.value().get())->ip_options().v6only);
    auto u6 = CreateSocket(c, AF_INET6, SOCK_DGRAM, 0, O_RDWR);
    ASSERT_TRUE(u6.ok());
    EXPECT_FALSE(AsInetSocket(u6.value().get())->ip_options().v6only);
  }
  // ping_group_range.
  NetNamespace ns;
  ns.sysctl().ping_group_lo = 1;
  ns.sysctl().ping_group_hi = 0;
  Caller c2;
  c2.netns = &ns;
  EXPECT_EQ(CreateErr(c2, AF_INET, SOCK_DGRAM, IPPROTO_ICMP), kEACCES);
  ns.sysctl().ping_group_lo = 100;
  ns.sysctl().ping_group_hi = 200;
  kernel::Credentials cr = kernel::Credentials::User(1000, 50, {150});
  c2.io.creds = &cr;
  EXPECT_EQ(CreateErr(c2, AF_INET, SOCK_DGRAM, IPPROTO_ICMP), Errno(0));
  RegisteredProtocols() = Protocols{};
}

KResult<void> SetIntOpt(InetSocket& s, Caller& c, int level, int name, int v) {
  return s.SetSockOpt(c, level, name,
                      {reinterpret_cast<const uint8_t*>(&v), sizeof(v)});
}
KResult<int> GetIntOpt(InetSocket& s, Caller& c, int level, int name) {
  int v = -12345;
  TRY(size_t n, s.GetSockOpt(c, level, name,
                             {reinterpret_cast<uint8_t*>(&v), sizeof(v)}));
  EXPECT_EQ(n, sizeof(int));
  return v;
}

TEST(IpOptTest, TtlAndTos) {
  TestInet s(AF_INET, SOCK_STREAM, Proto::kTcp);
  Caller c;
  EXPECT_EQ(GetIntOpt(s, c, SOL_IP, IP_TTL).value(), 64);
  EXPECT_TRUE(SetIntOpt(s, c, SOL_IP, IP_TTL, 5).ok());
  EXPECT_EQ(GetIntOpt(s, c, SOL_IP, IP_TTL).value(), 5);
  EXPECT_EQ(SetIntOpt(s, c, SOL_IP, IP_TTL, 0).error(), kEINVAL);
  EXPECT_EQ(SetIntOpt(s, c, SOL_IP, IP_TTL, 256).error(), kEINVAL);
  EXPECT_TRUE(SetIntOpt(s, c, SOL_IP, IP_TTL, -1).ok());
  EXPECT_EQ(GetIntOpt(s, c, SOL_IP, IP_TTL).value(), 64);
  EXPECT_EQ(s.SetSockOpt(c, SOL_IP, IP_TTL, {}).error(), kEINVAL);
  // A single byte works.
  uint8_t one = 7;
  EXPECT_TRUE(s.SetSockOpt(c, SOL_IP, IP_TTL, {&one, 1}).ok());
  uint8_t out[1] = {0};
  auto n = s.GetSockOpt(c, SOL_IP, IP_TTL, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 1u);
  EXPECT_EQ(out[0], 7);
  // Stream sockets keep their ECN bits.
  EXPECT_TRUE(SetIntOpt(s, c, SOL_IP, IP_TOS, 0x13).ok());
  EXPECT_EQ(GetIntOpt(s, c, SOL_IP, IP_TOS).value(), 0x10);
  TestInet u(AF_INET, SOCK_DGRAM, Proto::kUdp);
  EXPECT_TRUE(SetIntOpt(u, c, SOL_IP, IP_TOS, 0x13).ok());
  EXPECT_EQ(GetIntOpt(u, c, SOL_IP, IP_TOS).value(), 0x13);
  EXPECT_TRUE(SetIntOpt(u, c, SOL_IP, IP_TOS, 0x1ff).ok());
  EXPECT_EQ(GetIntOpt(u, c, SOL_IP, IP_TOS).value(), 0xff);
  // Multicast TTL: not for stream sockets.
  EXPECT_EQ(SetIntOpt(s, c, SOL_IP, IP_MULTICAST_TTL, 3).error(), kEINVAL);
  EXPECT_TRUE(SetIntOpt(u, c, SOL_IP, IP_MULTICAST_TTL, -1).ok());
  EXPECT_EQ(GetIntOpt(u, c, SOL_IP, IP_MULTICAST_TTL).value(), 1);
}

TEST(IpOptTest, FlagsLevelsAndErrors) {
  TestInet s(AF_INET, SOCK_DGRAM, Proto::kUdp);
  Caller c;
  EXPECT_EQ(GetIntOpt(s, c, SOL_IP, IP_PKTINFO).value(), 0);
  EXPECT_TRUE(SetIntOpt(s, c, SOL_IP, IP_PKTINFO, 5).ok());
  EXPECT_EQ(GetIntOpt(s, c, SOL_IP, IP_PKTINFO).value(), 1);
  EXPECT_TRUE(s.ip_options().pktinfo);
  EXPECT_EQ(GetIntOpt(s, c, SOL_IP, IP_MTU_DISCOVER).value(), 1);
  EXPECT_EQ(SetIntOpt(s, c, SOL_IP, IP_MTU_DISCOVER, 6).error(), kEINVAL);
  EXPECT_EQ(GetIntOpt(s, c, SOL_IP, IP_MULTICAST_LOOP).value(), 1);
  EXPECT_EQ(SetIntOpt(s, c, SOL_IP, IP_MULTICAST_ALL, 2).error(), kEINVAL);
  EXPECT_EQ(SetIntOpt(s, c, SOL_IP, IP_HDRINCL, 1).error(), kENOPROTOOPT);
  EXPECT_EQ(SetIntOpt(s, c, SOL_IP, 9999, 1).error(), kENOPROTOOPT);
  EXPECT_EQ(GetIntOpt(s, c, SOL_IP, IP_MTU).error(), kENOTCONN);
  // SOL_IPV6 on AF_INET; unknown levels.
  EXPECT_EQ(SetIntOpt(s, c, SOL_IPV6, IPV6_V6ONLY, 1).error(), kENOPROTOOPT);
  EXPECT_EQ(SetIntOpt(s, c, 1234, 1, 1).error(), kENOPROTOOPT);
  // SOL_SOCKET reaches the base.
  EXPECT_EQ(GetIntOpt(s, c, SOL_SOCKET, SO_TYPE).value(), SOCK_DGRAM);
  // IP_TRANSPARENT needs CAP_NET_RAW or CAP_NET_ADMIN.
  kernel::Credentials user = kernel::Credentials::User(1000, 1000);
  Caller cu;
  cu.io.creds = &user;
  EXPECT_EQ(SetIntOpt(s, cu, SOL_IP, IP_TRANSPARENT, 1).error(), kEPERM);
  EXPECT_TRUE(SetIntOpt(s, cu, SOL_IP, IP_TRANSPARENT, 0).ok());
  EXPECT_TRUE(SetIntOpt(s, c, SOL_IP, IP_TRANSPARENT, 1).ok());
  // IP_LOCAL_PORT_RANGE: exactly 4 bytes, lo <= hi unless one is 0.
  EXPECT_EQ(
      SetIntOpt(s, c, SOL_IP, IP_LOCAL_PORT_RANGE, 40000 | 30000 << 16).error(),
      kEINVAL);
  EXPECT_TRUE(
      SetIntOpt(s, c, SOL_IP, IP_LOCAL_PORT_RANGE, 40000 | 50000 << 16).ok());
  EXPECT_EQ(GetIntOpt(s, c, SOL_IP, IP_LOCAL_PORT_RANGE).value(),
            40000 | 50000 << 16);
  // Multicast membership on lo.
  ip_mreqn m = {};
  m.imr_multiaddr.s_addr = htonl(0xe0000001);
  auto mreq = [&](int name) {
    return s.SetSockOpt(c, SOL_IP, name,
                        {reinterpret_cast<const uint8_t*>(&m), sizeof(m)});
  };
  EXPECT_EQ(mreq(IP_ADD_MEMBERSHIP).error(), kENODEV);  // no route
  m.imr_ifindex = 1;
  EXPECT_TRUE(mreq(IP_ADD_MEMBERSHIP).ok());
  EXPECT_EQ(mreq(IP_ADD_MEMBERSHIP).error(), kEADDRINUSE);
  EXPECT_TRUE(mreq(IP_DROP_MEMBERSHIP).ok());
  EXPECT_EQ(mreq(IP_DROP_MEMBERSHIP).error(), kEADDRNOTAVAIL);
  m.imr_multiaddr.s_addr = htonl(0x7f000001);
  EXPECT_EQ(mreq(IP_ADD_MEMBERSHIP).error(), kEINVAL);
}

TEST(Ipv6OptTest, V6only) {
  TestInet s(AF_INET6, SOCK_STREAM, Proto::kTcp);
  Caller c;
  EXPECT_EQ(GetIntOpt(s, c, SOL_IPV6, IPV6_V6ONLY).value(), 0);
  EXPECT_TRUE(SetIntOpt(s, c, SOL_IPV6, IPV6_V6ONLY, 1).ok());
  EXPECT_EQ(GetIntOpt(s, c, SOL_IPV6, IPV6_V6ONLY).value(), 1);
  uint8_t one = 1;
  EXPECT_EQ(s.SetSockOpt(c, SOL_IPV6, IPV6_V6ONLY, {&one, 1}).error(), kEINVAL);
  EXPECT_TRUE(SetIntOpt(s, c, SOL_IPV6, IPV6_V6ONLY, 0).ok());
  ASSERT_TRUE(s.BindTo(c, {IpAddr::AnyV6(), 0}).ok());
  EXPECT_EQ(SetIntOpt(s, c, SOL_IPV6, IPV6_V6ONLY, 1).error(), kEINVAL);
  // SOL_IP works on AF_INET6.
  EXPECT_TRUE(SetIntOpt(s, c, SOL_IP, IP_TTL, 9).ok());
  EXPECT_EQ(GetIntOpt(s, c, SOL_IPV6, IPV6_UNICAST_HOPS).value(), 64);
  EXPECT_TRUE(SetIntOpt(s, c, SOL_IPV6, IPV6_UNICAST_HOPS, 3).ok());
  EXPECT_EQ(GetIntOpt(s, c, SOL_IPV6, IPV6_UNICAST_HOPS).value(), 3);
  EXPECT_EQ(SetIntOpt(s, c, SOL_IPV6, IPV6_UNICAST_HOPS, 256).error(), kEINVAL);
  EXPECT_EQ(SetIntOpt(s, c, SOL_IPV6, IPV6_MULTICAST_HOPS, 1).error(),
            kENOPROTOOPT);
  EXPECT_TRUE(SetIntOpt(s, c, SOL_IPV6, IPV6_TCLASS, 0x13).ok());
  EXPECT_EQ(GetIntOpt(s, c, SOL_IPV6, IPV6_TCLASS).value(), 0x10);
  EXPECT_EQ(SetIntOpt(s, c, SOL_IPV6, IPV6_TCLASS, 256).error(), kEINVAL);
  EXPECT_EQ(GetIntOpt(s, c, SOL_IPV6, IPV6_AUTOFLOWLABEL).value(), 1);
  EXPECT_EQ(GetIntOpt(s, c, SOL_IPV6, 9999).error(), kENOPROTOOPT);
}

TEST(Ipv6OptTest, BindingV6AddressSetsV6only) {
  TestInet s(AF_INET6, SOCK_DGRAM, Proto::kUdp);
  Caller c;
  ASSERT_TRUE(s.BindTo(c, {IpAddr::LoopbackV6(), 0}).ok());
  EXPECT_EQ(GetIntOpt(s, c, SOL_IPV6, IPV6_V6ONLY).value(), 1);
}

TEST(BindTest, Checks) {
  Caller c;
  {
    auto s = std::make_shared<TestInet>(AF_INET, SOCK_STREAM, Proto::kTcp);
    EXPECT_EQ(s->BindTo(c, {IpAddr::V4(0x0a000001), 80}).error(),
              kEADDRNOTAVAIL);
    ASSERT_TRUE(s->BindTo(c, {IpAddr::V4(0x7f000002), 0}).ok());
    InetAddr l = s->LocalAddr();
    EXPECT_EQ(l.ip, IpAddr::V4(0x7f000002));
    EXPECT_GE(l.port, 32768);
    EXPECT_LE(l.port, 60999);
    EXPECT_EQ(s->BindTo(c, {IpAddr::LoopbackV4(), 0}).error(), kEINVAL);
    s->Unbind();
    EXPECT_EQ(s->LocalAddr().port, 0);
  }
  {
    // Multicast and broadcast addresses bind; IP_FREEBIND allows others.
    auto s = std::make_shared<TestInet>(AF_INET, SOCK_DGRAM, Proto::kUdp);
    EXPECT_TRUE(s->BindTo(c, {IpAddr::V4(0xe0000001), 0}).ok());
    auto t = std::make_shared<TestInet>(AF_INET, SOCK_DGRAM, Proto::kUdp);
    EXPECT_TRUE(t->BindTo(c, {IpAddr::V4(0x7fffffff), 0}).ok());
    auto u = std::make_shared<TestInet>(AF_INET, SOCK_DGRAM, Proto::kUdp);
    EXPECT_TRUE(SetIntOpt(*u, c, SOL_IP, IP_FREEBIND, 1).ok());
    EXPECT_TRUE(u->BindTo(c, {IpAddr::V4(0x0a000001), 0}).ok());
  }
  {
    // Privileged ports.
    kernel::Credentials user = kernel::Credentials::User(1000, 1000);
    Caller cu;
    cu.io.creds = &user;
    auto s = std::make_shared<TestInet>(AF_INET, SOCK_STREAM, Proto::kTcp);
    EXPECT_EQ(s->BindTo(cu, {IpAddr::LoopbackV4(), 80}).error(), kEACCES);
    // Address first: a foreign address is EADDRNOTAVAIL even then.
    EXPECT_EQ(s->BindTo(cu, {IpAddr::V4(0x0a000001), 80}).error(),
              kEADDRNOTAVAIL);
    EXPECT_TRUE(s->BindTo(c, {IpAddr::LoopbackV4(), 80}).ok());
  }
  {
    auto s = std::make_shared<TestInet>(AF_INET6, SOCK_STREAM, Proto::kTcp);
    uint8_t mc[16] = {0xff, 0x0e};
    EXPECT_EQ(s->BindTo(c, {IpAddr::FromV6Bytes(mc), 0}).error(), kEINVAL);
    uint8_t ll[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    EXPECT_EQ(s->BindTo(c, {IpAddr::FromV6Bytes(ll), 0}).error(), kEINVAL);
    uint8_t other[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                         0,    0,    0,    0,    0, 0, 0, 1};
    EXPECT_EQ(s->BindTo(c, {IpAddr::FromV6Bytes(other), 0}).error(),
              kEADDRNOTAVAIL);
    EXPECT_TRUE(SetIntOpt(*s, c, SOL_IPV6, IPV6_V6ONLY, 1).ok());
    EXPECT_EQ(s->BindTo(c, {IpAddr::LoopbackV4(), 0}).error(), kEINVAL);
    EXPECT_TRUE(s->BindTo(c, {IpAddr::LoopbackV6(), 0}).ok());
  }
}

TEST(BindTest, ConnectAndSources) {
  Caller c;
  auto s = std::make_shared<TestInet>(AF_INET, SOCK_STREAM, Proto::kTcp);
  EXPECT_EQ(s->SourceFor(c, IpAddr::V4(0x7f000005)).value(),
            IpAddr::LoopbackV4());
  EXPECT_EQ(s->SourceFor(c, IpAddr::V4(0x08080808)).error(), kENETUNREACH);
  auto l = s->ConnectBinding(c, {IpAddr::LoopbackV4(), 80});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->ip, IpAddr::LoopbackV4());
  EXPECT_NE(l->port, 0);
  EXPECT_EQ(s->LocalAddr(), l.value());
  ASSERT_TRUE(s->RemoteAddr().has_value());
  EXPECT_EQ(s->RemoteAddr()->port, 80);

  auto u = std::make_shared<TestInet>(AF_INET6, SOCK_DGRAM, Proto::kUdp);
  auto a = u->AutoBind(c);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->ip, IpAddr::AnyV6());
  auto cb = u->ConnectBinding(c, {IpAddr::LoopbackV6(), 53});
  ASSERT_TRUE(cb.ok());
  EXPECT_EQ(cb->ip, IpAddr::LoopbackV6());
  EXPECT_EQ(cb->port, a->port);
  u->DisconnectBinding();
  EXPECT_EQ(u->LocalAddr().ip, IpAddr::AnyV6());
  EXPECT_EQ(u->SourceFor(c, IpAddr::LoopbackV4()).value(),
            IpAddr::LoopbackV4());
  // The table sees the socket.
  EXPECT_EQ(u->table().FindReceiver({IpAddr::LoopbackV6(), a->port},
                                    {IpAddr::LoopbackV6(), 1}),
            u);
}

TEST(BindTest, AddressNoPort) {
  Caller c;
  auto s = std::make_shared<TestInet>(AF_INET, SOCK_STREAM, Proto::kTcp);
  ASSERT_TRUE(SetIntOpt(*s, c, SOL_IP, IP_BIND_ADDRESS_NO_PORT, 1).ok());
  ASSERT_TRUE(s->BindTo(c, {IpAddr::V4(0x7f000003), 0}).ok());
  EXPECT_EQ(s->binding(), nullptr);
  EXPECT_EQ(s->LocalAddr().ip, IpAddr::V4(0x7f000003));
  EXPECT_EQ(s->LocalAddr().port, 0);
  // inet_num is still 0: bind may be repeated.
  ASSERT_TRUE(s->BindTo(c, {IpAddr::V4(0x7f000004), 0}).ok());
  auto l = s->ConnectBinding(c, {IpAddr::LoopbackV4(), 80});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->ip, IpAddr::V4(0x7f000004));
  EXPECT_NE(l->port, 0);
  EXPECT_EQ(GetIntOpt(*s, c, SOL_IP, IP_PROTOCOL).value(), l->port);
}

TEST(IpOptTest, MulticastIf) {
  TestInet u(AF_INET, SOCK_DGRAM, Proto::kUdp);
  Caller c;
  in_addr a = {htonl(0x7f000001)};
  ASSERT_TRUE(u.SetSockOpt(c, SOL_IP, IP_MULTICAST_IF,
                           {reinterpret_cast<const uint8_t*>(&a), sizeof(a)})
                  .ok());
  in_addr got = {};
  auto n = u.GetSockOpt(c, SOL_IP, IP_MULTICAST_IF,
                        {reinterpret_cast<uint8_t*>(&got), sizeof(got)});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), sizeof(got));
  EXPECT_EQ(got.s_addr, a.s_addr);
  EXPECT_EQ(u.ip_options().multicast_if, 1);
  in_addr far = {htonl(0x0a000001)};
  EXPECT_EQ(u.SetSockOpt(c, SOL_IP, IP_MULTICAST_IF,
                         {reinterpret_cast<const uint8_t*>(&far), sizeof(far)})
                .error(),
            kEADDRNOTAVAIL);
  EXPECT_EQ(u.SetSockOpt(c, SOL_IP, IP_MULTICAST_IF,
                         {reinterpret_cast<const uint8_t*>(&far), 3})
                .error(),
            kEINVAL);
  TestInet t(AF_INET, SOCK_STREAM, Proto::kTcp);
  EXPECT_EQ(t.SetSockOpt(c, SOL_IP, IP_MULTICAST_IF,
                         {reinterpret_cast<const uint8_t*>(&a), sizeof(a)})
                .error(),
            kEINVAL);
}

TEST(IpOptTest, IpOptions) {
  TestInet s(AF_INET, SOCK_STREAM, Proto::kTcp);
  Caller c;
  // A record route of 2 addresses, then NOPs: kept, padded to 4.
  const uint8_t rr[] = {7, 11, 4, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1};
  ASSERT_TRUE(s.SetSockOpt(c, SOL_IP, IP_OPTIONS, rr).ok());
  uint8_t out[40] = {};
  auto n = s.GetSockOpt(c, SOL_IP, IP_OPTIONS, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 16u);
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(out[12], 1);
  EXPECT_EQ(out[13], 0);
  // After END everything reads END.
  const uint8_t end[] = {1, 0, 1, 1};
  ASSERT_TRUE(s.SetSockOpt(c, SOL_IP, IP_OPTIONS, end).ok());
  n = s.GetSockOpt(c, SOL_IP, IP_OPTIONS, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 4u);
  EXPECT_EQ(out[2], 0);
  // Malformed: a length past the end, two record routes, too long.
  const uint8_t bad[] = {7, 12, 4, 0};
  EXPECT_EQ(s.SetSockOpt(c, SOL_IP, IP_OPTIONS, bad).error(), kEINVAL);
  const uint8_t two[] = {7, 3, 4, 7, 3, 4, 0, 0};
  EXPECT_EQ(s.SetSockOpt(c, SOL_IP, IP_OPTIONS, two).error(), kEINVAL);
  uint8_t big[41] = {};
  EXPECT_EQ(s.SetSockOpt(c, SOL_IP, IP_OPTIONS, big).error(), kEINVAL);
  // An unknown option needs CAP_NET_RAW.
  const uint8_t unknown[] = {30, 4, 0, 0};
  kernel::Credentials user = kernel::Credentials::User(1000, 1000);
  Caller cu;
  cu.io.creds = &user;
  EXPECT_EQ(s.SetSockOpt(cu, SOL_IP, IP_OPTIONS, unknown).error(), kEINVAL);
  EXPECT_TRUE(s.SetSockOpt(c, SOL_IP, IP_OPTIONS, unknown).ok());
  // Empty clears.
  EXPECT_TRUE(s.SetSockOpt(c, SOL_IP, IP_OPTIONS, {}).ok());
  n = s.GetSockOpt(c, SOL_IP, IP_OPTIONS, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 0u);
}

TEST(LocalTest, Addresses) {
  NetNamespace ns;
  EXPECT_TRUE(IsLocalAddress(ns, IpAddr::LoopbackV4()));
  EXPECT_TRUE(IsLocalAddress(ns, IpAddr::V4(0x7f123456)));
  EXPECT_TRUE(IsLocalAddress(ns, IpAddr::LoopbackV6()));
  EXPECT_FALSE(IsLocalAddress(ns, IpAddr::V4(0x0a000001)));
  ASSERT_TRUE(ns.Get<stack::Interfaces>().ChangeFlags(1, 0).ok());
  EXPECT_FALSE(IsLocalAddress(ns, IpAddr::LoopbackV6()));
  EXPECT_TRUE(IsLocalAddress(ns, IpAddr::LoopbackV4()));  // kept
}

}  // namespace
}  // namespace sandbox::net::inet
