#include "sentry/net/netlink/route.h"

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <optional>

#include "sentry/kernel/log.h"
#include "sentry/net/netlink/message.h"

namespace sandbox::net::netlink {
namespace {

using stack::Addr;
using stack::Interfaces;
using stack::Link;
using stack::Route;

// Message types (linux/rtnetlink.h).
constexpr uint16_t kRtmBase = 16;
constexpr uint16_t kRtmNewLink = 16;
constexpr uint16_t kRtmGetLink = 18;
constexpr uint16_t kRtmSetLink = 19;
constexpr uint16_t kRtmNewAddr = 20;
constexpr uint16_t kRtmGetAddr = 22;
constexpr uint16_t kRtmNewRoute = 24;
constexpr uint16_t kRtmGetRoute = 26;
constexpr uint16_t kRtmGetNeigh = 30;
constexpr uint16_t kRtmMax = 123;  // RTM_MAX of Linux 6.18

// IFLA_* (linux/if_link.h), up to the attributes of Linux 6.18.
enum : uint16_t {
  kIflaAddress = 1,
  kIflaBroadcast = 2,
  kIflaIfname = 3,
  kIflaMtu = 4,
  kIflaQdisc = 6,
  kIflaStats = 7,
  kIflaMaster = 10,
  kIflaTxqlen = 13,
  kIflaMap = 14,
  kIflaOperstate = 16,
  kIflaLinkmode = 17,
  kIflaLinkinfo = 18,
  kIflaStats64 = 23,
  kIflaAfSpec = 26,
  kIflaGroup = 27,
  kIflaExtMask = 29,
  kIflaPromiscuity = 30,
  kIflaNumTxQueues = 31,
  kIflaNumRxQueues = 32,
  kIflaCarrier = 33,
  kIflaCarrierChanges = 35,
  kIflaProtoDown = 39,
  kIflaGsoMaxSegs = 40,
  kIflaGsoMaxSize = 41,
  kIflaXdp = 43,
  kIflaTargetNetnsid = 46,
  kIflaCarrierUpCount = 47,
  kIflaCarrierDownCount = 48,
  kIflaMinMtu = 50,
  kIflaMaxMtu = 51,
  kIflaAltIfname = 53,
  kIflaGroMaxSize = 58,
  kIflaTsoMaxSize = 59,
  kIflaTsoMaxSegs = 60,
  kIflaAllmulti = 61,
  kIflaGsoIpv4MaxSize = 63,
  kIflaGroIpv4MaxSize = 64,
  kIflaMaxPacingOffloadHorizon = 66,
  kIflaNetnsImmutable = 67,
  kIflaHeadroom = 68,
  kIflaTailroom = 69,
  kIflaMax = 69,
};
constexpr uint16_t kIflaXdpAttached = 2;
constexpr uint16_t kIflaInfoKind = 1;
constexpr uint16_t kIflaInet6Flags = 1;
constexpr uint16_t kIflaInet6AddrGenMode = 8;
constexpr uint32_t kIfReady = 0x80000000;  // IF_READY (inet6 flags)

enum : uint16_t {
  kIfaAddress = 1,
  kIfaLocal = 2,
  kIfaLabel = 3,
  kIfaCacheinfo = 6,
  kIfaFlags = 8,
  kIfaTargetNetnsid = 10,
  kIfaProto = 11,
  kIfaMax = 11,
};

enum : uint16_t {
  kRtaDst = 1,
  kRtaOif = 4,
  kRtaPriority = 6,
  kRtaPrefsrc = 7,
  kRtaCacheinfo = 12,
  kRtaTable = 15,
  kRtaPref = 20,
  kRtaMax = 31,
};
constexpr uint32_t kRtmFCloned = 0x200;
constexpr uint32_t kRtmFPrefix = 0x800;

struct IfInfoMsg {
  uint8_t family;
  uint8_t pad;
  uint16_t type;
  int32_t index;
  uint32_t flags;
  uint32_t change;
};
static_assert(sizeof(IfInfoMsg) == 16);
struct IfAddrMsg {
  uint8_t family;
  uint8_t prefixlen;
  uint8_t flags;
  uint8_t scope;
  uint32_t index;
};
static_assert(sizeof(IfAddrMsg) == 8);
struct RtMsg {
  uint8_t family;
  uint8_t dst_len;
  uint8_t src_len;
  uint8_t tos;
  uint8_t table;
  uint8_t protocol;
  uint8_t scope;
  uint8_t type;
  uint32_t flags;
};
static_assert(sizeof(RtMsg) == 12);

// The outcome of one request: an errno (0: none) and Linux's extended-ack
// message for it.
struct Status {
  int err = 0;
  const char* msg = nullptr;
};
Status Err(int e, const char* msg = nullptr) { return {e, msg}; }

void LogOnce(uint16_t type, const char* what) {
  static std::array<std::atomic<bool>, kRtmMax + 1> logged = {};
  if (type <= kRtmMax && !logged[type].exchange(true)) {
    kernel::LogUnsupported(
        "netlink route: message type %u (%s) is not "
        "supported (EOPNOTSUPP)",
        type, what);
  }
}

// ---- Filling messages. ----

void PutLink(Builder& b, const Link& l, uint16_t type, uint16_t flags,
             uint32_t seq, uint32_t pid, uint32_t ext_mask) {
  size_t at = b.Begin(type, flags, seq, pid);
  IfInfoMsg ifi = {};
  ifi.family = AF_UNSPEC;
  ifi.type = l.type;
  ifi.index = l.index;
  ifi.flags = l.flags;
  b.AppendStruct(ifi);
  b.AttrString(kIflaIfname, l.name);
  b.AttrU32(kIflaTxqlen, l.txqlen);
  b.AttrU8(kIflaOperstate, l.operstate);
  b.AttrU8(kIflaLinkmode, 0);
  b.AttrU8(kIflaNetnsImmutable, 1);  // loopback is netns-local
  b.AttrU32(kIflaMtu, l.mtu);
  b.AttrU32(kIflaMinMtu, 0);
  b.AttrU32(kIflaMaxMtu, 0);
  b.AttrU32(kIflaGroup, l.group);
  b.AttrU32(kIflaPromiscuity, l.promiscuity);
  b.AttrU32(kIflaAllmulti, l.allmulti);
  b.AttrU32(kIflaNumTxQueues, 1);
  b.AttrU32(kIflaGsoMaxSegs, 65535);
  b.AttrU32(kIflaGsoMaxSize, 65536);
  b.AttrU32(kIflaGroMaxSize, 65536);
  b.AttrU32(kIflaGsoIpv4MaxSize, 65536);
  b.AttrU32(kIflaGroIpv4MaxSize, 65536);
  b.AttrU32(kIflaTsoMaxSize, 524280);
  b.AttrU32(kIflaTsoMaxSegs, 65535);
  b.AttrU32(kIflaMaxPacingOffloadHorizon, 0);
  b.AttrU32(kIflaNumRxQueues, 1);
  b.AttrU8(kIflaCarrier, 1);
  b.AttrU32(kIflaCarrierChanges, 0);
  b.AttrU32(kIflaCarrierUpCount, 0);
  b.AttrU32(kIflaCarrierDownCount, 0);
  b.AttrU16(kIflaHeadroom, 0);
  b.AttrU16(kIflaTailroom, 0);
  b.AttrU8(kIflaProtoDown, 0);
  b.Attr(kIflaAddress, l.address.data(), l.address.size());
  b.Attr(kIflaBroadcast, l.broadcast.data(), l.broadcast.size());
  // RTEXT_FILTER_SKIP_STATS leaves out only inet6's AF_SPEC statistics,
  // which this does not report: the link counters are always there.
  (void)ext_mask;
  {
    const stack::LinkStats& s = l.stats;
    uint64_t s64[25] = {s.rx_packets, s.tx_packets, s.rx_bytes,
                        s.tx_bytes,   s.rx_errors,  s.tx_errors,
                        s.rx_dropped, s.tx_dropped, s.multicast};
    b.Attr(kIflaStats64, s64, sizeof(s64));
    uint32_t s32[24] = {};
    for (int i = 0; i < 9; ++i) s32[i] = static_cast<uint32_t>(s64[i]);
    b.Attr(kIflaStats, s32, sizeof(s32));
  }
  size_t xdp = b.BeginNest(kIflaXdp);
  b.AttrU8(kIflaXdpAttached, 0);
  b.EndNest(xdp);
  b.AttrString(kIflaQdisc, l.qdisc);
  size_t af = b.BeginNest(kIflaAfSpec);
  size_t in6 = b.BeginNest(AF_INET6);
  b.AttrU32(kIflaInet6Flags, l.up() ? kIfReady : 0);
  b.AttrU8(kIflaInet6AddrGenMode, 0);  // IN6_ADDR_GEN_MODE_EUI64
  b.EndNest(in6);
  b.EndNest(af);
  uint8_t map[32] = {};  // struct rtnl_link_ifmap, padded
  b.Attr(kIflaMap, map, sizeof(map));
  b.End(at);
}

void PutAddr(Builder& b, const Addr& a, uint16_t flags, uint32_t seq,
             uint32_t pid, uint32_t now_cs, uint16_t type = kRtmNewAddr) {
  size_t at = b.Begin(type, flags, seq, pid);
  IfAddrMsg ifa = {};
  ifa.family = static_cast<uint8_t>(a.family);
  ifa.prefixlen = a.prefixlen;
  ifa.flags = static_cast<uint8_t>(a.flags);
  ifa.scope = a.scope;
  ifa.index = static_cast<uint32_t>(a.index);
  b.AppendStruct(ifa);
  struct {
    uint32_t prefered, valid, cstamp, tstamp;
  } ci = {0xffffffff, 0xffffffff, a.cstamp, a.tstamp};
  (void)now_cs;
  if (a.family == AF_INET) {
    b.Attr(kIfaAddress, a.addr.data(), 4);
    b.Attr(kIfaLocal, a.addr.data(), 4);
    b.AttrString(kIfaLabel, a.label);
    if (a.proto != 0) b.AttrU8(kIfaProto, a.proto);
    b.AttrU32(kIfaFlags, a.flags);
    b.Attr(kIfaCacheinfo, &ci, sizeof(ci));
  } else {
    b.Attr(kIfaAddress, a.addr.data(), 16);
    b.Attr(kIfaCacheinfo, &ci, sizeof(ci));
    b.AttrU32(kIfaFlags, a.flags);
    if (a.proto != 0) b.AttrU8(kIfaProto, a.proto);
  }
  b.End(at);
}

void PutRoute(Builder& b, const Route& r, uint16_t flags, uint32_t seq,
              uint32_t pid, uint16_t type = kRtmNewRoute) {
  size_t at = b.Begin(type, flags, seq, pid);
  RtMsg rtm = {};
  rtm.family = static_cast<uint8_t>(r.family);
  rtm.dst_len = r.dst_len;
  rtm.table = r.table < 256 ? static_cast<uint8_t>(r.table) : 252;
  rtm.protocol = r.protocol;
  rtm.scope = r.scope;
  rtm.type = r.type;
  b.AppendStruct(rtm);
  size_t alen = r.family == AF_INET ? 4 : 16;
  b.AttrU32(kRtaTable, r.table);
  if (r.dst_len != 0) b.Attr(kRtaDst, r.dst.data(), alen);
  if (r.family == AF_INET) {
    if (r.priority && *r.priority != 0) b.AttrU32(kRtaPriority, *r.priority);
    if (r.prefsrc) b.Attr(kRtaPrefsrc, r.prefsrc->data(), alen);
    b.AttrU32(kRtaOif, r.oif);
  } else {
    b.AttrU32(kRtaPriority, r.priority.value_or(0));
    b.AttrU32(kRtaOif, r.oif);
    uint8_t cacheinfo[32] = {};  // struct rta_cacheinfo
    b.Attr(kRtaCacheinfo, cacheinfo, sizeof(cacheinfo));
    b.AttrU8(kRtaPref, 0);  // ICMPV6_ROUTER_PREF_MEDIUM
  }
  b.End(at);
}

// ---- Dumps. ----

// The messages of one dump, packed into datagrams of at most `size`
// bytes (a message larger than that gets one of its own), then NLMSG_DONE
// alone, as netlink_dump's rounds produce them.
class Dump {
 public:
  Dump(const Message& req, uint32_t pid, size_t size)
      : seq_(req.hdr.seq), pid_(pid), size_(size) {}
  Builder& b() { return cur_; }
  // Call after each message put into b(): closes the datagram when full.
  void Next(size_t msg_start) {
    if (cur_.size() > size_ && msg_start > 0) {
      std::string all = cur_.Take();
      out_.push_back(all.substr(0, msg_start));
      cur_.data() = all.substr(msg_start);
    }
  }
  uint32_t seq() const { return seq_; }
  uint32_t pid() const { return pid_; }
  // The dumpit returns 0 with its last messages (inet6_dump_addr,
  // neighbour dumps): NLMSG_DONE then joins them if it fits.
  void set_done_joins() { done_joins_ = true; }
  std::vector<std::string> Finish(uint16_t done_flags, Status st,
                                  bool ext_ack) {
    std::string done = DoneMessage(seq_, pid_, kFMulti | done_flags, st.err,
                                   ext_ack ? st.msg : nullptr);
    if (done_joins_ && st.err == 0 && cur_.size() > 0 &&
        cur_.size() + done.size() <= size_) {
      cur_.data() += done;
      out_.push_back(cur_.Take());
      return std::move(out_);
    }
    if (cur_.size() > 0) out_.push_back(cur_.Take());
    out_.push_back(std::move(done));
    return std::move(out_);
  }

