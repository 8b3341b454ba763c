#include "sentry/net/inet/ports.h"

#include <sys/socket.h>

#include <algorithm>
#include <random>
#include <utility>

#include "absl/hash/hash.h"
#include "sentry/net/namespace.h"

namespace sandbox::net::inet {

// The entry of one socket in one table. Its fields are guarded by the
// table's mu_ (table_ and in_table_ are written only under it, and read
// unlocked only by the destructor, when no other reference exists).
class BindingEntry {
 public:
  explicit BindingEntry(PortTable* t) : table_(t) {}
  ~BindingEntry() {
    if (table_ == nullptr) return;
    absl::MutexLock l(&table_->mu_);
    if (in_table_) table_->RemoveLocked(this);
  }
  BindingEntry(const BindingEntry&) = delete;
  BindingEntry& operator=(const BindingEntry&) = delete;

  const BindingState& st() const { return st_; }

 private:
  friend class PortTable;
  PortTable* table_;
  BindingState st_;
  // Made by BindConnect (TCP): its port may be shared with other
  // connect-made entries whose 4-tuples differ (__inet_hash_connect's
  // buckets with fastreuse == -1), never with bind(2)'s.
  bool via_connect_ = false;
  bool in_table_ = false;
  uint64_t seq_ = 0;
};

namespace {

constexpr int kLoopbackIndex = 1;
constexpr uint32_t kLoopback4Ipv6 = 0x7f000006;  // LOOPBACK4_IPV6

// The address lookups and conflict checks see (sk_rcv_saddr): the
// connected source once connected, else the bound address.
IpAddr EffLocal(const BindingState& s) {
  return s.local.has_value() ? s.local->ip : s.req.local.ip;
}

// sk_ipv6only as Linux has it after bind: set by IPV6_V6ONLY, and by
// __inet6_bind for any address other than :: and a v4-mapped one.
bool EffV6only(const BindingState& s) {
  if (!s.req.v6_socket) return false;
  const IpAddr ip = EffLocal(s);
  return s.req.v6only || (!ip.is_v4() && !ip.IsAny());
}

// sk_rcv_saddr, the IPv4 side of a socket's address (inet6_bind stores
// LOOPBACK4_IPV6 for non-mapped IPv6 addresses).
uint32_t V4Field(const IpAddr& ip) {
  if (ip.is_v4()) return ip.v4();
  return ip.IsAny() ? 0 : kLoopback4Ipv6;
}

enum class AddrType { kAny, kMapped, kOther };
AddrType TypeOf(const IpAddr& ip) {
  if (ip.is_v4()) return AddrType::kMapped;
  return ip.IsAny() ? AddrType::kAny : AddrType::kOther;
}

// inet_rcv_saddr_equal(sk1, sk2, match_wildcard = true):
// ipv4_rcv_saddr_equal / ipv6_rcv_saddr_equal.
bool AddrOverlap(const BindingState& sk1, const BindingState& sk2) {
  const IpAddr a1 = EffLocal(sk1), a2 = EffLocal(sk2);
  const bool v6only1 = EffV6only(sk1), v6only2 = EffV6only(sk2);
  auto v4_equal = [&] {
    if (v6only2) return false;
    const uint32_t x = V4Field(a1), y = V4Field(a2);
    return x == y || x == 0 || y == 0;
  };
  if (!sk1.req.v6_socket) return v4_equal();
  const AddrType t1 = TypeOf(a1);
  // inet6_rcv_saddr(sk2) is NULL for an AF_INET sk2: IPV6_ADDR_MAPPED.
  const AddrType t2 = sk2.req.v6_socket ? TypeOf(a2) : AddrType::kMapped;
  if (t1 == AddrType::kMapped && t2 == AddrType::kMapped) return v4_equal();
  if (t1 == AddrType::kAny && t2 == AddrType::kAny) return true;
  if (t2 == AddrType::kAny && !(v6only2 && t1 == AddrType::kMapped)) {
    return true;
  }
  if (t1 == AddrType::kAny && !(v6only1 && t2 == AddrType::kMapped)) {
    return true;
  }
  return sk2.req.v6_socket && a1 == a2;
}

bool DevOverlap(int a, int b) { return a == 0 || b == 0 || a == b; }

// Whether `nw` may not share a port with `old`.
//   TCP: inet_bind_conflict with (relax, reuseport_ok) = (true, true) for
//        bind(2) and listen(2) (inet_csk_get_port), (false, false) for the
//        ephemeral search (inet_csk_find_open_port).
//   UDP: udp_lib_lport_inuse.
//   Ping: ping_get_port (the ident alone: no address check).
bool Conflict(Proto proto, const BindingState& nw, const BindingState& old,
              bool relax) {
  const BindRequest& a = nw.req;
  const BindRequest& b = old.req;
  switch (proto) {
    case Proto::kPing:
      return !(a.reuseaddr && b.reuseaddr);
    case Proto::kUdp:
      if (a.reuseaddr && b.reuseaddr) return false;
      if (!DevOverlap(a.bound_dev_if, b.bound_dev_if)) return false;
      if (!AddrOverlap(nw, old)) return false;
      return !(a.reuseport && b.reuseport && a.uid == b.uid);
    case Proto::kTcp:
      break;
  }
  if (!DevOverlap(a.bound_dev_if, b.bound_dev_if)) return false;
  if (!AddrOverlap(nw, old)) return false;
  if (a.reuseaddr && b.reuseaddr && !old.listening) return !relax;
  const bool reuseport_ok = relax;
  return !(reuseport_ok && a.reuseport && b.reuseport && a.uid == b.uid);
}

// One SO_REUSEPORT group (inet_reuseport_add_sock/udp_reuseport_add_sock):
// same family, IPV6_V6ONLY, device, owner uid, address (no wildcard
// matching), both with SO_REUSEPORT.
bool SameReuseportGroup(const BindingState& x, const BindingState& y) {
  return x.req.reuseport && y.req.reuseport &&
         x.req.v6_socket == y.req.v6_socket && EffV6only(x) == EffV6only(y) &&
         x.req.bound_dev_if == y.req.bound_dev_if && x.req.uid == y.req.uid &&
         EffLocal(x) == EffLocal(y);
}

// A device a packet arriving on lo may reach (inet_sk_bound_dev_eq): -1 if
// not, else its score (bound to lo: more specific).
int DevScore(int bound_dev_if) {
  if (bound_dev_if == 0) return 0;
  return bound_dev_if == kLoopbackIndex ? 1 : -1;
}

uint64_t FlowHash(const InetAddr& dst, const InetAddr& src) {
  return absl::HashOf(src.ip, src.port, dst.ip, dst.port);
}

// reuseport_select_sock: the receivers of a lookup on the port's entries
// `v` whose best match is `best`, appended to `order`: when `grouped`, the
// entries that are `eligible` and of `best`'s SO_REUSEPORT group, from the
// one the flow's hash picks on, if they are two or more; else `best` alone.
template <typename Eligible>
void AppendReceivers(const std::vector<BindingEntry*>& v,
                     const BindingEntry& best, bool grouped, Eligible eligible,
                     const InetAddr& dst, const InetAddr& src,
                     std::vector<std::weak_ptr<Socket>>& order) {
  std::vector<const BindingEntry*> group;
  if (grouped) {
    for (const BindingEntry* e : v) {
      if (eligible(e->st()) && SameReuseportGroup(e->st(), best.st())) {
        group.push_back(e);
      }
    }
  }
  if (group.size() > 1) {
    const size_t start = FlowHash(dst, src) % group.size();
    for (size_t i = 0; i < group.size(); i++) {
      order.push_back(group[(start + i) % group.size()]->st().owner);
    }
  } else {
    order.push_back(best.st().owner);
  }
}

struct PortTables {
  absl::Mutex mu;
  std::unique_ptr<PortTable> tables[3] ABSL_GUARDED_BY(mu);
};

}  // namespace

PortTable::PortTable(Proto proto, NetNamespace& ns)
    : proto_(proto), ns_(ns), rng_(std::random_device{}() | 1) {}

PortTable::~PortTable() {
  absl::MutexLock l(&mu_);
  for (auto& [port, v] : ports_) {
    for (BindingEntry* e : v) {
      e->in_table_ = false;
      e->table_ = nullptr;
    }
  }
  ports_.clear();
}

PortTable& PortTable::Of(NetNamespace& ns, Proto proto) {
  PortTables& t = ns.Get<PortTables>();
  absl::MutexLock l(&t.mu);
  auto& slot = t.tables[static_cast<int>(proto)];
  if (slot == nullptr) slot = std::make_unique<PortTable>(proto, ns);
  return *slot;
}

uint32_t PortTable::RandomLocked(uint32_t n) {
  // xorshift64*: no need for more than spreading the ports.
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  const uint64_t r = rng_ * 0x2545F4914F6CDD1Dull;
  return n == 0 ? 0 : static_cast<uint32_t>((r >> 32) % n);
}

// inet_sk_get_local_port_range.
std::pair<int, int> PortTable::RangeFor(const BindRequest& req) const {
  NetSysctls& sys = ns_.sysctl();
  int lo = static_cast<int>(sys.ip_local_port_lo.load());
  int hi = static_cast<int>(sys.ip_local_port_hi.load());
  const int sk_lo = req.range_lo, sk_hi = req.range_hi;
  if (sk_lo != 0 || sk_hi != 0) {
    const int l0 = lo, h0 = hi;
    if (l0 <= sk_lo && sk_lo <= h0) lo = sk_lo;
    if (l0 <= sk_hi && sk_hi <= h0) hi = sk_hi;
  }
  return {lo, hi};
}

void PortTable::InsertLocked(BindingEntry* e) {
  e->seq_ = ++seq_;
  e->in_table_ = true;
  ports_[e->st_.req.local.port].push_back(e);
}

void PortTable::RemoveLocked(BindingEntry* e) {
  auto it = ports_.find(e->st_.req.local.port);
  if (it != ports_.end()) {
    auto& v = it->second;
    v.erase(std::remove(v.begin(), v.end(), e), v.end());
    if (v.empty()) ports_.erase(it);
  }
  e->in_table_ = false;
}

bool PortTable::PortFreeLocked(uint16_t port, const BindingEntry& nw,
                               bool relax) const {
  auto it = ports_.find(port);
  if (it == ports_.end()) return true;
  BindingState probe = nw.st_;
  probe.req.local.port = port;
  for (const BindingEntry* e : it->second) {
    if (e == &nw) continue;
    if (Conflict(proto_, probe, e->st_, relax)) return false;
  }
  return true;
}

// bind(2) to port 0: inet_csk_find_open_port (TCP: the half of the range
// connect(2) does not favour first, odd offsets, then the rest; SO_REUSEADDR
// sockets start in the lower half), udp_lib_get_port (UDP: a random start,
// every port of the range), ping_get_port (a rover over 1..65535).
KResult<uint16_t> PortTable::EphemeralLocked(const BindingEntry& nw) {
  if (proto_ == Proto::kPing) {
    uint32_t result = ping_rover_ + 1u;
    for (uint32_t i = 0; i < (1u << 16); i++, result++) {
      result &= 0xffff;
      if (result == 0) result = 1;
      // An ident nobody has (SO_REUSEADDR shares only explicit ones).
      if (ports_.find(static_cast<uint16_t>(result)) == ports_.end()) {
        ping_rover_ = result;
        return static_cast<uint16_t>(result);
      }
    }
    return kEADDRINUSE;
  }
  auto [low0, high0] = RangeFor(nw.st_.req);
  if (high0 < low0) return kEADDRINUSE;
  if (proto_ == Proto::kUdp) {
    const uint32_t remaining = high0 - low0 + 1;
    const uint32_t first = RandomLocked(remaining);
    for (uint32_t i = 0; i < remaining; i++) {
      const uint16_t port = low0 + (first + i) % remaining;
      if (PortFreeLocked(port, nw, true)) return port;
    }
    return kEADDRINUSE;
  }
  int attempt_half = nw.st_.req.reuseaddr ? 1 : 0;
  for (;;) {
    int low = low0, high = high0 + 1;  // [low, high[
    if (high - low < 4) attempt_half = 0;
    if (attempt_half != 0) {
      const int half = low + (((high - low) >> 2) << 1);
      if (attempt_half == 1) {
        high = half;
      } else {
        low = half;
      }
    }
    uint32_t remaining = high - low;
    if (remaining > 1) remaining &= ~1u;
    uint32_t offset = RandomLocked(remaining) | 1u;
    for (;;) {
      int port = low + offset;
      for (uint32_t i = 0; i < remaining; i += 2, port += 2) {
        if (port >= high) port -= remaining;
        if (PortFreeLocked(port, nw, /*relax=*/false)) {
          return static_cast<uint16_t>(port);
        }
      }
      offset--;
      if (offset & 1) break;
    }
    if (attempt_half == 1) {
      attempt_half = 2;
      continue;
    }
    return kEADDRINUSE;
  }
}

KResult<Binding> PortTable::Bind(const BindRequest& req,
                                 std::weak_ptr<Socket> owner) {
  auto b = std::make_shared<BindingEntry>(this);
  b->st_.req = req;
  b->st_.owner = std::move(owner);
  absl::MutexLock l(&mu_);
  if (req.local.port == 0) {
    TRY(uint16_t port, EphemeralLocked(*b));
    b->st_.req.local.port = port;
  } else if (!PortFreeLocked(req.local.port, *b, /*relax=*/true)) {
    return kEADDRINUSE;
  }
  InsertLocked(b.get());
  return b;
}

// __inet_hash_connect (TCP): even offsets first (the parity bind(2) leaves
// alone), then odd; a port is usable when nothing bound it with bind(2)
// and no connection on it has the same 4-tuple. UDP and ping autobind as
// bind(port 0) does, then connect.
KResult<Binding> PortTable::BindConnect(const BindRequest& req,
                                        const InetAddr& remote,
                                        std::weak_ptr<Socket> owner) {
  auto b = std::make_shared<BindingEntry>(this);
  b->st_.req = req;
  b->st_.req.local.port = 0;
  b->st_.owner = std::move(owner);
  absl::MutexLock l(&mu_);
  if (proto_ != Proto::kTcp) {
    KResult<uint16_t> port = EphemeralLocked(*b);
    if (!port.ok()) return kEAGAIN;  // inet_autobind
    b->st_.req.local.port = port.value();
    b->st_.local = b->st_.req.local;
    b->st_.remote = remote;
    InsertLocked(b.get());
    return b;
  }
  auto [low, high] = RangeFor(req);
  if (high < low) return kEADDRNOTAVAIL;
  const uint32_t remaining = high - low + 1;
  uint32_t offset = RandomLocked(remaining) & ~1u;
  auto usable = [&](uint16_t port) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = ports_.find(port);
    if (it == ports_.end()) return true;
    for (const BindingEntry* e : it->second) {
      if (!e->via_connect_) return false;
      if (e->st_.remote == remote && EffLocal(e->st_) == req.local.ip) {
        return false;
      }
    }
    return true;
  };
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t i = 0; i < remaining; i += 2) {
      const uint16_t port = low + (offset + i) % remaining;
      if (!usable(port)) continue;
      b->st_.req.local.port = port;
      b->st_.local = b->st_.req.local;
      b->st_.remote = remote;
      b->via_connect_ = true;
      InsertLocked(b.get());
      return b;
    }
    offset++;
    if (remaining <= 1) break;
  }
  return kEADDRNOTAVAIL;
}

