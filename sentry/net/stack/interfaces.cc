#include "sentry/net/stack/interfaces.h"

#include <sys/socket.h>
#include <time.h>

#include <algorithm>

#include "absl/strings/str_format.h"

namespace sandbox::net::stack {
namespace {

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// The bits dev_change_flags copies from the caller's word.
constexpr uint32_t kUserSettable = kIffDebug | kIffNotrailers | kIffNoarp |
                                   kIffDynamic | kIffMulticast | kIffPortsel |
                                   kIffAutomedia;
// IFF_VOLATILE: bits the device (not the user) owns.
constexpr uint32_t kVolatile = kIffLoopback | kIffPointopoint | kIffBroadcast |
                               kIffMaster | kIffSlave | kIffRunning |
                               kIffLowerUp | kIffDormant;

std::array<uint8_t, 16> V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {a, b, c, d};
}
std::array<uint8_t, 16> V6Loopback() {
  std::array<uint8_t, 16> a = {};
  a[15] = 1;
  return a;
}

}  // namespace

Interfaces::Interfaces() : start_ns_(MonotonicNs()) {
  absl::MutexLock l(&mu_);
  Dev lo;
  lo.link.index = kLoopbackIndex;
  lo.link.name = "lo";
  lo.link.type = kArphrdLoopback;
  lo.link.flags = kIffLoopback;
  lo.link.mtu = 65536;
  lo.link.txqlen = 1000;
  lo.link.operstate = kOperDown;
  lo.link.qdisc = "noop";
  devs_.push_back(std::move(lo));
  UpLocked(devs_.back());
}

uint32_t Interfaces::Centiseconds() const {
  return static_cast<uint32_t>((MonotonicNs() - start_ns_) / 10000000);
}

Interfaces::Dev* Interfaces::FindLocked(int index) {
  for (Dev& d : devs_) {
    if (d.link.index == index) return &d;
  }
  return nullptr;
}

const Interfaces::Dev* Interfaces::FindLocked(int index) const {
  for (const Dev& d : devs_) {
    if (d.link.index == index) return &d;
  }
  return nullptr;
}

Link Interfaces::Report(const Dev& d) {
  Link l = d.link;
  // dev_get_flags: RUNNING and LOWER_UP while up (lo always has carrier).
  if (l.up()) l.flags |= kIffRunning | kIffLowerUp;
  if (l.promiscuity > 0) l.flags |= kIffPromisc;
  if (l.allmulti > 0) l.flags |= kIffAllmulti;
  return l;
}

void Interfaces::UpLocked(Dev& d) {
  uint32_t now = Centiseconds();
  d.link.flags |= kIffUp;
  d.link.operstate = kOperUnknown;
  if (!d.was_up) {
    // inetdev_event(NETDEV_UP) on a loopback device: 127.0.0.1/8.
    d.was_up = true;
    d.link.qdisc = "noqueue";
    Addr a;
    a.family = AF_INET;
    a.index = d.link.index;
    a.prefixlen = 8;
    a.scope = kScopeHost;
    a.flags = kIfaPermanent;
    a.addr = V4(127, 0, 0, 1);
    a.label = d.link.name;
    a.cstamp = a.tstamp = now;
    d.addrs.insert(d.addrs.begin(), a);
  }
  // addrconf_notify(NETDEV_UP) -> init_loopback: ::1/128.
  Addr a6;
  a6.family = AF_INET6;
  a6.index = d.link.index;
  a6.prefixlen = 128;
  a6.scope = kScopeHost;
  a6.flags = kIfaPermanent;
  a6.addr = V6Loopback();
  a6.proto = kIfaProtoKernelLo;
  a6.cstamp = a6.tstamp = now;
  d.addrs.push_back(a6);
}

void Interfaces::DownLocked(Dev& d) {
  d.link.flags &= ~kIffUp;
  d.link.operstate = kOperDown;
  // addrconf_ifdown: IPv6 addresses go; IPv4 ones stay.
  d.addrs.erase(
      std::remove_if(d.addrs.begin(), d.addrs.end(),
                     [](const Addr& a) { return a.family == AF_INET6; }),
      d.addrs.end());
}

std::vector<Link> Interfaces::Links() const {
  absl::MutexLock l(&mu_);
  std::vector<Link> out;
  for (const Dev& d : devs_) out.push_back(Report(d));
  return out;
}

std::optional<Link> Interfaces::LinkByIndex(int index) const {
  absl::MutexLock l(&mu_);
  const Dev* d = FindLocked(index);
  if (d == nullptr) return std::nullopt;
  return Report(*d);
}

std::optional<Link> Interfaces::LinkByName(std::string_view name) const {
  absl::MutexLock l(&mu_);
  for (const Dev& d : devs_) {
    if (d.link.name == name) return Report(d);
  }
  return std::nullopt;
}

std::vector<Addr> Interfaces::Addrs(int family) const {
  absl::MutexLock l(&mu_);
  return AddrsLocked(family);
}

