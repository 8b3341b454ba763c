#include "sentry/net/inet/inet_socket.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include <algorithm>

#include "sentry/kernel/auth/credentials.h"
#include "sentry/kernel/log.h"
#include "sentry/net/namespace.h"
#include "sentry/net/stack/interfaces.h"

namespace sandbox::net::inet {
namespace {

constexpr int kSolIp = 0;     // SOL_IP
constexpr int kSolIpv6 = 41;  // SOL_IPV6

// SOL_IP option names (linux/in.h).
enum IpName : int {
  kIpTos = 1,
  kIpTtl = 2,
  kIpHdrincl = 3,
  kIpOptions = 4,
  kIpRouterAlert = 5,
  kIpRecvopts = 6,
  kIpRetopts = 7,
  kIpPktinfo = 8,
  kIpPktoptions = 9,
  kIpMtuDiscover = 10,
  kIpRecverr = 11,
  kIpRecvttl = 12,
  kIpRecvtos = 13,
  kIpMtu = 14,
  kIpFreebind = 15,
  kIpIpsecPolicy = 16,
  kIpXfrmPolicy = 17,
  kIpPasssec = 18,
  kIpTransparent = 19,
  kIpRecvorigdstaddr = 20,
  kIpMinttl = 21,
  kIpNodefrag = 22,
  kIpChecksum = 23,
  kIpBindAddressNoPort = 24,
  kIpRecvfragsize = 25,
  kIpRecverrRfc4884 = 26,
  kIpMulticastIf = 32,
  kIpMulticastTtl = 33,
  kIpMulticastLoop = 34,
  kIpAddMembership = 35,
  kIpDropMembership = 36,
  kIpUnblockSource = 37,
  kIpBlockSource = 38,
  kIpAddSourceMembership = 39,
  kIpDropSourceMembership = 40,
  kIpMsfilter = 41,
  kMcastJoinGroup = 42,
  kMcastMsfilter = 48,
  kIpMulticastAll = 49,
  kIpUnicastIf = 50,
  kIpLocalPortRange = 51,
  kIpProtocol = 52,
};
constexpr int kMrtBase = 200, kMrtMax = kMrtBase + 11;  // ip_mroute_opt

// SOL_IPV6 option names (linux/in6.h, linux/ipv6.h).
enum Ipv6Name : int {
  kIpv6Addrform = 1,
  kIpv62292Pktinfo = 2,
  kIpv62292Hopopts = 3,
  kIpv62292Dstopts = 4,
  kIpv62292Rthdr = 5,
  kIpv62292Pktoptions = 6,
  kIpv6Checksum = 7,
  kIpv62292Hoplimit = 8,
  kIpv6Flowinfo = 11,
  kIpv6UnicastHops = 16,
  kIpv6MulticastIf = 17,
  kIpv6MulticastHops = 18,
  kIpv6MulticastLoop = 19,
  kIpv6AddMembership = 20,
  kIpv6DropMembership = 21,
  kIpv6RouterAlert = 22,
  kIpv6MtuDiscover = 23,
  kIpv6Mtu = 24,
  kIpv6Recverr = 25,
  kIpv6V6only = 26,
  kIpv6JoinAnycast = 27,
  kIpv6LeaveAnycast = 28,
  kIpv6MulticastAll = 29,
  kIpv6RouterAlertIsolate = 30,
  kIpv6RecverrRfc4884 = 31,
  kIpv6FlowlabelMgr = 32,
  kIpv6FlowinfoSend = 33,
  kIpv6IpsecPolicy = 34,
  kIpv6XfrmPolicy = 35,
  kIpv6Hdrincl = 36,
  kIpv6Recvpktinfo = 49,
  kIpv6Pktinfo = 50,
  kIpv6Recvhoplimit = 51,
  kIpv6Hoplimit = 52,
  kIpv6Recvhopopts = 53,
  kIpv6Hopopts = 54,
  kIpv6Rthdrdstopts = 55,
  kIpv6Recvrthdr = 56,
  kIpv6Rthdr = 57,
  kIpv6Recvdstopts = 58,
  kIpv6Dstopts = 59,
  kIpv6Recvpathmtu = 60,
  kIpv6Pathmtu = 61,
  kIpv6Dontfrag = 62,
  kIpv6Recvtclass = 66,
  kIpv6Tclass = 67,
  kIpv6Autoflowlabel = 70,
  kIpv6AddrPreferences = 72,
  kIpv6Minhopcount = 73,
  kIpv6Recvorigdstaddr = 74,
  kIpv6Transparent = 75,
  kIpv6UnicastIf = 76,
  kIpv6Recvfragsize = 77,
  kIpv6Freebind = 78,
};

constexpr int kIpPmtudiscOmit = 5;       // IP_PMTUDISC_OMIT
constexpr int kIpv6PmtudiscOmit = 5;     // IPV6_PMTUDISC_OMIT
constexpr int kIpv6MinMtu = 1280;        // IPV6_MIN_MTU
constexpr int kInetEcnMask = 3;          // INET_ECN_MASK
constexpr int kIgmpMaxMemberships = 20;  // net.ipv4.igmp_max_memberships
constexpr int kCapNetBindService = 10, kCapNetAdmin = 12, kCapNetRaw = 13;

// sockopt_ns_capable / ns_capable: a caller without credentials (tests)
// has every capability.
bool Capable(const Caller& c, int cap) {
  return c.io.creds == nullptr || c.io.creds->HasCapability(cap);
}

stack::Interfaces& IfsOf(NetNamespace& ns) {
  return ns.Get<stack::Interfaces>();
}

// IP_UNICAST_IF / IPV6_UNICAST_IF (ip_sock_set / do_ipv6_setsockopt): an
// int holding the interface index in network byte order; 0 clears it, an
// unknown index is EADDRNOTAVAIL, one other than SO_BINDTODEVICE's EINVAL.
KResult<void> SetUnicastIf(NetNamespace& ns, size_t optlen, int val,
                           int sol_dev, int* out) {
  if (optlen != sizeof(int)) return kEINVAL;
  const int ifindex = static_cast<int>(ntohl(static_cast<uint32_t>(val)));
  if (ifindex == 0) {
    *out = 0;
    return OkResult();
  }
  if (!IfsOf(ns).LinkByIndex(ifindex).has_value()) return kEADDRNOTAVAIL;
  if (sol_dev != 0 && sol_dev != ifindex) return kEINVAL;
  *out = ifindex;
  return OkResult();
}

// Copies `v` (lv bytes) into the option buffer, truncated to its size.
size_t PutOpt(absl::Span<uint8_t> out, const void* v, size_t lv) {
  size_t n = std::min(out.size(), lv);
  memcpy(out.data(), v, n);
  return n;
}

// do_ip_getsockopt's copyval: a buffer shorter than an int gets one byte
// when the value fits one, else min(len, sizeof(int)) bytes of the int.
size_t PutIpVal(absl::Span<uint8_t> out, int val) {
  if (out.size() < sizeof(int) && !out.empty() && val >= 0 && val <= 255) {
    out[0] = static_cast<uint8_t>(val);
    return 1;
  }
  return PutOpt(out, &val, sizeof(val));
}

// do_ipv6_getsockopt: min(len, sizeof(int)) bytes of the int.
size_t PutInt(absl::Span<uint8_t> out, int val) {
  return PutOpt(out, &val, sizeof(val));
}

uint32_t LoadBe32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 |
         p[3];
}

// The options do_ip_setsockopt reads as an int, or as one byte when
// shorter (optlen >= sizeof(char)); optlen 0 reads as 0.
bool IpIntOption(int name) {
  switch (name) {
    case kIpPktinfo:
    case kIpRecvttl:
    case kIpRecvopts:
    case kIpRecvtos:
    case kIpRetopts:
    case kIpTos:
    case kIpTtl:
    case kIpHdrincl:
    case kIpMtuDiscover:
    case kIpRecverr:
    case kIpRouterAlert:
    case kIpFreebind:
    case kIpPasssec:
    case kIpTransparent:
    case kIpMinttl:
    case kIpNodefrag:
    case kIpBindAddressNoPort:
    case kIpUnicastIf:
    case kIpMulticastTtl:
    case kIpMulticastAll:
    case kIpMulticastLoop:
    case kIpRecvorigdstaddr:
    case kIpChecksum:
    case kIpRecvfragsize:
    case kIpRecverrRfc4884:
    case kIpLocalPortRange:
      return true;
    default:
      return false;
  }
}

// __ipv6_addr_needs_scope_id: link-local unicast, interface- and
// link-local multicast.
bool NeedsScopeId(const IpAddr& ip) {
  if (ip.is_v4()) return false;
  if (ip.IsLinkLocalV6()) return true;
  const auto& b = ip.bytes();
  return b[0] == 0xff && ((b[1] & 0x0f) == 1 || (b[1] & 0x0f) == 2);
}

// The IPv4 address classes inet_addr_type gives a bind(2) address.
enum class V4Type { kLocal, kMulticast, kBroadcast, kUnicast };
V4Type ClassifyV4(NetNamespace& ns, const IpAddr& ip) {
  if (ip.IsMulticast()) return V4Type::kMulticast;
  if (ip.IsLimitedBroadcast()) return V4Type::kBroadcast;
  for (const stack::Route& r : IfsOf(ns).Routes(AF_INET)) {
    if (r.table != stack::kTableLocal || r.dst_len > 32) continue;
    const uint32_t dst = LoadBe32(r.dst.data());
    const uint32_t mask = r.dst_len == 0 ? 0 : ~uint32_t{0} << (32 - r.dst_len);
    if ((ip.v4() & mask) != (dst & mask)) continue;
    if (r.type == stack::kRtnBroadcast && r.dst_len == 32) {
      return V4Type::kBroadcast;
    }
    if (r.type == stack::kRtnLocal) return V4Type::kLocal;
  }
  return V4Type::kUnicast;
}

// ip_options_compile for options a user sets (skb == NULL): EINVAL for a
// malformed option, a second source route / record route / timestamp,
// and, without CAP_NET_RAW, CIPSO, security and unknown options or
// timestamp flags. Bytes after an IPOPT_END become IPOPT_END, as there.
bool CompileIpOptions(std::vector<uint8_t>& o, bool net_raw) {
  constexpr uint8_t kEnd = 0, kNoop = 1, kRr = 7, kTs = 68, kLsrr = 131,
                    kSsrr = 137, kRa = 148, kCipso = 134;
  bool srr = false, rr = false, ts = false, cipso = false;
  size_t i = 0;
  while (i < o.size()) {
    const uint8_t type = o[i];
    if (type == kEnd) {
      for (size_t j = i + 1; j < o.size(); j++) o[j] = kEnd;
      return true;
    }
    if (type == kNoop) {
      i++;
      continue;
    }
    const size_t l = o.size() - i;
    if (l < 2) return false;
    const size_t len = o[i + 1];
    if (len < 2 || len > l) return false;
    const uint8_t* p = o.data() + i;
    switch (type) {
      case kSsrr:
      case kLsrr:
        if (len < 3 || p[2] < 4 || srr) return false;
        if (p[2] != 4 || len < 7 || ((len - 3) & 3) != 0) return false;
        srr = true;
        break;
      case kRr:
        if (rr || len < 3 || p[2] < 4) return false;
        if (p[2] <= len && p[2] + 3 > len) return false;
        rr = true;
        break;
      case kTs:
        if (ts || len < 4 || p[2] < 5) return false;
        if (p[2] <= len) {
          if (p[2] + 3 > len) return false;
          switch (p[3] & 0xf) {
            case 0:  // IPOPT_TS_TSONLY
              break;
            case 1:  // IPOPT_TS_TSANDADDR
            case 3:  // IPOPT_TS_PRESPEC
              if (p[2] + 7 > len) return false;
              break;
            default:
              if (!net_raw) return false;
          }
        } else if ((p[3] & 0xf) != 3 && (p[3] >> 4) == 15) {
          return false;
        }
        ts = true;
        break;
      case kRa:
        if (len < 4) return false;
        break;
      case kCipso:
        if (!net_raw || cipso) return false;
        cipso = true;
        break;
      default:  // IPOPT_SEC, IPOPT_SID and unknown ones
        if (!net_raw) return false;
    }
    i += len;
  }
  return true;
}

}  // namespace

