// The connection's life: socket(2), bind, listen, connect (the handshake
// on loopback), accept, shutdown, connect(AF_UNSPEC) and close
// (inet_stream_connect/__inet_stream_connect, tcp_v4_connect,
// inet_csk_listen_start, inet_csk_accept, inet_shutdown/tcp_shutdown,
// tcp_disconnect, tcp_close, tcp_fin, tcp_reset, tcp_done).
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <utility>
#include <vector>

#include "sentry/net/hostinet/host_tcp_socket.h"
#include "sentry/net/hostinet/tcp_host.h"
#include "sentry/net/inet/mib.h"
#include "sentry/net/namespace.h"
#include "sentry/net/tcp/tcp.h"
#include "sentry/net/tcp/tcp_socket.h"

namespace sandbox::net::tcp {
namespace {

constexpr uint32_t kPollInBits = vfs::kPollIn | vfs::kPollRdNorm;

int64_t Earlier(int64_t a, int64_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return a < b ? a : b;
}

// Sleeps on `q` for `events`: registered on the first call (which returns
// at once, so the caller re-checks before sleeping), unregistered when
// destroyed. ERESTARTSYS on a signal, EAGAIN at the deadline.
class Sleeper {
 public:
  Sleeper(vfs::WaitQueue& q, uint32_t events) : q_(q), events_(events) {}
  KResult<void> Wait(const Caller& c, int64_t deadline) {
    if (!w_.has_value()) {
      w_.emplace();
      q_.Register(&*w_, events_);
      return OkResult();
    }
    switch (w_->Sleep(c.io.interrupt_fd, deadline)) {
      case vfs::WakeReason::kNotified:
        return OkResult();
      case vfs::WakeReason::kInterrupted:
        return kERestartSys;
      case vfs::WakeReason::kTimedOut:
        return kEAGAIN;
    }
    return OkResult();
  }

