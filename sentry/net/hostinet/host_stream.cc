#include "sentry/net/hostinet/host_stream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>

#include "sentry/net/host_fd_io.h"

namespace sandbox::net::hostinet {
namespace {

// The largest datagram sent or received at once.
constexpr size_t kMaxDatagram = 65536;

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
    KResult<void> w = WaitHostFd(fd_.get(), c, POLLOUT,
                                 EarlierDeadline(own, c.deadline_ns), own >= 0);
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
  return ShutdownHostFd(fd_.get(), how);
}

KResult<size_t> HostStream::SendMsg(Socket& self, Caller& c, MessageIo& data,
                                    SendRequest& req) {
  if (!req.control.rights.empty()) return kEPERM;
  return SendToHostFd(fd_.get(), c, data, type_ == SOCK_STREAM, kMaxDatagram,
                      req.flags & (MSG_OOB | MSG_MORE | MSG_EOR),
                      SendBlocking(self, c, req.flags));
}

KResult<size_t> HostStream::RecvMsg(Socket& self, Caller& c, MessageIo& data,
                                    RecvRequest& req) {
  // What the host sends with the data is dropped (a TCP peer sends none).
  HostRecvOptions o;
  o.stream = type_ == SOCK_STREAM;
  o.max_record = kMaxDatagram;
  o.kept_msg_flags = MSG_TRUNC | MSG_OOB;
  if (req.want_from) o.from = PeerAddr();
  return RecvFromHostFd(fd_.get(), c, data, req, o,
                        RecvBlocking(self, c, req.flags));
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
  return HostFdIoctl(fd_.get(), c, cmd, arg);
}

uint32_t HostStream::Readiness(uint32_t mask) const {
  return HostFdReadiness(fd_.get(), mask);
}

}  // namespace sandbox::net::hostinet
