// SOCK_STREAM (and SOCK_SEQPACKET's connection set-up): connect, accept,
// and the stream data path (unix_stream_connect, unix_accept,
// unix_stream_sendmsg, unix_stream_read_generic).
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "sentry/net/unix/endpoint.h"
#include "sentry/net/unix/gc.h"
#include "sentry/net/unix/registry.h"
#include "sentry/net/wait.h"

namespace sandbox::net::unix {
KResult<void> UnixSocket::HostConnect(Caller& c, const Name& name, HostPeer& hp,
                                      bool nonblock, int64_t deadline) {
  Endpoint& self = *ep_;
  SockAddr local;
  {
    absl::MutexLock l(&self.mu_);
    switch (self.state_) {
      case State::kClose:
        break;
      case State::kEstablished:
        return kEISCONN;
      default:
        return kEINVAL;
    }
    local =
        self.addr_ != nullptr ? self.addr_->ToSockAddr() : UnnamedSockAddr();
  }
  Address peer;
  peer.name = name;
  TRY(std::shared_ptr<hostunix::HostEndpoint> h,
      hostunix::ConnectHost(*hp.sockets, hp.node.dentry->inode(), self.type(),
                            c, nonblock, deadline, local, peer.ToSockAddr()));
  {
    absl::MutexLock l(&self.mu_);
    if (self.state_ != State::kClose) return kEISCONN;  // raced
    self.state_ = State::kEstablished;  // for /proc/net/unix and poll
  }
  if (!SetHost(std::move(h))) return kEISCONN;
  self.wq_.Notify(vfs::kAllEvents);
  return OkResult();
}

KResult<void> UnixSocket::StreamConnect(Caller& c, const SockAddr& addr) {
  Endpoint& self = *ep_;
  TRY(Name name, ParseName(addr));
  if (passcred()) TRY_VOID(Autobind());
  const bool nonblock = nonblocking();
  const int64_t sock_deadline = SendDeadline();
  const int64_t deadline = EarlierDeadline(sock_deadline, c.deadline_ns);
  // The connection as the listener will accept it (released unless used).
  EndpointRef embryo = NewEndpoint(self.type(), self.netns());
  struct ReleaseUnused {
    EndpointRef* e;
    ~ReleaseUnused() {
      if (*e == nullptr) return;
      {
        absl::MutexLock l(&(*e)->mu_);
        (*e)->peer_ = nullptr;  // the connector is not its peer after all
      }
      (*e)->Release(/*embryo=*/false);
    }
  } release_unused{&embryo};
  EndpointRef waited_on;
  std::optional<Waiter> waiter;
  for (;;) {
    HostPeer hp;
    TRY(EndpointRef other, FindPeer(c, NamespaceOf(c), name, self.type(), &hp));
    if (other == nullptr) {
      return HostConnect(c, name, hp, nonblock, sock_deadline);
    }
    {
      // The listener's name is fixed once bound.
      std::shared_ptr<const Address> listener_addr = other->address();
      absl::MutexLock el(&embryo->mu_);
      embryo->peer_ = ep_;
      embryo->state_ = State::kEstablished;
      embryo->peercred_ = c.ucred;  // init_peercred: the connector
      embryo->addr_ = std::move(listener_addr);
    }
    {
      LockPair l(self, *other);
      if (other->dead_) continue;  // released meanwhile: look again
      if (other->state_ != State::kListen) return kECONNREFUSED;
      if (other->shutdown_ & kRcvShutdown) return kECONNREFUSED;
      if (!other->QueueFullLocked()) {
        switch (self.state_) {
          case State::kClose:
            break;
          case State::kEstablished:
            return kEISCONN;
          default:
            return kEINVAL;
        }
        // The way is open. (The embryo was set up before these locks: it
        // is locked alone, never under another Endpoint's mu_.)
        self.peercred_ = other->peercred_;  // copy_peercred: the listener's
        self.peer_ = embryo;
        self.state_ = State::kEstablished;
        auto m = std::make_unique<Message>();
        m->embryo = std::move(embryo);
        embryo = nullptr;
        other->queue_.push_back(std::move(m));
        other->wq_.Notify(kPollInBits);
        break;
      }
      if (nonblock) return kEAGAIN;
    }
    // unix_wait_for_peer: the backlog is full.
    if (waited_on != other) {
      waiter.reset();
      waited_on = other;
      waiter.emplace(other->peer_wait_, vfs::kAllEvents);
    }
    TRY_VOID(waiter->Wait(c, deadline));
  }
  self.wq_.Notify(vfs::kAllEvents);
  return OkResult();
}

KResult<vfs::FileRef> UnixSocket::Accept(Caller& c, uint32_t flags,
                                         SockAddr* peer) {
  if (hostunix::HostEndpoint* h = host()) {
    return h->Accept(*this, c, flags, peer);
  }
  Endpoint& ep = *ep_;
  if (!ep.connection_based()) return kEOPNOTSUPP;
  const bool nonblock = nonblocking();
  const int64_t sock_deadline = RecvDeadline();
  const int64_t deadline = EarlierDeadline(sock_deadline, c.deadline_ns);
  Waiter waiter(ep.wq_, vfs::kAllEvents);
  MessagePtr m;
  for (;;) {
    {
      absl::MutexLock l(&ep.mu_);
      if (ep.state_ != State::kListen) return kEINVAL;
      int err = ep.TakeErrLocked();
      if (err != 0) return Errno(err);
      if (!ep.queue_.empty()) {
        m = std::move(ep.queue_.front());
        ep.queue_.pop_front();
        ep.RoomLocked();
        break;
      }
      if (ep.shutdown_ & kRcvShutdown) return kEINVAL;
    }
    if (nonblock) return kEAGAIN;
    TRY_VOID(waiter.Wait(c, deadline));
  }
  EndpointRef embryo = std::move(m->embryo);
  m.reset();
  std::shared_ptr<UnixSocket> s =
      UnixSocket::Make(embryo, O_RDWR | flags, c.ucred);
  if (passcred()) {
    // unix_sock_inherit_flags: SO_PASSCRED comes from the listener.
    int32_t one = 1;
    (void)s->Socket::SetSockOpt(
        c, SOL_SOCKET, SO_PASSCRED,
        absl::MakeConstSpan(reinterpret_cast<uint8_t*>(&one), sizeof(one)));
  }
  if (peer != nullptr) {
    EndpointRef connector;
    {
      absl::MutexLock l(&embryo->mu_);
      connector = embryo->peer_;
    }
    std::shared_ptr<const Address> a =
        connector != nullptr ? connector->address() : nullptr;
    *peer = a != nullptr ? a->ToSockAddr() : UnnamedSockAddr();
  }
  return vfs::FileRef(std::move(s));
}

KResult<size_t> UnixSocket::StreamSend(Caller& c, MessageIo& data,
                                       SendRequest& req) {
  Endpoint& self = *ep_;
  if (req.flags & MSG_OOB) return kEOPNOTSUPP;
  EndpointRef other;
  {
    absl::MutexLock l(&self.mu_);
    if (req.to.has_value() && req.to->len != 0) {
      return self.state_ == State::kEstablished ? kEISCONN : kEOPNOTSUPP;
    }
    other = self.peer_;
    if (other == nullptr) return kENOTCONN;
    if (self.shutdown_ & kSendShutdown) return kEPIPE;
  }
  const bool nonblock = (req.flags & MSG_DONTWAIT) || nonblocking();
  const int64_t sock_deadline = SendDeadline();
  const int64_t deadline = EarlierDeadline(sock_deadline, c.deadline_ns);
  const size_t len = data.size();
  size_t sent = 0;
  bool rights_sent = false;
  std::optional<Waiter> waiter;
  // What ends the write early: the bytes sent so far, else the error.
  auto stop = [&sent](Errno e) -> KResult<size_t> {
    if (sent != 0) return sent;
    return e;
  };
  while (sent < len) {
    RightsBatch batch;  // the rights of a Message that was not queued
    const int64_t sndbuf = this->sndbuf();
    size_t size = std::min<size_t>(len - sent, kMaxStreamChunk);
    size = std::min<size_t>(
        size, static_cast<size_t>(std::max<int64_t>(sndbuf / 2 - 64, 1)));
    // sock_alloc_send_pskb: room in the send buffer.
    for (;;) {
      int err = 0;
      bool shut = false;
      {
        absl::MutexLock l(&self.mu_);
        err = self.TakeErrLocked();
        shut = self.shutdown_ & kSendShutdown;
      }
      if (err != 0) return stop(Errno(err));
      if (shut) return stop(kEPIPE);
      if (self.wmem_.load(std::memory_order_acquire) < sndbuf) break;
      if (nonblock) return stop(kEAGAIN);
      if (!waiter.has_value()) waiter.emplace(self.wq_, kPollOutBits);
      KResult<void> w = waiter->Wait(c, deadline);
      if (!w.ok()) return stop(w.error());
    }
    auto m = std::make_unique<Message>();
    m->truesize = TrueSize(size);
    self.wmem_.fetch_add(m->truesize, std::memory_order_acq_rel);
    m->sender = ep_;
    m->creds = req.control.creds;
    // Only the first Message carries the rights (unix_scm_to_skb).
    if (!rights_sent && !req.control.rights.empty()) {
      const uint32_t uid = SenderCreds(c).uid;
      KResult<void> r = AttachRights(req.control.rights, uid, NofileLimit(c),
                                     MayExceedInflight(c));
      if (!r.ok()) return stop(r.error());
      m->rights = std::move(req.control.rights);
      req.control.rights.clear();
      m->rights_uid = uid;
    }
    rights_sent = true;
    m->data.reset(new uint8_t[size]);
    m->len = size;
    KResult<size_t> n = data.CopyIn(sent, absl::MakeSpan(m->data.get(), size));
    if (!n.ok() || *n != size) {
      batch.Add(std::move(m->rights), m->rights_uid, /*keep=*/false);
      m.reset();
      return stop(kEFAULT);
    }
    {
      absl::MutexLock l(&other->mu_);
      if (!other->dead_ && !(other->shutdown_ & kRcvShutdown)) {
        if (!m->creds.has_value() && PasscredEnabledLocked(*this, *other)) {
          m->creds = SenderCreds(c);
        }
        other->queue_.push_back(std::move(m));
        other->wq_.Notify(kPollInBits);
      }
    }
    if (m != nullptr) {  // the peer is gone or shut its reading side
      batch.Add(std::move(m->rights), m->rights_uid, /*keep=*/false);
      m.reset();
      return stop(kEPIPE);
    }
    sent += size;
  }
  return sent;
}

KResult<size_t> UnixSocket::StreamRecv(Caller& c, MessageIo& data,
                                       RecvRequest& req) {
  Endpoint& self = *ep_;
  const int flags = req.flags;
  {
    absl::MutexLock l(&self.mu_);
    if (self.state_ != State::kEstablished) return kEINVAL;
  }
  if (flags & MSG_OOB) return kEOPNOTSUPP;
  const bool peek = flags & MSG_PEEK;
  const size_t size = data.size();
  // sock_rcvlowat: MSG_WAITALL waits for everything, else one byte.
  const size_t target = ((flags & MSG_WAITALL) && size > 0) ? size : 1;
  const bool nonblock = (flags & MSG_DONTWAIT) || nonblocking();
  const int64_t sock_deadline = RecvDeadline();
  const int64_t deadline = EarlierDeadline(sock_deadline, c.deadline_ns);
  const bool pass = passcred();

  RightsBatch detached;  // taken out of messages, for the receiver
  std::vector<vfs::FileRef> peeked;
  std::optional<Ucred> scm_creds;
  bool check_creds = false;
  bool got_from = false;
  bool got_rights = false;
  size_t copied = 0;
  int err = 0;
  std::optional<Waiter> waiter;

  self.io_mu_.Lock();
  size_t skip = 0;
  size_t idx = 0;  // MSG_PEEK: the Message looked at (only appends happen)
  if (peek) {
    absl::MutexLock l(&self.mu_);
    skip = static_cast<size_t>(std::max<int32_t>(self.peek_off_, 0));
  }
  for (;;) {
    Message* m = nullptr;
    bool wait = false;
    {
      absl::MutexLock l(&self.mu_);
      while (idx < self.queue_.size() &&
             skip >= self.queue_[idx]->remaining()) {
        skip -= self.queue_[idx]->remaining();
        ++idx;
      }
      if (idx < self.queue_.size()) {
        m = self.queue_[idx].get();
      } else if (copied >= target) {
        break;
      } else if ((err = self.TakeErrLocked()) != 0) {
        break;
      } else if (self.shutdown_ & kRcvShutdown) {
        break;
      } else {
        wait = true;
      }
    }
    if (wait) {
      if (nonblock) {
        err = EAGAIN;
        break;
      }
      if (!waiter.has_value()) waiter.emplace(self.wq_, vfs::kAllEvents);
      KResult<void> w = waiter->WaitReleasing(self.io_mu_, c, deadline);
      if (!w.ok()) {
        err = w.error().number();
        break;
      }
      continue;
    }
    // Never glue messages of different writers when credentials pass.
    if (check_creds) {
      if (!(m->creds == scm_creds)) break;
    } else if (pass) {
      scm_creds = m->creds;
      check_creds = true;
    }
    if (req.want_from && !got_from) {
      std::shared_ptr<const Address> a =
          m->sender != nullptr ? m->sender->address() : nullptr;
      if (a != nullptr) req.from = a->ToSockAddr();
      got_from = true;
    }
    // Only this reader (io_mu_) changes m->consumed or removes m.
    const size_t off = m->consumed + skip;
    const size_t chunk = std::min(m->len - off, size - copied);
    if (chunk != 0) {
      KResult<size_t> n =
          data.CopyOut(copied, absl::MakeConstSpan(m->data.get() + off, chunk));
      if (!n.ok() || *n != chunk) {
        if (copied == 0) err = EFAULT;
        break;
      }
    }
    copied += chunk;
    bool stop = false;
    MessagePtr done;
    {
      absl::MutexLock l(&self.mu_);
      if (!peek) {
        m->consumed += chunk;
        if (self.peek_off_ >= 0) {
          self.peek_off_ = std::max<int32_t>(
              0, self.peek_off_ - static_cast<int32_t>(chunk));
        }
        if (!m->rights.empty()) {
          detached.Add(std::move(m->rights), m->rights_uid, /*keep=*/true);
          m->rights.clear();
          got_rights = true;
        }
        if (m->remaining() > 0) {
          stop = true;
        } else {
          done = std::move(self.queue_.front());
          self.queue_.pop_front();
          stop = got_rights;
        }
      } else {
        if (!m->rights.empty()) {
          peeked.insert(peeked.end(), m->rights.begin(), m->rights.end());
          got_rights = true;
        }
        if (self.peek_off_ >= 0) self.peek_off_ += static_cast<int32_t>(chunk);
        stop = got_rights;
        skip = 0;
        ++idx;
      }
    }
    done.reset();  // un-charges the writer
    if (stop || copied >= size) break;
  }
  self.io_mu_.Unlock();

  if (!peeked.empty()) PeekBarrier();
  std::vector<vfs::FileRef> rights = detached.Finish();
  for (vfs::FileRef& f : peeked) rights.push_back(std::move(f));
  req.control.rights = std::move(rights);
  if (pass) {
    // scm_recv: a message without credentials shows the overflow ids; no
    // data at all shows zeros.
    req.control.creds =
        check_creds ? scm_creds.value_or(Ucred{0, kOverflowId, kOverflowId})
                    : Ucred{0, 0, 0};
  }
  if (copied != 0) return copied;
  if (err != 0) return Errno(err);
  return size_t{0};
}

}  // namespace sandbox::net::unix
