// SOCK_DGRAM and SOCK_SEQPACKET records: unix_dgram_connect,
// unix_dgram_sendmsg, unix_dgram_recvmsg and their SEQPACKET wrappers.
#include <errno.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "sentry/net/unix/endpoint.h"
#include "sentry/net/unix/gc.h"
#include "sentry/net/unix/registry.h"
#include "sentry/net/wait.h"

namespace sandbox::net::unix {
namespace {

// unix_dgram_disconnected: `sk` stopped talking to `other`. Its queue is
// purged; if `other` was connected back to it, `other` gets ECONNRESET.
// No lock held.
void DgramDisconnected(Endpoint& sk, Endpoint& other) {
  RightsBatch batch;
  std::deque<MessagePtr> purged;
  {
    absl::MutexLock io(&sk.io_mu_);
    absl::MutexLock l(&sk.mu_);
    if (!sk.queue_.empty()) {
      purged.swap(sk.queue_);
      sk.RoomLocked();
    }
  }
  if (purged.empty()) return;
  bool reset = false;
  {
    absl::MutexLock l(&other.mu_);
    if (!other.dead_ && other.peer_.get() == &sk) {
      other.err_ = ECONNRESET;
      reset = true;
    }
  }
  if (reset) other.wq_.Notify(vfs::kPollErr);
  for (MessagePtr& m : purged) {
    batch.Add(std::move(m->rights), m->rights_uid, /*keep=*/false);
  }
  purged.clear();
}

}  // namespace

KResult<void> UnixSocket::DgramConnect(Caller& c, const SockAddr& addr) {
  Endpoint& self = *ep_;
  if (addr.len < sizeof(uint16_t)) return kEINVAL;
  EndpointRef other;
  EndpointRef old;
  if (addr.family() != AF_UNSPEC) {
    TRY(Name name, ParseName(addr));
    if (passcred()) TRY_VOID(Autobind());
    for (;;) {
      HostPeer hp;
      TRY(other, FindPeer(c, NamespaceOf(c), name, self.type(), &hp));
      if (other == nullptr) {
        // A host datagram socket: connected on the host from now on.
        return HostConnect(c, name, hp, /*nonblock=*/true, -1);
      }
      LockPair l(self, *other);
      if (other->dead_) continue;  // released meanwhile: look again
      // unix_may_send: the target talks to nobody or to us.
      if (other->peer_ != nullptr && other->peer_.get() != &self) {
        return kEPERM;
      }
      self.state_ = State::kEstablished;
      other->state_ = State::kEstablished;
      old = std::move(self.peer_);
      self.peer_ = other;
      break;
    }
  } else {
    // 1003.1g: connecting to AF_UNSPEC breaks the association.
    absl::MutexLock l(&self.mu_);
    old = std::move(self.peer_);
    self.peer_ = nullptr;
    if (old != nullptr) self.state_ = State::kClose;
  }
  if (old != nullptr && old != other) {
    DgramDisconnected(self, *old);
    absl::MutexLock l(&old->mu_);
    if (old->peer_ == nullptr) old->state_ = State::kClose;
  }
  self.wq_.Notify(kPollOutBits);
  return OkResult();
}

KResult<size_t> UnixSocket::DgramSend(Caller& c, MessageIo& data,
                                      SendRequest& req) {
  Endpoint& self = *ep_;
  RightsBatch batch;  // destroyed last: the rights of an unsent message
  if (req.flags & MSG_OOB) return kEOPNOTSUPP;
  const bool seqpacket = self.type() == SOCK_SEQPACKET;
  std::optional<Name> to;
  EndpointRef other;
  bool bound;
  bool use_peer;
  {
    absl::MutexLock l(&self.mu_);
    if (seqpacket) {
      // unix_seqpacket_sendmsg: errors first; the address is ignored.
      int err = self.TakeErrLocked();
      if (err != 0) return Errno(err);
      if (self.state_ != State::kEstablished) return kENOTCONN;
    }
    bound = self.addr_ != nullptr;
    use_peer = seqpacket || !req.to.has_value() || req.to->len == 0;
  }
  // Linux 6.x's order: the address, EMSGSIZE, the send buffer (EPIPE after
  // SHUT_WR), the rights, the data; only then the peer (ENOTCONN) or the
  // name's lookup.
  if (!use_peer) {
    TRY(Name n, ParseName(*req.to));
    to = std::move(n);
  }
  if (passcred() && !bound) TRY_VOID(Autobind());
  const size_t len = data.size();
  const int64_t sndbuf = this->sndbuf();
  if (static_cast<int64_t>(len) > sndbuf - 32) return kEMSGSIZE;

  const bool nonblock = (req.flags & MSG_DONTWAIT) || nonblocking();
  const int64_t sock_deadline = SendDeadline();
  const int64_t deadline = EarlierDeadline(sock_deadline, c.deadline_ns);
  // sock_alloc_send_pskb: room in the send buffer.
  {
    std::optional<Waiter> waiter;
    for (;;) {
      {
        absl::MutexLock l(&self.mu_);
        int err = self.TakeErrLocked();
        if (err != 0) return Errno(err);
        if (self.shutdown_ & kSendShutdown) return kEPIPE;
      }
      if (self.wmem_.load(std::memory_order_acquire) < sndbuf) break;
      if (nonblock) return kEAGAIN;
      if (!waiter.has_value()) waiter.emplace(self.wq_, kPollOutBits);
      TRY_VOID(waiter->Wait(c, deadline));
    }
  }
  auto m = std::make_unique<Message>();
  m->truesize = TrueSize(len);
  self.wmem_.fetch_add(m->truesize, std::memory_order_acq_rel);
  m->sender = ep_;
  m->creds = req.control.creds;
  auto fail = [&](Errno e) -> KResult<size_t> {
    batch.Add(std::move(m->rights), m->rights_uid, /*keep=*/false);
    m.reset();
    return e;
  };
  if (!req.control.rights.empty()) {
    const uint32_t uid = SenderCreds(c).uid;
    KResult<void> r = AttachRights(req.control.rights, uid, NofileLimit(c),
                                   MayExceedInflight(c));
    if (!r.ok()) return fail(r.error());
    m->rights = std::move(req.control.rights);
    req.control.rights.clear();
    m->rights_uid = uid;
  }
  m->data.reset(new uint8_t[len == 0 ? 1 : len]);
  m->len = len;
  if (len != 0) {
    KResult<size_t> n = data.CopyIn(0, absl::MakeSpan(m->data.get(), len));
    if (!n.ok() || *n != len) return fail(kEFAULT);
  }

  EndpointRef waited_on;
  std::optional<Waiter> waiter;
  for (;;) {
    if (other == nullptr && !to.has_value()) {
      absl::MutexLock l(&self.mu_);
      other = self.peer_;
      if (other == nullptr) return fail(kENOTCONN);
    }
    if (other == nullptr) {
      KResult<EndpointRef> found =
          FindPeer(c, NamespaceOf(c), *to, self.type());
      if (!found.ok()) return fail(found.error());
      other = std::move(*found);
    }
    bool disconnected = false;
    bool wait = false;
    {
      LockPair l(self, *other);
      // unix_may_send.
      if (other->peer_ != nullptr && other->peer_.get() != &self) {
        return fail(kEPERM);
      }
      if (other->dead_) {
        if (seqpacket) return fail(kEPIPE);
        if (self.peer_ == other) {
          self.peer_ = nullptr;
          self.state_ = State::kClose;
          disconnected = true;
        } else {
          other = nullptr;
          continue;  // look the name up again
        }
      } else if (other->shutdown_ & kRcvShutdown) {
        return fail(kEPIPE);
      } else if (other.get() != &self && other->peer_.get() != &self &&
                 other->QueueFullLocked()) {
        if (nonblock) {
          if (self.peer_ == other) AddRoomWaiterLocked(*other, ep_);
          return fail(kEAGAIN);
        }
        wait = true;
      } else {
        if (!m->creds.has_value() && PasscredEnabledLocked(*this, *other)) {
          m->creds = SenderCreds(c);
        }
        other->queue_.push_back(std::move(m));
        other->wq_.Notify(kPollInBits);
        return len;
      }
    }
    if (disconnected) {
      self.wq_.Notify(kPollOutBits);
      DgramDisconnected(self, *other);
      return fail(kECONNREFUSED);
    }
    if (wait) {
      // unix_wait_for_peer.
      if (waited_on != other) {
        waiter.reset();
        waited_on = other;
        waiter.emplace(other->peer_wait_, vfs::kAllEvents);
      }
      KResult<void> w = waiter->Wait(c, deadline);
      if (!w.ok()) return fail(w.error());
    }
  }
}

KResult<size_t> UnixSocket::DgramRecv(Caller& c, MessageIo& data,
                                      RecvRequest& req) {
  Endpoint& self = *ep_;
  const int flags = req.flags;
  if (flags & MSG_OOB) return kEOPNOTSUPP;
  const bool seqpacket = self.type() == SOCK_SEQPACKET;
  if (seqpacket) {
    absl::MutexLock l(&self.mu_);
    if (self.state_ != State::kEstablished) return kENOTCONN;
  }
  const bool peek = flags & MSG_PEEK;
  const bool nonblock = (flags & MSG_DONTWAIT) || nonblocking();
  const int64_t sock_deadline = RecvDeadline();
  const int64_t deadline = EarlierDeadline(sock_deadline, c.deadline_ns);
  const bool pass = passcred();
  const size_t size = data.size();

  RightsBatch batch;
  std::optional<Waiter> waiter;
  MessagePtr owned;      // a dequeued message
  Message* m = nullptr;  // the message received (owned or peeked)
  size_t skip = 0;
  int err = 0;
  self.io_mu_.Lock();
  for (;;) {
    bool shut = false;
    State state;
    {
      absl::MutexLock l(&self.mu_);
      // __skb_try_recv_datagram: a pending error comes before the queue.
      if ((err = self.TakeErrLocked()) != 0) break;
      if (!peek) {
        if (!self.queue_.empty()) {
          owned = std::move(self.queue_.front());
          self.queue_.pop_front();
          self.RoomLocked();
          m = owned.get();
          break;
        }
      } else {
        // __skb_try_recv_from_queue with the peek offset.
        const bool at_off = self.peek_off_ >= 0;
        size_t off = at_off ? static_cast<size_t>(self.peek_off_) : 0;
        for (const MessagePtr& q : self.queue_) {
          if (at_off && off >= q->len && (off != 0 || q->peeked)) {
            off -= q->len;
            continue;
          }
          if (q->len == 0) q->peeked = true;
          m = q.get();
          skip = off;
          break;
        }
        if (m != nullptr) {
          self.RoomLocked();
          break;
        }
      }
      shut = self.shutdown_ & kRcvShutdown;
      state = self.state_;
    }
    if (nonblock) {
      err = EAGAIN;
      break;
    }
    // __skb_wait_for_more_packets.
    if (shut) break;  // EOF
    if (seqpacket && state != State::kEstablished && state != State::kListen) {
      err = ENOTCONN;
      break;
    }
    if (!waiter.has_value()) waiter.emplace(self.wq_, vfs::kAllEvents);
    KResult<void> w = waiter->WaitReleasing(self.io_mu_, c, deadline);
    if (!w.ok()) {
      err = w.error().number();
      break;
    }
  }
  if (m == nullptr) {
    bool shut;
    {
      absl::MutexLock l(&self.mu_);
      shut = self.shutdown_ & kRcvShutdown;
    }
    self.io_mu_.Unlock();
    // EOF on a disconnected non-blocking SEQPACKET socket.
    if (seqpacket && err == EAGAIN && shut) err = 0;
    if (err != 0) return Errno(err);
    return size_t{0};
  }
  // A peeked message stays queued; io_mu_ keeps other readers from
  // taking it, and purges wait for io_mu_.
  if (req.want_from && m->sender != nullptr) {
    std::shared_ptr<const Address> a = m->sender->address();
    if (a != nullptr) req.from = a->ToSockAddr();
  }
  const size_t avail = m->len - std::min(skip, m->len);
  size_t n = avail;
  if (size < avail) {
    n = size;
    req.msg_flags |= MSG_TRUNC;
  }
  if (n != 0) {
    KResult<size_t> r =
        data.CopyOut(0, absl::MakeConstSpan(m->data.get() + skip, n));
    if (!r.ok() || *r != n) {
      if (owned != nullptr) {
        batch.Add(std::move(owned->rights), owned->rights_uid, false);
        owned.reset();
      }
      self.io_mu_.Unlock();
      return kEFAULT;
    }
  }
  if (pass) {
    req.control.creds = m->creds.value_or(Ucred{0, kOverflowId, kOverflowId});
  }
  std::vector<vfs::FileRef> peeked;
  {
    absl::MutexLock l(&self.mu_);
    if (!peek) {
      batch.Add(std::move(m->rights), m->rights_uid, /*keep=*/true);
      m->rights.clear();
      if (self.peek_off_ >= 0) {
        self.peek_off_ =
            std::max<int32_t>(0, self.peek_off_ - static_cast<int32_t>(m->len));
      }
    } else {
      peeked = m->rights;
      if (self.peek_off_ >= 0) self.peek_off_ += static_cast<int32_t>(n);
    }
  }
  self.io_mu_.Unlock();
  owned.reset();  // un-charges the sender
  if (!peeked.empty()) PeekBarrier();
  std::vector<vfs::FileRef> rights = batch.Finish();
  for (vfs::FileRef& f : peeked) rights.push_back(std::move(f));
  req.control.rights = std::move(rights);
  return (flags & MSG_TRUNC) ? avail : n;
}

}  // namespace sandbox::net::unix
