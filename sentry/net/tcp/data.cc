// The data path: sendmsg (tcp_sendmsg_locked, MSG_OOB's urgent byte),
// recvmsg (tcp_recvmsg_locked: MSG_PEEK, MSG_WAITALL, MSG_TRUNC,
// SO_RCVLOWAT, the urgent mark; tcp_recv_urg), poll (tcp_poll) and the
// queue ioctls (tcp_ioctl).
#include <errno.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "sentry/net/tcp/tcp_socket.h"
#include "sentry/net/wait.h"

namespace sandbox::net::tcp {
namespace {

// sk_stream_is_writeable on the shared buffer: at most two thirds of the
// window in use (sk_stream_wspace >= sk_stream_min_wspace).
bool WritableLocked(const Endpoint& rx_owner)
    ABSL_SHARED_LOCKS_REQUIRED(rx_owner.mu_) {
  return 3 * static_cast<int64_t>(rx_owner.rx_.size()) <= 2 * rx_owner.window_;
}

// One sleep of a reader or writer: registered for this wait only, so that
// a transfer that does not block pays for no wake-up. `held` (the io
// mutex) is released while it sleeps. Returns ok to re-check, the errno
// otherwise (ERESTARTSYS, EAGAIN at the deadline).
class OneShotWait {
 public:
  OneShotWait(vfs::WaitQueue& q, uint32_t events) : q_(q), events_(events) {}
  ~OneShotWait() {
    if (w_.has_value()) w_->Unregister();
  }
  // First call: registers (the caller re-checks before the next call).
  bool registered() const { return w_.has_value() && w_->registered(); }
  void Register() {
    if (!w_.has_value()) w_.emplace();
    if (!w_->registered()) q_.Register(&*w_, events_);
  }
  KResult<void> Sleep(absl::Mutex& held, const Caller& c, int64_t deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(held) {
    held.Unlock();
    vfs::WakeReason r = w_->Sleep(c.io.interrupt_fd, deadline);
    w_->Unregister();
    held.Lock();
    return WakeResult(r);
  }

 private:
  vfs::WaitQueue& q_;
  const uint32_t events_;
  std::optional<vfs::ThreadWaiter> w_;
};

}  // namespace

int64_t TcpSocket::SendWindow(const Endpoint& peer) const {
  // What may be in flight towards the peer: its receive buffer plus this
  // socket's send buffer, each the program's SO_RCVBUF/SO_SNDBUF if it set
  // one, else autotuned.
  NetSysctls& s = ep_->netns().sysctl();
  int64_t r = peer.rcv_limit_.load(std::memory_order_relaxed);
  if (r <= 0) r = std::min<int64_t>(kAutoRcvWindow, s.tcp_rmem_max.load());
  int64_t w = ep_->snd_limit_.load(std::memory_order_relaxed);
  if (w <= 0) w = std::min<int64_t>(kAutoSndWindow, s.tcp_wmem_max.load());
  return std::max<int64_t>(r + w, 4096);
}

KResult<size_t> TcpSocket::SendMsg(Caller& c, MessageIo& data,
                                   SendRequest& req) {
  if (hostinet::HostStream* h = host()) return h->SendMsg(*this, c, data, req);
  Endpoint& self = *ep_;
  const int flags = req.flags;
  const bool nonblock = (flags & MSG_DONTWAIT) || nonblocking();
  const int64_t deadline = EarlierDeadline(SendDeadline(), c.deadline_ns);
  const size_t len = data.size();
  const bool oob = flags & MSG_OOB;
  size_t sent = 0;
  bool peer_gone = false;
  auto stop = [&sent](Errno e) -> KResult<size_t> {
    if (sent != 0) return sent;
    return e;
  };
  OneShotWait wait(self.wq_, kPollOutBits | vfs::kPollErr | vfs::kPollHup);
  absl::MutexLock wl(&self.wr_mu_);
  for (;;) {
    EndpointRef peer;
    {
      absl::MutexLock l(&self.mu_);
      if (int e = self.TakeErrLocked(); e != 0) return stop(Errno(e));
      if (self.shutdown_ & kSendShutdown) return stop(kEPIPE);
      switch (self.state_) {
        case kEstablished:
        case kCloseWait:
          peer = self.peer_;
          break;
        case kSynSent:
          // sk_stream_wait_connect.
          if (nonblock) return stop(kEAGAIN);
          break;
        default:
          return stop(kEPIPE);
      }
    }
    if (peer == nullptr && !wait.registered()) {
      wait.Register();
      continue;
    }
    if (peer == nullptr) {
      KResult<void> w = wait.Sleep(self.wr_mu_, c, deadline);
      if (!w.ok()) return stop(w.error());
      continue;
    }
    // Room in the peer's buffer; the regions are written without its lock
    // (stream_buffer.h).
    std::vector<absl::Span<uint8_t>> regions;
    size_t n = 0;
    {
      absl::MutexLock l(&peer->mu_);
      if (peer->dead_) {
        // Data to a closed socket: it answers with a RST (the orphan's
        // tcp_rcv_state_process), after this write succeeded.
        peer_gone = true;
        sent = len;
        break;
      }
      peer->window_ = SendWindow(*peer);
      const int64_t room =
          peer->window_ - static_cast<int64_t>(peer->rx_.size());
      if (len == 0) break;
      if (room > 0) {
        n = std::min<size_t>(len - sent, static_cast<size_t>(room));
        regions = peer->rx_.Reserve(n);
      } else {
        peer->writer_blocked_ = true;  // SOCK_NOSPACE
      }
    }
    if (n == 0) {
      if (nonblock) return stop(kEAGAIN);
      if (!wait.registered()) {
        wait.Register();
        continue;
      }
      KResult<void> w = wait.Sleep(self.wr_mu_, c, deadline);
      if (!w.ok()) return stop(w.error());
      continue;
    }
    size_t copied = 0;
    bool fault = false;
    for (absl::Span<uint8_t> r : regions) {
      KResult<size_t> k = data.CopyIn(sent + copied, r);
      if (!k.ok()) {
        fault = true;
        break;
      }
      copied += *k;
      if (*k != r.size()) {
        fault = true;
        break;
      }
    }
    uint32_t events = kPollInBits;
    {
      absl::MutexLock l(&peer->mu_);
      peer->rx_.Commit(copied);
      peer->segs_in_++;
      if (oob && !fault && sent + copied == len && copied > 0) {
        // tcp_mark_urg / tcp_check_urg: the last byte is urgent.
        const uint64_t at = peer->rx_.tail() - 1;
        auto last = peer->rx_.Readable(at - peer->rx_.head(), 1);
        peer->urg_seq_ = at;
        peer->urg_byte_ = last.empty() ? 0 : last[0][0];
        peer->urg_valid_ = true;
        peer->urg_read_ = false;
        events |= vfs::kPollPri;
      }
    }
    {
      absl::MutexLock l(&self.mu_);
      self.bytes_sent_ += copied;
      self.segs_out_++;
    }
    inet::MibAdd(self.mib_.tcp, inet::TcpMib::kOutSegs);
    inet::MibAdd(peer->mib_.tcp, inet::TcpMib::kInSegs);
    // sk_data_ready: each arrival, as Linux wakes the reader per segment
    // (edge-triggered epoll sees every one).
    peer->wq_.Notify(events);
    sent += copied;
    if (fault) return stop(kEFAULT);
    if (sent == len) break;
  }
  if (peer_gone) {
    {
      absl::MutexLock l(&self.mu_);
      self.ResetLocked();
    }
    self.wq_.Notify(vfs::kAllEvents);
  }
  return sent;
}

KResult<size_t> TcpSocket::RecvUrgent(MessageIo& data, RecvRequest& req) {
  Endpoint& ep = *ep_;
  const bool oobinline = sol_flags().oobinline;
  uint8_t byte;
  {
    absl::MutexLock l(&ep.mu_);
    // tcp_recv_urg.
    if (oobinline || !(ep.urg_valid_ || ep.urg_read_) || ep.urg_read_) {
      return kEINVAL;
    }
    if (ep.state_ == kClose && !ep.done_) return kENOTCONN;
    if (!ep.urg_valid_) {
      if (ep.state_ == kClose || (ep.shutdown_ & kRcvShutdown)) {
        return size_t{0};
      }
      return kEAGAIN;
    }
    byte = ep.urg_byte_;
    if (!(req.flags & MSG_PEEK)) {
      ep.urg_valid_ = false;
      ep.urg_read_ = true;
    }
  }
  req.msg_flags |= MSG_OOB;
  if (data.size() == 0) {
    req.msg_flags |= MSG_TRUNC;
    return size_t{0};
  }
  TRY(size_t n, data.CopyOut(0, absl::MakeConstSpan(&byte, 1)));
  if (n != 1) return kEFAULT;
  return size_t{1};
}

KResult<size_t> TcpSocket::RecvMsg(Caller& c, MessageIo& data,
                                   RecvRequest& req) {
  if (hostinet::HostStream* h = host()) return h->RecvMsg(*this, c, data, req);
  Endpoint& ep = *ep_;
  const int flags = req.flags;
  if (flags & MSG_ERRQUEUE) return kEAGAIN;  // nothing on the error queue
  {
    absl::MutexLock l(&ep.mu_);
    if (ep.state_ == kListen) return kENOTCONN;
  }
  if (flags & MSG_OOB) return RecvUrgent(data, req);
  const SolFlags sol = sol_flags();
  const bool peek = flags & MSG_PEEK;
  const bool discard = flags & MSG_TRUNC;
  const size_t size = data.size();
  // sock_rcvlowat.
  size_t target = (flags & MSG_WAITALL)
                      ? size
                      : std::min<size_t>(std::max(sol.rcvlowat, 0), size);
  if (target == 0) target = 1;
  const bool nonblock = (flags & MSG_DONTWAIT) || nonblocking();
  const int64_t deadline = EarlierDeadline(RecvDeadline(), c.deadline_ns);
  OneShotWait wait(ep.wq_, vfs::kAllEvents);

  absl::MutexLock rl(&ep.rd_mu_);
  size_t copied = 0;
  size_t peek_off = 0;
  int err = 0;
  while (copied < size) {
    std::vector<absl::Span<const uint8_t>> regions;
    size_t n = 0;
    bool need_wait = false;
    {
      absl::MutexLock l(&ep.mu_);
      const uint64_t pos = ep.rx_.head() + peek_off;
      const bool urg = ep.urg_valid_ || ep.urg_read_;
      if (urg && ep.urg_seq_ == pos) {
        if (copied != 0) break;  // stop at the mark
        if (!sol.oobinline && ep.rx_.tail() > pos) {
          // The urgent byte is not in line: skip it.
          if (peek) {
            peek_off++;
          } else {
            ep.rx_.Consume(1);
            ep.urg_valid_ = ep.urg_read_ = false;
          }
          continue;
        }
      }
      const size_t avail = static_cast<size_t>(ep.rx_.tail() - pos);
      n = std::min(avail, size - copied);
      if (urg && ep.urg_seq_ > pos) {
        n = std::min<size_t>(n, static_cast<size_t>(ep.urg_seq_ - pos));
      }
      if (n != 0) {
        if (!discard) regions = ep.rx_.Readable(peek_off, n);
      } else if (copied >= target) {
        break;
      } else if (copied != 0) {
        if (ep.err_ != 0 || ep.state_ == kClose ||
            (ep.shutdown_ & kRcvShutdown) || nonblock) {
          break;
        }
        need_wait = true;
      } else if (ep.done_) {
        break;
      } else if (ep.err_ != 0) {
        err = ep.TakeErrLocked();
        break;
      } else if (ep.shutdown_ & kRcvShutdown) {
        break;
      } else if (ep.state_ == kClose) {
        err = ENOTCONN;
        break;
      } else if (nonblock) {
        err = EAGAIN;
        break;
      } else {
        need_wait = true;
      }
      if (need_wait && !wait.registered()) {
        wait.Register();
        continue;  // re-check with the waiter registered
      }
    }
    if (need_wait) {
      KResult<void> w = wait.Sleep(ep.rd_mu_, c, deadline);
      if (!w.ok()) {
        err = w.error().number();
        break;
      }
      continue;
    }
    // Copy without the lock: only this reader consumes, writers append.
    size_t done = 0;
    bool fault = false;
    for (absl::Span<const uint8_t> r : regions) {
      KResult<size_t> k = data.CopyOut(copied + done, r);
      if (!k.ok()) {
        fault = true;
        break;
      }
      done += *k;
      if (*k != r.size()) {
        fault = true;
        break;
      }
    }
    if (discard) done = n;
    EndpointRef wake;
    {
      absl::MutexLock l(&ep.mu_);
      if (!peek) {
        ep.rx_.Consume(done);
        if ((ep.urg_valid_ || ep.urg_read_) && ep.urg_seq_ < ep.rx_.head()) {
          ep.urg_valid_ = ep.urg_read_ = false;
        }
        // sk_stream_write_space: wake the writer once a third is free.
        if (ep.writer_blocked_ &&
            3 * (ep.window_ - static_cast<int64_t>(ep.rx_.size())) >=
                ep.window_) {
          ep.writer_blocked_ = false;
          wake = ep.peer_;
        }
      } else {
        peek_off += done;
      }
    }
    if (wake != nullptr) wake->wq_.Notify(kPollOutBits);
    copied += done;
    if (fault) {
      if (copied == 0) err = EFAULT;
      break;
    }
  }
  if (copied != 0) return copied;
  if (err != 0) return Errno(err);
  return size_t{0};
}

uint32_t TcpSocket::Readiness(uint32_t mask) {
  if (hostinet::HostStream* h = host()) return h->Readiness(mask);
  Endpoint& ep = *ep_;
  const SolFlags sol = sol_flags();
  uint32_t m = 0;
  EndpointRef peer;
  bool check_write = false;
  {
    absl::MutexLock l(&ep.mu_);
    // tcp_poll.
    if (ep.state_ == kListen) {
      return (ep.accept_q_.empty() && ep.host_accept_q_.empty() ? 0
                                                                : kPollInBits) &
             mask;
    }
    if (ep.shutdown_ == kShutdownMask || ep.state_ == kClose) {
      m |= vfs::kPollHup;
    }
    if (ep.shutdown_ & kRcvShutdown) m |= kPollInBits | vfs::kPollRdHup;
    if (ep.state_ != kSynSent && ep.state_ != kSynRecv) {
      const size_t target = static_cast<size_t>(std::max(sol.rcvlowat, 1));
      if (ep.ReadableLocked(target, sol.oobinline)) m |= kPollInBits;
      if (!(ep.shutdown_ & kSendShutdown)) {
        peer = ep.peer_;
        if (peer == nullptr) {
          m |= vfs::kPollOut | vfs::kPollWrNorm;
        } else {
          check_write = true;
        }
      } else {
        m |= vfs::kPollOut | vfs::kPollWrNorm;
      }
      if (ep.urg_valid_) m |= vfs::kPollPri;
    }
    if (ep.err_ != 0) m |= vfs::kPollErr;
  }
  if (check_write) {
    absl::MutexLock l(&peer->mu_);
    if (peer->dead_ || WritableLocked(*peer)) {
      m |= vfs::kPollOut | vfs::kPollWrNorm;
    } else {
      peer->writer_blocked_ = true;  // the poller wants the write space
    }
  }
  return m & mask;
}

KResult<uint64_t> TcpSocket::SocketIoctl(Caller& c, uint32_t cmd,
                                         uint64_t arg) {
  if (hostinet::HostStream* h = host()) return h->SocketIoctl(c, cmd, arg);
  int32_t amount = 0;
  const bool oobinline = sol_flags().oobinline;
  {
    absl::MutexLock l(&ep_->mu_);
    const bool urg = ep_->urg_valid_ || ep_->urg_read_;
    switch (cmd) {
      case SIOCINQ:  // tcp_inq
        if (ep_->state_ == kListen) return kEINVAL;
        if (ep_->state_ == kSynSent || ep_->state_ == kSynRecv) break;
        if (oobinline || !urg || ep_->urg_seq_ < ep_->rx_.head() ||
            ep_->urg_seq_ >= ep_->rx_.tail()) {
          amount = static_cast<int32_t>(
              std::min<size_t>(ep_->rx_.size(), INT32_MAX));
        } else {
          amount = static_cast<int32_t>(ep_->urg_seq_ - ep_->rx_.head());
        }
        break;
      case SIOCATMARK:
        amount = urg && ep_->urg_seq_ == ep_->rx_.head();
        break;
      case SIOCOUTQ:
      case SIOCOUTQNSD:
        // Acknowledged as soon as it is in the peer's buffer.
        if (ep_->state_ == kListen) return kEINVAL;
        break;
      default:
        return Socket::SocketIoctl(c, cmd, arg);
    }
  }
  if (c.io.user == nullptr) return kEFAULT;
  TRY_VOID(c.io.user->CopyOutFull(arg, &amount, sizeof(amount)));
  return uint64_t{0};
}

}  // namespace sandbox::net::tcp