KResult<void> PortTable::Connect(const Binding& b, const InetAddr& local,
                                 const InetAddr& remote) {
  absl::MutexLock l(&mu_);
  if (!b->in_table_) return kEINVAL;
  if (proto_ == Proto::kTcp) {
    // check_established: the 4-tuple must be unused.
    auto it = ports_.find(b->st_.req.local.port);
    if (it != ports_.end()) {
      for (const BindingEntry* e : it->second) {
        if (e == b.get() || !e->st_.remote.has_value()) continue;
        if (*e->st_.remote == remote && EffLocal(e->st_) == local.ip) {
          return kEADDRNOTAVAIL;
        }
      }
    }
  }
  InetAddr l2 = local;
  l2.port = b->st_.req.local.port;
  b->st_.local = l2;
  b->st_.remote = remote;
  return OkResult();
}

void PortTable::Disconnect(const Binding& b) {
  absl::MutexLock l(&mu_);
  b->st_.local.reset();
  b->st_.remote.reset();
}

// inet_csk_listen_start: the entry is re-checked as a listener
// (inet_csk_get_port with the socket in TCP_LISTEN).
KResult<void> PortTable::Listen(const Binding& b) {
  absl::MutexLock l(&mu_);
  if (!b->in_table_) return kEINVAL;
  if (b->st_.listening) return OkResult();
  if (!PortFreeLocked(b->st_.req.local.port, *b, /*relax=*/true)) {
    return kEADDRINUSE;
  }
  b->st_.listening = true;
  return OkResult();
}

