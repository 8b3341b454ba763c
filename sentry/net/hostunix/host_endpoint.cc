#include "sentry/net/hostunix/host_endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "sentry/kernel/log.h"
#include "sentry/net/hostunix/host_socket.h"
#include "sentry/net/namespace.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::net::hostunix {
namespace {

// overflowuid / overflowgid: a host process is nobody in the sandbox.
constexpr uint32_t kOverflowId = 65534;
// Bytes moved per host call of a stream, and the largest datagram or
// record carried (Linux's own limit is the socket's buffer, at most
// net.core.wmem_max by default: 212992 bytes).
constexpr size_t kStreamChunk = 64 << 10;
constexpr size_t kMaxRecord = 4 << 20;
// Room for the SCM_RIGHTS the host may send (SCM_MAX_FD = 253).
constexpr size_t kCmsgSpace = CMSG_SPACE(sizeof(int) * 253) + 64;

// The earlier of two deadlines (-1: none).
int64_t Earlier(int64_t a, int64_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return std::min(a, b);
}

// Closes every descriptor in the control data the host sent; returns
// whether there was any control message.
bool DropControl(msghdr& mh) {
  bool any = false;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm != nullptr;
       cm = CMSG_NXTHDR(&mh, cm)) {
    any = true;
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
  return any;
}

std::atomic<bool> g_rights_logged{false};

// send(2) through sendmsg (glibc's send is sendto, which the Sentry's
// seccomp allowlist does not have).
ssize_t SendBytes(int fd, const uint8_t* p, size_t n, int flags) {
  iovec iov = {const_cast<uint8_t*>(p), n};
  msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  return sendmsg(fd, &mh, flags);
}

}  // namespace

SockAddr UnnamedAddr() {
  uint16_t fam = AF_UNIX;
  return SockAddr::From(&fam, sizeof(fam));
}

HostEndpoint::HostEndpoint(vfs::OwnedFd fd, platform::HostFdHold hold, int type,
                           Kind kind, const SockAddr& local,
                           const SockAddr& peer)
    : fd_(std::move(fd)),
      hold_(std::move(hold)),
      type_(type),
      kind_(kind),
      local_(local),
      peer_(peer) {}

KResult<void> HostEndpoint::Wait(Caller& c, short events, int64_t deadline_ns,
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
        // sock_intr_errno: restartable unless a timeout is set.
        return timed ? kEINTR : kERestartSys;
      case vfs::WakeReason::kTimedOut:
        return kEAGAIN;
    }
  }
}

KResult<void> HostEndpoint::Listen(Caller& c, int backlog) {
  if (kind_ != Kind::kBound || type_ == SOCK_DGRAM) return kEINVAL;
  const int64_t somaxconn =
      (c.netns != nullptr ? *c.netns : NetNamespace::Root())
          .sysctl()
          .somaxconn.load();
  int b = static_cast<int>(
      std::clamp<int64_t>(backlog, 0, std::max<int64_t>(somaxconn, 0)));
  if (listen(fd_.get(), b) != 0) return Errno(errno);
  return OkResult();
}