std::vector<Addr> Interfaces::AddrsLocked(int family) const {
  std::vector<Addr> out;
  for (int f : {AF_INET, AF_INET6}) {
    if (family != AF_UNSPEC && family != f) continue;
    for (const Dev& d : devs_) {
      for (const Addr& a : d.addrs) {
        if (a.family == f) out.push_back(a);
      }
    }
  }
  return out;
}

std::vector<Route> Interfaces::Routes(int family) const {
  absl::MutexLock l(&mu_);
  return RoutesLocked(family);
}

void Interfaces::SetListener(ChangeListener l) {
  absl::MutexLock lock(&mu_);
  listener_ = std::move(l);
}

namespace {

bool SameRoute(const Route& a, const Route& b) {
  return a.family == b.family && a.dst_len == b.dst_len && a.table == b.table &&
         a.type == b.type && a.dst == b.dst && a.oif == b.oif;
}
bool SameAddr(const Addr& a, const Addr& b) {
  return a.family == b.family && a.index == b.index &&
         a.prefixlen == b.prefixlen && a.addr == b.addr;
}
template <typename T, typename Eq>
std::vector<T> Minus(const std::vector<T>& a, const std::vector<T>& b, Eq eq) {
  std::vector<T> out;
  for (const T& x : a) {
    if (std::none_of(b.begin(), b.end(),
                     [&](const T& y) { return eq(x, y); })) {
      out.push_back(x);
    }
  }
  return out;
}

}  // namespace

std::vector<Route> Interfaces::RoutesLocked(int family) const {
  std::vector<Route> out;
  if (family == AF_UNSPEC || family == AF_INET) {
    // fib_add_ifaddr of each IPv4 address, in the local table's trie order
    // (by key, then by prefix length).
    for (const Dev& d : devs_) {
      for (const Addr& a : d.addrs) {
        if (a.family != AF_INET) continue;
        uint32_t ip = (uint32_t{a.addr[0]} << 24) | (a.addr[1] << 16) |
                      (a.addr[2] << 8) | a.addr[3];
        uint32_t mask =
            a.prefixlen == 0 ? 0 : ~uint32_t{0} << (32 - a.prefixlen);
        auto bytes = [](uint32_t v) {
          return V4(v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);
        };
        Route r;
        r.family = AF_INET;
        r.table = kTableLocal;
        r.protocol = kProtoKernel;
        r.prefsrc = a.addr;
        r.oif = d.link.index;
        if (a.prefixlen < 32) {
          // A loopback device's prefix route is local, in the local table.
          r.dst_len = a.prefixlen;
          r.scope = kScopeHost;
          r.type = kRtnLocal;
          r.dst = bytes(ip & mask);
          out.push_back(r);
        }
        r.dst_len = 32;
        r.scope = kScopeHost;
        r.type = kRtnLocal;
        r.dst = a.addr;
        out.push_back(r);
        if (d.link.up() && a.prefixlen < 31) {
          r.scope = kScopeLink;
          r.type = kRtnBroadcast;
          r.dst = bytes(ip | ~mask);
          out.push_back(r);
        }
      }
    }
  }
  if (family == AF_UNSPEC || family == AF_INET6) {
    for (const Dev& d : devs_) {
      if (!d.link.up()) continue;
      for (const Addr& a : d.addrs) {
        if (a.family != AF_INET6) continue;
        Route r;
        r.family = AF_INET6;
        r.dst_len = 128;
        r.table = kTableLocal;
        r.protocol = kProtoKernel;
        r.scope = kScopeUniverse;
        r.type = kRtnLocal;
        r.dst = a.addr;
        r.oif = d.link.index;
        r.priority = 0;
        out.push_back(r);
      }
    }
  }
  return out;
}

KResult<void> Interfaces::ChangeFlags(int index, uint32_t flags) {
  std::vector<Change> changes;
  ChangeListener listener;
  {
    absl::MutexLock l(&mu_);
    Dev* d = FindLocked(index);
    if (d == nullptr) return kENODEV;
    Link before = Report(*d);
    std::vector<Route> routes = RoutesLocked(AF_UNSPEC);
    std::vector<Addr> addrs = AddrsLocked(AF_UNSPEC);
    ChangeFlagsLocked(*d, flags);
    Link after = Report(*d);
    if (before.flags == after.flags &&
        before.promiscuity == after.promiscuity) {
      return OkResult();
    }
    Change c;
    c.link = after;
    changes.push_back(c);
    std::vector<Route> routes_now = RoutesLocked(AF_UNSPEC);
    std::vector<Addr> addrs_now = AddrsLocked(AF_UNSPEC);
    // Linux's order when lo goes up: the new IPv4 routes, the addresses,
    // the IPv6 routes; when it goes down: the IPv6 routes, the addresses
    // (the IPv4 broadcast route goes unannounced).
    auto route = [&](Change::Kind k, const Route& r) {
      Change x;
      x.kind = k;
      x.route = r;
      changes.push_back(x);
    };
    auto addr = [&](Change::Kind k, const Addr& a) {
      Change x;
      x.kind = k;
      x.addr = a;
      changes.push_back(x);
    };
    for (const Route& r : Minus(routes_now, routes, SameRoute)) {
      if (r.family == AF_INET) route(Change::kNewRoute, r);
    }
    for (const Route& r : Minus(routes, routes_now, SameRoute)) {
      if (r.family == AF_INET6) route(Change::kDelRoute, r);
    }
    for (const Addr& a : Minus(addrs, addrs_now, SameAddr)) {
      addr(Change::kDelAddr, a);
    }
    for (const Addr& a : Minus(addrs_now, addrs, SameAddr)) {
      addr(Change::kNewAddr, a);
    }
    for (const Route& r : Minus(routes_now, routes, SameRoute)) {
      if (r.family == AF_INET6) route(Change::kNewRoute, r);
    }
    listener = listener_;
  }
  if (listener) listener(changes);
  return OkResult();
}