void PortTable::Unbind(const Binding& b) {
  if (b == nullptr) return;
  absl::MutexLock l(&mu_);
  if (b->in_table_) RemoveLocked(b.get());
}

Binding PortTable::Inherit(const Binding& listener, const InetAddr& local,
                           const InetAddr& remote,
                           std::weak_ptr<Socket> owner) {
  auto b = std::make_shared<BindingEntry>(this);
  absl::MutexLock l(&mu_);
  b->st_.req = listener->st_.req;
  b->st_.local = local;
  b->st_.local->port = b->st_.req.local.port;
  b->st_.remote = remote;
  b->st_.owner = std::move(owner);
  InsertLocked(b.get());
  return b;
}

BindingState PortTable::Snapshot(const Binding& b) const {
  absl::MutexLock l(&mu_);
  return b->st_;
}

// __inet_lookup_listener / inet6_lookup_listener with compute_score: the
// listeners bound to the destination address, else the wildcard ones; the
// best score wins (an AF_INET socket over an AF_INET6 one for IPv4, a
// device-bound one over others), its SO_REUSEPORT group spread by a hash
// of the flow.
std::shared_ptr<Socket> PortTable::FindListener(const InetAddr& dst,
                                                const InetAddr& src) const {
  std::vector<std::weak_ptr<Socket>> order;
  {
    absl::MutexLock l(&mu_);
    auto it = ports_.find(dst.port);
    if (it == ports_.end()) return nullptr;
    const auto& v = it->second;
    const bool v4 = dst.ip.is_v4();
    for (int phase = 0; phase < 2 && order.empty(); phase++) {
      const BindingEntry* best = nullptr;
      int hiscore = -1;
      // Newest first, as the listening hash adds at the head.
      for (auto e = v.rbegin(); e != v.rend(); ++e) {
        const BindingState& s = (*e)->st_;
        if (!s.listening) continue;
        const IpAddr ip = EffLocal(s);
        int score;
        if (v4) {
          if (EffV6only(s)) continue;
          const uint32_t want = phase == 0 ? dst.ip.v4() : 0;
          if (V4Field(ip) != want) continue;
          if (phase == 0 && want == 0) continue;  // phase 1 covers it
          const int d = DevScore(s.req.bound_dev_if);
          if (d < 0) continue;
          score = 1 + d + (s.req.v6_socket ? 0 : 1);
        } else {
          if (!s.req.v6_socket) continue;
          const IpAddr want = phase == 0 ? dst.ip : IpAddr::AnyV6();
          if (ip != want) continue;
          if (phase == 0 && want == IpAddr::AnyV6()) continue;
          const int d = DevScore(s.req.bound_dev_if);
          if (d < 0) continue;
          score = 1 + d;
        }
        if (score > hiscore) {
          hiscore = score;
          best = *e;
        }
      }
      if (best == nullptr) continue;
      AppendReceivers(
          v, *best, best->st_.req.reuseport,
          [](const BindingState& s) { return s.listening; }, dst, src, order);
    }
  }
  // Locked outside mu_: dropping a socket unbinds it (takes mu_).
  for (const auto& w : order) {
    if (auto s = w.lock()) return s;
  }
  return nullptr;
}

