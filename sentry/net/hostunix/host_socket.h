// HostUnixSocket: an AF_UNIX socket file over a HostEndpoint
// (host_endpoint.h): what accept(2) returns on a listener bound in a
// ":uds" mount. Every operation is the endpoint's; bind and connect of an
// accepted socket are EINVAL and EISCONN, as Linux's.
#ifndef SENTRY_NET_HOSTUNIX_HOST_SOCKET_H_
#define SENTRY_NET_HOSTUNIX_HOST_SOCKET_H_

#include <memory>

#include "sentry/net/hostunix/host_endpoint.h"
#include "sentry/net/socket.h"

namespace sandbox::net::hostunix {

class HostUnixSocket final : public Socket {
 public:
  HostUnixSocket(std::shared_ptr<HostEndpoint> ep, uint32_t flags,
                 const Ucred& owner);

  const std::shared_ptr<HostEndpoint>& endpoint() const { return ep_; }

  KResult<void> Bind(Caller& c, const SockAddr& addr) override;
  KResult<void> Listen(Caller& c, int backlog) override;
  KResult<vfs::FileRef> Accept(Caller& c, uint32_t flags,
                               SockAddr* peer) override;
  KResult<void> Connect(Caller& c, const SockAddr& addr) override;
  KResult<SockAddr> GetSockName(Caller& c) override;
  KResult<SockAddr> GetPeerName(Caller& c) override;
  KResult<void> Shutdown(Caller& c, int how) override;
  KResult<size_t> SendMsg(Caller& c, MessageIo& data,
                          SendRequest& req) override;
  KResult<size_t> RecvMsg(Caller& c, MessageIo& data,
                          RecvRequest& req) override;
  KResult<size_t> GetSockOpt(Caller& c, int level, int name,
                             absl::Span<uint8_t> val) override;
  KResult<uint64_t> SocketIoctl(Caller& c, uint32_t cmd, uint64_t arg) override;

  uint32_t Readiness(uint32_t mask) override { return ep_->Readiness(mask); }
  int HostPollFd() const override { return ep_->fd(); }

 private:
  const std::shared_ptr<HostEndpoint> ep_;
};

}  // namespace sandbox::net::hostunix

#endif  // SENTRY_NET_HOSTUNIX_HOST_SOCKET_H_
