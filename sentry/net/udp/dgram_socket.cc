#include "sentry/net/udp/dgram_socket.h"

#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "sentry/net/inet/mib.h"
#include "sentry/net/wait.h"
#include "sentry/vfs/file_description.h"

namespace sandbox::net::udp {
namespace {

// Copies `d` (at most the buffer) out; sets MSG_TRUNC. Returns the bytes
// copied or EFAULT.
KResult<size_t> CopyOutData(MessageIo& io, const std::vector<uint8_t>& d,
                            RecvRequest& req, size_t off = 0) {
  // udp_recvmsg: copied = min(len, ulen - off); MSG_TRUNC when the buffer
  // was the limit and shorter than the datagram (even if what was left
  // after the peek offset fitted exactly).
  off = std::min(off, d.size());
  size_t n = io.size();
  if (n > d.size() - off) {
    n = d.size() - off;
  } else if (n < d.size()) {
    req.msg_flags |= MSG_TRUNC;
  }
  if (n != 0) {
    TRY(size_t got, io.CopyOut(0, absl::MakeConstSpan(d.data() + off, n)));
    if (got != n) return kEFAULT;
  }
  return n;
}

}  // namespace

HostPath& DatagramHostPath() {
  static HostPath* p = new HostPath();
  return *p;
}

DgramSocket::DgramSocket(int family, int protocol, uint32_t flags,
                         const Ucred& owner, inet::Proto proto,
                         NetNamespace& ns)
    : inet::InetSocket(family, SOCK_DGRAM, protocol, flags, owner, proto),
      ns_(&ns) {}

DgramSocket::~DgramSocket() = default;

DgramSocket* AsDgramSocket(Socket* s) {
  if (s == nullptr || s->type() != SOCK_DGRAM ||
      (s->family() != AF_INET && s->family() != AF_INET6)) {
    return nullptr;
  }
  return static_cast<DgramSocket*>(s);
}

// ---- Delivery. ----

void DgramSocket::CountArrival(bool v4) const {
  inet::Count(ns(), inet::IpMib::kInReceives, !v4);
  inet::Count(ns(), inet::IpMib::kInDelivers, !v4);
}

bool DgramSocket::Deliver(Datagram d) {
  const int64_t rcvbuf = this->rcvbuf();
  d.truesize = TrueSize(d.data.size());
  const bool v4 = d.v4;
  auto drop = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++drops_;
    if (proto() == inet::Proto::kUdp) {
      inet::Count(ns(), inet::UdpMib::kRcvbufErrors, !v4);
      inet::Count(ns(), inet::UdpMib::kInErrors, !v4);
    }
    return false;
  };
  {
    absl::MutexLock l(&mu_);
    // __udp_enqueue_schedule_skb: over the buffer, drop (one datagram
    // always fits in an empty queue).
    if (rmem_ + d.truesize > rcvbuf && rmem_ > rcvbuf) return drop();
    if (rmem_ + d.truesize > rcvbuf && rcvbuf > (INT32_MAX >> 1)) {
      return drop();
    }
    rmem_ += d.truesize;
    rq_.push_back(std::move(d));
  }
  wq_.Notify(kPollInBits);
  return true;
}

void DgramSocket::DeliverError(ErrReport e, bool harderr) {
  const inet::IpOptions ip = ip_options();
  const bool recverr = e.v4 ? ip.recverr : ip.recverr6;
  const int64_t rcvbuf = this->rcvbuf();
  {
    absl::MutexLock l(&mu_);
    if (!recverr) {
      if (!harderr || !connected_) return;
    } else {
      // sock_queue_err_skb: charged to the receive buffer, dropped when
      // it would fill it.
      e.truesize = TrueSize(e.payload.size());
      if (rmem_ + e.truesize < rcvbuf) {
        rmem_ += e.truesize;
        errq_.push_back(e);
      }
    }
    err_ = static_cast<int>(e.err);
  }
  wq_.Notify(vfs::kPollErr);
}

uint64_t DgramSocket::drops() const {
  absl::MutexLock l(&mu_);
  return drops_;
}

// ---- Routes and bindings. ----