// __udp4_lib_lookup / __udp6_lib_lookup with compute_score (a connected
// socket only for its peer, above unconnected ones; SO_REUSEPORT groups of
// unconnected sockets spread by the flow's hash); ping_lookup (the ident,
// the family, the bound address if any; newest first).
std::shared_ptr<Socket> PortTable::FindReceiver(const InetAddr& dst,
                                                const InetAddr& src) const {
  std::vector<std::weak_ptr<Socket>> order;
  {
    absl::MutexLock l(&mu_);
    auto it = ports_.find(dst.port);
    if (it == ports_.end()) return nullptr;
    const auto& v = it->second;
    const bool v4 = dst.ip.is_v4();
    if (proto_ == Proto::kPing) {
      for (auto e = v.rbegin(); e != v.rend(); ++e) {
        const BindingState& s = (*e)->st_;
        if (s.req.v6_socket == v4) continue;
        const IpAddr ip = EffLocal(s);
        if (!ip.IsAny() && ip != dst.ip) continue;
        if (DevScore(s.req.bound_dev_if) < 0) continue;
        order.push_back(s.owner);
      }
    } else {
      for (int phase = 0; phase < 2 && order.empty(); phase++) {
        const BindingEntry* best = nullptr;
        int hiscore = -1;
        for (auto e = v.rbegin(); e != v.rend(); ++e) {
          const BindingState& s = (*e)->st_;
          const IpAddr ip = EffLocal(s);
          int score;
          if (v4) {
            if (EffV6only(s)) continue;
            const uint32_t want = phase == 0 ? dst.ip.v4() : 0;
            if (phase == 0 && want == 0) continue;
            if (V4Field(ip) != want) continue;
            score = s.req.v6_socket ? 1 : 2;
          } else {
            if (!s.req.v6_socket) continue;
            const IpAddr want = phase == 0 ? dst.ip : IpAddr::AnyV6();
            if (phase == 0 && want == IpAddr::AnyV6()) continue;
            if (ip != want) continue;
            score = 1;
          }
          if (s.remote.has_value()) {
            if (!s.remote->ip.IsAny() && s.remote->ip != src.ip) continue;
            if (s.remote->port != 0 && s.remote->port != src.port) continue;
            score += 8;
          }
          const int d = DevScore(s.req.bound_dev_if);
          if (d < 0) continue;
          score += 4 * d;
          if (score > hiscore) {
            hiscore = score;
            best = *e;
          }
        }
        if (best == nullptr) continue;
        AppendReceivers(
            v, *best, best->st_.req.reuseport && !best->st_.remote.has_value(),
            [](const BindingState& s) { return !s.remote.has_value(); }, dst,
            src, order);
      }
    }
  }
  for (const auto& w : order) {
    if (auto s = w.lock()) return s;
  }
  return nullptr;
}

std::vector<BindingState> PortTable::List() const {
  std::vector<std::pair<uint64_t, BindingState>> all;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [port, v] : ports_) {
      for (const BindingEntry* e : v) all.emplace_back(e->seq_, e->st_);
    }
  }
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<BindingState> out;
  out.reserve(all.size());
  for (auto& [seq, s] : all) out.push_back(std::move(s));
  return out;
}

}  // namespace sandbox::net::inet
