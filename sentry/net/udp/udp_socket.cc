// UDP's send path and SOL_UDP: udp_sendmsg / udpv6_sendmsg and
// udp_lib_setsockopt, for datagrams that stay on loopback.
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "sentry/net/inet/mib.h"
#include "sentry/net/udp/udp.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101
#define UDP_NO_CHECK6_RX 102
#endif

namespace sandbox::net::udp {
namespace {

// UDP_MAX_SEGMENTS: the most segments one UDP_SEGMENT send makes.
constexpr size_t kMaxSegments = 128;

// The quoted payload an ICMP error carries back: icmp_send quotes at most
// 576 bytes of ICMP datagram (so 576 - 20 - 8 - 20 - 8 of UDP payload);
// icmp6_send IPV6_MIN_MTU (1280 - 40 - 8 - 40 - 8).
constexpr size_t kQuote4 = 520;
constexpr size_t kQuote6 = 1184;

}  // namespace

UdpSocket::UdpSocket(int family, uint32_t flags, const Ucred& owner,
                     NetNamespace& ns)
    : DgramSocket(family, IPPROTO_UDP, flags, owner, inet::Proto::kUdp, ns) {}

void UdpSocket::SendLocal(Caller& c, RouteKind route, const inet::InetAddr& src,
                          const inet::InetAddr& dst, bool v4, int tos, int ttl,
                          std::vector<uint8_t> payload) {
  (void)c;
  Datagram d;
  d.src = src;
  d.dst = dst;
  d.v4 = v4;
  d.tos = tos;
  d.ttl = ttl;
  d.tstamp_ns = RealtimeNowNs();
  inet::Count(ns(), inet::UdpMib::kOutDatagrams, !v4);
  inet::Count(ns(), inet::IpMib::kOutRequests, !v4);
  inet::PortTable& table = inet::PortTable::Of(ns(), inet::Proto::kUdp);
  if (route == RouteKind::kMulticast) {
    // lo accepts the group only if a socket joined it there
    // (ip_check_mc_rcu); then __udp4_lib_mcast_deliver gives a copy to
    // every socket on the port bound to the wildcard or the group that
    // joined it or has IP_MULTICAST_ALL (ip_mc_sf_allow). One copy on lo
    // whatever IP_MULTICAST_LOOP says (lo loops what it transmits).
    const uint32_t group = dst.ip.v4();
    std::vector<std::pair<std::shared_ptr<Socket>, bool>> ports;
    bool lo_has_group = false;
    for (const inet::BindingState& s : table.List()) {
      std::shared_ptr<Socket> owner = s.owner.lock();
      DgramSocket* r = AsDgramSocket(owner.get());
      if (r == nullptr) continue;
      const inet::IpOptions o = r->ip_options();
      bool joined = false;
      for (const auto& g : o.mc_groups) {
        if (g.group == group) joined = true;
      }
      lo_has_group = lo_has_group || joined;
      if (s.req.local.port != dst.port) continue;
      const inet::IpAddr ip =
          s.local.has_value() ? s.local->ip : s.req.local.ip;
      if (s.req.v6_socket && s.req.v6only) continue;
      if (!ip.IsAny() && ip != dst.ip) continue;
      if (s.remote.has_value() &&
          (s.remote->ip != src.ip || s.remote->port != src.port)) {
        continue;
      }
      if (!joined && !o.multicast_all) continue;
      ports.emplace_back(std::move(owner), joined);
    }
    if (!lo_has_group) return;
    d.data = std::move(payload);
    for (auto& [owner, joined] : ports) {
      DgramSocket* r = AsDgramSocket(owner.get());
      r->CountArrival(v4);
      r->Deliver(d);
    }
    return;
  }
  if (route == RouteKind::kBroadcast) {
    // __udp4_lib_mcast_deliver: a copy for every socket on the port whose
    // address is the wildcard or the destination and which is not
    // connected elsewhere.
    d.data = std::move(payload);
    for (const inet::BindingState& s : table.List()) {
      if (s.req.local.port != dst.port) continue;
      const inet::IpAddr ip =
          s.local.has_value() ? s.local->ip : s.req.local.ip;
      if (s.req.v6_socket) {
        if (s.req.v6only) continue;
        if (!(ip == inet::IpAddr::AnyV6() || ip.IsAny() || ip == dst.ip)) {
          continue;
        }
      } else if (!ip.IsAny() && ip != dst.ip) {
        continue;
      }
      if (s.remote.has_value() &&
          (s.remote->ip != src.ip || s.remote->port != src.port)) {
        continue;
      }
      std::shared_ptr<Socket> owner = s.owner.lock();
      if (DgramSocket* r = AsDgramSocket(owner.get())) {
        r->CountArrival(v4);
        r->Deliver(d);
      }
    }
    return;
  }
  std::shared_ptr<Socket> rs = table.FindReceiver(dst, src);
  CountArrival(v4);
  if (DgramSocket* r = AsDgramSocket(rs.get())) {
    d.data = std::move(payload);
    r->Deliver(std::move(d));
    return;
  }
  // __udp4_lib_rcv: NoPorts, and the ICMP error sent and received back.
  inet::Count(ns(), inet::UdpMib::kNoPorts, !v4);
  const uint8_t icmp_type = v4 ? 3 : 1;
  inet::Count(ns(), inet::IcmpMib::kOutMsgs, !v4);
  inet::CountIcmpMsg(ns(), !v4, /*out=*/true, icmp_type);
  inet::Count(ns(), inet::IpMib::kOutRequests, !v4);
  CountArrival(v4);
  inet::Count(ns(), inet::IcmpMib::kInMsgs, !v4);
  inet::CountIcmpMsg(ns(), !v4, /*out=*/false, icmp_type);
  // Nobody on the port: the ICMP port unreachable (icmp_send from
  // __udp4_lib_rcv) comes back to this socket (__udp4_lib_err), from the
  // address the datagram was sent to.
  ErrReport e;
  e.v4 = v4;
  e.dst = dst;
  e.offender = dst.ip;
  e.local = src.ip;
  e.ttl = static_cast<int>(v4 ? ns().sysctl().ip_default_ttl.load()
                              : ns().sysctl().ip6_hop_limit.load());
  e.err = ECONNREFUSED;
  e.type = v4 ? 3 : 1;  // ICMP_DEST_UNREACH / ICMPV6_DEST_UNREACH
  e.code = v4 ? 3 : 4;  // ICMP_PORT_UNREACH / ICMPV6_PORT_UNREACH
  payload.resize(std::min(payload.size(), v4 ? kQuote4 : kQuote6));
  e.payload = std::move(payload);
  e.tstamp_ns = d.tstamp_ns;
  DeliverError(std::move(e), /*harderr=*/true);
}

KResult<size_t> UdpSocket::SendMsg(Caller& c, MessageIo& data,
                                   SendRequest& req) {
  const size_t len = data.size();
  // inet_send_prepare: the autobind comes first.
  TRY_VOID(EnsureBound(c));
  if (len > 0xFFFF) return kEMSGSIZE;
  if (!v6() && (req.flags & MSG_OOB)) return kEOPNOTSUPP;
  bool corkreq;
  {
    absl::ReleasableMutexLock l(&udp_mu_);
    corkreq = cork_ || (req.flags & MSG_MORE);
    if (pending_.has_value()) {
      // do_append_data: the address of this send is not looked at.
      Pending& p = *pending_;
      const size_t have = p.data.size();
      if (have + len > (p.v4 ? kMaxUdp4Payload : kMaxUdp6Payload)) {
        pending_.reset();  // udp_flush_pending_frames
        return kEMSGSIZE;
      }
      p.data.resize(have + len);
      if (len != 0) {
        KResult<size_t> got =
            data.CopyIn(0, absl::MakeSpan(p.data.data() + have, len));
        if (!got.ok() || *got != len) {
          pending_.reset();
          return kEFAULT;
        }
      }
      if (corkreq) return len;
      Pending out = std::move(p);
      pending_.reset();
      l.Release();
      Push(c, std::move(out));
      return len;
    }
  }
  const bool named = req.to.has_value() && req.to->len > 0;
  // The destination and which of udp_sendmsg / udpv6_sendmsg handles it.
  inet::InetAddr dst;
  bool have_dst = false;
  bool v4 = !v6();
  if (!v6()) {
    if (req.flags & MSG_OOB) return kEOPNOTSUPP;
    if (named) {
      TRY(dst, inet::ParseSockAddr(AF_INET, *req.to, inet::AddrUse::kSendTo));
      if (dst.port == 0) return kEINVAL;
      have_dst = true;
    }
  } else if (named) {
    const SockAddr& a = *req.to;
    if (a.len < sizeof(sa_family_t)) return kEINVAL;
    switch (a.family()) {
      case AF_INET6: {
        TRY(dst, inet::ParseSockAddr(AF_INET6, a, inet::AddrUse::kSendTo));
        if (dst.port == 0) return kEINVAL;
        have_dst = true;
        v4 = dst.ip.is_v4();
        break;
      }
      case AF_INET: {
        // udpv6_sendmsg: do_udp_sendmsg.
        if (ip_options().v6only) return kENETUNREACH;
        TRY(dst, inet::ParseSockAddr(AF_INET, a, inet::AddrUse::kSendTo));
        if (dst.port == 0) return kEINVAL;
        have_dst = true;
        v4 = true;
        break;
      }
      case AF_UNSPEC:
        break;  // as no address
      default:
        return kEINVAL;
    }
    if (v4 && ip_options().v6only) return kENETUNREACH;
    if (v4 && (req.flags & MSG_OOB)) return kEOPNOTSUPP;
  }
  if (!have_dst) {
    std::optional<inet::InetAddr> peer;
    {
      absl::MutexLock l(&mu_);
      if (!connected_) return kEDESTADDRREQ;
    }
    peer = Peer();
    if (!peer.has_value()) return kEDESTADDRREQ;
    dst = *peer;
    v4 = !v6() || dst.ip.is_v4();
    if (v6() && v4 && (req.flags & MSG_OOB)) return kEOPNOTSUPP;
  }
  // The cmsgs: ip_cmsg_send / ip6_datagram_send_ctl, and udp_cmsg_send's
  // UDP_SEGMENT.
  int gso;
  {
    absl::MutexLock l(&udp_mu_);
    gso = gso_size_;
  }
  for (const ControlMessages::Raw& m : req.control.raw) {
    if (m.level != SOL_UDP) continue;
    if (m.type == UDP_SEGMENT) {
      if (m.data.size() != sizeof(uint16_t)) return kEINVAL;
      uint16_t g;
      memcpy(&g, m.data.data(), sizeof(g));
      gso = g;
    }
  }
  TRY(SendParams p, ParseSendCmsgs(req.control.raw, v4));
  // ip_route_output: the wildcard is loopback (udpv6_sendmsg: "::" means
  // loopback, a BSDism).
  if (dst.ip.IsAny()) {
    dst.ip = v4 ? inet::IpAddr::LoopbackV4() : inet::IpAddr::LoopbackV6();
  }
  TRY(RouteKind route, Route(c, dst.ip));
  const std::optional<inet::InetAddr> local = Local();
  const bool src_specific =
      (local.has_value() && !local->ip.IsAny()) || p.src.has_value();
  if (route == RouteKind::kBroadcast && dst.ip.IsLimitedBroadcast() &&
      !src_specific) {
    // 255.255.255.255 without a source address: no route in a namespace
    // with only lo (fib_lookup fails), as any other off-host address.
    route = RouteKind::kOffHost;
  }
  if (route == RouteKind::kOffHost && v4 && dst.ip.IsMulticast()) {
    // ip_route_output_key_hash_rcu: a multicast destination with a local
    // source, or IP_MULTICAST_IF / IP_PKTINFO naming lo, goes out of lo.
    const inet::IpOptions ipo = ip_options();
    if ((local.has_value() && !local->ip.IsAny() && local->ip.is_v4()) ||
        (p.src.has_value() && p.src->is_v4()) || p.ifindex == 1 ||
        ipo.multicast_if == 1) {
      route = RouteKind::kMulticast;
    }
  }
  if (route == RouteKind::kOffHost) {
    HostPath& hp = DatagramHostPath();
    if (hp.send == nullptr) return kENETUNREACH;
    return hp.send(c, *this, dst, data, p, req.flags);
  }
  if (route == RouteKind::kBroadcast && !sol_flags().broadcast) {
    return kEACCES;
  }
  if (HostPath& hp = DatagramHostPath(); route == RouteKind::kLocal &&
                                         hp.reply != nullptr &&
                                         local.has_value() && local->port) {
    KResult<size_t> sent = kENETUNREACH;
    if (hp.reply(c, local->port, dst, data, &sent)) return sent;
  }
  // __ip_append_data / ip6_append_data.
  if (len > (v4 ? kMaxUdp4Payload : kMaxUdp6Payload)) return kEMSGSIZE;
  if (gso > 0) {
    // udp_send_skb's GSO checks.
    if (len > static_cast<size_t>(gso) * kMaxSegments) return kEINVAL;
  }
  TRY_VOID(SendChecks());
  // The source: IP_PKTINFO's spec_dst / IPV6_PKTINFO if local, else the
  // bound or connected address, else the route's.
  inet::InetAddr src;
  src.port = local.has_value() ? local->port : 0;
  if (p.src.has_value() && !p.src->IsAny()) {
    if (!p.src->IsLoopback() && !inet::IsLocalAddress(ns(), *p.src)) {
      return kEINVAL;
    }
    src.ip = *p.src;
  } else if (local.has_value() && !local->ip.IsAny() &&
             local->ip.is_v4() == dst.ip.is_v4()) {
    src.ip = local->ip;
  } else {
    TRY(src.ip, SourceFor(c, dst.ip));
  }
  std::vector<uint8_t> payload(len);
  if (len != 0) {
    TRY(size_t got, data.CopyIn(0, absl::MakeSpan(payload)));
    if (got != len) return kEFAULT;
  }
  const inet::IpOptions ip = ip_options();
  int tos = p.tos >= 0 ? p.tos : (v4 ? ip.tos : ip.tclass);
  int ttl = p.ttl > 0 ? p.ttl : EffectiveTtl(c, dst.ip);
  if (route == RouteKind::kMulticast && p.ttl <= 0) ttl = ip.multicast_ttl;
  Pending out;
  out.route = route;
  out.src = src;
  out.dst = dst;
  out.v4 = v4;
  out.tos = tos;
  out.ttl = ttl;
  out.gso = gso;
  out.data = std::move(payload);
  if (corkreq) {
    absl::MutexLock l(&udp_mu_);
    if (!pending_.has_value()) {
      pending_ = std::move(out);
      return len;
    }
    // Another thread corked meanwhile (Linux's lock_sock orders them):
    // this one is sent on its own.
  }
  Push(c, std::move(out));
  return len;
}

void UdpSocket::Push(Caller& c, Pending p) {
  const size_t len = p.data.size();
  if (p.gso > 0 && len > static_cast<size_t>(p.gso)) {
    // UDP GSO: the receiver sees segments of gso_size bytes.
    for (size_t off = 0; off < len; off += p.gso) {
      const size_t n = std::min<size_t>(p.gso, len - off);
      std::vector<uint8_t> seg(p.data.begin() + off, p.data.begin() + off + n);
      SendLocal(c, p.route, p.src, p.dst, p.v4, p.tos, p.ttl, std::move(seg));
    }
    return;
  }
  SendLocal(c, p.route, p.src, p.dst, p.v4, p.tos, p.ttl, std::move(p.data));
}

KResult<uint64_t> UdpSocket::SocketIoctl(Caller& c, uint32_t cmd,
                                         uint64_t arg) {
  if (cmd != SIOCOUTQ) return DgramSocket::SocketIoctl(c, cmd, arg);
  int32_t amount = 0;
  {
    absl::MutexLock l(&udp_mu_);
    if (pending_.has_value()) {
      amount = static_cast<int32_t>(TrueSize(pending_->data.size()));
    }
  }
  if (c.io.user == nullptr) return kEFAULT;
  TRY_VOID(c.io.user->CopyOutFull(arg, &amount, sizeof(amount)));
  return uint64_t{0};
}

KResult<void> UdpSocket::SetSockOpt(Caller& c, int level, int name,
                                    absl::Span<const uint8_t> val) {
  if (level != SOL_UDP) return DgramSocket::SetSockOpt(c, level, name, val);
  if (val.size() < sizeof(int)) return kEINVAL;
  int v;
  memcpy(&v, val.data(), sizeof(v));
  absl::ReleasableMutexLock l(&udp_mu_);
  switch (name) {
    case UDP_CORK: {
      cork_ = v != 0;
      if (cork_ || !pending_.has_value()) return OkResult();
      // Uncorking sends what was corked (udp_push_pending_frames).
      Pending p = std::move(*pending_);
      pending_.reset();
      l.Release();
      Push(c, std::move(p));
      return OkResult();
    }
    case UDP_ENCAP:
      // udp_lib_setsockopt: the encapsulations Linux knows (ESP in UDP,
      // L2TP, GTP...) are stored; loopback decapsulates nothing.
      if (v < 0 || v > 7) return kENOPROTOOPT;
      encap_ = v;
      return OkResult();
    case UDP_NO_CHECK6_TX:
      no_check6_tx_ = v != 0;
      return OkResult();
    case UDP_NO_CHECK6_RX:
      no_check6_rx_ = v != 0;
      return OkResult();
    case UDP_SEGMENT:
      if (v < 0 || v > 0xffff) return kEINVAL;
      gso_size_ = v;
      return OkResult();
    case UDP_GRO:
      gro_ = v != 0;
      return OkResult();
    default:
      return kENOPROTOOPT;
  }
}

KResult<size_t> UdpSocket::GetSockOpt(Caller& c, int level, int name,
                                      absl::Span<uint8_t> val) {
  if (level != SOL_UDP) return DgramSocket::GetSockOpt(c, level, name, val);
  int v;
  {
    absl::MutexLock l(&udp_mu_);
    switch (name) {
      case UDP_CORK:
        v = cork_;
        break;
      case UDP_ENCAP:
        v = encap_;
        break;
      case UDP_NO_CHECK6_TX:
        v = no_check6_tx_;
        break;
      case UDP_NO_CHECK6_RX:
        v = no_check6_rx_;
        break;
      case UDP_SEGMENT:
        v = gso_size_;
        break;
      case UDP_GRO:
        v = gro_;
        break;
      default:
        return kENOPROTOOPT;
    }
  }
  const size_t n = std::min(val.size(), sizeof(v));
  memcpy(val.data(), &v, n);
  return n;
}

}  // namespace sandbox::net::udp
