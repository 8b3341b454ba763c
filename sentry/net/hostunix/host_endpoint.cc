#include "sentry/net/hostunix/host_endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

#include "sentry/kernel/log.h"
#include "sentry/net/host_fd_io.h"
#include "sentry/net/hostunix/host_socket.h"
#include "sentry/net/namespace.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::net::hostunix {
namespace {

// overflowuid / overflowgid: a host process is nobody in the sandbox.
constexpr uint32_t kOverflowId = 65534;
// The largest datagram or record carried (Linux's own limit is the
// socket's buffer, at most net.core.wmem_max by default: 212992 bytes).
constexpr size_t kMaxRecord = 4 << 20;

std::atomic<bool> g_rights_logged{false};

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

KResult<void> HostEndpoint::Listen(Caller& c, int backlog) {
  if (kind_ != Kind::kBound || type_ == SOCK_DGRAM) return kEINVAL;
  const int64_t somaxconn = NamespaceOf(c).sysctl().somaxconn.load();
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
  const HostBlocking b = RecvBlocking(self, c, 0);
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
    if (b.nonblock) return kEAGAIN;
    TRY_VOID(WaitHostFd(fd_.get(), c, POLLIN, b.deadline_ns, b.timed));
  }
}

KResult<SockAddr> HostEndpoint::GetPeerName() const {
  if (kind_ != Kind::kConnected) return kENOTCONN;
  return peer_;
}

KResult<void> HostEndpoint::Shutdown(int how) {
  return ShutdownHostFd(fd_.get(), how);
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
  return SendToHostFd(fd_.get(), c, data, type_ == SOCK_STREAM, kMaxRecord,
                      req.flags & MSG_EOR, SendBlocking(self, c, req.flags));
}

KResult<size_t> HostEndpoint::RecvMsg(Socket& self, Caller& c, MessageIo& data,
                                      RecvRequest& req) {
  if (req.flags & MSG_OOB) return kEOPNOTSUPP;
  // Descriptors the host sends are closed unseen: MSG_CTRUNC.
  HostRecvOptions o;
  o.stream = type_ == SOCK_STREAM;
  o.max_record = kMaxRecord;
  o.kept_msg_flags = MSG_EOR | MSG_TRUNC;
  o.ctrunc_on_control = true;
  // The sender: the peer connected to, else a host socket whose name
  // (a host path, if any) is not shown.
  o.from = kind_ == Kind::kConnected ? peer_ : UnnamedAddr();
  return RecvFromHostFd(fd_.get(), c, data, req, o,
                        RecvBlocking(self, c, req.flags));
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
  return HostFdIoctl(fd_.get(), c, cmd, arg);
}

uint32_t HostEndpoint::Readiness(uint32_t mask) const {
  return HostFdReadiness(fd_.get(), mask);
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