bool IsLocalAddress(NetNamespace& ns, const IpAddr& ip) {
  if (ip.is_v4()) return ClassifyV4(ns, ip) == V4Type::kLocal;
  for (const stack::Addr& a : IfsOf(ns).Addrs(AF_INET6)) {
    if (IpAddr::FromV6Bytes(a.addr.data()) == ip) {
      std::optional<stack::Link> l = IfsOf(ns).LinkByIndex(a.index);
      if (l.has_value() && l->up()) return true;
    }
  }
  return false;
}

InetSocket::InetSocket(int family, int type, int protocol, uint32_t flags,
                       const Ucred& owner, Proto proto)
    : Socket(family, type, protocol, flags, owner),
      proto_(proto),
      owner_(owner) {
  // inet6_create does not set the IPv4 MC_ALL bit that inet_create sets.
  if (family == AF_INET6) ip_.multicast_all = false;
}

InetSocket::~InetSocket() {
  absl::MutexLock l(&ip_mu_);
  if (binding_ != nullptr) table().Unbind(binding_);
  binding_.reset();
}

void InetSocket::AttachNamespace(NetNamespace& ns) {
  netns_.store(&ns);
  absl::MutexLock l(&ip_mu_);
  // inet6_create: net.ipv6.bindv6only; ping_init_sock makes an AF_INET6
  // ping socket IPv6-only whatever it says.
  if (v6()) {
    ip_.v6only =
        proto_ == Proto::kPing || ns.sysctl().ip6_bindv6only.load() != 0;
  }
}