KResult<vfs::FileRef> HostEndpoint::Accept(Socket& self, Caller& c,
                                           uint32_t flags, SockAddr* peer) {
  if (kind_ != Kind::kBound || type_ == SOCK_DGRAM) return kEOPNOTSUPP;
  platform::HostFdHold hold = platform::HostFdHold::Take(1);
  if (!hold.ok()) return kENFILE;
  const int64_t own = self.RecvDeadline();
  const int64_t deadline = Earlier(own, c.deadline_ns);
  for (;;) {
    int a = accept4(fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (a >= 0) {
      auto ep = std::make_shared<HostEndpoint>(vfs::OwnedFd(a), std::move(hold),
                                               type_, Kind::kConnected, local_,
                                               UnnamedAddr());
      if (peer != nullptr) *peer = UnnamedAddr();
      return vfs::FileRef(std::make_shared<HostUnixSocket>(
          std::move(ep), O_RDWR | (flags & O_NONBLOCK), c.ucred));
    }
    const int err = errno;
    // The host's EINVAL: not listening.
    if (err != EAGAIN) return Errno(err);
    if (self.nonblocking()) return kEAGAIN;
    TRY_VOID(Wait(c, POLLIN, deadline, own >= 0));
  }
}

KResult<SockAddr> HostEndpoint::GetPeerName() const {
  if (kind_ != Kind::kConnected) return kENOTCONN;
  return peer_;
}

KResult<void> HostEndpoint::Shutdown(int how) {
  if (shutdown(fd_.get(), how) != 0) return Errno(errno);
  return OkResult();
}

KResult<size_t> HostEndpoint::SendMsg(Socket& self, Caller& c, MessageIo& data,
                                      SendRequest& req) {
  if (req.flags & MSG_OOB) return kEOPNOTSUPP;
  if (req.to.has_value() && req.to->len > 0) {
    // unix_stream_sendmsg: an address on a stream socket.
    if (type_ == SOCK_STREAM) {
      return kind_ == Kind::kConnected ? kEISCONN : kEOPNOTSUPP;
    }
    // unix_seqpacket_sendmsg ignores it; a datagram socket here reaches
    // only its connected peer.
    if (type_ == SOCK_DGRAM) return kEOPNOTSUPP;
  }
  if (!req.control.rights.empty()) {
    if (!g_rights_logged.exchange(true)) {
      kernel::LogWarning(
          "host Unix socket: SCM_RIGHTS to a host socket refused (EPERM): "
          "the sandbox's descriptions cannot reach the host");
    }
    return kEPERM;
  }
  const bool nonblock = self.nonblocking() || (req.flags & MSG_DONTWAIT);
  const int64_t own = self.SendDeadline();
  const int64_t deadline = Earlier(own, c.deadline_ns);
  const int host_flags = MSG_DONTWAIT | MSG_NOSIGNAL | (req.flags & MSG_EOR);
  const size_t total = data.size();
  if (type_ != SOCK_STREAM) {
    // One record, whole: copied in first (EFAULT if any of it faults).
    if (total > kMaxRecord) return kEMSGSIZE;
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
  std::vector<uint8_t> buf(std::min(total, kStreamChunk));
  size_t sent = 0;
  while (sent < total || total == 0) {
    KResult<size_t> got = data.CopyIn(
        sent, absl::MakeSpan(buf.data(), std::min(buf.size(), total - sent)));
    if (!got.ok() || (*got == 0 && total > 0)) {
      if (sent > 0) return sent;
      return got.ok() ? kEFAULT : got.error();
    }
    size_t off = 0;
    while (off < *got || total == 0) {
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
    if (*got < std::min(buf.size(), total - (sent - off))) {
      // The guest's buffer stopped being readable: what went so far.
      return sent;
    }
  }
  return sent;
}

KResult<size_t> HostEndpoint::RecvMsg(Socket& self, Caller& c, MessageIo& data,
                                      RecvRequest& req) {
  if (req.flags & MSG_OOB) return kEOPNOTSUPP;
  const bool nonblock = self.nonblocking() || (req.flags & MSG_DONTWAIT);
  const int64_t own = self.RecvDeadline();
  const int64_t deadline = Earlier(own, c.deadline_ns);
  const bool stream = type_ == SOCK_STREAM;
  const bool waitall =
      stream && (req.flags & MSG_WAITALL) && !(req.flags & MSG_PEEK);
  const int host_flags =
      MSG_DONTWAIT | MSG_CMSG_CLOEXEC | (req.flags & (MSG_PEEK | MSG_TRUNC));
  const size_t total = data.size();
  std::vector<uint8_t> buf(std::min(total, stream ? kStreamChunk : kMaxRecord));
  alignas(cmsghdr) uint8_t control[kCmsgSpace];
  size_t done = 0;
  for (;;) {
    iovec iov = {buf.data(),
                 stream ? std::min(buf.size(), total - done) : buf.size()};
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
      } else if (nonblock) {
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
    if (DropControl(mh) || (mh.msg_flags & MSG_CTRUNC)) {
      req.msg_flags |= MSG_CTRUNC;
    }
    req.msg_flags |= mh.msg_flags & (MSG_EOR | MSG_TRUNC);
    // The sender: the peer connected to, else a host socket whose name
    // (a host path, if any) is not shown.
    if (req.want_from) {
      req.from = kind_ == Kind::kConnected ? peer_ : UnnamedAddr();
    }
    // A datagram's real length with MSG_TRUNC may exceed the buffer.
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

KResult<size_t> HostEndpoint::GetSockOpt(Caller&, int level, int name,
                                         absl::Span<uint8_t> val) {
  if (level != SOL_SOCKET || name != SO_PEERCRED) return kENOPROTOOPT;
  // No peer: pid 0 and ids -1, as Linux's SO_PEERCRED without peercred.
  // A host peer: pid 0 (not in the sandbox's PID namespace) and the
  // overflow ids.
  const uint32_t id = kind_ == Kind::kConnected ? kOverflowId : ~0u;
  const uint32_t raw[3] = {0, id, id};
  const size_t n = std::min(val.size(), sizeof(raw));
  std::memcpy(val.data(), raw, n);
  return n;
}

KResult<uint64_t> HostEndpoint::SocketIoctl(Caller& c, uint32_t cmd,
                                            uint64_t arg) {
  if (cmd != FIONREAD && cmd != TIOCOUTQ) return kENOTTY;
  int v = 0;
  if (ioctl(fd_.get(), cmd, &v) != 0) return Errno(errno);
  if (c.io.user == nullptr) return kEFAULT;
  TRY_VOID(c.io.user->CopyOutFull(arg, &v, sizeof(v)));
  return uint64_t{0};
}

uint32_t HostEndpoint::Readiness(uint32_t mask) const {
  pollfd p = {fd_.get(), static_cast<short>(mask & 0xffff), 0};
  if (poll(&p, 1, 0) <= 0) return 0;
  return static_cast<uint32_t>(static_cast<uint16_t>(p.revents)) & mask;
}

KResult<HostBinding> BindHost(vfs::HostSockets& hs, vfs::Inode& dir,
                              std::string_view name,
                              const vfs::NewInodeAttrs& attrs, int type,
                              const SockAddr& guest_addr) {
  platform::HostFdHold hold = platform::HostFdHold::Take(1);
  if (!hold.ok()) return kENFILE;
  TRY(vfs::HostSocketBinding b, hs.BindSocket(dir, name, attrs, type));
  auto ep = std::make_shared<HostEndpoint>(std::move(b.fd), std::move(hold),
                                           type, HostEndpoint::Kind::kBound,
                                           guest_addr, UnnamedAddr());
  return HostBinding{std::move(b.node), std::move(ep)};
}

KResult<std::shared_ptr<HostEndpoint>> ConnectHost(
    vfs::HostSockets& hs, vfs::Inode& node, int type, Caller& c, bool nonblock,
    int64_t deadline_ns, const SockAddr& local, const SockAddr& peer_addr) {
  platform::HostFdHold hold = platform::HostFdHold::Take(1);
  if (!hold.ok()) return kENFILE;
  // A full backlog: ask again every few milliseconds (the host socket is
  // not ours to wait on), interruptibly. `deadline_ns` is the socket's
  // SO_SNDTIMEO deadline (-1: none), as Linux's connect waits.
  vfs::ThreadWaiter w;
  int64_t pause_ns = 1'000'000;
  for (;;) {
    KResult<vfs::OwnedFd> fd = hs.ConnectSocket(node, type);
    if (fd.ok()) {
      return std::make_shared<HostEndpoint>(
          std::move(fd).value(), std::move(hold), type,
          HostEndpoint::Kind::kConnected, local, peer_addr);
    }
    if (fd.error() != kEAGAIN || nonblock) return fd.error();
    int64_t until = vfs::MonotonicNowNs() + pause_ns;
    if (deadline_ns >= 0 && until > deadline_ns) until = deadline_ns;
    switch (w.Sleep(c.io.interrupt_fd, until)) {
      case vfs::WakeReason::kInterrupted:
        return deadline_ns < 0 ? kERestartSys : kEINTR;
      default:
        break;
    }
    if (deadline_ns >= 0 && vfs::MonotonicNowNs() >= deadline_ns) {
      return kEAGAIN;
    }
    pause_ns = std::min<int64_t>(pause_ns * 2, 50'000'000);
  }
}

}  // namespace sandbox::net::hostunix
