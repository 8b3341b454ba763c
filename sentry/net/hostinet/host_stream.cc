#include "sentry/net/hostinet/host_stream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "sentry/vfs/waiter.h"

namespace sandbox::net::hostinet {
namespace {

constexpr size_t kStreamChunk = 64 << 10;
constexpr size_t kMaxDatagram = 65536;
constexpr size_t kCmsgSpace = 512;

int64_t Earlier(int64_t a, int64_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return std::min(a, b);
}

ssize_t SendBytes(int fd, const uint8_t* p, size_t n, int flags) {
  iovec iov = {const_cast<uint8_t*>(p), n};
  msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  return sendmsg(fd, &mh, flags);
}

// Closes any descriptor the host sent (it sends none; a TCP peer cannot).
void DropRights(msghdr& mh) {
  for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm != nullptr;
       cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
        cm->cmsg_len >= CMSG_LEN(0)) {
      size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
        close(fd);
      }
    }
  }
}

// The options passed through to the host socket.
bool PassedThrough(int level, int name) {
  if (level == IPPROTO_TCP) return true;
  if (level == SOL_SOCKET) {
    switch (name) {
      case SO_KEEPALIVE:
      case SO_LINGER:
      case SO_OOBINLINE:
      case SO_ERROR:
        return true;
      default:
        return false;
    }
  }
  return false;
}

}  // namespace

SockAddr ToGuestSockAddr(int family, const broker::Endpoint& e) {
  if (family == AF_INET) {
    sockaddr_in s = {};
    s.sin_family = AF_INET;
    s.sin_port = htons(e.port);
    std::memcpy(&s.sin_addr, e.ip.bytes.data(), 4);
    return SockAddr::From(&s, sizeof(s));
  }
  sockaddr_in6 s = {};
  s.sin6_family = AF_INET6;
  s.sin6_port = htons(e.port);
  if (e.ip.family == broker::kFamilyInet) {
    s.sin6_addr.s6_addr[10] = 0xff;
    s.sin6_addr.s6_addr[11] = 0xff;
    std::memcpy(&s.sin6_addr.s6_addr[12], e.ip.bytes.data(), 4);
  } else {
    std::memcpy(&s.sin6_addr, e.ip.bytes.data(), 16);
  }
  return SockAddr::From(&s, sizeof(s));
}

HostStream::HostStream(HostConnection conn, int family, int type,
                       const broker::Endpoint& peer)
    : fd_(std::move(conn.fd)),
      hold_(std::move(conn.hold)),
      family_(family),
      type_(type),
      local_(conn.local),
      peer_(peer),
      connecting_(conn.in_progress) {}

KResult<void> HostStream::Wait(Caller& c, short events, int64_t deadline_ns,
                               bool timed) const {
  vfs::ThreadWaiter w;
  pollfd p = {fd_.get(), static_cast<short>(events | POLLERR | POLLHUP), 0};
  for (;;) {
    pollfd now = p;
    if (poll(&now, 1, 0) > 0) return OkResult();
    switch (w.Sleep(c.io.interrupt_fd, deadline_ns, {&p, 1})) {
      case vfs::WakeReason::kNotified:
        break;
      case vfs::WakeReason::kInterrupted:
        return timed ? kEINTR : kERestartSys;
      case vfs::WakeReason::kTimedOut:
        return kEAGAIN;
    }
  }
}

bool HostStream::connecting() const {
  absl::MutexLock l(&mu_);
  if (!connecting_) return false;
  pollfd p = {fd_.get(), POLLOUT, 0};
  return poll(&p, 1, 0) <= 0;
}

int HostStream::TakeSoError() {
  absl::MutexLock l(&mu_);
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
    err = errno;
  }
  if (connecting_) {
    pollfd p = {fd_.get(), POLLOUT, 0};
    if (poll(&p, 1, 0) > 0) {
      connecting_ = false;
      failed_ = err != 0;
    }
  }
  return err;
}