KResult<RouteKind> DgramSocket::Route(Caller& c,
                                      const inet::IpAddr& dst) const {
  (void)c;
  if (dst.is_v4() && v6() && ip_options().v6only) return kENETUNREACH;
  if (IsLoopbackBroadcast(dst)) return RouteKind::kBroadcast;
  if (dst.IsLoopback() || inet::IsLocalAddress(ns(), dst)) {
    return RouteKind::kLocal;
  }
  return RouteKind::kOffHost;
}

KResult<void> DgramSocket::Bind(Caller& c, const SockAddr& addr) {
  absl::MutexLock b(&bind_mu_);
  TRY(inet::InetAddr a,
      inet::ParseSockAddr(family(), addr, inet::AddrUse::kBind));
  TRY_VOID(BindTo(c, a));
  absl::MutexLock l(&mu_);
  addr_locked_ = !a.ip.IsAny();
  port_locked_ = a.port != 0;
  kept_addr_.reset();
  return OkResult();
}

KResult<void> DgramSocket::EnsureBound(Caller& c) {
  if (binding() != nullptr) return OkResult();
  absl::MutexLock b(&bind_mu_);
  if (binding() != nullptr) return OkResult();
  std::optional<inet::IpAddr> kept;
  {
    absl::MutexLock l(&mu_);
    kept = kept_addr_;
  }
  if (kept.has_value()) {
    // Disconnected with its address kept (SOCK_BINDADDR_LOCK): the new
    // port goes with it.
    inet::InetAddr a;
    a.ip = *kept;
    KResult<void> r = BindTo(c, a);
    if (!r.ok()) return kEAGAIN;
  } else {
    KResult<inet::InetAddr> r = AutoBind(c);
    if (!r.ok()) return kEAGAIN;  // inet_autobind
  }
  absl::MutexLock l(&mu_);
  kept_addr_.reset();
  return OkResult();
}

KResult<void> DgramSocket::SendChecks() {
  absl::MutexLock l(&mu_);
  // sock_alloc_send_pskb: a pending error first, then SEND_SHUTDOWN.
  if (int e = TakeErrLocked(); e != 0) return Errno(e);
  if (shutdown_ & kSendShutdown) return kEPIPE;
  return OkResult();
}

std::optional<inet::InetAddr> DgramSocket::Peer() const {
  inet::Binding b = binding();
  if (b == nullptr) return std::nullopt;
  return inet::PortTable::Of(ns(), proto()).Snapshot(b).remote;
}

std::optional<inet::InetAddr> DgramSocket::Local() const {
  inet::Binding b = binding();
  if (b == nullptr) return std::nullopt;
  inet::BindingState st = inet::PortTable::Of(ns(), proto()).Snapshot(b);
  if (st.local.has_value()) return st.local;
  return st.req.local;
}

SockAddr DgramSocket::FromAddr(const inet::InetAddr& a) const {
  return inet::ToSockAddr(family(), a);
}

// inet_dgram_connect -> ip4_datagram_connect / ip6_datagram_connect.
KResult<void> DgramSocket::Connect(Caller& c, const SockAddr& addr) {
  if (addr.len < sizeof(sa_family_t)) return kEINVAL;
  if (addr.family() == AF_UNSPEC) {
    Disconnect();
    return OkResult();
  }
  inet::InetAddr dst;
  if (v6() && addr.family() == AF_INET) {
    // __ip6_datagram_connect: an AF_INET address connects as IPv4.
    if (ip_options().v6only) return kEAFNOSUPPORT;
    TRY(dst, inet::ParseSockAddr(AF_INET, addr, inet::AddrUse::kConnect));
  } else {
    TRY(dst, inet::ParseSockAddr(family(), addr, inet::AddrUse::kConnect));
  }
  // ip_route_connect / ip6_datagram_connect: the wildcard means loopback.
  if (dst.ip.IsAny()) {
    dst.ip = dst.ip.is_v4() ? inet::IpAddr::LoopbackV4()
                            : inet::IpAddr::LoopbackV6();
  }
  TRY(RouteKind route, Route(c, dst.ip));
  if (route == RouteKind::kOffHost) {
    HostPath& hp = DatagramHostPath();
    if (hp.connect == nullptr) return kENETUNREACH;
    return hp.connect(c, *this, dst);
  }
  if (route == RouteKind::kBroadcast) {
    if (!sol_flags().broadcast) return kEACCES;
    if (dst.ip.IsLimitedBroadcast() &&
        (!Local().has_value() || Local()->ip.IsAny())) {
      return kENETUNREACH;  // no route for it from an unspecified source
    }
  }
  {
    // An address kept by a disconnect binds again with a new port first.
    bool kept;
    {
      absl::MutexLock l(&mu_);
      kept = kept_addr_.has_value();
    }
    if (kept) TRY_VOID(EnsureBound(c));
  }
  absl::MutexLock b(&bind_mu_);
  KResult<inet::InetAddr> local = ConnectBinding(c, dst);
  if (!local.ok()) return local.error();
  {
    absl::MutexLock l(&mu_);
    connected_ = true;
    kept_addr_.reset();
  }
  wq_.Notify(kPollOutBits);
  return OkResult();
}

