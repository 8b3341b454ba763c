// HostEndpoint: a guest AF_UNIX socket whose other side is on the host (a
// bind mount marked ":uds", runsc do --bind=HOST:GUEST:uds): the host
// socket the Gofer made or connected and donated (vfs/host_socket.h),
// driven with the host's own calls on that descriptor. The Sentry never
// names a host path: it calls listen, accept4, sendmsg, recvmsg, shutdown
// and ioctl(FIONREAD/TIOCOUTQ) on descriptors it holds, nothing else
// (sentry/confine/seccomp.cc allows those only with host sockets).
//
// Two users:
//  - the AF_UNIX family (sentry/net/unix): a socket whose bind(2) made its
//    node in a ":uds" mount, or whose connect(2) resolved to a host socket
//    node there, keeps a HostEndpoint and hands every later operation to it
//    (BindHost / ConnectHost below make one);
//  - HostUnixSocket (host_socket.h): the socket accept(2) returns on such a
//    listener, a whole net::Socket over a HostEndpoint.
//
// Semantics as Linux gives them for the host socket, with these choices
// (the transfer and the waits are sentry/net/host_fd_io.h's):
//  - Blocking is the Sentry's: the descriptor is O_NONBLOCK; a call that
//    would block waits (ThreadWaiter::Sleep on the host fd and the task's
//    interrupt fd) unless the description is O_NONBLOCK or MSG_DONTWAIT,
//    until SO_RCVTIMEO/SO_SNDTIMEO (EAGAIN) or a signal (ERESTARTSYS, EINTR
//    with a timeout set: sock_intr_errno). A stream send sends everything
//    (a partial count when interrupted after some); MSG_WAITALL likewise.
//  - Addresses are the guest's: getsockname gives the path the guest bound
//    (unnamed for a connecting socket), getpeername the path the guest
//    connected to; a peer on the host side of an accepted connection is
//    unnamed (its host path, if any, is not shown).
//  - SCM_RIGHTS cannot carry the Sentry's descriptions to the host: a send
//    with them is EPERM (logged once). Descriptors the host sends are
//    closed unseen and the receive reports MSG_CTRUNC; SCM_CREDENTIALS are
//    not carried either way. SO_PEERCRED reports pid 0 and the overflow
//    ids (a host process is nobody in the sandbox).
//  - sendto with an address on a host datagram socket: EOPNOTSUPP (only
//    its connected peer is reachable); stream sockets: EISCONN as Linux.
//  - poll/epoll readiness is the host's (Readiness: a zero-timeout poll;
//    waits poll HostPollFd on the host: vfs::FileDescription).
//
// Each HostEndpoint holds one host FD of the Sentry's budget
// (platform/host_fds.h); past it bind/connect/accept fail with ENFILE.
//
// Thread-safety: thread-safe; the fd and addresses are immutable, the host
// serializes concurrent calls on the socket itself.
#ifndef SENTRY_NET_HOSTUNIX_HOST_ENDPOINT_H_
#define SENTRY_NET_HOSTUNIX_HOST_ENDPOINT_H_

#include <stdint.h>

#include <memory>
#include <string_view>

#include "platform/host_fds.h"
#include "sentry/base/result.h"
#include "sentry/net/message.h"
#include "sentry/net/socket.h"
#include "sentry/vfs/host_socket.h"

namespace sandbox::net::hostunix {

class HostEndpoint {
 public:
  enum class Kind : uint8_t {
    kBound,      // bind(2) made it; listen(2) may follow
    kConnected,  // connect(2) made it, or accept(2) returned it
  };
  // `fd`: a host AF_UNIX socket of `type` (O_NONBLOCK); `hold` its FD of
  // the budget. `local`: this socket's guest address (bound path, or the
  // family alone); `peer`: the peer's (the path connected to, or unnamed).
  HostEndpoint(vfs::OwnedFd fd, platform::HostFdHold hold, int type, Kind kind,
               const SockAddr& local, const SockAddr& peer);

  int fd() const { return fd_.get(); }
  int type() const { return type_; }
  Kind kind() const { return kind_; }

  // The socket operations. `self` is the description the guest holds (its
  // O_NONBLOCK and SO_RCVTIMEO/SO_SNDTIMEO apply).
  KResult<void> Listen(Caller& c, int backlog);
  // A HostUnixSocket for the next connection, with open flags `flags`.
  KResult<vfs::FileRef> Accept(Socket& self, Caller& c, uint32_t flags,
                               SockAddr* peer);
  SockAddr GetSockName() const { return local_; }
  KResult<SockAddr> GetPeerName() const;
  KResult<void> Shutdown(int how);
  KResult<size_t> SendMsg(Socket& self, Caller& c, MessageIo& data,
                          SendRequest& req);
  KResult<size_t> RecvMsg(Socket& self, Caller& c, MessageIo& data,
                          RecvRequest& req);
  // SO_PEERCRED (the other SOL_SOCKET options are the description's);
  // ENOPROTOOPT for anything else.
  KResult<size_t> GetSockOpt(Caller& c, int level, int name,
                             absl::Span<uint8_t> val);
  // FIONREAD/SIOCINQ and SIOCOUTQ from the host; ENOTTY otherwise.
  KResult<uint64_t> SocketIoctl(Caller& c, uint32_t cmd, uint64_t arg);
  // The host's readiness for `mask` now.
  uint32_t Readiness(uint32_t mask) const;

 private:
  const vfs::OwnedFd fd_;
  const platform::HostFdHold hold_;
  const int type_;
  const Kind kind_;
  const SockAddr local_;
  const SockAddr peer_;
};

// bind(2) of a guest AF_UNIX socket of `type` at `name` in `dir`, on a file
// system with host sockets (`hs`: dir.fs().host_sockets()), called where
// the family would create its own socket node (tree_mu held exclusively;
// the name checked absent, permissions checked). `guest_addr` is the
// address the guest bound (getsockname's). Returns the new node (for the
// family's records) and the endpoint. ENFILE past the Sentry's FD budget.
struct HostBinding {
  std::shared_ptr<vfs::Inode> node;
  std::shared_ptr<HostEndpoint> endpoint;
};
KResult<HostBinding> BindHost(vfs::HostSockets& hs, vfs::Inode& dir,
                              std::string_view name,
                              const vfs::NewInodeAttrs& attrs, int type,
                              const SockAddr& guest_addr);

// connect(2) of a guest AF_UNIX socket of `type` to the host socket node
// `node` (on a file system with host sockets, `hs`; no socket of the Sentry
// is bound there; write permission checked by the caller). `local` is the
// guest socket's own address (unnamed, or what it bound in the Sentry),
// `peer_addr` the address the guest connected to. A full backlog waits
// (retrying, interruptibly) unless `nonblock`: then EAGAIN, as Linux.
KResult<std::shared_ptr<HostEndpoint>> ConnectHost(
    vfs::HostSockets& hs, vfs::Inode& node, int type, Caller& c, bool nonblock,
    int64_t deadline_ns, const SockAddr& local, const SockAddr& peer_addr);

// The address of an unnamed AF_UNIX socket (the family alone, length 2).
SockAddr UnnamedAddr();

}  // namespace sandbox::net::hostunix

#endif  // SENTRY_NET_HOSTUNIX_HOST_ENDPOINT_H_