 private:
  vfs::WaitQueue& q_;
  const uint32_t events_;
  std::optional<vfs::ThreadWaiter> w_;
};

// A RST reaching `peer` (tcp_reset), and its wake-up.
void ResetPeer(const EndpointRef& peer) {
  if (peer == nullptr) return;
  inet::Count(peer->netns(), inet::TcpMib::kOutRsts);
  {
    absl::MutexLock l(&peer->mu_);
    peer->ResetLocked();
  }
  peer->wq_.Notify(vfs::kAllEvents);
}

// A FIN reaching `peer` (tcp_fin).
void FinPeer(const EndpointRef& peer) {
  if (peer == nullptr) return;
  {
    absl::MutexLock l(&peer->mu_);
    peer->FinLocked();
  }
  peer->wq_.Notify(vfs::kAllEvents);
}

// A connector whose SYN found no listener (or a listener that went away):
// the RST makes it ECONNREFUSED.
void Refuse(const EndpointRef& conn) {
  if (conn == nullptr) return;
  {
    absl::MutexLock l(&conn->mu_);
    if (conn->state_ != kSynSent) return;
    inet::Count(conn->netns(), inet::TcpMib::kAttemptFails);
    conn->err_ = ECONNREFUSED;
    conn->DoneLocked();
  }
  conn->wq_.Notify(vfs::kAllEvents);
}

}  // namespace

// ---- Endpoint state changes. ----

Endpoint::~Endpoint() = default;

void Endpoint::DoneLocked() {
  state_ = kClose;
  shutdown_ = kShutdownMask;
  peer_.reset();
}

void Endpoint::ResetLocked() {
  switch (state_) {
    case kSynSent:
      err_ = ECONNREFUSED;
      break;
    case kCloseWait:
      err_ = EPIPE;
      break;
    case kClose:
    case kListen:
      return;
    default:
      err_ = ECONNRESET;
      break;
  }
  if (state_ == kEstablished || state_ == kCloseWait) {
    inet::Count(netns_, inet::TcpMib::kEstabResets);
  }
  DoneLocked();
}

void Endpoint::FinLocked() {
  shutdown_ |= kRcvShutdown;
  done_ = true;
  switch (state_) {
    case kSynRecv:
    case kEstablished:
      state_ = kCloseWait;
      break;
    case kFinWait1:
    case kFinWait2:
      // TIME_WAIT is the timewait sock's; the full socket is done.
      DoneLocked();
      break;
    default:
      break;
  }
}

bool Endpoint::ReadableLocked(size_t target, bool oobinline) const {
  const bool urg = urg_valid_ || urg_read_;
  if (urg && urg_seq_ == rx_.head() && !oobinline) target++;
  return rx_.size() >= target;
}

void EstablishLocked(Endpoint& listener, Endpoint& conn) {
  auto child = std::make_shared<Endpoint>(listener.netns_);
  {
    absl::MutexLock l(&child->mu_);
    child->state_ = kEstablished;
    child->local_ = conn.remote_;
    child->remote_ = conn.local_;
    child->peer_ = conn.shared_from_this();
    child->opts_ = listener.opts_;
    child->rcv_limit_.store(listener.rcv_limit_.load());
    child->snd_limit_.store(listener.snd_limit_.load());
    child->segs_in_ = 2;   // SYN, ACK
    child->segs_out_ = 1;  // SYN-ACK
  }
  conn.peer_ = child;
  conn.state_ = kEstablished;
  conn.segs_out_ += 2;
  conn.segs_in_ += 1;
  conn.waiting_on_.reset();
  listener.accept_q_.push_back(std::move(child));
  inet::Count(listener.netns_, inet::TcpMib::kPassiveOpens);
}

// ---- The socket. ----

TcpSocket::TcpSocket(int family, uint32_t flags, const Ucred& owner,
                     NetNamespace& ns)
    : TcpSocket(family, flags, owner, std::make_shared<Endpoint>(ns)) {}

TcpSocket::TcpSocket(int family, uint32_t flags, const Ucred& owner,
                     EndpointRef ep)
    : InetSocket(family, SOCK_STREAM, IPPROTO_TCP, flags, owner,
                 inet::Proto::kTcp),
      ep_(std::move(ep)) {
  NetSysctls& s = ep_->netns().sysctl();
  // tcp_init_sock: sk_sndbuf = tcp_wmem[1], sk_rcvbuf = tcp_rmem[1].
  SetBufferDefaults(s.tcp_wmem_default.load(), s.tcp_rmem_default.load());
  absl::MutexLock l(&ep_->mu_);
  ep_->sock_ = this;
  if (ep_->state_ == kEstablished || ep_->state_ == kCloseWait) {
    ss_ = SockState::kConnected;  // accepted
  }
}

TcpSocket::~TcpSocket() { Close(); }

KResult<SocketRef> NewSocket(Caller& c, int family, uint32_t flags) {
  NetNamespace& ns = c.netns != nullptr ? *c.netns : NetNamespace::Root();
  return SocketRef(std::make_shared<TcpSocket>(family, flags, c.ucred, ns));
}

void Register() { inet::RegisteredProtocols().tcp = &NewSocket; }

KResult<void> TcpSocket::Bind(Caller& c, const SockAddr& addr) {
  if (host() != nullptr) return kEINVAL;  // already bound by connect
  TRY(inet::InetAddr a,
      inet::ParseSockAddr(family(), addr, inet::AddrUse::kBind));
  absl::MutexLock cl(&conn_mu_);
  {
    absl::MutexLock l(&ep_->mu_);
    if (ep_->state_ != kClose) return kEINVAL;
  }
  return BindTo(c, a);
}

KResult<void> TcpSocket::Listen(Caller& c, int backlog) {
  if (host() != nullptr) return kEINVAL;  // inet_listen: not TCP_CLOSE
  absl::MutexLock cl(&conn_mu_);
  // __sys_listen caps at somaxconn (as unsigned: a negative backlog too).
  const int64_t somaxconn = ep_->netns().sysctl().somaxconn.load();
  int64_t b = static_cast<uint32_t>(backlog);
  if (b > somaxconn) b = somaxconn;
  {
    absl::MutexLock l(&ep_->mu_);
    if (ss_ != SockState::kUnconnected) return kEINVAL;
    if (ep_->state_ == kListen) {
      ep_->backlog_ = b;
      return OkResult();
    }
    if (ep_->state_ != kClose) return kEINVAL;
  }
  // inet_csk_listen_start: get_port (an unbound socket gets an ephemeral
  // one on the wildcard), then the listening hash re-checks conflicts.
  if (binding() == nullptr) {
    KResult<inet::InetAddr> r = AutoBind(c);
    if (!r.ok()) return kEADDRINUSE;
  }
  TRY_VOID(table().Listen(binding()));
  {
    absl::MutexLock l(&ep_->mu_);
    ep_->state_ = kListen;
    ep_->shutdown_ = 0;
    ep_->backlog_ = b;
    ep_->local_ = LocalAddr();
  }
  set_listening(true);
  return OkResult();
}

KResult<vfs::FileRef> TcpSocket::Accept(Caller& c, uint32_t flags,
                                        SockAddr* peer) {
  Endpoint& ep = *ep_;
  const bool nonblock = nonblocking();
  const int64_t deadline = Earlier(RecvDeadline(), c.deadline_ns);
  Sleeper sleeper(ep.wq_, kPollInBits | vfs::kPollErr | vfs::kPollHup);
  EndpointRef child;
  std::vector<EndpointRef> completed;
  for (;;) {
    {
      absl::MutexLock l(&ep.mu_);
      if (ep.state_ != kListen) return kEINVAL;
      if (!ep.host_accept_q_.empty()) {
        Endpoint::HostPending p = std::move(ep.host_accept_q_.front());
        ep.host_accept_q_.pop_front();
        if (peer != nullptr) *peer = p.stream->PeerAddr();
        return vfs::FileRef(std::make_shared<hostinet::HostTcpSocket>(
            std::move(p.stream), family(), O_RDWR | flags, c.ucred, p.local));
      }
      if (!ep.accept_q_.empty()) {
        child = std::move(ep.accept_q_.front());
        ep.accept_q_.pop_front();
        // Room again: the next retransmitted SYN gets through.
        while (!ep.syn_q_.empty() &&
               static_cast<int64_t>(ep.accept_q_.size()) <= ep.backlog_) {
          EndpointRef conn = ep.syn_q_.front().lock();
          ep.syn_q_.pop_front();
          if (conn == nullptr) continue;
          absl::MutexLock cl(&conn->mu_);
          if (conn->state_ != kSynSent || conn->dead_ ||
              conn->waiting_on_.lock().get() != &ep) {
            continue;
          }
          EstablishLocked(ep, *conn);
          completed.push_back(std::move(conn));
        }
        break;
      }
    }
    if (nonblock) return kEAGAIN;
    TRY_VOID(sleeper.Wait(c, deadline));
  }
  for (const EndpointRef& conn : completed) conn->wq_.Notify(vfs::kAllEvents);
  if (!completed.empty()) ep.wq_.Notify(kPollInBits);

  inet::InetAddr local, remote;
  {
    absl::MutexLock l(&child->mu_);
    local = child->local_;
    remote = child->remote_;
  }
  auto s =
      std::make_shared<TcpSocket>(family(), O_RDWR | flags, c.ucred, child);
  s->AttachNamespace(netns());
  s->InheritOptions(*this);
  if (inet::Binding lb = binding(); lb != nullptr) {
    s->AdoptBinding(table().Inherit(lb, local, remote, s->weak_from_this()));
  }
  if (peer != nullptr) *peer = inet::ToSockAddr(family(), remote);
  return vfs::FileRef(std::move(s));
}

KResult<void> TcpSocket::Connect(Caller& c, const SockAddr& addr) {
  if (hostinet::HostStream* h = host()) {
    // inet_stream_connect on a host connection: EISCONN once seen
    // connected, else its completion (EALREADY while pending).
    absl::MutexLock cl(&conn_mu_);
    if (ss_ == SockState::kConnected) return kEISCONN;
    TRY_VOID(h->WaitConnected(*this, c, nonblocking()));
    ss_ = SockState::kConnected;
    return OkResult();
  }
  if (addr.len < sizeof(sa_family_t)) return kEINVAL;
  if (addr.family() == AF_UNSPEC) {
    absl::MutexLock cl(&conn_mu_);
    return Disconnect(c);
  }
  TRY(inet::InetAddr remote,
      inet::ParseSockAddr(family(), addr, inet::AddrUse::kConnect));
  absl::MutexLock cl(&conn_mu_);
  const bool nonblock = nonblocking();
  switch (ss_) {
    case SockState::kConnected:
      return kEISCONN;
    case SockState::kConnecting: {
      bool in_progress;
      {
        absl::MutexLock l(&ep_->mu_);
        in_progress = ep_->state_ == kSynSent;
      }
      if (in_progress && nonblock) return kEALREADY;
      return WaitConnected(c);
    }
    case SockState::kUnconnected:
      break;
  }
  {
    absl::MutexLock l(&ep_->mu_);
    if (ep_->state_ != kClose) return kEISCONN;
  }
  // ip_route_connect / tcp_v6_connect: the wildcard means loopback.
  if (remote.ip.IsAny()) {
    remote.ip = remote.ip.is_v4() ? inet::IpAddr::LoopbackV4()
                                  : inet::IpAddr::LoopbackV6();
  }
  if (remote.port == 0) {
    // tcp_v4_connect routes first; a zero port then fails the handshake
    // as nobody listens on it.
  }
  // The branch point of the network mode's host path: a destination that
  // is not an address of the sandbox's own namespace leaves the Sentry
  // through a connected host descriptor the broker donates (#21,
  // sentry/net/hostinet, not written yet): it will be asked here for the
  // connection (egress policy checked by the broker), and the socket then
  // hands its data calls to that descriptor, as hostunix's sockets do.
  // Until then there is no route: ENETUNREACH (as ip_route_connect without
  // a default route).
  if (hostinet::TcpGoesToHost(netns(), remote)) {
    return ConnectHost(c, remote, nonblock);
  }
  if (!inet::IsLocalAddress(netns(), remote.ip)) {
    // An IPv4 destination of an IPV6_V6ONLY socket: no route either.
    return kENETUNREACH;
  }
  TRY_VOID(ConnectLoopback(c, remote, nonblock));
  if (nonblock) return kEINPROGRESS;
  return WaitConnected(c);
}

KResult<void> TcpSocket::ConnectLoopback(Caller& c,
                                         const inet::InetAddr& remote,
                                         bool nonblock) {
  TRY(inet::InetAddr local, ConnectBinding(c, remote));
  {
    absl::MutexLock l(&ep_->mu_);
    ep_->local_ = local;
    ep_->remote_ = remote;
    ep_->state_ = kSynSent;
    ep_->shutdown_ = 0;
    ep_->done_ = false;
    ep_->err_ = 0;
    ep_->segs_out_ = 1;  // the SYN
  }
  inet::Count(netns(), inet::TcpMib::kActiveOpens);
  ss_ = SockState::kConnecting;
  std::shared_ptr<Socket> ls = table().FindListener(remote, local);
  auto* lsock = dynamic_cast<TcpSocket*>(ls.get());
  bool refused = true;
  if (lsock != nullptr) {
    Endpoint& lep = *lsock->ep_;
    absl::MutexLock ll(&lep.mu_);
    absl::MutexLock l(&ep_->mu_);
    if (lep.state_ == kListen && ep_->state_ == kSynSent) {
      refused = false;
      if (static_cast<int64_t>(lep.accept_q_.size()) > lep.backlog_) {
        // sk_acceptq_is_full: the SYN is dropped and retried; it gets
        // through when accept(2) makes room (Accept completes it).
        inet::Count(netns(), inet::TcpExtMib::kListenOverflows);
        inet::Count(netns(), inet::TcpExtMib::kListenDrops);
        lep.syn_q_.push_back(ep_);
        ep_->waiting_on_ = lep.shared_from_this();
      } else {
        EstablishLocked(lep, *ep_);
      }
    }
  }
  if (lsock != nullptr && !refused) {
    lsock->ep_->wq_.Notify(kPollInBits);
  }
  if (refused) Refuse(ep_);
  ep_->wq_.Notify(vfs::kAllEvents);
  (void)nonblock;
  return OkResult();
}

KResult<void> TcpSocket::WaitConnected(Caller& c) {
  const int64_t deadline = Earlier(SendDeadline(), c.deadline_ns);
  Sleeper sleeper(ep_->wq_, vfs::kAllEvents);
  for (;;) {
    {
      absl::MutexLock l(&ep_->mu_);
      if (ep_->state_ != kSynSent) break;
    }
    KResult<void> w = sleeper.Wait(c, deadline);
    if (!w.ok()) {
      // inet_wait_for_connect: a timeout leaves it connecting.
      if (w.error() == kEAGAIN) return kEINPROGRESS;
      return w.error();
    }
  }
  int err = 0;
  {
    absl::MutexLock l(&ep_->mu_);
    if (ep_->state_ == kClose) {
      err = ep_->TakeErrLocked();
      if (err == 0) err = ECONNABORTED;
    }
  }
  if (err != 0) {
    // sock_error, then disconnect: back to unconnected, the ephemeral
    // port released.
    ss_ = SockState::kUnconnected;
    if (bound_explicitly()) {
      DisconnectBinding();
    } else {
      Unbind();
    }
    return Errno(err);
  }
  ss_ = SockState::kConnected;
  return OkResult();
}

bool TcpSocket::bound_explicitly() const {
  absl::MutexLock l(&ip_mu_);
  return bound_explicitly_;
}

KResult<void> TcpSocket::Disconnect(Caller&) {
  EndpointRef peer;
  std::deque<EndpointRef> children;
  std::deque<std::weak_ptr<Endpoint>> syns;
  bool reset = false;
  bool was_listening = false;
  {
    absl::MutexLock l(&ep_->mu_);
    const TcpState old = ep_->state_;
    switch (old) {
      case kListen:
        was_listening = true;
        children.swap(ep_->accept_q_);
        syns.swap(ep_->syn_q_);
        break;
      case kEstablished:
      case kCloseWait:
      case kFinWait1:
      case kFinWait2:
      case kSynRecv:
        reset = true;
        ep_->err_ = ECONNRESET;
        break;
      case kSynSent:
        ep_->err_ = ECONNRESET;
        ep_->waiting_on_.reset();
        break;
      default:
        break;
    }
    peer = std::move(ep_->peer_);
    ep_->state_ = kClose;
    ep_->shutdown_ = 0;
    ep_->done_ = false;
    ep_->rx_.Clear();
    ep_->urg_valid_ = ep_->urg_read_ = false;
  }
  if (reset) ResetPeer(peer);
  for (EndpointRef& ch : children) {
    EndpointRef conn;
    {
      absl::MutexLock l(&ch->mu_);
      conn = std::move(ch->peer_);
      ch->DoneLocked();
    }
    ResetPeer(conn);
  }
  for (auto& w : syns) Refuse(w.lock());
  if (was_listening) set_listening(false);
  ss_ = SockState::kUnconnected;
  if (bound_explicitly()) {
    DisconnectBinding();
  } else {
    Unbind();
  }
  ep_->wq_.Notify(vfs::kAllEvents);
  return OkResult();
}

KResult<void> TcpSocket::Shutdown(Caller& c, int how) {
  if (hostinet::HostStream* h = host()) return h->Shutdown(how);
  const uint8_t mask = static_cast<uint8_t>(how + 1);
  absl::MutexLock cl(&conn_mu_);
  TcpState state;
  {
    absl::MutexLock l(&ep_->mu_);
    state = ep_->state_;
  }
  if (ss_ == SockState::kConnecting) {
    ss_ = (state == kSynSent || state == kClose) ? SockState::kUnconnected
                                                 : SockState::kConnected;
  }
  switch (state) {
    case kListen:
      if (!(mask & kRcvShutdown)) return OkResult();
      return Disconnect(c);
    case kSynSent:
      return Disconnect(c);
    default:
      break;
  }
  EndpointRef fin_to;
  {
    absl::MutexLock l(&ep_->mu_);
    const bool was_sending = !(ep_->shutdown_ & kSendShutdown);
    ep_->shutdown_ |= mask;
    if (ep_->state_ != kClose && (mask & kSendShutdown) && was_sending) {
      // tcp_shutdown -> tcp_close_state + tcp_send_fin; loopback acks at
      // once: FIN_WAIT1 -> FIN_WAIT2, LAST_ACK -> CLOSE.
      fin_to = ep_->peer_;
      if (ep_->state_ == kEstablished || ep_->state_ == kSynRecv) {
        ep_->state_ = kFinWait2;
      } else if (ep_->state_ == kCloseWait) {
        ep_->DoneLocked();
      }
      ep_->segs_out_++;
    }
  }
  FinPeer(fin_to);
  ep_->wq_.Notify(vfs::kAllEvents);
  if (state == kClose) return kENOTCONN;
  return OkResult();
}

void TcpSocket::Close() {
  const SolFlags sol = sol_flags();
  EndpointRef peer;
  std::deque<EndpointRef> children;
  std::deque<std::weak_ptr<Endpoint>> syns;
  bool reset = false, fin = false;
  {
    absl::MutexLock l(&ep_->mu_);
    ep_->sock_ = nullptr;
    ep_->dead_ = true;
    switch (ep_->state_) {
      case kListen:
        children.swap(ep_->accept_q_);
        syns.swap(ep_->syn_q_);
        ep_->state_ = kClose;
        break;
      case kSynSent:
        ep_->state_ = kClose;
        ep_->waiting_on_.reset();
        break;
      case kClose:
        break;
      default: {
        // tcp_close: unread data or SO_LINGER {1, 0} is a RST; otherwise
        // a FIN unless one was sent.
        const bool unread = ep_->rx_.size() > 0;
        peer = ep_->peer_;
        if (unread || (sol.linger && sol.lingertime == 0)) {
          inet::Count(ep_->netns(), unread
                                        ? inet::TcpExtMib::kTCPAbortOnClose
                                        : inet::TcpExtMib::kTCPAbortOnLinger);
          reset = true;
          ep_->DoneLocked();
        } else if (!(ep_->shutdown_ & kSendShutdown)) {
          fin = true;
          ep_->shutdown_ = kShutdownMask;
          if (ep_->state_ == kCloseWait) {
            ep_->DoneLocked();
          } else {
            ep_->state_ = kFinWait2;  // an orphan; its peer's data is a RST
          }
        } else {
          ep_->shutdown_ = kShutdownMask;
        }
        // An orphan needs no peer: the peer's writes into it reset the
        // writer (data.cc), its FIN ends it.
        ep_->peer_.reset();
        break;
      }
    }
    ep_->rx_.Clear();
  }
  if (reset) ResetPeer(peer);
  if (fin) FinPeer(peer);
  for (EndpointRef& ch : children) {
    EndpointRef conn;
    {
      absl::MutexLock l(&ch->mu_);
      conn = std::move(ch->peer_);
      ch->dead_ = true;
      ch->DoneLocked();
    }
    ResetPeer(conn);
  }
  for (auto& w : syns) Refuse(w.lock());
  ep_->wq_.Notify(vfs::kAllEvents);
}

KResult<SockAddr> TcpSocket::GetSockName(Caller&) {
  if (hostinet::HostStream* h = host()) return h->LocalAddr();
  return inet::ToSockAddr(family(), LocalAddr());
}

KResult<SockAddr> TcpSocket::GetPeerName(Caller&) {
  if (hostinet::HostStream* h = host()) {
    if (h->connecting()) return kENOTCONN;
    return h->PeerAddr();
  }
  absl::MutexLock l(&ep_->mu_);
  // inet_getname: no peer in CLOSE (also after the connection ended) and
  // SYN_SENT, nor for a listener.
  if (ep_->state_ == kClose || ep_->state_ == kSynSent ||
      ep_->state_ == kListen) {
    return kENOTCONN;
  }
  return inet::ToSockAddr(family(), ep_->remote_);
}

KResult<void> TcpSocket::ConnectHost(Caller& c, const inet::InetAddr& remote,
                                     bool nonblock) {
  TRY(std::shared_ptr<hostinet::HostStream> h,
      hostinet::ConnectTcp(c, family(), remote));
  host_owner_ = h;
  host_.store(h.get(), std::memory_order_release);
  inet::Count(netns(), inet::TcpMib::kActiveOpens);
  ss_ = SockState::kConnecting;
  // Anyone polling the Sentry-side queue looks again (now at the host fd).
  ep_->wq_.Notify(vfs::kAllEvents);
  TRY_VOID(h->WaitConnected(*this, c, nonblock));
  ss_ = SockState::kConnected;
  return OkResult();
}

bool TcpSocket::EnqueueHost(std::shared_ptr<hostinet::HostStream> conn,
                            const SockAddr& local) {
  {
    absl::MutexLock l(&ep_->mu_);
    if (ep_->state_ != kListen ||
        static_cast<int64_t>(ep_->accept_q_.size() +
                             ep_->host_accept_q_.size()) > ep_->backlog_) {
      return false;
    }
    ep_->host_accept_q_.push_back({std::move(conn), local});
  }
  ep_->wq_.Notify(kPollInBits);
  return true;
}

bool EnqueueHostConnection(Socket& listener,
                           std::shared_ptr<hostinet::HostStream> conn,
                           const SockAddr& local) {
  auto* t = dynamic_cast<TcpSocket*>(&listener);
  return t != nullptr && t->EnqueueHost(std::move(conn), local);
}

}  // namespace sandbox::net::tcp