// __udp_disconnect.
void DgramSocket::Disconnect() {
  absl::MutexLock b(&bind_mu_);
  bool port_locked, addr_locked;
  {
    absl::MutexLock l(&mu_);
    connected_ = false;
    port_locked = port_locked_;
    addr_locked = addr_locked_;
  }
  inet::Binding bd = binding();
  if (bd == nullptr) return;
  inet::PortTable& t = inet::PortTable::Of(ns(), proto());
  if (port_locked) {
    t.Disconnect(bd);
    return;
  }
  // The port was not named by bind(2): given up (unhash), the address
  // kept if bind(2) named it.
  std::optional<inet::IpAddr> kept;
  if (addr_locked) kept = t.Snapshot(bd).req.local.ip;
  Unbind();
  absl::MutexLock l(&mu_);
  kept_addr_ = kept;
}

KResult<SockAddr> DgramSocket::GetSockName(Caller& c) {
  (void)c;
  std::optional<inet::InetAddr> local = Local();
  inet::InetAddr a;
  if (local.has_value()) {
    a = *local;
  } else {
    absl::MutexLock l(&mu_);
    if (kept_addr_.has_value()) {
      a.ip = *kept_addr_;
    } else {
      a.ip = v6() ? inet::IpAddr::AnyV6() : inet::IpAddr::AnyV4();
    }
  }
  return inet::ToSockAddr(family(), a);
}

KResult<SockAddr> DgramSocket::GetPeerName(Caller& c) {
  (void)c;
  std::optional<inet::InetAddr> p = Peer();
  {
    absl::MutexLock l(&mu_);
    if (!connected_) return kENOTCONN;
  }
  if (!p.has_value()) return kENOTCONN;
  return inet::ToSockAddr(family(), *p);
}

// inet_shutdown: ENOTCONN for an unconnected socket, the bits set anyway.
KResult<void> DgramSocket::Shutdown(Caller& c, int how) {
  (void)c;
  bool connected;
  {
    absl::MutexLock l(&mu_);
    shutdown_ |= static_cast<uint8_t>(how + 1) & (kRcvShutdown | kSendShutdown);
    connected = connected_;
  }
  wq_.Notify(vfs::kAllEvents);
  if (!connected) return kENOTCONN;
  return OkResult();
}

// ---- Receive. ----

