// Ping sockets (net/ipv4/ping.c, net/ipv6/ping.c): ICMP echo requests sent
// by unprivileged processes, the identifier being the socket's "port".
// An echo request to a local address is answered here as icmp_echo /
// icmpv6_echo_reply would answer it, and the reply delivered to the ping
// socket bound to its identifier (ping_lookup).
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "sentry/net/inet/mib.h"
#include "sentry/net/udp/udp.h"

namespace sandbox::net::udp {
namespace {

constexpr uint8_t kIcmpEcho = 8, kIcmpEchoReply = 0;
constexpr uint8_t kIcmp6EchoRequest = 128, kIcmp6EchoReply = 129;

}  // namespace

PingSocket::PingSocket(int family, uint32_t flags, const Ucred& owner,
                       NetNamespace& ns)
    : DgramSocket(family, family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6,
                  flags, owner, inet::Proto::kPing, ns) {}

// ping_bind -> ping_check_bind_addr: the whole sockaddr (sizeof
// sockaddr_in6 for IPv6: 28 bytes), the family; the port is the ident.
KResult<void> PingSocket::Bind(Caller& c, const SockAddr& addr) {
  if (!v6()) {
    if (addr.len < sizeof(sockaddr_in)) return kEINVAL;
  } else {
    if (addr.len < sizeof(sockaddr_in6)) return kEINVAL;
    if (addr.family() != AF_INET6) return kEAFNOSUPPORT;
    TRY(inet::InetAddr a,
        inet::ParseSockAddr(AF_INET6, addr, inet::AddrUse::kBind));
    if (a.ip.is_v4()) return kEINVAL;  // IPV6_ADDR_MAPPED
  }
  return DgramSocket::Bind(c, addr);
}

KResult<size_t> PingSocket::RecvMsg(Caller& c, MessageIo& data,
                                    RecvRequest& req) {
  if (req.flags & MSG_OOB) return kEOPNOTSUPP;  // ping_recvmsg
  return DgramSocket::RecvMsg(c, data, req);
}

// ping_v4_sendmsg / ping_v6_sendmsg with ping_common_sendmsg.
KResult<size_t> PingSocket::SendMsg(Caller& c, MessageIo& data,
                                    SendRequest& req) {
  const size_t len = data.size();
  TRY_VOID(EnsureBound(c));  // inet_send_prepare
  if (len > 0xFFFF) return kEMSGSIZE;
  if (req.flags & MSG_OOB) return kEOPNOTSUPP;
  if (len < kIcmpHdrLen) return kEINVAL;
  std::vector<uint8_t> msg(len);
  {
    TRY(size_t got, data.CopyIn(0, absl::MakeSpan(msg)));
    if (got != len) return kEFAULT;
  }
  const uint8_t want = v6() ? kIcmp6EchoRequest : kIcmpEcho;
  if (msg[0] != want || msg[1] != 0) return kEINVAL;

  inet::InetAddr dst;
  if (req.to.has_value() && req.to->len > 0) {
    const SockAddr& a = *req.to;
    if (a.len < (v6() ? sizeof(sockaddr_in6) : sizeof(sockaddr_in))) {
      return kEINVAL;
    }
    if (a.family() != family()) return kEAFNOSUPPORT;
    TRY(dst, inet::ParseSockAddr(family(), a, inet::AddrUse::kSendTo));
    if (v6() && dst.ip.is_v4()) return kEINVAL;  // IPV6_ADDR_MAPPED
  } else {
    {
      absl::MutexLock l(&mu_);
      if (!connected_) return kEDESTADDRREQ;
    }
    std::optional<inet::InetAddr> peer = Peer();
    if (!peer.has_value()) return kEDESTADDRREQ;
    dst = *peer;
  }
  TRY(SendParams p, ParseSendCmsgs(req.control.raw, !v6()));
  if (dst.ip.IsAny()) {
    dst.ip = v6() ? inet::IpAddr::LoopbackV6() : inet::IpAddr::LoopbackV4();
  }
  TRY(RouteKind route, Route(c, dst.ip));
  const std::optional<inet::InetAddr> local = Local();
  if (route == RouteKind::kOffHost ||
      (route == RouteKind::kBroadcast && dst.ip.IsLimitedBroadcast() &&
       (!local.has_value() || local->ip.IsAny()))) {
    // No host path for ICMP: outside loopback, nothing routes.
    return kENETUNREACH;
  }
  if (route == RouteKind::kBroadcast && !sol_flags().broadcast) {
    return kEACCES;
  }
  TRY_VOID(SendChecks());
  inet::InetAddr src;
  src.port = local.has_value() ? local->port : 0;
  if (p.src.has_value() && !p.src->IsAny()) {
    src.ip = *p.src;
  } else if (local.has_value() && !local->ip.IsAny()) {
    src.ip = local->ip;
  } else {
    TRY(src.ip, SourceFor(c, dst.ip));
  }
  // The identifier is the socket's (ping_v4_push_pending_frames).
  const uint16_t ident = src.port;
  msg[4] = static_cast<uint8_t>(ident >> 8);
  msg[5] = static_cast<uint8_t>(ident & 0xff);
  // icmp_out_count / icmpv6_push_pending_frames: the request goes out.
  inet::Count(ns(), inet::IcmpMib::kOutMsgs, v6());
  inet::CountIcmpMsg(ns(), v6(), /*out=*/true, want);
  inet::Count(ns(), inet::IpMib::kOutRequests, v6());
  if (route == RouteKind::kBroadcast) {
    // icmp_echo_ignore_broadcasts (1): nobody answers.
    return len;
  }

  // The reply: the request with the reply's type, from the address the
  // request went to, checksummed as the replier's stack fills it (IPv4:
  // over the ICMP message; ICMPv6: with the pseudo-header).
  // The request arrives; the reply leaves and arrives.
  const uint8_t reply = v6() ? kIcmp6EchoReply : kIcmpEchoReply;
  CountArrival(!v6());
  inet::Count(ns(), inet::IcmpMib::kInMsgs, v6());
  inet::CountIcmpMsg(ns(), v6(), /*out=*/false, want);
  inet::Count(ns(), inet::IcmpMib::kOutMsgs, v6());
  inet::CountIcmpMsg(ns(), v6(), /*out=*/true, reply);
  inet::Count(ns(), inet::IpMib::kOutRequests, v6());
  CountArrival(!v6());
  inet::Count(ns(), inet::IcmpMib::kInMsgs, v6());
  inet::CountIcmpMsg(ns(), v6(), /*out=*/false, reply);
  msg[0] = reply;
  msg[2] = msg[3] = 0;
  uint16_t sum;
  if (!v6()) {
    sum = InetChecksum(msg);
  } else {
    sum = InetChecksum(
        msg, Icmp6PseudoSum(dst.ip, src.ip, static_cast<uint32_t>(len)));
  }
  msg[2] = static_cast<uint8_t>(sum >> 8);
  msg[3] = static_cast<uint8_t>(sum & 0xff);

  const inet::IpOptions ip = ip_options();
  Datagram d;
  d.data = std::move(msg);
  d.src.ip = dst.ip;
  d.src.port = 0;
  d.dst.ip = src.ip;
  d.dst.port = ident;
  d.v4 = !v6();
  // icmp_reply keeps the request's TOS; the replier's TTL is the default.
  d.tos = p.tos >= 0 ? p.tos : (v6() ? ip.tclass : ip.tos);
  d.ttl = static_cast<int>(v6() ? ns().sysctl().ip6_hop_limit.load()
                                : ns().sysctl().ip_default_ttl.load());
  d.tstamp_ns = RealtimeNowNs();
  std::shared_ptr<Socket> rs =
      inet::PortTable::Of(ns(), inet::Proto::kPing).FindReceiver(d.dst, d.src);
  if (DgramSocket* r = AsDgramSocket(rs.get())) r->Deliver(std::move(d));
  return len;
}

}  // namespace sandbox::net::udp