NetNamespace& InetSocket::netns() const {
  NetNamespace* ns = netns_.load();
  return ns != nullptr ? *ns : NetNamespace::Root();
}

IpOptions InetSocket::ip_options() const {
  absl::MutexLock l(&ip_mu_);
  return ip_;
}

void InetSocket::InheritOptions(const InetSocket& listener) {
  Socket::InheritOptions(listener);
  IpOptions ip = listener.ip_options();
  // The clone joins no group (mc_list = NULL), and its IP options are the
  // SYN's (ireq_opt), none over loopback.
  ip.mc_groups.clear();
  ip.options.clear();
  absl::MutexLock l(&ip_mu_);
  ip_ = std::move(ip);
}

int InetSocket::EffectiveTtl(Caller&, const IpAddr& dst) const {
  NetSysctls& sys = netns().sysctl();
  absl::MutexLock l(&ip_mu_);
  if (dst.is_v4()) {
    if (dst.IsMulticast()) return ip_.multicast_ttl;
    return ip_.ttl >= 0 ? ip_.ttl : static_cast<int>(sys.ip_default_ttl);
  }
  if (dst.IsMulticast()) return ip_.multicast_hops;
  return ip_.unicast_hops >= 0 ? ip_.unicast_hops
                               : static_cast<int>(sys.ip6_hop_limit);
}

// ---- SOL_IP / SOL_IPV6 ----

KResult<void> InetSocket::SetSockOpt(Caller& c, int level, int name,
                                     absl::Span<const uint8_t> val) {
  if (level == SOL_SOCKET) return Socket::SetSockOpt(c, level, name, val);
  // ipv6_setsockopt hands SOL_IP of a non-raw socket to ip_setsockopt.
  if (level == kSolIp) return SetIp(c, name, val);
  if (level == kSolIpv6 && v6()) return SetIpv6(c, name, val);
  return kENOPROTOOPT;  // ip_setsockopt / ipv6_setsockopt
}

KResult<size_t> InetSocket::GetSockOpt(Caller& c, int level, int name,
                                       absl::Span<uint8_t> val) {
  if (level == SOL_SOCKET) return Socket::GetSockOpt(c, level, name, val);
  if (level == kSolIp) return GetIp(c, name, val);
  if (level == kSolIpv6 && v6()) return GetIpv6(c, name, val);
  return kENOPROTOOPT;
}

