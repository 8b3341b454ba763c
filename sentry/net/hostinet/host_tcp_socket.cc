#include "sentry/net/hostinet/host_tcp_socket.h"

#include <netinet/in.h>
#include <sys/socket.h>

namespace sandbox::net::hostinet {

HostTcpSocket::HostTcpSocket(std::shared_ptr<HostStream> s, int family,
                             uint32_t flags, const Ucred& owner,
                             const SockAddr& local)
    : Socket(family, SOCK_STREAM, IPPROTO_TCP, flags, owner),
      s_(std::move(s)),
      local_(local) {}

// inet_bind of a bound socket, listen of a connected one (inet_listen:
// EINVAL unless TCP_CLOSE/TCP_LISTEN), connect of a connected one.
KResult<void> HostTcpSocket::Bind(Caller&, const SockAddr&) { return kEINVAL; }
KResult<void> HostTcpSocket::Listen(Caller&, int) { return kEINVAL; }
KResult<void> HostTcpSocket::Connect(Caller&, const SockAddr&) {
  return kEISCONN;
}
KResult<SockAddr> HostTcpSocket::GetSockName(Caller&) { return local_; }
KResult<SockAddr> HostTcpSocket::GetPeerName(Caller&) { return s_->PeerAddr(); }
KResult<void> HostTcpSocket::Shutdown(Caller&, int how) {
  return s_->Shutdown(how);
}
KResult<size_t> HostTcpSocket::SendMsg(Caller& c, MessageIo& data,
                                       SendRequest& req) {
  // tcp_sendmsg ignores an address on a connected socket.
  return s_->SendMsg(*this, c, data, req);
}
KResult<size_t> HostTcpSocket::RecvMsg(Caller& c, MessageIo& data,
                                       RecvRequest& req) {
  return s_->RecvMsg(*this, c, data, req);
}
KResult<void> HostTcpSocket::SetSockOpt(Caller& c, int level, int name,
                                        absl::Span<const uint8_t> val) {
  if (level == IPPROTO_TCP) return s_->SetSockOpt(level, name, val);
  // SO_KEEPALIVE, SO_LINGER, SO_OOBINLINE act on the host socket; the base
  // keeps them too (getsockopt reads them there).
  KResult<void> host = s_->SetSockOpt(level, name, val);
  if (!host.ok() && host.error() != kENOPROTOOPT) return host;
  return Socket::SetSockOpt(c, level, name, val);
}
KResult<size_t> HostTcpSocket::GetSockOpt(Caller& c, int level, int name,
                                          absl::Span<uint8_t> val) {
  if (level == IPPROTO_TCP || (level == SOL_SOCKET && name == SO_ERROR)) {
    return s_->GetSockOpt(level, name, val);
  }
  return Socket::GetSockOpt(c, level, name, val);
}
KResult<uint64_t> HostTcpSocket::SocketIoctl(Caller& c, uint32_t cmd,
                                             uint64_t arg) {
  return s_->SocketIoctl(c, cmd, arg);
}

}  // namespace sandbox::net::hostinet