 private:
  const uint32_t seq_, pid_;
  const size_t size_;
  Builder cur_;
  std::vector<std::string> out_;
  bool done_joins_ = false;
};

// rtnl_dump_ifinfo (with rtnl_valid_dump_ifinfo_req in strict mode).
Status DumpLinks(const RouteRequest& rq, const Message& m, Dump& d,
                 uint16_t* done_flags) {
  uint32_t ext_mask = 0;
  bool filtered_out = false;
  uint16_t flags = kFMulti;
  if (rq.strict) {
    if (m.payload.size() < sizeof(IfInfoMsg)) {
      return Err(EINVAL, "Invalid header for link dump");
    }
    IfInfoMsg ifm = FixedHeader<IfInfoMsg>(m.payload);
    if (ifm.pad || ifm.type || ifm.flags || ifm.change) {
      return Err(EINVAL, "Invalid values in header for link dump request");
    }
    if (ifm.index) {
      return Err(EINVAL, "Filter by device index not supported for link dumps");
    }
    KResult<AttrTable> t =
        ParseMessageAttrs(m, sizeof(IfInfoMsg), kIflaMax, true);
    if (!t.ok()) return Err(t.error().number());
    for (const Attr& a : t->all()) {
      switch (a.type) {
        case kIflaTargetNetnsid:
          return Err(EINVAL, "Invalid target network namespace id");
        case kIflaExtMask:
          ext_mask = a.U32().value_or(0);
          break;
        case kIflaMaster:
          if (a.U32().value_or(0) != 0) filtered_out = true;
          flags |= kFDumpFiltered;
          break;
        case kIflaLinkinfo:
          // A kind filter: lo has no kind, so it never matches.
          for (const Attr& x : ParseAttrs(a.data).attrs) {
            if (x.type == kIflaInfoKind) {
              filtered_out = true;
              flags |= kFDumpFiltered;
            }
          }
          break;
        default:
          return Err(EINVAL, "Unsupported attribute in link dump request");
      }
    }
  } else {
    size_t hdrlen =
        m.payload.size() < sizeof(IfInfoMsg) ? 1 : sizeof(IfInfoMsg);
    KResult<AttrTable> t = ParseMessageAttrs(m, hdrlen, kIflaMax, false);
    if (t.ok()) {
      if (const Attr* a = t->Get(kIflaExtMask)) ext_mask = a->U32().value_or(0);
      if (const Attr* a = t->Get(kIflaMaster)) {
        if (a->U32().value_or(0) != 0) filtered_out = true;
        flags |= kFDumpFiltered;
      }
    }
  }
  (void)done_flags;
  if (filtered_out) return {};
  for (const Link& l : rq.ifs->Links()) {
    size_t start = d.b().size();
    PutLink(d.b(), l, kRtmNewLink, flags, d.seq(), d.pid(), ext_mask);
    d.Next(start);
  }
  return {};
}

// inet6_dump_ifinfo: AF_INET6's own link dump (`ip -6 addr` asks for it),
// with inet6_fill_ifinfo's few attributes.
Status DumpLinks6(const RouteRequest& rq, const Message& m, Dump& d,
                  uint16_t*) {
  if (rq.strict) {
    if (m.payload.size() < sizeof(IfInfoMsg)) {
      return Err(EINVAL, "Invalid header for link dump request");
    }
    if (m.payload.size() > Align(sizeof(IfInfoMsg))) {
      return Err(EINVAL, "Invalid data after header");
    }
    IfInfoMsg ifm = FixedHeader<IfInfoMsg>(m.payload);
    if (ifm.pad || ifm.type || ifm.flags || ifm.change || ifm.index) {
      return Err(EINVAL, "Invalid values in header for link dump request");
    }
  }
  constexpr uint16_t kIflaProtinfo = 12;
  constexpr uint16_t kIflaInet6Cacheinfo = 5;
  for (const Link& l : rq.ifs->Links()) {
    size_t start = d.b().size();
    Builder& b = d.b();
    size_t at = b.Begin(kRtmNewLink, kFMulti, d.seq(), d.pid());
    IfInfoMsg ifi = {};
    ifi.family = AF_INET6;
    ifi.type = l.type;
    ifi.index = l.index;
    ifi.flags = l.flags;
    b.AppendStruct(ifi);
    b.AttrString(kIflaIfname, l.name);
    b.Attr(kIflaAddress, l.address.data(), l.address.size());
    b.AttrU32(kIflaMtu, l.mtu);
    b.AttrU8(kIflaOperstate, l.up() ? l.operstate : stack::kOperDown);
    size_t pi = b.BeginNest(kIflaProtinfo, true);
    b.AttrU32(kIflaInet6Flags, l.up() ? kIfReady : 0);
    // struct ifla_cacheinfo: max_reasm_len, tstamp, reachable_time,
    // retrans_time (Linux's defaults: 30 s +- random, 1 s).
    uint32_t ci[4] = {65535, rq.ifs->Centiseconds(), 30000, 1000};
    b.Attr(kIflaInet6Cacheinfo, ci, sizeof(ci));
    b.AttrU8(kIflaInet6AddrGenMode, 0);
    b.EndNest(pi);
    b.End(at);
    d.Next(start);
  }
  return {};
}

// inet_dump_ifaddr / inet6_dump_addr for one family.
Status DumpAddrsOf(const RouteRequest& rq, const Message& m, int family,
                   Dump& d, uint16_t* done_flags) {
  const char* pfx_hdr = family == AF_INET
                            ? "ipv4: Invalid header for address dump request"
                            : "ipv6: Invalid header for address dump request";
  int ifindex = 0;
  uint16_t flags = kFMulti;
  if (rq.strict) {
    if (m.payload.size() < sizeof(IfAddrMsg)) return Err(EINVAL, pfx_hdr);
    IfAddrMsg ifm = FixedHeader<IfAddrMsg>(m.payload);
    if (ifm.prefixlen || ifm.flags || ifm.scope) {
      return Err(EINVAL,
                 family == AF_INET
                     ? "ipv4: Invalid values in header for address dump "
                       "request"
                     : "ipv6: Invalid values in header for address dump "
                       "request");
    }
    ifindex = static_cast<int>(ifm.index);
    if (ifindex) {
      flags |= kFDumpFiltered;
      *done_flags |= kFDumpFiltered;
    }
    KResult<AttrTable> t =
        ParseMessageAttrs(m, sizeof(IfAddrMsg), kIfaMax, true);
    if (!t.ok()) return Err(t.error().number());
    for (const Attr& a : t->all()) {
      if (a.type == kIfaTargetNetnsid) {
        return Err(EINVAL, "Invalid target network namespace id");
      }
      return Err(EINVAL, family == AF_INET
                             ? "ipv4: Unsupported attribute in dump request"
                             : "ipv6: Unsupported attribute in dump request");
    }
    if (ifindex && !rq.ifs->LinkByIndex(ifindex)) return Err(ENODEV);
  }
  uint32_t now = rq.ifs->Centiseconds();
  for (const Addr& a : rq.ifs->Addrs(family)) {
    if (ifindex && a.index != ifindex) continue;
    size_t start = d.b().size();
    PutAddr(d.b(), a, flags, d.seq(), d.pid(), now);
    d.Next(start);
  }
  return {};
}

// The family a GET request's dump or doit is registered under: AF_INET
// and AF_INET6 have their own, anything else falls back to PF_UNSPEC
// (rtnl_dump_all: every family in turn).
int RequestFamily(const Message& m) {
  int f = m.payload[0];
  return (f == AF_INET || f == AF_INET6) ? f : AF_UNSPEC;
}

Status DumpAddrs(const RouteRequest& rq, const Message& m, Dump& d,
                 uint16_t* done_flags) {
  int family = RequestFamily(m);
  if (family == AF_INET6) d.set_done_joins();
  for (int f : {AF_INET, AF_INET6}) {
    if (family != AF_UNSPEC && family != f) continue;
    Status st = DumpAddrsOf(rq, m, f, d, done_flags);
    if (st.err) return st;
  }
  return {};
}

// inet_dump_fib / inet6_dump_fib (ip_valid_fib_dump_req in strict mode).
Status DumpRoutes(const RouteRequest& rq, const Message& m, Dump& d,
                  uint16_t* done_flags) {
  int family = RequestFamily(m);
  uint32_t table = 0;
  uint8_t protocol = 0, type = 0;
  uint32_t rflags = 0;
  int oif = 0;
  uint16_t flags = kFMulti;
  if (rq.strict) {
    if (m.payload.size() < sizeof(RtMsg)) {
      return Err(EINVAL, "Invalid header for FIB dump request");
    }
    RtMsg rtm = FixedHeader<RtMsg>(m.payload);
    if (rtm.dst_len || rtm.src_len || rtm.tos || rtm.scope) {
      return Err(EINVAL, "Invalid values in header for FIB dump request");
    }
    if (rtm.flags & ~(kRtmFCloned | kRtmFPrefix)) {
      return Err(EINVAL, "Invalid flags for FIB dump request");
    }
    rflags = rtm.flags;
    protocol = rtm.protocol;
    type = rtm.type;
    table = rtm.table;
    KResult<AttrTable> t = ParseMessageAttrs(m, sizeof(RtMsg), kRtaMax, true);
    if (!t.ok()) return Err(t.error().number());
    for (const Attr& a : t->all()) {
      switch (a.type) {
        case kRtaTable:
          if (a.data.size() < 4) return Err(ERANGE);
          table = *a.U32();
          break;
        case kRtaOif:
          if (a.data.size() < 4) return Err(ERANGE);
          oif = static_cast<int>(*a.U32());
          if (!rq.ifs->LinkByIndex(oif)) return Err(ENODEV);
          break;
        default:
          return Err(EINVAL, "Unsupported attribute in dump request");
      }
    }
    // Under strict checking the kernel dumps routes, not exceptions, and
    // says so on every route.
    flags |= kFDumpFiltered;
    if (rflags || protocol || type || table || oif) {
      *done_flags |= kFDumpFiltered;
    }
  } else if (m.payload.size() >= sizeof(RtMsg)) {
    rflags = FixedHeader<RtMsg>(m.payload).flags & (kRtmFCloned | kRtmFPrefix);
  }
  // Cached exceptions (RTM_F_CLONED) and prefix routes (RTM_F_PREFIX):
  // there are none.
  if (rflags & (kRtmFCloned | kRtmFPrefix)) return {};
  if (table != 0 && table != stack::kTableMain && table != stack::kTableLocal) {
    if (family == AF_INET) return Err(ENOENT, "ipv4: FIB table does not exist");
    if (family == AF_INET6)
      return Err(ENOENT, "ipv6: FIB table does not exist");
    return {};
  }
  for (const Route& r : rq.ifs->Routes(family)) {
    if (table && r.table != table) continue;
    if (protocol && r.protocol != protocol) continue;
    if (type && r.type != type) continue;
    if (oif && r.oif != oif) continue;
    size_t start = d.b().size();
    PutRoute(d.b(), r, flags, d.seq(), d.pid());
    d.Next(start);
  }
  return {};
}

// ---- Single requests (doit). ----

// rtnl_dev_get / __dev_get_by_index for GETLINK and NEWLINK/SETLINK.
struct Target {
  std::optional<Link> link;
  bool specified = false;
};

KResult<Target> FindLink(const Interfaces& ifs, const IfInfoMsg& ifm,
                         const AttrTable& tb) {
  Target t;
  if (ifm.index > 0) {
    t.specified = true;
    t.link = ifs.LinkByIndex(ifm.index);
  } else if (const Attr* a = tb.Get(kIflaIfname)) {
    t.specified = true;
    t.link = ifs.LinkByName(a->String());
  } else if (const Attr* alt = tb.Get(kIflaAltIfname)) {
    t.specified = true;
    t.link = ifs.LinkByName(alt->String());
  }
  return t;
}

// The policy checks of the attributes the handlers read (validate_nla):
// names fit IFNAMSIZ, integers have their size.
Status CheckLinkAttrs(const AttrTable& tb) {
  for (uint16_t s : {kIflaIfname, kIflaAltIfname}) {
    if (const Attr* a = tb.Get(s)) {
      size_t n = a->data.size();
      if (n < 1) return Err(ERANGE);
      if (a->data[n - 1] == 0) --n;
      if (n > (s == kIflaIfname ? 15u : 127u)) return Err(ERANGE);
    }
  }
  for (uint16_t u :
       {kIflaMtu, kIflaTxqlen, kIflaGroup, kIflaExtMask, kIflaMaster}) {
    if (const Attr* a = tb.Get(u); a != nullptr && a->data.size() < 4) {
      return Err(ERANGE);
    }
  }
  return {};
}

Status GetLink(const RouteRequest& rq, const Message& m,
               std::vector<RouteReply>& out) {
  if (m.payload.size() < sizeof(IfInfoMsg)) {
    return Err(EINVAL, rq.strict ? "Invalid header for get link" : nullptr);
  }
  IfInfoMsg ifm = FixedHeader<IfInfoMsg>(m.payload);
  KResult<AttrTable> tr =
      ParseMessageAttrs(m, sizeof(IfInfoMsg), kIflaMax, rq.strict);
  if (!tr.ok()) return Err(tr.error().number());
  const AttrTable& tb = *tr;
  if (rq.strict) {
    if (ifm.pad || ifm.type || ifm.flags || ifm.change) {
      return Err(EINVAL, "Invalid values in header for get link request");
    }
    for (const Attr& a : tb.all()) {
      if (a.type != kIflaIfname && a.type != kIflaExtMask &&
          a.type != kIflaTargetNetnsid && a.type != kIflaAltIfname) {
        return Err(EINVAL, "Unsupported attribute in get link request");
      }
    }
  }
  if (Status st = CheckLinkAttrs(tb); st.err) return st;
  if (tb.Has(kIflaTargetNetnsid)) {
    return Err(EINVAL, "Invalid target network namespace id");
  }
  uint32_t ext_mask = 0;
  if (const Attr* a = tb.Get(kIflaExtMask)) ext_mask = *a->U32();
  KResult<Target> t = FindLink(*rq.ifs, ifm, tb);
  if (!t.ok()) return Err(t.error().number());
  if (!t->specified) return Err(EINVAL);
  if (!t->link) return Err(ENODEV);
  Builder b;
  PutLink(b, *t->link, kRtmNewLink, 0, m.hdr.seq, rq.portid, ext_mask);
  out.push_back({b.Take()});
  return {};
}

// rtnl_newlink / rtnl_setlink on an existing link (do_setlink's part for
// what lo has).
Status SetLink(const RouteRequest& rq, const Message& m) {
  bool is_new = m.hdr.type == kRtmNewLink;
  if (m.payload.size() < sizeof(IfInfoMsg)) return Err(EINVAL);
  IfInfoMsg ifm = FixedHeader<IfInfoMsg>(m.payload);
  KResult<AttrTable> tr =
      ParseMessageAttrs(m, sizeof(IfInfoMsg), kIflaMax, false);
  if (!tr.ok()) return Err(tr.error().number());
  const AttrTable& tb = *tr;
  if (Status st = CheckLinkAttrs(tb); st.err) return st;
  if (ifm.index < 0 && is_new) return Err(EINVAL, "ifindex can't be negative");
  KResult<Target> t = FindLink(*rq.ifs, ifm, tb);
  if (!t.ok()) return Err(t.error().number());
  if (!t->link) {
    if (!is_new) return Err(t->specified ? ENODEV : EINVAL);
    if (!(m.hdr.flags & kFCreate)) {
      if (t->specified || !tb.Has(kIflaGroup)) return Err(ENODEV);
      LogOnce(m.hdr.type, "changing a link group");
      return Err(EOPNOTSUPP);
    }
    // Creating links (IFLA_LINKINFO kinds) is not supported.
    LogOnce(m.hdr.type, "creating links");
    return Err(EOPNOTSUPP, "Unknown device type");
  }
  if (is_new && (m.hdr.flags & kFExcl)) return Err(EEXIST);
  if (is_new && (m.hdr.flags & kFReplace)) return Err(EOPNOTSUPP);
  const Link& l = *t->link;
  // Attributes do_setlink applies that lo cannot take, checked before
  // anything changes.
  for (const Attr& a : tb.all()) {
    switch (a.type) {
      case kIflaIfname:
        if (a.String() != l.name) {
          if (l.up()) return Err(EBUSY);
          LogOnce(m.hdr.type, "renaming a link");
          return Err(EOPNOTSUPP);
        }
        break;
      case kIflaAddress:
        return Err(EOPNOTSUPP);  // lo has no ndo_set_mac_address
      case kIflaMtu:
      case kIflaTxqlen:
      case kIflaGroup:
      case kIflaExtMask:
      case kIflaAltIfname:
        break;
      default:
        kernel::LogUnsupported(
            "netlink route: link attribute %u is not "
            "supported (EOPNOTSUPP)",
            a.type);
        return Err(EOPNOTSUPP);
    }
  }
  if (const Attr* a = tb.Get(kIflaMtu)) {
    uint32_t mtu = *a->U32();
    if (mtu > 0x7fffffff) return Err(EINVAL);
    (void)rq.ifs->SetMtu(l.index, mtu);
  }
  if (const Attr* a = tb.Get(kIflaTxqlen)) {
    (void)rq.ifs->SetTxqlen(l.index, *a->U32());
  }
  if (const Attr* a = tb.Get(kIflaGroup)) {
    (void)rq.ifs->SetGroup(l.index, *a->U32());
  }
  if (ifm.flags || ifm.change) {
    // rtnl_dev_combine_flags.
    uint32_t flags = ifm.flags;
    if (ifm.change) {
      KResult<uint32_t> cur = rq.ifs->DevFlags(l.index);
      if (!cur.ok()) return Err(cur.error().number());
      flags = (flags & ifm.change) | (*cur & ~ifm.change);
    }
    KResult<void> r = rq.ifs->ChangeFlags(l.index, flags);
    if (!r.ok()) return Err(r.error().number());
  }
  return {};
}

// inet_rtm_getroute / inet6_rtm_getroute for output routes: the route a
// packet to RTA_DST takes, as the cloned route Linux reports (the local
// and main tables are one trie while no rules were added: the table is
// main), or with RTM_F_FIB_MATCH the table entry that matched.
Status GetRoute(const RouteRequest& rq, const Message& m,
                std::vector<RouteReply>& out) {
  constexpr uint16_t kRtaSrc = 2, kRtaIif = 3, kRtaUid = 25;
  constexpr uint32_t kRtmFLookupTable = 0x1000, kRtmFFibMatch = 0x2000,
                     kRtmFNotify = 0x100;
  constexpr uint32_t kRtcfLocal = 0x80000000, kRtcfBroadcast = 0x10000000;
  int family = m.payload[0];
  size_t alen = family == AF_INET ? 4 : 16;
  if (m.payload.size() < sizeof(RtMsg)) return Err(EINVAL);
  RtMsg rtm = FixedHeader<RtMsg>(m.payload);
  if (rq.strict) {
    if ((rtm.src_len && rtm.src_len != alen * 8) ||
        (rtm.dst_len && rtm.dst_len != alen * 8) || rtm.tos || rtm.table ||
        rtm.protocol || rtm.scope || rtm.type ||
        (rtm.flags & ~(kRtmFNotify | kRtmFLookupTable | kRtmFFibMatch))) {
      return Err(EINVAL, "Invalid values in header for route get request");
    }
  }
  KResult<AttrTable> tr = ParseMessageAttrs(m, sizeof(RtMsg), kRtaMax, false);
  if (!tr.ok()) return Err(tr.error().number());
  const AttrTable& tb = *tr;
  for (uint16_t a : {static_cast<uint16_t>(kRtaDst), kRtaSrc}) {
    if (const Attr* x = tb.Get(a); x != nullptr && x->data.size() < alen) {
      return Err(ERANGE);
    }
  }
  if (const Attr* iif = tb.Get(kRtaIif); iif && iif->U32().value_or(0)) {
    LogOnce(m.hdr.type, "input route lookup");
    return Err(EOPNOTSUPP);
  }
  std::array<uint8_t, 16> dst = {}, src = {};
  if (const Attr* x = tb.Get(kRtaDst)) memcpy(dst.data(), x->data.data(), alen);
  const Attr* src_attr = tb.Get(kRtaSrc);
  if (src_attr) memcpy(src.data(), src_attr->data.data(), alen);
  uint32_t uid = rq.uid;
  if (const Attr* x = tb.Get(kRtaUid)) uid = x->U32().value_or(uid);

  // The longest matching prefix. IPv4's 0.0.0.0 is the loopback address.
  std::array<uint8_t, 16> key = dst;
  if (family == AF_INET && dst == std::array<uint8_t, 16>{}) key[0] = 127;
  const Route* best = nullptr;
  std::vector<Route> routes = rq.ifs->Routes(family);
  for (const Route& r : routes) {
    int bits = r.dst_len;
    bool match = true;
    for (int i = 0; i < bits; ++i) {
      int byte = i / 8, bit = 7 - i % 8;
      if (((key[byte] >> bit) & 1) != ((r.dst[byte] >> bit) & 1)) {
        match = false;
        break;
      }
    }
    if (match && (best == nullptr || r.dst_len > best->dst_len)) best = &r;
  }
  if (best == nullptr) return Err(ENETUNREACH);
  Builder b;
  if (rtm.flags & kRtmFFibMatch) {
    Route r = *best;
    if (family == AF_INET) r.table = stack::kTableMain;
    PutRoute(b, r, 0, m.hdr.seq, rq.portid);
    out.push_back({b.Take()});
    return {};
  }
  size_t at = b.Begin(kRtmNewRoute, 0, m.hdr.seq, rq.portid);
  RtMsg rep = {};
  rep.family = static_cast<uint8_t>(family);
  rep.dst_len = static_cast<uint8_t>(alen * 8);
  uint8_t cacheinfo[32] = {2};  // struct rta_cacheinfo: rta_clntref 2
  if (family == AF_INET) {
    rep.src_len = src_attr ? 32 : 0;
    rep.table = stack::kTableMain;
    rep.type = best->type;
    rep.flags = kRtmFCloned | kRtcfLocal |
                (best->type == stack::kRtnBroadcast ? kRtcfBroadcast : 0);
    b.AppendStruct(rep);
    b.AttrU32(kRtaTable, stack::kTableMain);
    b.Attr(kRtaDst, dst.data(), 4);
    if (src_attr) b.Attr(kRtaSrc, src.data(), 4);
    b.AttrU32(kRtaOif, best->oif);
    if (!src_attr && best->prefsrc)
      b.Attr(kRtaPrefsrc, best->prefsrc->data(), 4);
    b.AttrU32(kRtaUid, uid);
    b.Attr(kRtaCacheinfo, cacheinfo, sizeof(cacheinfo));
  } else {
    rep.src_len = 128;
    rep.table = static_cast<uint8_t>(best->table);
    rep.protocol = best->protocol;
    rep.type = best->type;
    b.AppendStruct(rep);
    b.AttrU32(kRtaTable, best->table);
    b.Attr(kRtaDst, dst.data(), 16);
    b.Attr(kRtaSrc, src.data(), 16);
    b.Attr(kRtaPrefsrc, best->dst.data(), 16);
    b.AttrU32(kRtaPriority, best->priority.value_or(0));
    b.AttrU32(kRtaOif, best->oif);
    b.Attr(kRtaCacheinfo, cacheinfo, sizeof(cacheinfo));
    b.AttrU8(kRtaPref, 0);
  }
  b.End(at);
  out.push_back({b.Take()});
  return {};
}

// inet6_rtm_getaddr: one IPv6 address (IFA_ADDRESS or IFA_LOCAL), on the
// interface ifa_index if given.
Status GetAddr6(const RouteRequest& rq, const Message& m,
                std::vector<RouteReply>& out) {
  if (m.payload.size() < sizeof(IfAddrMsg)) return Err(EINVAL);
  IfAddrMsg ifm = FixedHeader<IfAddrMsg>(m.payload);
  KResult<AttrTable> tr =
      ParseMessageAttrs(m, sizeof(IfAddrMsg), kIfaMax, rq.strict);
  if (!tr.ok()) return Err(tr.error().number());
  const Attr* a = tr->Get(kIfaAddress);
  if (a == nullptr) a = tr->Get(kIfaLocal);
  if (a == nullptr || a->data.size() < 16) return Err(EINVAL);
  for (const Addr& x : rq.ifs->Addrs(AF_INET6)) {
    if (ifm.index && x.index != static_cast<int>(ifm.index)) continue;
    if (memcmp(x.addr.data(), a->data.data(), 16) != 0) continue;
    Builder b;
    PutAddr(b, x, 0, m.hdr.seq, rq.portid, rq.ifs->Centiseconds());
    out.push_back({b.Take()});
    return {};
  }
  return Err(EADDRNOTAVAIL);
}

}  // namespace

std::string Notification(const stack::Change& c, uint32_t* group) {
  constexpr uint16_t kRtmDelAddr = 21, kRtmDelRoute = 25;
  Builder b;
  switch (c.kind) {
    case stack::Change::kLink:
      *group = 1;  // RTNLGRP_LINK
      PutLink(b, c.link, kRtmNewLink, 0, 0, 0, 0);
      break;
    case stack::Change::kNewAddr:
    case stack::Change::kDelAddr:
      // RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR.
      *group = c.addr.family == AF_INET ? 5 : 9;
      PutAddr(b, c.addr, 0, 0, 0, 0,
              c.kind == stack::Change::kNewAddr ? kRtmNewAddr : kRtmDelAddr);
      break;
    case stack::Change::kNewRoute:
    case stack::Change::kDelRoute:
      // RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE.
      *group = c.route.family == AF_INET ? 7 : 11;
      PutRoute(
          b, c.route, 0, 0, 0,
          c.kind == stack::Change::kNewRoute ? kRtmNewRoute : kRtmDelRoute);
      break;
  }
  return b.Take();
}

RouteResult HandleRoute(const RouteRequest& rq,
                        absl::Span<const uint8_t> bytes) {
  RouteResult res;
  bool dump_running = rq.dump_running;
  for (const Message& m : SplitMessages(bytes)) {
    Status st;
    bool ack = (m.hdr.flags & kFAck) != 0;
    bool skip_ack = false;
    uint16_t type = m.hdr.type;
    if (!(m.hdr.flags & kFRequest) || type < kNlmsgMinType) {
      // Not a request, or a control message: only acknowledged.
    } else if (type > kRtmMax) {
      st = Err(EOPNOTSUPP);
    } else if (m.payload.empty()) {
      // rtnetlink_rcv_msg: a message without even a family byte.
    } else {
      int kind = (type - kRtmBase) & 3;  // NEW, DEL, GET, SET
      int family = m.payload[0];
      (void)family;
      if (kind != 2 && !rq.net_admin) {
        st = Err(EPERM);
      } else if (kind == 2 && (m.hdr.flags & kFDump)) {
        Status (*dumpit)(const RouteRequest&, const Message&, Dump&,
                         uint16_t*) = nullptr;
        switch (type) {
          case kRtmGetLink:
            // AF_INET6 has a link dump of its own; AF_BRIDGE's lists
            // bridge ports (none); the others fall back to PF_UNSPEC's.
            if (m.payload[0] == AF_INET6) {
              dumpit = DumpLinks6;
            } else if (m.payload[0] == AF_BRIDGE) {
              dumpit = [](const RouteRequest&, const Message&, Dump&,
                          uint16_t*) { return Status{}; };
            } else {
              dumpit = DumpLinks;
            }
            break;
          case kRtmGetAddr:
            dumpit = DumpAddrs;
            break;
          case kRtmGetRoute:
            dumpit = DumpRoutes;
            break;
          case kRtmGetNeigh:
            dumpit = [](const RouteRequest&, const Message&, Dump&, uint16_t*) {
              return Status{};
            };
            break;
          default:
            LogOnce(type, "dump");
            break;
        }
        if (dumpit == nullptr) {
          st = Err(EOPNOTSUPP);
        } else if (dump_running) {
          st = Err(EBUSY);
        } else {
          // netlink_dump_start: no ACK for a dump, even if asked.
          skip_ack = true;
          Dump d(m, rq.portid, rq.dump_size);
          uint16_t done_flags = 0;
          Status ds = dumpit(rq, m, d, &done_flags);
          std::vector<std::string> dgrams =
              d.Finish(done_flags, ds, rq.ext_ack);
          if (ds.err) {
            // The dump ends at its error: only NLMSG_DONE carries it.
            dgrams.erase(dgrams.begin(), dgrams.end() - 1);
          }
          res.queued.push_back({std::move(dgrams[0]), true});
          for (size_t i = 1; i < dgrams.size(); ++i) {
            res.dump_rest.push_back(std::move(dgrams[i]));
          }
          dump_running = !res.dump_rest.empty();
        }
      } else {
        switch (type) {
          case kRtmGetLink:
            st = GetLink(rq, m, res.queued);
            break;
          case kRtmNewLink:
          case kRtmSetLink:
            st = SetLink(rq, m);
            break;
          case kRtmGetAddr:
            if (RequestFamily(m) == AF_INET6) {
              st = GetAddr6(rq, m, res.queued);
            } else {
              st = Err(EOPNOTSUPP);
            }
            break;
          case kRtmGetRoute:
            if (RequestFamily(m) == AF_UNSPEC) {
              st = Err(EOPNOTSUPP);
            } else {
              st = GetRoute(rq, m, res.queued);
            }
            break;
          default:
            LogOnce(type, "request");
            st = Err(EOPNOTSUPP);
            break;
        }
      }
    }
    if (!skip_ack && (ack || st.err)) {
      res.queued.push_back({ErrorMessage(m, st.err, rq.portid, rq.cap_ack,
                                         rq.ext_ack ? st.msg : nullptr)});
    }
  }
  return res;
}

}  // namespace sandbox::net::netlink