// do_ip_setsockopt.
KResult<void> InetSocket::SetIp(Caller& c, int name,
                                absl::Span<const uint8_t> in) {
  const size_t optlen = in.size();
  int val = 0;
  if (IpIntOption(name)) {
    if (optlen >= sizeof(int)) {
      memcpy(&val, in.data(), sizeof(val));
    } else if (optlen >= 1) {
      val = in[0];
    }
  }
  const bool b = val != 0;
  if (name == kIpRouterAlert) return kEINVAL;  // ip_ra_control: raw only
  if (name >= kMrtBase && name <= kMrtMax) return kEOPNOTSUPP;  // raw IGMP
  const int sol_dev = sol_flags().bound_dev_if;
  NetNamespace& ns = netns();

  absl::MutexLock l(&ip_mu_);
  IpOptions& o = ip_;
  switch (name) {
    case kIpPktinfo:
      o.pktinfo = b;
      return OkResult();
    case kIpRecvttl:
      o.recvttl = b;
      return OkResult();
    case kIpRecvtos:
      o.recvtos = b;
      return OkResult();
    case kIpRecvopts:
    case kIpRetopts:
      o.recvopts = b;  // one flag for both here
      return OkResult();
    case kIpPasssec:
      o.passsec = b;
      return OkResult();
    case kIpRecvorigdstaddr:
      o.recvorigdstaddr = b;
      return OkResult();
    case kIpRecverr:
      o.recverr = b;
      return OkResult();
    case kIpRecverrRfc4884:
      if (val < 0 || val > 1) return kEINVAL;
      o.recverr_rfc4884 = b;
      return OkResult();
    case kIpFreebind:
      if (optlen < 1) return kEINVAL;
      o.freebind = b;
      return OkResult();
    case kIpHdrincl:
      if (type() != SOCK_RAW) return kENOPROTOOPT;
      o.hdrincl = b;
      return OkResult();
    case kIpMulticastLoop:
      if (optlen < 1) return kEINVAL;
      o.multicast_loop = b;
      return OkResult();
    case kIpMulticastAll:
      if (optlen < 1) return kEINVAL;
      if (val != 0 && val != 1) return kEINVAL;
      o.multicast_all = b;
      return OkResult();
    case kIpTransparent:
      if (b && !Capable(c, kCapNetRaw) && !Capable(c, kCapNetAdmin)) {
        return kEPERM;
      }
      if (optlen < 1) return kEINVAL;
      o.transparent = b;
      return OkResult();
    case kIpNodefrag:
      if (type() != SOCK_RAW) return kENOPROTOOPT;
      o.nodefrag = b;
      return OkResult();
    case kIpBindAddressNoPort:
      o.bind_address_no_port = b;
      return OkResult();
    case kIpTtl:
      if (optlen < 1) return kEINVAL;
      if (val != -1 && (val < 1 || val > 255)) return kEINVAL;
      o.ttl = val;
      return OkResult();
    case kIpMinttl:
      if (optlen < 1) return kEINVAL;
      if (val < 0 || val > 255) return kEINVAL;
      o.min_ttl = val;
      return OkResult();
    case kIpMulticastTtl:
      if (type() == SOCK_STREAM) return kEINVAL;
      if (optlen < 1) return kEINVAL;
      if (val == -1) val = 1;
      if (val < 0 || val > 255) return kEINVAL;
      o.multicast_ttl = val;
      return OkResult();
    case kIpMtuDiscover:  // ip_sock_set_mtu_discover
      if (val < 0 || val > kIpPmtudiscOmit) return kEINVAL;
      o.mtu_discover = val;
      return OkResult();
    case kIpTos:  // __ip_sock_set_tos: a stream socket keeps its ECN bits
      if (type() == SOCK_STREAM) {
        val &= ~kInetEcnMask;
        val |= o.tos & kInetEcnMask;
      }
      o.tos = val & 0xff;  // inet->tos is a __u8
      return OkResult();
    case kIpLocalPortRange: {
      const uint32_t u = static_cast<uint32_t>(val);
      const uint16_t lo = u & 0xffff, hi = u >> 16;
      if (optlen != sizeof(uint32_t)) return kEINVAL;
      if (lo != 0 && hi != 0 && lo > hi) return kEINVAL;
      o.local_port_lo = lo;
      o.local_port_hi = hi;
      return OkResult();
    }
    case kIpOptions: {  // ip_options_get + ip_options_compile
      if (optlen > 40) return kEINVAL;
      std::vector<uint8_t> opt(in.begin(), in.end());
      opt.resize((opt.size() + 3) & ~size_t{3}, 0);  // IPOPT_END padding
      if (!opt.empty() && !CompileIpOptions(opt, Capable(c, kCapNetRaw))) {
        return kEINVAL;
      }
      o.options = std::move(opt);
      return OkResult();
    }
    case kIpChecksum:
      o.checksum = b;
      return OkResult();
    case kIpRecvfragsize:
      if (type() != SOCK_RAW && type() != SOCK_DGRAM) return kEINVAL;
      o.recvfragsize4 = b;
      return OkResult();
    case kIpUnicastIf:
      return SetUnicastIf(ns, optlen, val, sol_dev, &o.uc_index);
    case kIpMulticastIf: {
      if (type() == SOCK_STREAM) return kEINVAL;
      if (optlen < 4) return kEINVAL;
      // ip_mreqn {multiaddr, address, ifindex}, ip_mreq {multiaddr,
      // address}, or in_addr (the address alone).
      uint32_t address = 0;
      int ifindex = 0;
      if (optlen >= 12) {
        address = LoadBe32(in.data() + 4);
        memcpy(&ifindex, in.data() + 8, sizeof(ifindex));
      } else if (optlen >= 8) {
        address = LoadBe32(in.data() + 4);
      } else {
        address = LoadBe32(in.data());
      }
      if (ifindex == 0) {
        if (address == 0) {
          o.multicast_if = 0;
          o.multicast_addr = 0;
          return OkResult();
        }
        // ip_dev_find: the device with that local address (lo).
        if (!IsLocalAddress(ns, IpAddr::V4(address))) return kEADDRNOTAVAIL;
        ifindex = stack::Interfaces::kLoopbackIndex;
      } else if (!IfsOf(ns).LinkByIndex(ifindex).has_value()) {
        return kEADDRNOTAVAIL;
      }
      if (sol_dev != 0 && ifindex != sol_dev) return kEINVAL;
      o.multicast_if = ifindex;
      o.multicast_addr = address;
      return OkResult();
    }
    case kIpAddMembership:
    case kIpDropMembership: {
      if (type() == SOCK_STREAM) return Errno(EPROTO);  // is_icsk
      if (optlen < 8) return kEINVAL;
      IpOptions::McGroup g;
      g.group = LoadBe32(in.data());
      g.address = LoadBe32(in.data() + 4);
      if (optlen >= 12) memcpy(&g.ifindex, in.data() + 8, sizeof(g.ifindex));
      // ip_mc_find_dev: by index, by local address, else the route to the
      // group (none in a namespace with only lo).
      int dev = 0;
      if (g.ifindex != 0) {
        if (IfsOf(ns).LinkByIndex(g.ifindex).has_value()) dev = g.ifindex;
      } else if (g.address != 0) {
        if (IsLocalAddress(ns, IpAddr::V4(g.address))) {
          dev = stack::Interfaces::kLoopbackIndex;
        }
      }
      if (name == kIpAddMembership) {  // ip_mc_join_group
        if (!IpAddr::V4(g.group).IsMulticast()) return kEINVAL;
        if (dev == 0) return kENODEV;
        g.ifindex = dev;
        int count = 0;
        for (const auto& m : o.mc_groups) {
          if (m.group == g.group && m.ifindex == g.ifindex) return kEADDRINUSE;
          count++;
        }
        if (count >= kIgmpMaxMemberships) return kENOBUFS;
        o.mc_groups.push_back(g);
        return OkResult();
      }
      // ip_mc_leave_group.
      if (g.ifindex == 0 && g.address == 0 && dev == 0) return kENODEV;
      for (auto it = o.mc_groups.begin(); it != o.mc_groups.end(); ++it) {
        if (it->group != g.group) continue;
        if (g.ifindex != 0) {
          if (it->ifindex != g.ifindex) continue;
        } else if (g.address != 0 && g.address != it->address) {
          continue;
        }
        o.mc_groups.erase(it);
        return OkResult();
      }
      return kEADDRNOTAVAIL;
    }
    case kIpUnblockSource:
    case kIpBlockSource:
    case kIpAddSourceMembership:
    case kIpDropSourceMembership:
    case kIpMsfilter:
    case kIpIpsecPolicy:
    case kIpXfrmPolicy:
    default:
      if (name >= kMcastJoinGroup && name <= kMcastMsfilter) {
        kernel::LogUnsupported("setsockopt(SOL_IP, %d): MCAST_* unsupported",
                               name);
      }
      return kENOPROTOOPT;
  }
}

