// The AF_UNIX family and the operations its three types share (bind,
// listen, names, shutdown, options, ioctls, poll).
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <utility>

#include "sentry/net/family.h"
#include "sentry/net/proc_net.h"
#include "sentry/net/unix/gc.h"
#include "sentry/net/unix/registry.h"
#include "sentry/net/unix/unix.h"
#include "sentry/net/wait.h"

namespace sandbox::net::unix {
namespace {

KResult<SocketRef> Create(Caller& c, int type, int protocol, uint32_t flags) {
  if (protocol != 0 && protocol != PF_UNIX) return kEPROTONOSUPPORT;
  switch (type) {
    case SOCK_STREAM:
    case SOCK_DGRAM:
    case SOCK_SEQPACKET:
      break;
    case SOCK_RAW:
      type = SOCK_DGRAM;  // unix_create: SOCK_RAW is a datagram socket
      break;
    default:
      return kESOCKTNOSUPPORT;
  }
  EndpointRef ep = NewEndpoint(type, NamespaceOf(c));
  return SocketRef(UnixSocket::Make(std::move(ep), flags, c.ucred));
}

KResult<SocketPair> Pair(Caller& c, int type, int protocol, uint32_t flags) {
  TRY(SocketRef a, Create(c, type, protocol, flags));
  TRY(SocketRef b, Create(c, type, protocol, flags));
  Endpoint& ea = *static_cast<UnixSocket*>(a.get())->endpoint();
  Endpoint& eb = *static_cast<UnixSocket*>(b.get())->endpoint();
  {
    LockPair l(ea, eb);
    ea.peer_ = eb.shared_from_this();
    eb.peer_ = ea.shared_from_this();
    ea.peercred_ = eb.peercred_ = c.ucred;
    ea.state_ = eb.state_ = State::kEstablished;  // datagram pairs too
  }
  return SocketPair(std::move(a), std::move(b));
}

void PutInt(absl::Span<uint8_t> val, int32_t v, size_t* n) {
  *n = std::min(val.size(), sizeof(v));
  memcpy(val.data(), &v, *n);
}

}  // namespace

void AddRoomWaiterLocked(Endpoint& receiver, const EndpointRef& sender) {
  auto& v = receiver.room_waiters_;
  for (size_t i = 0; i < v.size();) {
    EndpointRef w = v[i].lock();
    if (w == sender) return;
    if (w == nullptr) {
      v[i] = std::move(v.back());
      v.pop_back();
    } else {
      ++i;
    }
  }
  v.push_back(sender);
}

void Register() {
  RegisterFamily({AF_UNIX, "unix", &Create, &Pair});
  RegisterProcNetFile("unix", &FormatProcNetUnix);
}

EndpointRef NewEndpoint(int type, NetNamespace& ns) {
  auto ep = std::make_shared<Endpoint>(type, ns);
  ns.Get<SocketList>().Add(ep.get());
  return ep;
}

UnixSocket::UnixSocket(EndpointRef ep, uint32_t flags, const Ucred& owner)
    : Socket(AF_UNIX, ep->type(), 0, flags, owner), ep_(std::move(ep)) {}

UnixSocket::~UnixSocket() { ep_->Release(/*embryo=*/false); }

std::shared_ptr<UnixSocket> UnixSocket::Make(EndpointRef ep, uint32_t flags,
                                             const Ucred& owner) {
  auto s = std::make_shared<UnixSocket>(ep, flags, owner);
  ep->file_ = s;
  ep->sndbuf_.store(s->sndbuf(), std::memory_order_relaxed);
  absl::MutexLock l(&ep->mu_);
  ep->sock_ = s.get();
  return s;
}

UnixSocket* AsUnixSocket(vfs::FileDescription* f) {
  if (f == nullptr) return nullptr;
  Socket* s = AsSocket(*f);
  if (s == nullptr || s->family() != AF_UNIX) return nullptr;
  return dynamic_cast<UnixSocket*>(s);
}

KResult<void> UnixSocket::Autobind() {
  Endpoint& ep = *ep_;
  absl::MutexLock bl(&ep.bind_mu_);
  {
    absl::MutexLock l(&ep.mu_);
    if (ep.addr_ != nullptr) return OkResult();
  }
  TRY(Name n, ep.netns_.Get<AbstractNames>().InsertAutobind(ep_));
  auto a = std::make_shared<Address>();
  a->name = std::move(n);
  absl::MutexLock l(&ep.mu_);
  ep.addr_ = std::move(a);
  return OkResult();
}

bool UnixSocket::SetHost(std::shared_ptr<hostunix::HostEndpoint> h) {
  absl::MutexLock l(&host_mu_);
  if (host_owner_ != nullptr) return false;
  host_owner_ = std::move(h);
  host_.store(host_owner_.get(), std::memory_order_release);
  return true;
}

int UnixSocket::HostPollFd() const {
  hostunix::HostEndpoint* h = host();
  return h != nullptr ? h->fd() : -1;
}

KResult<void> UnixSocket::Bind(Caller& c, const SockAddr& addr) {
  // A socket on the host already has its address (bound or connected).
  if (host() != nullptr) return kEINVAL;
  if (IsAutobindRequest(addr)) return Autobind();
  TRY(Name name, ParseName(addr));
  Endpoint& ep = *ep_;
  absl::MutexLock bl(&ep.bind_mu_);
  auto bound = [&ep]() -> KResult<void> {
    absl::MutexLock l(&ep.mu_);
    if (ep.addr_ != nullptr) return kEINVAL;
    return OkResult();
  };
  auto a = std::make_shared<Address>();
  if (name.abstract) {
    TRY_VOID(bound());
    TRY_VOID(ep.netns_.Get<AbstractNames>().Insert(name, ep_));
  } else {
    // unix_bind_bsd: the node first (its errors come before EINVAL for a
    // bound socket, which leaves no node behind).
    TRY(PathContext pc, PathContextOf(c));
    HostBind hb;
    hb.type = ep.type();
    {
      Address guest;
      guest.name = name;
      hb.guest_addr = guest.ToSockAddr();
    }
    TRY(vfs::VirtualDentry vd, CreateSocketNode(pc, name.bytes, bound, &hb));
    if (hb.endpoint != nullptr) {
      // A host socket (":uds" mount): found there through the host, never
      // through the Sentry's path table.
      SetHost(std::move(hb.endpoint));
    } else {
      InsertPathBinding(&vd.dentry->inode(), ep_);
    }
    a->node = std::move(vd);
  }
  a->name = std::move(name);
  absl::MutexLock l(&ep.mu_);
  ep.addr_ = std::move(a);
  return OkResult();
}

KResult<void> UnixSocket::Listen(Caller& c, int backlog) {
  Endpoint& ep = *ep_;
  if (hostunix::HostEndpoint* h = host()) {
    TRY_VOID(h->Listen(c, backlog));
    {
      absl::MutexLock l(&ep.mu_);
      ep.state_ = State::kListen;  // for /proc/net/unix
    }
    set_listening(true);
    return OkResult();
  }
  if (!ep.connection_based()) return kEOPNOTSUPP;
  int64_t somaxconn = ep.netns_.sysctl().somaxconn.load();
  int64_t b = backlog;
  if (static_cast<uint32_t>(backlog) > static_cast<uint64_t>(somaxconn)) {
    b = somaxconn;
  }
  {
    absl::MutexLock l(&ep.mu_);
    if (ep.addr_ == nullptr) return kEINVAL;
    if (ep.state_ != State::kClose && ep.state_ != State::kListen) {
      return kEINVAL;
    }
    if (b > ep.backlog_) ep.peer_wait_.Notify(vfs::kAllEvents);
    ep.backlog_ = b;
    ep.state_ = State::kListen;
    ep.peercred_ = c.ucred;
  }
  set_listening(true);
  return OkResult();
}

KResult<void> UnixSocket::Connect(Caller& c, const SockAddr& addr) {
  if (hostunix::HostEndpoint* h = host()) {
    // Connected on the host, or bound there (connecting a socket bound on
    // the host is not supported).
    return h->kind() == hostunix::HostEndpoint::Kind::kConnected ? kEISCONN
                                                                 : kEINVAL;
  }
  if (ep_->connection_based()) return StreamConnect(c, addr);
  return DgramConnect(c, addr);
}

KResult<SockAddr> UnixSocket::GetSockName(Caller&) {
  if (hostunix::HostEndpoint* h = host()) return h->GetSockName();
  std::shared_ptr<const Address> a = ep_->address();
  return a != nullptr ? a->ToSockAddr() : UnnamedSockAddr();
}

KResult<SockAddr> UnixSocket::GetPeerName(Caller&) {
  if (hostunix::HostEndpoint* h = host()) return h->GetPeerName();
  EndpointRef peer;
  {
    absl::MutexLock l(&ep_->mu_);
    peer = ep_->peer_;
  }
  if (peer == nullptr) return kENOTCONN;
  std::shared_ptr<const Address> a = peer->address();
  return a != nullptr ? a->ToSockAddr() : UnnamedSockAddr();
}

KResult<void> UnixSocket::Shutdown(Caller&, int how) {
  if (how < SHUT_RD || how > SHUT_RDWR) return kEINVAL;
  if (hostunix::HostEndpoint* h = host()) return h->Shutdown(how);
  uint8_t mode = static_cast<uint8_t>(how + 1);
  Endpoint& ep = *ep_;
  EndpointRef other;
  {
    absl::MutexLock l(&ep.mu_);
    ep.shutdown_ |= mode;
    other = ep.peer_;
  }
  ep.wq_.Notify(vfs::kAllEvents);
  if (other != nullptr && ep.connection_based()) {
    uint8_t peer_mode = 0;
    if (mode & kRcvShutdown) peer_mode |= kSendShutdown;
    if (mode & kSendShutdown) peer_mode |= kRcvShutdown;
    {
      absl::MutexLock l(&other->mu_);
      other->shutdown_ |= peer_mode;
    }
    other->wq_.Notify(vfs::kAllEvents);
  }
  return OkResult();
}

KResult<size_t> UnixSocket::SendMsg(Caller& c, MessageIo& data,
                                    SendRequest& req) {
  if (hostunix::HostEndpoint* h = host()) {
    return h->SendMsg(*this, c, data, req);
  }
  if (ep_->type() == SOCK_STREAM) return StreamSend(c, data, req);
  return DgramSend(c, data, req);
}

KResult<size_t> UnixSocket::RecvMsg(Caller& c, MessageIo& data,
                                    RecvRequest& req) {
  if (hostunix::HostEndpoint* h = host()) {
    return h->RecvMsg(*this, c, data, req);
  }
  if (ep_->type() == SOCK_STREAM) return StreamRecv(c, data, req);
  return DgramRecv(c, data, req);
}

KResult<void> UnixSocket::SetSockOpt(Caller& c, int level, int name,
                                     absl::Span<const uint8_t> val) {
  // af_unix has no options of its own level (sock_no_setsockopt).
  if (level != SOL_SOCKET) return kEOPNOTSUPP;
  if (name == SO_PEEK_OFF) {
    if (val.size() < sizeof(int32_t)) return kEINVAL;
    int32_t v;
    memcpy(&v, val.data(), sizeof(v));
    absl::MutexLock io(&ep_->io_mu_);
    absl::MutexLock l(&ep_->mu_);
    ep_->peek_off_ = v;
    return OkResult();
  }
  TRY_VOID(Socket::SetSockOpt(c, level, name, val));
  if (name == SO_SNDBUF || name == SO_SNDBUFFORCE) {
    ep_->sndbuf_.store(sndbuf(), std::memory_order_relaxed);
    ep_->wq_.Notify(kPollOutBits);  // sk_write_space
  }
  return OkResult();
}

KResult<size_t> UnixSocket::GetSockOpt(Caller& c, int level, int name,
                                       absl::Span<uint8_t> val) {
  if (level != SOL_SOCKET) return kEOPNOTSUPP;
  if (hostunix::HostEndpoint* h = host(); h != nullptr && name == SO_PEERCRED) {
    return h->GetSockOpt(c, level, name, val);
  }
  size_t n = 0;
  switch (name) {
    case SO_PEERCRED: {
      Ucred u{0, ~0u, ~0u};
      {
        absl::MutexLock l(&ep_->mu_);
        if (ep_->peercred_.has_value()) u = *ep_->peercred_;
      }
      uint32_t raw[3] = {static_cast<uint32_t>(u.pid), u.uid, u.gid};
      n = std::min(val.size(), sizeof(raw));
      memcpy(val.data(), raw, n);
      return n;
    }
    case SO_PEEK_OFF: {
      int32_t v;
      {
        absl::MutexLock l(&ep_->mu_);
        v = ep_->peek_off_;
      }
      PutInt(val, v, &n);
      return n;
    }
    case SO_ERROR: {
      int32_t e;
      {
        absl::MutexLock l(&ep_->mu_);
        e = ep_->TakeErrLocked();
      }
      if (e == 0) break;
      PutInt(val, e, &n);
      return n;
    }
    default:
      break;
  }
  return Socket::GetSockOpt(c, level, name, val);
}

KResult<uint64_t> UnixSocket::SocketIoctl(Caller& c, uint32_t cmd,
                                          uint64_t arg) {
  if (hostunix::HostEndpoint* h = host();
      h != nullptr && (cmd == SIOCINQ || cmd == SIOCOUTQ)) {
    return h->SocketIoctl(c, cmd, arg);
  }
  int32_t amount = 0;
  switch (cmd) {
    case SIOCINQ: {  // FIONREAD
      absl::MutexLock l(&ep_->mu_);
      if (ep_->state_ == State::kListen) return kEINVAL;
      if (ep_->connection_based()) {
        size_t sum = 0;
        for (const MessagePtr& m : ep_->queue_) sum += m->remaining();
        amount = static_cast<int32_t>(sum);
      } else if (!ep_->queue_.empty()) {
        amount = static_cast<int32_t>(ep_->queue_.front()->len);
      }
      break;
    }
    case SIOCOUTQ:  // TIOCOUTQ
      amount = static_cast<int32_t>(ep_->wmem_.load());
      break;
    default:
      return Socket::SocketIoctl(c, cmd, arg);
  }
  if (c.io.user == nullptr) return kEFAULT;
  TRY_VOID(c.io.user->CopyOutFull(arg, &amount, sizeof(amount)));
  return uint64_t{0};
}

uint32_t UnixSocket::Readiness(uint32_t mask) {
  if (hostunix::HostEndpoint* h = host()) return h->Readiness(mask);
  uint32_t r = ep_->type() == SOCK_STREAM ? StreamPoll() : DgramPoll(mask);
  return r & mask;
}

// unix_poll.
uint32_t UnixSocket::StreamPoll() {
  Endpoint& ep = *ep_;
  uint32_t mask = 0;
  State state;
  {
    absl::MutexLock l(&ep.mu_);
    if (ep.err_ != 0) mask |= vfs::kPollErr;
    if (ep.shutdown_ == kShutdownMask) mask |= vfs::kPollHup;
    if (ep.shutdown_ & kRcvShutdown) mask |= vfs::kPollRdHup | kPollInBits;
    if (!ep.queue_.empty()) mask |= kPollInBits;
    state = ep.state_;
  }
  if (state == State::kClose) mask |= vfs::kPollHup;
  if (state != State::kListen && ep.wmem_.load() * 4 <= sndbuf()) {
    mask |= kPollOutBits;
  }
  return mask;
}

// unix_dgram_poll (SOCK_DGRAM and SOCK_SEQPACKET).
uint32_t UnixSocket::DgramPoll(uint32_t requested) {
  Endpoint& ep = *ep_;
  uint32_t mask = 0;
  State state;
  EndpointRef other;
  {
    absl::MutexLock l(&ep.mu_);
    if (ep.err_ != 0) mask |= vfs::kPollErr;
    if (ep.shutdown_ & kRcvShutdown) mask |= vfs::kPollRdHup | kPollInBits;
    if (ep.shutdown_ == kShutdownMask) mask |= vfs::kPollHup;
    if (!ep.queue_.empty()) mask |= kPollInBits;
    state = ep.state_;
    other = ep.peer_;
  }
  if (ep.type() == SOCK_SEQPACKET && state == State::kClose) {
    mask |= vfs::kPollHup;
  }
  if (!(requested & kPollOutBits)) return mask;
  bool writable = state != State::kListen && ep.wmem_.load() * 4 <= sndbuf();
  if (writable && other != nullptr && other.get() != &ep) {
    absl::MutexLock l(&other->mu_);
    if (other->peer_.get() != &ep && other->QueueFullLocked()) {
      // unix_dgram_peer_wake_me: POLLOUT comes when the peer drains.
      AddRoomWaiterLocked(*other, ep_);
      writable = false;
    }
  }
  if (writable) mask |= kPollOutBits;
  return mask;
}

std::vector<UnixSocketInfo> ListSockets(NetNamespace& ns) {
  CollectGarbage();
  std::vector<UnixSocketInfo> out;
  for (const EndpointRef& ep : ns.Get<SocketList>().Snapshot()) {
    UnixSocketInfo i;
    absl::MutexLock l(&ep->mu_);
    if (ep->dead_) continue;
    i.refcount = static_cast<uint32_t>(ep.use_count() - 1);
    i.flags = ep->state_ == State::kListen ? (1u << 16) : 0;
    i.type = ep->type();
    bool established = ep->state_ == State::kEstablished;
    if (ep->sock_ != nullptr) {
      i.state = established ? 3 : 1;  // SS_CONNECTED : SS_UNCONNECTED
      i.inode = ep->sock_->ino();
    } else {
      i.state = established ? 2 : 4;  // SS_CONNECTING : SS_DISCONNECTING
    }
    if (ep->addr_ != nullptr) i.path = ep->addr_->ProcName();
    out.push_back(std::move(i));
  }
  return out;
}

std::string FormatProcNetUnix(NetNamespace& ns) {
  std::string out(kProcNetUnixHeader);
  char buf[128];
  for (const UnixSocketInfo& i : ListSockets(ns)) {
    snprintf(buf, sizeof(buf), "%016x: %08X %08X %08X %04X %02X %5lu", 0,
             i.refcount, 0, i.flags, i.type, i.state,
             static_cast<unsigned long>(i.inode));
    out += buf;
    if (!i.path.empty()) {
      out += ' ';
      out += i.path;
    }
    out += '\n';
  }
  return out;
}

Counters GetCounters() {
  Counters c;
  c.open_sockets = OpenEndpoints();
  c.live_endpoints = LiveEndpoints();
  c.inflight_files = InflightDescriptors();
  c.inflight_sockets = InflightSockets();
  return c;
}

}  // namespace sandbox::net::unix