KResult<size_t> DgramSocket::RecvMsg(Caller& c, MessageIo& data,
                                     RecvRequest& req) {
  const int flags = req.flags;
  if (flags & MSG_ERRQUEUE) return RecvErrQueue(c, data, req);
  const bool peek = flags & MSG_PEEK;
  const bool nonblock = (flags & MSG_DONTWAIT) || nonblocking();
  const int64_t deadline = EarlierDeadline(RecvDeadline(), c.deadline_ns);
  std::optional<QueueWaiter> waiter;
  Datagram d;
  size_t skip = 0;  // the peek offset inside `d`
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      // __skb_recv_udp: a pending error before the queue.
      if (int e = TakeErrLocked(); e != 0) return Errno(e);
      if (peek) {
        // __skb_try_recv_from_queue with sk_peek_offset.
        const bool at_off = peek_off_ >= 0;
        size_t off = at_off ? static_cast<size_t>(peek_off_) : 0;
        bool found = false;
        for (Datagram& q : rq_) {
          if (at_off && off >= q.data.size() && (off != 0 || q.peeked)) {
            off -= q.data.size();
            continue;
          }
          if (q.data.empty()) q.peeked = true;
          d = q;
          skip = off;
          found = true;
          break;
        }
        if (found) break;
      } else if (!rq_.empty()) {
        d = std::move(rq_.front());
        rq_.pop_front();
        rmem_ -= d.truesize;
        break;
      }
      if (nonblock) return kEAGAIN;
      // __skb_wait_for_more_packets: EOF once reading is shut down.
      if (shutdown_ & kRcvShutdown) return size_t{0};
    }
    if (!waiter.has_value()) waiter.emplace(wq_, vfs::kAllEvents);
    TRY_VOID(waiter->Wait(c, deadline));
  }
  waiter.reset();
  KResult<size_t> n = CopyOutData(data, d.data, req, skip);
  if (!n.ok()) {
    // udp_recvmsg: a datagram that could not be copied is dropped.
    if (!peek) {
      absl::MutexLock l(&mu_);
      ++drops_;
      if (proto() == inet::Proto::kUdp) {
        inet::Count(ns(), inet::UdpMib::kInErrors, !d.v4);
      }
    }
    return n.error();
  }
  // udp_recvmsg: InDatagrams once a datagram is read (not peeked).
  if (!peek && proto() == inet::Proto::kUdp) {
    inet::Count(ns(), inet::UdpMib::kInDatagrams, !d.v4);
  }
  if (req.want_from) req.from = FromAddr(d.src);
  AppendRecvCmsgs(d, family(), ip_options(), sol_flags(), &req.control.raw);
  size_t ret = *n;
  if ((flags & MSG_TRUNC) && TruncReturnsFullLength()) ret = d.data.size();
  {
    // skb_consume_udp: the peek offset moves past what was returned.
    absl::MutexLock l(&mu_);
    if (peek_off_ >= 0) {
      const int64_t moved = peek ? int64_t{peek_off_} + int64_t(ret)
                                 : int64_t{peek_off_} - int64_t(ret);
      peek_off_ =
          static_cast<int32_t>(std::clamp<int64_t>(moved, 0, INT32_MAX));
    }
  }
  return ret;
}

// ip_recv_error / ipv6_recv_error: never blocks.
KResult<size_t> DgramSocket::RecvErrQueue(Caller& c, MessageIo& data,
                                          RecvRequest& req) {
  (void)c;
  ErrReport e;
  bool more;
  {
    absl::MutexLock l(&mu_);
    if (errq_.empty()) return kEAGAIN;
    e = std::move(errq_.front());
    errq_.pop_front();
    rmem_ -= e.truesize;
    // sock_dequeue_err_skb: sk_err becomes the next report's, or 0.
    more = !errq_.empty();
    err_ = more ? static_cast<int>(errq_.front().err) : 0;
  }
  if (more) wq_.Notify(vfs::kPollErr);
  TRY(size_t n, CopyOutData(data, e.payload, req));
  if (req.want_from) req.from = FromAddr(e.dst);
  const Socket::SolFlags sol = sol_flags();
  AppendTimestamp(e.tstamp_ns, sol, &req.control.raw);
  // The IP cmsgs of the ICMP packet that carried the error.
  Datagram icmp;
  icmp.v4 = e.v4;
  icmp.src.ip = e.offender;
  icmp.dst.ip = e.local;
  // icmp_send: IPTOS_PREC_INTERNETCONTROL; icmp6_send: traffic class 0.
  icmp.tos = e.v4 ? 0xc0 : 0;
  icmp.ttl = e.ttl;
  AppendRecvCmsgs(icmp, family(), ip_options(), sol, &req.control.raw,
                  /*icmp_error=*/true);
  req.control.raw.push_back(ErrCmsg(e, family()));
  req.msg_flags |= MSG_ERRQUEUE;
  return n;
}