// do_ip_getsockopt.
KResult<size_t> InetSocket::GetIp(Caller&, int name, absl::Span<uint8_t> out) {
  if (name >= kMrtBase && name <= kMrtMax) return kEOPNOTSUPP;
  NetNamespace& ns = netns();
  std::optional<InetAddr> remote = RemoteAddr();
  absl::MutexLock l(&ip_mu_);
  const IpOptions& o = ip_;
  switch (name) {
    case kIpPktinfo:
      return PutIpVal(out, o.pktinfo);
    case kIpRecvttl:
      return PutIpVal(out, o.recvttl);
    case kIpRecvtos:
      return PutIpVal(out, o.recvtos);
    case kIpRecvopts:
    case kIpRetopts:
      return PutIpVal(out, o.recvopts);
    case kIpPasssec:
      return PutIpVal(out, o.passsec);
    case kIpRecvorigdstaddr:
      return PutIpVal(out, o.recvorigdstaddr);
    case kIpChecksum:
      return PutIpVal(out, o.checksum);
    case kIpRecvfragsize:
      return PutIpVal(out, o.recvfragsize4);
    case kIpRecverr:
      return PutIpVal(out, o.recverr);
    case kIpRecverrRfc4884:
      return PutIpVal(out, o.recverr_rfc4884);
    case kIpFreebind:
      return PutIpVal(out, o.freebind);
    case kIpTransparent:
      return PutIpVal(out, o.transparent);
    case kIpHdrincl:
      return PutIpVal(out, o.hdrincl);
    case kIpNodefrag:
      return PutIpVal(out, o.nodefrag);
    case kIpBindAddressNoPort:
      return PutIpVal(out, o.bind_address_no_port);
    case kIpTtl:
      return PutIpVal(out, o.ttl >= 0
                               ? o.ttl
                               : static_cast<int>(ns.sysctl().ip_default_ttl));
    case kIpMinttl:
      return PutIpVal(out, o.min_ttl);
    case kIpMulticastTtl:
      return PutIpVal(out, o.multicast_ttl);
    case kIpMulticastLoop:
      return PutIpVal(out, o.multicast_loop);
    case kIpMulticastAll:
      return PutIpVal(out, o.multicast_all);
    case kIpTos:
      return PutIpVal(out, o.tos);
    case kIpLocalPortRange:
      return PutIpVal(
          out, static_cast<int>(static_cast<uint32_t>(o.local_port_hi) << 16 |
                                static_cast<uint32_t>(o.local_port_lo)));
    case kIpProtocol:  // inet_num: the local port (0 unbound)
      return PutIpVal(out, binding_ != nullptr
                               ? table().Snapshot(binding_).req.local.port
                               : 0);
    case kIpOptions:
      return PutOpt(out, o.options.data(), o.options.size());
    case kIpMtuDiscover:
      return PutIpVal(out, o.mtu_discover);
    case kIpMtu: {  // the route's MTU once connected (lo's)
      if (!remote.has_value()) return kENOTCONN;
      std::optional<stack::Link> lo =
          IfsOf(ns).LinkByIndex(stack::Interfaces::kLoopbackIndex);
      if (!lo.has_value()) return kENOTCONN;
      return PutIpVal(out, static_cast<int>(lo->mtu));
    }
    case kIpUnicastIf:
      return PutIpVal(out, static_cast<int>(htonl(o.uc_index)));
    case kIpMulticastIf: {
      uint32_t a = htonl(o.multicast_addr);
      return PutOpt(out, &a, sizeof(a));
    }
    case kIpPktoptions: {
      // The cmsgs a stream socket's last packet would carry (put_cmsg
      // into the buffer, truncating as it does): IP_PKTINFO with the
      // bound address and the multicast interface, IP_TTL with the
      // multicast TTL, IP_TOS with the received TOS (none kept: 0).
      if (type() != SOCK_STREAM) return kENOPROTOOPT;
      uint32_t rcv = 0;
      if (binding_ != nullptr) {
        const BindingState st = table().Snapshot(binding_);
        const IpAddr ip = st.local.has_value() ? st.local->ip : st.req.local.ip;
        if (ip.is_v4()) rcv = htonl(ip.v4());
      }
      size_t at = 0;
      auto put = [&](int ctype, const void* data, size_t len) {
        struct {
          uint64_t len;
          int32_t level, type;
        } h = {16 + len, kSolIp, ctype};
        const size_t room = out.size() - at;
        if (room < sizeof(h)) return;
        size_t cmlen = std::min<size_t>(h.len, room);
        h.len = cmlen;
        memcpy(out.data() + at, &h, sizeof(h));
        memcpy(out.data() + at + sizeof(h), data, cmlen - sizeof(h));
        at += std::min<size_t>(16 + ((len + 7) & ~size_t{7}), room);
      };
      if (o.pktinfo) {
        struct {
          int32_t ifindex;
          uint32_t spec_dst, addr;
        } info = {o.multicast_if, rcv, rcv};
        put(kIpPktinfo, &info, sizeof(info));
      }
      if (o.recvttl) {
        int32_t ttl = o.multicast_ttl;
        put(kIpTtl, &ttl, sizeof(ttl));
      }
      if (o.recvtos) {
        int32_t tos = 0;
        put(kIpTos, &tos, sizeof(tos));
      }
      return at;
    }
    default:
      return kENOPROTOOPT;
  }
}