KResult<void> HostStream::WaitConnected(Socket& self, Caller& c,
                                        bool nonblock) {
  {
    absl::MutexLock l(&mu_);
    if (!connecting_) {
      if (failed_) return kECONNABORTED;
      return OkResult();
    }
  }
  pollfd p = {fd_.get(), POLLOUT, 0};
  if (poll(&p, 1, 0) <= 0) {
    if (nonblock) {
      absl::MutexLock l(&mu_);
      // inet_stream_connect: EINPROGRESS first, EALREADY while pending.
      if (reported_in_progress_) return kEALREADY;
      reported_in_progress_ = true;
      return kEINPROGRESS;
    }
    const int64_t own = self.SendDeadline();
    KResult<void> w = Wait(c, POLLOUT, Earlier(own, c.deadline_ns), own >= 0);
    if (!w.ok()) {
      // A timeout leaves the connect in progress (EINPROGRESS, as Linux).
      return w.error() == kEAGAIN ? kEINPROGRESS : w.error();
    }
  }
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
    err = errno;
  }
  absl::MutexLock l(&mu_);
  if (!connecting_) {
    // TakeSoError saw it through meanwhile.
    return failed_ ? KResult<void>(kECONNABORTED) : OkResult();
  }
  connecting_ = false;
  if (err != 0) return Errno(err);
  return OkResult();
}

KResult<void> HostStream::Shutdown(int how) {
  if (shutdown(fd_.get(), how) != 0) return Errno(errno);
  return OkResult();
}

KResult<size_t> HostStream::SendMsg(Socket& self, Caller& c, MessageIo& data,
                                    SendRequest& req) {
  if (!req.control.rights.empty()) return kEPERM;
  const bool nonblock = self.nonblocking() || (req.flags & MSG_DONTWAIT);
  const int64_t own = self.SendDeadline();
  const int64_t deadline = Earlier(own, c.deadline_ns);
  const int host_flags = MSG_DONTWAIT | MSG_NOSIGNAL |
                         (req.flags & (MSG_OOB | MSG_MORE | MSG_EOR));
  const size_t total = data.size();
  if (type_ != SOCK_STREAM) {
    if (total > kMaxDatagram) return kEMSGSIZE;
    std::vector<uint8_t> buf(total);
    if (total > 0) {
      TRY(size_t got, data.CopyIn(0, absl::MakeSpan(buf)));
      if (got != total) return kEFAULT;
    }
    for (;;) {
      ssize_t n = SendBytes(fd_.get(), buf.data(), buf.size(), host_flags);
      if (n >= 0) return static_cast<size_t>(n);
      const int err = errno;
      if (err != EAGAIN) return Errno(err);
      if (nonblock) return kEAGAIN;
      TRY_VOID(Wait(c, POLLOUT, deadline, own >= 0));
    }
  }
  std::vector<uint8_t> buf(std::min(std::max<size_t>(total, 1), kStreamChunk));
  size_t sent = 0;
  do {
    const size_t want = std::min(buf.size(), total - sent);
    KResult<size_t> got = data.CopyIn(sent, absl::MakeSpan(buf.data(), want));
    if (!got.ok() || (*got == 0 && want > 0)) {
      if (sent > 0) return sent;
      return got.ok() ? kEFAULT : got.error();
    }
    size_t off = 0;
    while (off < *got || (total == 0 && off == 0)) {
      ssize_t n =
          SendBytes(fd_.get(), buf.data() + off, *got - off, host_flags);
      if (n >= 0) {
        off += static_cast<size_t>(n);
        if (total == 0) return size_t{0};
        continue;
      }
      const int err = errno;
      KResult<void> waited = OkResult();
      if (err != EAGAIN) {
        waited = Errno(err);
      } else if (nonblock) {
        waited = kEAGAIN;
      } else {
        waited = Wait(c, POLLOUT, deadline, own >= 0);
      }
      if (!waited.ok()) {
        if (sent + off > 0) return sent + off;
        return waited.error();
      }
    }
    sent += off;
    if (*got < want) return sent;  // the guest's buffer ended early
  } while (sent < total);
  return sent;
}