KResult<void> DgramSocket::SetSockOpt(Caller& c, int level, int name,
                                      absl::Span<const uint8_t> val) {
  if (level == SOL_SOCKET && name == SO_PEEK_OFF) {
    if (proto() != inet::Proto::kUdp) return kEOPNOTSUPP;
    if (val.size() < sizeof(int)) return kEINVAL;
    int v;
    memcpy(&v, val.data(), sizeof(v));
    absl::MutexLock l(&mu_);
    peek_off_ = v;  // sk_set_peek_off: negative is "off"
    return OkResult();
  }
  return inet::InetSocket::SetSockOpt(c, level, name, val);
}

KResult<size_t> DgramSocket::GetSockOpt(Caller& c, int level, int name,
                                        absl::Span<uint8_t> val) {
  if (level == SOL_SOCKET && name == SO_PEEK_OFF &&
      proto() == inet::Proto::kUdp) {
    int v;
    {
      absl::MutexLock l(&mu_);
      v = peek_off_;
    }
    const size_t n = std::min(val.size(), sizeof(v));
    memcpy(val.data(), &v, n);
    return n;
  }
  if (level == SOL_SOCKET && name == SO_ERROR) {
    int e;
    {
      absl::MutexLock l(&mu_);
      e = TakeErrLocked();
    }
    if (e == 0) e = TakeSoError();
    const size_t n = std::min(val.size(), sizeof(e));
    memcpy(val.data(), &e, n);
    return n;
  }
  return inet::InetSocket::GetSockOpt(c, level, name, val);
}

KResult<uint64_t> DgramSocket::SocketIoctl(Caller& c, uint32_t cmd,
                                           uint64_t arg) {
  int32_t amount = 0;
  switch (cmd) {
    case SIOCINQ: {  // FIONREAD: the next datagram's length (udp_ioctl)
      absl::MutexLock l(&mu_);
      if (!rq_.empty()) amount = static_cast<int32_t>(rq_.front().data.size());
      break;
    }
    case SIOCOUTQ:  // sk_wmem_alloc_get: nothing waits on loopback
      amount = 0;
      break;
    default:
      return Socket::SocketIoctl(c, cmd, arg);
  }
  if (c.io.user == nullptr) return kEFAULT;
  TRY_VOID(c.io.user->CopyOutFull(arg, &amount, sizeof(amount)));
  return uint64_t{0};
}

// udp_poll -> datagram_poll.
uint32_t DgramSocket::Readiness(uint32_t mask) {
  uint32_t r = 0;
  absl::MutexLock l(&mu_);
  if (err_ != 0 || !errq_.empty()) r |= vfs::kPollErr;
  if (shutdown_ & kRcvShutdown) r |= vfs::kPollRdHup | kPollInBits;
  if (shutdown_ == (kRcvShutdown | kSendShutdown)) r |= vfs::kPollHup;
  if (!rq_.empty()) r |= kPollInBits;
  // sock_writeable: a loopback send leaves the send buffer empty.
  r |= kPollOutBits;
  return r & mask;
}

inet::ProcRow DgramSocket::proc_row() const {
  inet::ProcRow row;
  std::optional<inet::InetAddr> local = Local();
  std::optional<inet::InetAddr> peer = Peer();
  absl::MutexLock l(&mu_);
  const inet::IpAddr any = v6() ? inet::IpAddr::AnyV6() : inet::IpAddr::AnyV4();
  if (local.has_value()) {
    row.local = *local;
  } else {
    row.local.ip = kept_addr_.value_or(any);
  }
  if (connected_ && peer.has_value()) {
    row.remote = *peer;
  } else {
    row.remote.ip = any;
  }
  row.state = connected_ ? 1 : 7;  // TCP_ESTABLISHED / TCP_CLOSE
  row.tx_queue = 0;
  row.rx_queue = static_cast<uint64_t>(rmem_);
  row.uid = owner_ids().uid;
  row.inode = ino();
  row.refcount = 2;
  row.drops = drops_;
  return row;
}

}  // namespace sandbox::net::udp