// do_ipv6_setsockopt.
KResult<void> InetSocket::SetIpv6(Caller& c, int name,
                                  absl::Span<const uint8_t> in) {
  const size_t optlen = in.size();
  int val = 0;
  if (optlen >= sizeof(int)) memcpy(&val, in.data(), sizeof(val));
  const bool b = val != 0;
  const bool short_int = optlen < sizeof(int);
  const int sol_dev = sol_flags().bound_dev_if;
  NetNamespace& ns = netns();
  if (name >= kMrtBase && name <= kMrtMax) return kEOPNOTSUPP;  // raw ICMPv6

  absl::MutexLock l(&ip_mu_);
  IpOptions& o = ip_;
  switch (name) {
    case kIpv6UnicastHops:
      if (short_int) return kEINVAL;
      if (val > 255 || val < -1) return kEINVAL;
      o.unicast_hops = val;
      return OkResult();
    case kIpv6MulticastLoop:
      if (short_int) return kEINVAL;
      if (val != static_cast<int>(b)) return kEINVAL;
      o.multicast_loop6 = b;
      return OkResult();
    case kIpv6MulticastHops:
      if (type() == SOCK_STREAM) return kENOPROTOOPT;
      if (short_int) return kEINVAL;
      if (val > 255 || val < -1) return kEINVAL;
      o.multicast_hops = val == -1 ? 1 : val;  // IPV6_DEFAULT_MCASTHOPS
      return OkResult();
    case kIpv6Mtu:
      if (short_int) return kEINVAL;
      if (val != 0 && val < kIpv6MinMtu) return kEINVAL;
      o.frag_size = val;
      return OkResult();
    case kIpv6Minhopcount:
      if (short_int) return kEINVAL;
      if (val < 0 || val > 255) return kEINVAL;
      o.min_hopcount = val;
      return OkResult();
    case kIpv6RecverrRfc4884:
      if (short_int) return kEINVAL;
      if (val < 0 || val > 1) return kEINVAL;
      o.recverr6_rfc4884 = b;
      return OkResult();
    case kIpv6MulticastAll:
      if (short_int) return kEINVAL;
      o.mc_all6 = b;
      return OkResult();
    case kIpv6Autoflowlabel:
      o.autoflowlabel = b;
      o.autoflowlabel_set = true;
      return OkResult();
    case kIpv6Dontfrag:
      o.dontfrag = b;
      return OkResult();
    case kIpv6Recverr:
      if (short_int) return kEINVAL;
      o.recverr6 = b;
      return OkResult();
    case kIpv6RouterAlertIsolate:
      if (short_int) return kEINVAL;
      o.rtalert_isolate = b;
      return OkResult();
    case kIpv6MtuDiscover:
      if (short_int) return kEINVAL;
      if (val < 0 || val > kIpv6PmtudiscOmit) return kEINVAL;
      o.mtu_discover6 = val;
      return OkResult();
    case kIpv6FlowinfoSend:
      if (short_int) return kEINVAL;
      o.sndflow = b;
      return OkResult();
    case kIpv6MulticastIf:
      if (type() == SOCK_STREAM) return kENOPROTOOPT;
      if (short_int) return kEINVAL;
      if (val != 0) {
        if (!IfsOf(ns).LinkByIndex(val).has_value()) return kENODEV;
        if (sol_dev != 0 && sol_dev != val) return kEINVAL;
      }
      o.multicast_if6 = val;
      return OkResult();
    case kIpv6UnicastIf:
      return SetUnicastIf(ns, optlen, val, sol_dev, &o.ucast_oif6);
    case kIpv6V6only:
      // inet_num: bound (an IP_BIND_ADDRESS_NO_PORT bind leaves it 0).
      if (short_int || binding_ != nullptr) return kEINVAL;
      o.v6only = b;
      return OkResult();
    case kIpv6Recvpktinfo:
      if (short_int) return kEINVAL;
      o.recvpktinfo = b;
      return OkResult();
    case kIpv62292Pktinfo:
      if (short_int) return kEINVAL;
      o.rx2292pktinfo = b;
      return OkResult();
    case kIpv6Recvhoplimit:
      if (short_int) return kEINVAL;
      o.recvhoplimit = b;
      return OkResult();
    case kIpv62292Hoplimit:
      if (short_int) return kEINVAL;
      o.rx2292hoplimit = b;
      return OkResult();
    case kIpv6Recvrthdr:
      if (short_int) return kEINVAL;
      o.recvrthdr = b;
      return OkResult();
    case kIpv6Recvhopopts:
      if (short_int) return kEINVAL;
      o.recvhopopts = b;
      return OkResult();
    case kIpv6Recvdstopts:
      if (short_int) return kEINVAL;
      o.recvdstopts = b;
      return OkResult();
    case kIpv6Tclass:
      if (short_int) return kEINVAL;
      if (val < -1 || val > 0xff) return kEINVAL;
      if (val == -1) val = 0;  // RFC 3542, 6.5
      if (type() == SOCK_STREAM) {
        val &= ~kInetEcnMask;
        val |= o.tclass & kInetEcnMask;
      }
      o.tclass = val;
      return OkResult();
    case kIpv6Recvtclass:
      if (short_int) return kEINVAL;
      o.recvtclass = b;
      return OkResult();
    case kIpv6Flowinfo:
      if (short_int) return kEINVAL;
      o.recvflow = b;
      return OkResult();
    case kIpv6Recvpathmtu:
      if (short_int) return kEINVAL;
      o.recvpathmtu = b;
      return OkResult();
    case kIpv6Transparent:  // the IPv4 bit (inet_sock's TRANSPARENT)
      if (b && !Capable(c, kCapNetRaw) && !Capable(c, kCapNetAdmin)) {
        return kEPERM;
      }
      if (short_int) return kEINVAL;
      o.transparent = o.transparent6 = b;
      return OkResult();
    case kIpv6Freebind:  // the IPv4 bit too
      if (short_int) return kEINVAL;
      o.freebind = o.freebind6 = b;
      return OkResult();
    case kIpv6Recvorigdstaddr:
      if (short_int) return kEINVAL;
      o.recvorigdstaddr6 = b;
      return OkResult();
    case kIpv6Recvfragsize:
      o.recvfragsize = b;
      return OkResult();
    case kIpv6AddMembership:
    case kIpv6DropMembership: {
      // ipv6_sock_mc_join / ipv6_sock_mc_drop: struct ipv6_mreq
      // {in6_addr, int ifindex}.
      if (optlen < 20) return kEINVAL;
      if (type() == SOCK_STREAM) return Errno(EPROTO);  // is_icsk? (as IPv4)
      IpOptions::Mc6Group g;
      memcpy(g.group.data(), in.data(), 16);
      memcpy(&g.ifindex, in.data() + 16, sizeof(g.ifindex));
      const IpAddr grp = IpAddr::FromV6Bytes(g.group.data());
      if (!grp.IsMulticast() || grp.is_v4()) return kEINVAL;
      if (name == kIpv6AddMembership) {
        // The device: the index, else the route to the group (ff00::/8
        // has a multicast route only on an up non-loopback device).
        if (g.ifindex == 0) return kENODEV;
        if (!IfsOf(ns).LinkByIndex(g.ifindex).has_value()) return kENODEV;
        for (const auto& m : o.mc6_groups) {
          if (m.group == g.group && m.ifindex == g.ifindex) return kEADDRINUSE;
        }
        o.mc6_groups.push_back(g);
        return OkResult();
      }
      for (auto it = o.mc6_groups.begin(); it != o.mc6_groups.end(); ++it) {
        if (it->group == g.group &&
            (g.ifindex == 0 || it->ifindex == g.ifindex)) {
          o.mc6_groups.erase(it);
          return OkResult();
        }
      }
      return kEADDRNOTAVAIL;
    }
    case kIpv6Pktinfo: {  // the sticky in6_pktinfo {addr, ifindex}
      if (optlen < 20) return kEINVAL;
      int ifindex;
      memcpy(&ifindex, in.data() + 16, sizeof(ifindex));
      if (sol_dev != 0 && sol_dev != ifindex) return kEINVAL;
      memcpy(o.sticky_addr.data(), in.data(), 16);
      o.sticky_ifindex = ifindex;
      return OkResult();
    }
    case kIpv6AddrPreferences: {  // __ip6_sock_set_addr_preferences
      if (short_int) return kEINVAL;
      constexpr uint32_t kTmp = 0x1, kPublic = 0x2, kCoa = 0x4, kCga = 0x8,
                         kPubtmpDefault = 0x100, kHome = 0x400, kNoncga = 0x800;
      const uint32_t v = static_cast<uint32_t>(val);
      uint32_t pref = 0, mask = ~0u;
      switch (v & (kPublic | kTmp | kPubtmpDefault)) {
        case kPublic:
        case kTmp:
          pref |= v & (kPublic | kTmp);
          mask &= ~(kPublic | kTmp);
          break;
        case kPubtmpDefault:
          mask &= ~(kPublic | kTmp);
          break;
        case 0:
          break;
        default:
          return kEINVAL;
      }
      switch (v & (kHome | kCoa)) {
        case kHome:
          mask &= ~kCoa;
          break;
        case kCoa:
          pref |= kCoa;
          break;
        case 0:
          break;
        default:
          return kEINVAL;
      }
      switch (v & (kCga | kNoncga)) {
        case kCga:
        case kNoncga:
        case 0:
          break;
        default:
          return kEINVAL;
      }
      o.srcprefs = (o.srcprefs & mask) | pref;
      return OkResult();
    }
    case kIpv6Addrform:
      kernel::LogUnsupported("setsockopt(IPV6_ADDRFORM) is not supported");
      return kENOPROTOOPT;
    default:
      return kENOPROTOOPT;
  }
}