void Interfaces::ChangeFlagsLocked(Dev& dev, uint32_t flags) {
  Dev* d = &dev;
  uint32_t old = d->link.flags;
  d->link.flags = (flags & kUserSettable) |
                  (old & (kIffUp | kVolatile | kIffPromisc | kIffAllmulti));
  if ((flags ^ d->gflags) & kIffPromisc) {
    d->gflags ^= kIffPromisc;
    d->link.promiscuity += (flags & kIffPromisc) ? 1 : -1;
  }
  if ((flags ^ d->gflags) & kIffAllmulti) {
    d->gflags ^= kIffAllmulti;
    d->link.allmulti += (flags & kIffAllmulti) ? 1 : -1;
  }
  if ((old ^ flags) & kIffUp) {
    if (flags & kIffUp) {
      UpLocked(*d);
    } else {
      DownLocked(*d);
    }
  }
}

KResult<uint32_t> Interfaces::DevFlags(int index) const {
  absl::MutexLock l(&mu_);
  const Dev* d = FindLocked(index);
  if (d == nullptr) return kENODEV;
  uint32_t f = d->link.flags;
  if (d->gflags & kIffPromisc) f |= kIffPromisc;
  if (d->gflags & kIffAllmulti) f |= kIffAllmulti;
  return f;
}

KResult<void> Interfaces::SetMtu(int index, uint32_t mtu) {
  absl::MutexLock l(&mu_);
  Dev* d = FindLocked(index);
  if (d == nullptr) return kENODEV;
  // dev_validate_mtu: lo has min_mtu 0 and no max_mtu; the value is an
  // int.
  if (mtu > 0x7fffffff) return kEINVAL;
  d->link.mtu = mtu;
  return OkResult();
}

KResult<void> Interfaces::SetTxqlen(int index, uint32_t txqlen) {
  absl::MutexLock l(&mu_);
  Dev* d = FindLocked(index);
  if (d == nullptr) return kENODEV;
  d->link.txqlen = txqlen;
  return OkResult();
}

KResult<void> Interfaces::SetGroup(int index, uint32_t group) {
  absl::MutexLock l(&mu_);
  Dev* d = FindLocked(index);
  if (d == nullptr) return kENODEV;
  d->link.group = group;
  return OkResult();
}

std::string FormatProcNetDev(const Interfaces& ifs) {
  std::string out =
      "Inter-|   Receive                                                |"
      "  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|"
      "bytes    packets errs drop fifo colls carrier compressed\n";
  for (const Link& l : ifs.Links()) {
    const LinkStats& s = l.stats;
    absl::StrAppendFormat(
        &out,
        "%6s:%8u %7u %4u %4u %4u %5u %10u %9u %8u %7u %4u %4u %4u %5u %7u "
        "%10u\n",
        l.name, s.rx_bytes, s.rx_packets, s.rx_errors, s.rx_dropped, 0, 0, 0,
        s.multicast, s.tx_bytes, s.tx_packets, s.tx_errors, s.tx_dropped, 0, 0,
        0, 0);
  }
  return out;
}

std::string FormatProcNetIfInet6(const Interfaces& ifs) {
  std::string out;
  std::vector<Link> links = ifs.Links();
  for (const Addr& a : ifs.Addrs(AF_INET6)) {
    std::string name;
    for (const Link& l : links) {
      if (l.index == a.index) name = l.name;
    }
    std::string hex;
    for (uint8_t b : a.addr) absl::StrAppendFormat(&hex, "%02x", b);
    // The IPv6 scope word of ipv6_addr_scope: 0x10 loopback, 0x20 link,
    // 0x00 global.
    unsigned scope = a.scope == kScopeHost   ? 0x10
                     : a.scope == kScopeLink ? 0x20
                                             : 0x00;
    absl::StrAppendFormat(&out, "%s %02x %02x %02x %02x %8s\n", hex, a.index,
                          a.prefixlen, scope, a.flags & 0xff, name);
  }
  return out;
}

}  // namespace sandbox::net::stack
