// HostTcpSocket: the guest TCP socket a published port's connection
// becomes (runsc do --publish): an AF_INET/AF_INET6 SOCK_STREAM socket
// over a HostStream (host_stream.h) on the connection the broker accepted
// on the host and donated. The guest's listener on GUESTPORT accepts it
// (the TCP protocol queues it: sentry/net/tcp); every byte goes straight
// between the guest and the host descriptor, with no pump and no host
// thread of its own.
//
// getsockname is the guest listener's address (the loopback address and
// GUESTPORT the guest listened on); getpeername the host peer's. bind,
// listen and connect are EINVAL/EINVAL/EISCONN as for an accepted Linux
// socket.
#ifndef SENTRY_NET_HOSTINET_HOST_TCP_SOCKET_H_
#define SENTRY_NET_HOSTINET_HOST_TCP_SOCKET_H_

#include <memory>

#include "sentry/net/hostinet/host_stream.h"
#include "sentry/net/socket.h"

namespace sandbox::net::hostinet {

class HostTcpSocket final : public Socket {
 public:
  // `local`: the guest's view of its end (the listener's address).
  HostTcpSocket(std::shared_ptr<HostStream> s, int family, uint32_t flags,
                const Ucred& owner, const SockAddr& local);

  const std::shared_ptr<HostStream>& stream() const { return s_; }

  KResult<void> Bind(Caller& c, const SockAddr& addr) override;
  KResult<void> Listen(Caller& c, int backlog) override;
  KResult<void> Connect(Caller& c, const SockAddr& addr) override;
  KResult<SockAddr> GetSockName(Caller& c) override;
  KResult<SockAddr> GetPeerName(Caller& c) override;
  KResult<void> Shutdown(Caller& c, int how) override;
  KResult<size_t> SendMsg(Caller& c, MessageIo& data,
                          SendRequest& req) override;
  KResult<size_t> RecvMsg(Caller& c, MessageIo& data,
                          RecvRequest& req) override;
  KResult<void> SetSockOpt(Caller& c, int level, int name,
                           absl::Span<const uint8_t> val) override;
  KResult<size_t> GetSockOpt(Caller& c, int level, int name,
                             absl::Span<uint8_t> val) override;
  KResult<uint64_t> SocketIoctl(Caller& c, uint32_t cmd, uint64_t arg) override;
  uint32_t Readiness(uint32_t mask) override { return s_->Readiness(mask); }
  int HostPollFd() const override { return s_->fd(); }

 private:
  const std::shared_ptr<HostStream> s_;
  const SockAddr local_;
};

}  // namespace sandbox::net::hostinet

#endif  // SENTRY_NET_HOSTINET_HOST_TCP_SOCKET_H_