// do_ipv6_getsockopt.
KResult<size_t> InetSocket::GetIpv6(Caller&, int name,
                                    absl::Span<uint8_t> out) {
  if (name >= kMrtBase && name <= kMrtMax) return kEOPNOTSUPP;
  NetNamespace& ns = netns();
  std::optional<InetAddr> remote = RemoteAddr();
  absl::MutexLock l(&ip_mu_);
  const IpOptions& o = ip_;
  switch (name) {
    case kIpv6Addrform:
      if (protocol() != IPPROTO_UDP && protocol() != IPPROTO_TCP) {
        return kENOPROTOOPT;
      }
      if (!remote.has_value()) return kENOTCONN;
      return PutInt(out, family());
    case kIpv6Mtu: {
      if (!remote.has_value()) return kENOTCONN;
      std::optional<stack::Link> lo =
          IfsOf(ns).LinkByIndex(stack::Interfaces::kLoopbackIndex);
      if (!lo.has_value()) return kENOTCONN;
      return PutInt(out, static_cast<int>(lo->mtu));
    }
    case kIpv6V6only:
      return PutInt(out, o.v6only);
    case kIpv6Recvpktinfo:
      return PutInt(out, o.recvpktinfo);
    case kIpv62292Pktinfo:
      return PutInt(out, o.rx2292pktinfo);
    case kIpv6Recvhoplimit:
      return PutInt(out, o.recvhoplimit);
    case kIpv62292Hoplimit:
      return PutInt(out, o.rx2292hoplimit);
    case kIpv6Recvrthdr:
      return PutInt(out, o.recvrthdr);
    case kIpv6Recvhopopts:
      return PutInt(out, o.recvhopopts);
    case kIpv6Recvdstopts:
      return PutInt(out, o.recvdstopts);
    case kIpv6Tclass:
      return PutInt(out, o.tclass);
    case kIpv6Recvtclass:
      return PutInt(out, o.recvtclass);
    case kIpv6Flowinfo:
      return PutInt(out, o.recvflow);
    case kIpv6Recvpathmtu:
      return PutInt(out, o.recvpathmtu);
    case kIpv6Transparent:
      return PutInt(out, o.transparent);
    case kIpv6Freebind:
      return PutInt(out, o.freebind);
    case kIpv6Recvorigdstaddr:
      return PutInt(out, o.recvorigdstaddr6);
    case kIpv6UnicastHops:
      return PutInt(out, o.unicast_hops >= 0
                             ? o.unicast_hops
                             : static_cast<int>(ns.sysctl().ip6_hop_limit));
    case kIpv6MulticastHops:
      return PutInt(out, o.multicast_hops);
    case kIpv6MulticastLoop:
      return PutInt(out, o.multicast_loop6);
    case kIpv6MulticastIf:
      return PutInt(out, o.multicast_if6);
    case kIpv6MulticastAll:
      return PutInt(out, o.mc_all6);
    case kIpv6UnicastIf:
      return PutInt(out, static_cast<int>(htonl(o.ucast_oif6)));
    case kIpv6MtuDiscover:
      return PutInt(out, o.mtu_discover6);
    case kIpv6Recverr:
      return PutInt(out, o.recverr6);
    case kIpv6FlowinfoSend:
      return PutInt(out, o.sndflow);
    case kIpv6Minhopcount:
      return PutInt(out, o.min_hopcount);
    case kIpv6Dontfrag:
      return PutInt(out, o.dontfrag);
    case kIpv6Autoflowlabel:  // ip6_autoflowlabel: net.ipv6.auto_flowlabels 1
      return PutInt(out, o.autoflowlabel_set ? o.autoflowlabel : true);
    case kIpv6Recvfragsize:
      return PutInt(out, o.recvfragsize);
    case kIpv6RouterAlertIsolate:
      return PutInt(out, o.rtalert_isolate);
    case kIpv6RecverrRfc4884:
      return PutInt(out, o.recverr6_rfc4884);
    case kIpv6AddrPreferences: {
      // TMP, else PUBLIC, else PUBTMP_DEFAULT; COA, else HOME.
      int v = (o.srcprefs & 0x1) ? 0x1 : (o.srcprefs & 0x2) ? 0x2 : 0x100;
      v |= (o.srcprefs & 0x4) ? 0x4 : 0x400;
      return PutInt(out, v);
    }
    default:
      return kENOPROTOOPT;
  }
}

// ---- Binding ----

BindRequest InetSocket::RequestLocked(const IpAddr& ip, uint16_t port) const {
  const SolFlags f = sol_flags();
  BindRequest req;
  req.local.ip = ip;
  req.local.port = port;
  req.v6_socket = v6();
  req.v6only = ip_.v6only;
  req.reuseaddr = f.reuseaddr;
  req.reuseport = f.reuseport;
  req.uid = owner_.uid;
  req.bound_dev_if = f.bound_dev_if;
  req.range_lo = static_cast<uint16_t>(ip_.local_port_lo);
  req.range_hi = static_cast<uint16_t>(ip_.local_port_hi);
  return req;
}

// __inet_bind / __inet6_bind.
KResult<void> InetSocket::BindTo(Caller& c, const InetAddr& addr) {
  NetNamespace& ns = netns();
  NetSysctls& sys = ns.sysctl();
  const IpAddr& ip = addr.ip;
  const bool bind_service_ok =
      addr.port == 0 || addr.port >= sys.ip_unprivileged_port_start.load() ||
      Capable(c, kCapNetBindService);

  absl::MutexLock l(&ip_mu_);
  const bool nonlocal4 =
      sys.ip_nonlocal_bind.load() != 0 || ip_.freebind || ip_.transparent;
  const bool nonlocal6 =
      sys.ip6_nonlocal_bind.load() != 0 || ip_.freebind || ip_.transparent;
  auto v4_ok = [&] {  // inet_addr_valid_or_nonlocal
    if (nonlocal4 || ip.IsAny()) return true;
    return ClassifyV4(ns, ip) != V4Type::kUnicast;
  };
  if (!v6()) {
    if (!ip.is_v4()) return kEAFNOSUPPORT;
    if (!v4_ok()) return kEADDRNOTAVAIL;
    if (!bind_service_ok) return kEACCES;
    if (binding_ != nullptr) return kEINVAL;
  } else {
    if (!ip.is_v4() && ip.IsMulticast() && type() == SOCK_STREAM) {
      return kEINVAL;
    }
    if (!bind_service_ok) return kEACCES;
    if (binding_ != nullptr) return kEINVAL;
    if (ip.is_v4()) {
      // A v4-mapped address on an IPV6_V6ONLY socket makes no sense.
      if (ip_.v6only) return kEINVAL;
      if (!v4_ok()) return kEADDRNOTAVAIL;
    } else if (!ip.IsAny()) {
      if (NeedsScopeId(ip)) {
        const int dev = addr.scope_id != 0 ? static_cast<int>(addr.scope_id)
                                           : sol_flags().bound_dev_if;
        if (dev == 0) return kEINVAL;
        if (!IfsOf(ns).LinkByIndex(dev).has_value()) return kENODEV;
      }
      if (!ip.IsMulticast() && !nonlocal6 && !IsLocalAddress(ns, ip)) {
        return kEADDRNOTAVAIL;
      }
    }
  }
  // __inet6_bind: any address but :: and a v4-mapped one makes the socket
  // IPv6-only (restored if the port cannot be had).
  const bool saved_v6only = ip_.v6only;
  if (v6() && !ip.is_v4() && !ip.IsAny()) ip_.v6only = true;
  if (addr.port == 0 && ip_.bind_address_no_port) {
    bound_no_port_ = ip;
    return OkResult();
  }
  KResult<Binding> b =
      table().Bind(RequestLocked(ip, addr.port), weak_from_this());
  if (!b.ok()) {
    ip_.v6only = saved_v6only;
    return b.error();
  }
  binding_ = std::move(b).value();
  bound_explicitly_ = true;
  bound_no_port_.reset();
  return OkResult();
}

