#include "sentry/net/hostunix/host_socket.h"

#include <sys/socket.h>

namespace sandbox::net::hostunix {

HostUnixSocket::HostUnixSocket(std::shared_ptr<HostEndpoint> ep, uint32_t flags,
                               const Ucred& owner)
    : Socket(AF_UNIX, ep->type(), 0, flags, owner), ep_(std::move(ep)) {}

// unix_bind of a socket that has an address: EINVAL.
KResult<void> HostUnixSocket::Bind(Caller&, const SockAddr&) { return kEINVAL; }
KResult<void> HostUnixSocket::Listen(Caller& c, int backlog) {
  TRY_VOID(ep_->Listen(c, backlog));
  set_listening(true);
  return OkResult();
}
KResult<vfs::FileRef> HostUnixSocket::Accept(Caller& c, uint32_t flags,
                                             SockAddr* peer) {
  return ep_->Accept(*this, c, flags, peer);
}
KResult<void> HostUnixSocket::Connect(Caller&, const SockAddr&) {
  return ep_->kind() == HostEndpoint::Kind::kConnected ? kEISCONN : kEINVAL;
}
KResult<SockAddr> HostUnixSocket::GetSockName(Caller&) {
  return ep_->GetSockName();
}
KResult<SockAddr> HostUnixSocket::GetPeerName(Caller&) {
  return ep_->GetPeerName();
}
KResult<void> HostUnixSocket::Shutdown(Caller&, int how) {
  return ep_->Shutdown(how);
}
KResult<size_t> HostUnixSocket::SendMsg(Caller& c, MessageIo& data,
                                        SendRequest& req) {
  return ep_->SendMsg(*this, c, data, req);
}
KResult<size_t> HostUnixSocket::RecvMsg(Caller& c, MessageIo& data,
                                        RecvRequest& req) {
  return ep_->RecvMsg(*this, c, data, req);
}
KResult<size_t> HostUnixSocket::GetSockOpt(Caller& c, int level, int name,
                                           absl::Span<uint8_t> val) {
  return ep_->GetSockOpt(c, level, name, val);
}
KResult<uint64_t> HostUnixSocket::SocketIoctl(Caller& c, uint32_t cmd,
                                              uint64_t arg) {
  return ep_->SocketIoctl(c, cmd, arg);
}

}  // namespace sandbox::net::hostunix