KResult<size_t> HostStream::RecvMsg(Socket& self, Caller& c, MessageIo& data,
                                    RecvRequest& req) {
  const bool nonblock = self.nonblocking() || (req.flags & MSG_DONTWAIT);
  const int64_t own = self.RecvDeadline();
  const int64_t deadline = Earlier(own, c.deadline_ns);
  const bool stream = type_ == SOCK_STREAM;
  const bool waitall = stream && (req.flags & MSG_WAITALL) &&
                       !(req.flags & (MSG_PEEK | MSG_OOB));
  const int host_flags = MSG_DONTWAIT | MSG_CMSG_CLOEXEC |
                         (req.flags & (MSG_PEEK | MSG_TRUNC | MSG_OOB));
  const size_t total = data.size();
  std::vector<uint8_t> buf(std::max<size_t>(
      1, std::min(total, stream ? kStreamChunk : kMaxDatagram)));
  alignas(cmsghdr) uint8_t control[kCmsgSpace];
  size_t done = 0;
  for (;;) {
    iovec iov = {buf.data(), stream ? std::min(buf.size(), total - done)
                                    : std::min(buf.size(), total)};
    msghdr mh = {};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof(control);
    ssize_t n = recvmsg(fd_.get(), &mh, host_flags);
    if (n < 0) {
      const int err = errno;
      KResult<void> waited = OkResult();
      if (err != EAGAIN) {
        waited = Errno(err);
      } else if (nonblock || (req.flags & MSG_OOB)) {
        waited = kEAGAIN;
      } else {
        waited = Wait(c, POLLIN, deadline, own >= 0);
      }
      if (!waited.ok()) {
        if (done > 0) return done;
        return waited.error();
      }
      continue;
    }
    DropRights(mh);
    req.msg_flags |= mh.msg_flags & (MSG_TRUNC | MSG_OOB);
    if (req.want_from) req.from = PeerAddr();
    const size_t have = std::min(static_cast<size_t>(n), iov.iov_len);
    size_t copied = 0;
    if (have > 0) {
      KResult<size_t> out =
          data.CopyOut(done, absl::MakeConstSpan(buf.data(), have));
      if (!out.ok()) return done > 0 ? KResult<size_t>(done) : out.error();
      copied = *out;
    }
    if (!stream) return static_cast<size_t>(n);
    done += copied;
    if (n == 0 || !waitall || done >= total || copied < have) return done;
  }
}

KResult<void> HostStream::SetSockOpt(int level, int name,
                                     absl::Span<const uint8_t> val) {
  if (!PassedThrough(level, name) || name == SO_ERROR) return kENOPROTOOPT;
  if (setsockopt(fd_.get(), level, name, val.data(),
                 static_cast<socklen_t>(val.size())) != 0) {
    return Errno(errno);
  }
  return OkResult();
}

KResult<size_t> HostStream::GetSockOpt(int level, int name,
                                       absl::Span<uint8_t> val) {
  if (!PassedThrough(level, name)) return kENOPROTOOPT;
  socklen_t len = static_cast<socklen_t>(val.size());
  if (getsockopt(fd_.get(), level, name, val.data(), &len) != 0) {
    return Errno(errno);
  }
  return static_cast<size_t>(len);
}

KResult<uint64_t> HostStream::SocketIoctl(Caller& c, uint32_t cmd,
                                          uint64_t arg) {
  if (cmd != FIONREAD && cmd != TIOCOUTQ) return kENOTTY;
  int v = 0;
  if (ioctl(fd_.get(), cmd, &v) != 0) return Errno(errno);
  if (c.io.user == nullptr) return kEFAULT;
  TRY_VOID(c.io.user->CopyOutFull(arg, &v, sizeof(v)));
  return uint64_t{0};
}

uint32_t HostStream::Readiness(uint32_t mask) const {
  pollfd p = {fd_.get(), static_cast<short>(mask & 0xffff), 0};
  if (poll(&p, 1, 0) <= 0) return 0;
  return static_cast<uint32_t>(static_cast<uint16_t>(p.revents)) & mask;
}

}  // namespace sandbox::net::hostinet