KResult<InetAddr> InetSocket::ConnectBinding(Caller&, const InetAddr& remote) {
  absl::MutexLock l(&ip_mu_);
  TRY(IpAddr src, SourceForLocked(remote.ip));
  PortTable& t = table();
  if (binding_ != nullptr) {
    const BindingState st = t.Snapshot(binding_);
    InetAddr local{src, st.req.local.port};
    TRY_VOID(t.Connect(binding_, local, remote));
    return local;
  }
  Binding b;
  if (proto_ == Proto::kTcp) {
    TRY(b, t.BindConnect(RequestLocked(src, 0), remote, weak_from_this()));
  } else {
    // inet_autobind (the wildcard, or the IP_BIND_ADDRESS_NO_PORT
    // address), then the connected source.
    const IpAddr wild = bound_no_port_.has_value()
                            ? *bound_no_port_
                            : (v6() ? IpAddr::AnyV6() : IpAddr::AnyV4());
    KResult<Binding> r = t.Bind(RequestLocked(wild, 0), weak_from_this());
    if (!r.ok()) return kEAGAIN;
    b = std::move(r).value();
    const uint16_t port = t.Snapshot(b).req.local.port;
    KResult<void> cr = t.Connect(b, InetAddr{src, port}, remote);
    if (!cr.ok()) {
      t.Unbind(b);
      return cr.error();
    }
  }
  binding_ = b;
  bound_explicitly_ = false;
  const BindingState st = t.Snapshot(b);
  return InetAddr{src, st.req.local.port};
}

KResult<InetAddr> InetSocket::AutoBind(Caller&) {
  absl::MutexLock l(&ip_mu_);
  PortTable& t = table();
  if (binding_ == nullptr) {
    const IpAddr wild = bound_no_port_.has_value()
                            ? *bound_no_port_
                            : (v6() ? IpAddr::AnyV6() : IpAddr::AnyV4());
    KResult<Binding> r = t.Bind(RequestLocked(wild, 0), weak_from_this());
    if (!r.ok()) return kEAGAIN;  // inet_autobind
    binding_ = std::move(r).value();
    bound_explicitly_ = false;
  }
  const BindingState st = t.Snapshot(binding_);
  InetAddr a = st.local.has_value() ? *st.local : st.req.local;
  a.port = st.req.local.port;
  return a;
}

void InetSocket::Unbind() {
  absl::MutexLock l(&ip_mu_);
  if (binding_ != nullptr) table().Unbind(binding_);
  binding_.reset();
  bound_explicitly_ = false;
  bound_no_port_.reset();
}

void InetSocket::DisconnectBinding() {
  absl::MutexLock l(&ip_mu_);
  if (binding_ != nullptr) table().Disconnect(binding_);
}

void InetSocket::AdoptBinding(Binding b) {
  absl::MutexLock l(&ip_mu_);
  binding_ = std::move(b);
  bound_explicitly_ = false;
}

Binding InetSocket::binding() const {
  absl::MutexLock l(&ip_mu_);
  return binding_;
}

std::optional<InetAddr> InetSocket::RemoteAddr() const {
  Binding b = binding();
  if (b == nullptr) return std::nullopt;
  return table().Snapshot(b).remote;
}

InetAddr InetSocket::LocalAddr() const {
  absl::MutexLock l(&ip_mu_);
  if (binding_ != nullptr) {
    const BindingState st = table().Snapshot(binding_);
    InetAddr a = st.local.has_value() ? *st.local : st.req.local;
    a.port = st.req.local.port;
    return a;
  }
  InetAddr a;
  if (bound_no_port_.has_value()) {
    a.ip = *bound_no_port_;
  } else {
    a.ip = v6() ? IpAddr::AnyV6() : IpAddr::AnyV4();
  }
  return a;
}

KResult<IpAddr> InetSocket::SourceFor(Caller&, const IpAddr& dst) const {
  absl::MutexLock l(&ip_mu_);
  return SourceForLocked(dst);
}

// The route's preferred source (fib_select / ip6_route_output over a
// namespace whose only device is lo), or the bound address.
KResult<IpAddr> InetSocket::SourceForLocked(const IpAddr& dst) const {
  NetNamespace& ns = netns();
  std::optional<IpAddr> bound;
  if (binding_ != nullptr) {
    const BindingState st = table().Snapshot(binding_);
    const IpAddr ip = st.local.has_value() ? st.local->ip : st.req.local.ip;
    if (!ip.IsAny() && !ip.IsMulticast()) bound = ip;
  } else if (bound_no_port_.has_value() && !bound_no_port_->IsAny() &&
             !bound_no_port_->IsMulticast()) {
    bound = *bound_no_port_;
  }
  if (dst.is_v4()) {
    if (v6() && ip_.v6only) return kENETUNREACH;
    if (bound.has_value()) {
      if (!bound->is_v4()) return kENETUNREACH;
      if (dst.IsAny() || IsLocalAddress(ns, dst)) return *bound;
    }
    if (dst.IsAny() || IsLocalAddress(ns, dst) ||
        ClassifyV4(ns, dst) == V4Type::kBroadcast) {
      if (IsLocalAddress(ns, IpAddr::LoopbackV4())) {
        return IpAddr::LoopbackV4();
      }
    }
    if (dst.IsMulticast() &&
        ip_.multicast_if == stack::Interfaces::kLoopbackIndex) {
      return ip_.multicast_addr != 0 ? IpAddr::V4(ip_.multicast_addr)
                                     : IpAddr::LoopbackV4();
    }
    return kENETUNREACH;
  }
  if (bound.has_value() && bound->is_v4()) return kENETUNREACH;
  if (dst.IsAny() || IsLocalAddress(ns, dst)) {
    if (bound.has_value()) return *bound;
    if (IsLocalAddress(ns, IpAddr::LoopbackV6())) return IpAddr::LoopbackV6();
  }
  return kENETUNREACH;
}

InetSocket* AsInetSocket(vfs::FileDescription* f) {
  if (f == nullptr) return nullptr;
  Socket* s = AsSocket(*f);
  if (s == nullptr || (s->family() != AF_INET && s->family() != AF_INET6)) {
    return nullptr;
  }
  return dynamic_cast<InetSocket*>(s);
}

}  // namespace sandbox::net::inet
