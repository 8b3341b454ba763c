// HostStream: a guest Internet socket's connection that lives on the host:
// a host TCP or UDP socket the broker made, connected and donated
// (broker_client.h). The Sentry drives it with calls on that descriptor
// only (sendmsg, recvmsg, shutdown, getsockopt/setsockopt, poll, ioctl
// FIONREAD/TIOCOUTQ); it never makes or connects a host socket.
//
// Two users: the TCP protocol (sentry/net/tcp), whose socket hands every
// operation to a HostStream once connect(2) to a non-loopback destination
// went through the broker (--network=host), and HostTcpSocket
// (host_tcp_socket.h), the socket a published port's connection becomes in
// the guest; UDP (sentry/net/udp) uses it for a connected destination.
//
// Semantics are the host socket's, with these choices (as the host Unix
// sockets of sentry/net/hostunix; the transfer and the waits are
// sentry/net/host_fd_io.h's, which both use):
//  - Blocking is the Sentry's: the descriptor is O_NONBLOCK; a call that
//    would block waits (ThreadWaiter::Sleep on the host fd and the task's
//    interrupt fd) unless the description is O_NONBLOCK or MSG_DONTWAIT,
//    until SO_RCVTIMEO/SO_SNDTIMEO (EAGAIN) or a signal (ERESTARTSYS, EINTR
//    with a timeout set: sock_intr_errno). A stream send sends everything
//    (a partial count when interrupted after some); MSG_WAITALL likewise.
//  - connect(2) is asynchronous in the broker: WaitConnected waits for
//    POLLOUT and reads SO_ERROR (tcp_v4_connect + inet_wait_for_connect:
//    EINPROGRESS for a non-blocking socket, then EALREADY; a timeout is
//    EINPROGRESS too, as inet_stream_connect with SO_SNDTIMEO gives).
//  - Addresses are the guest's family: an AF_INET6 socket sees v4-mapped
//    addresses of an IPv4 connection.
//  - No SCM_RIGHTS or credentials cross to the host (EPERM on a send with
//    descriptors; what the host sends is dropped: it sends none).
//
// Thread-safety: thread-safe; the fd and addresses are immutable but for
// the connect state (mu_).
#ifndef SENTRY_NET_HOSTINET_HOST_STREAM_H_
#define SENTRY_NET_HOSTINET_HOST_STREAM_H_

#include <stdint.h>

#include "absl/synchronization/mutex.h"
#include "broker/protocol/messages.h"
#include "sentry/base/result.h"
#include "sentry/net/hostinet/broker_client.h"
#include "sentry/net/message.h"
#include "sentry/net/socket.h"

namespace sandbox::net::hostinet {

// The sockaddr a guest socket of `family` (AF_INET or AF_INET6) sees for
// `e` (an IPv4 endpoint is v4-mapped for AF_INET6).
SockAddr ToGuestSockAddr(int family, const broker::Endpoint& e);

class HostStream {
 public:
  // `conn` from BrokerClient::Connect (or an accepted connection);
  // `family` the guest socket's, `type` SOCK_STREAM or SOCK_DGRAM; `peer`
  // the destination (or the host peer).
  HostStream(HostConnection conn, int family, int type,
             const broker::Endpoint& peer);

  int fd() const { return fd_.get(); }
  int type() const { return type_; }

  // Completes connect(2): OK once connected; EINPROGRESS when
  // `nonblock` (the first call) and EALREADY after; the connection's
  // error (ECONNREFUSED, ETIMEDOUT, ...) when it failed.
  KResult<void> WaitConnected(Socket& self, Caller& c, bool nonblock);
  // Whether connect(2) is still in progress (poll shows no POLLOUT yet).
  bool connecting() const;
  // getsockopt(SO_ERROR): the host socket's pending error (taken). After
  // an asynchronous connect that is its result, which the next
  // WaitConnected then reports as Linux's connect(2) after SO_ERROR does
  // (OK once connected; ECONNABORTED once failed: sock_error is clear).
  int TakeSoError();

  SockAddr LocalAddr() const { return ToGuestSockAddr(family_, local_); }
  SockAddr PeerAddr() const { return ToGuestSockAddr(family_, peer_); }
  const broker::Endpoint& peer() const { return peer_; }

  KResult<void> Shutdown(int how);
  KResult<size_t> SendMsg(Socket& self, Caller& c, MessageIo& data,
                          SendRequest& req);
  KResult<size_t> RecvMsg(Socket& self, Caller& c, MessageIo& data,
                          RecvRequest& req);
  // The host socket's options: SOL_TCP (TCP_NODELAY, TCP_INFO, ...),
  // SO_ERROR and the SOL_SOCKET options that change what the host does
  // (SO_KEEPALIVE, SO_LINGER, SO_RCVBUF, SO_SNDBUF, SO_OOBINLINE).
  // ENOPROTOOPT for what the caller should answer itself.
  KResult<void> SetSockOpt(int level, int name, absl::Span<const uint8_t> val);
  KResult<size_t> GetSockOpt(int level, int name, absl::Span<uint8_t> val);
  // FIONREAD/SIOCINQ and SIOCOUTQ from the host; ENOTTY otherwise.
  KResult<uint64_t> SocketIoctl(Caller& c, uint32_t cmd, uint64_t arg);
  uint32_t Readiness(uint32_t mask) const;

 private:
  const vfs::OwnedFd fd_;
  const platform::HostFdHold hold_;
  const int family_;
  const int type_;
  const broker::Endpoint local_;
  const broker::Endpoint peer_;

  mutable absl::Mutex mu_;
  // connect(2) started and not yet seen through by WaitConnected.
  bool connecting_ ABSL_GUARDED_BY(mu_);
  bool reported_in_progress_ ABSL_GUARDED_BY(mu_) = false;
  // The connect failed and its error was taken (SO_ERROR).
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace sandbox::net::hostinet

#endif  // SENTRY_NET_HOSTINET_HOST_STREAM_H_
