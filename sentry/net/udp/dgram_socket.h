// DgramSocket: what UDP and ping sockets share (Linux's datagram.c,
// udp_recvmsg's queue handling, ip_recv_error / ipv6_recv_error, the
// datagram half of inet_dgram_connect, udp_disconnect, udp_ioctl,
// udp_poll): the receive queue bounded by SO_RCVBUF (drops counted), the
// error queue of IP_RECVERR, sk_err, shutdown bits, recvmsg with
// MSG_PEEK/MSG_TRUNC/MSG_ERRQUEUE and the cmsgs, readiness, FIONREAD and
// SIOCOUTQ, getsockname/getpeername and the /proc/net row.
//
// The protocols (UdpSocket in udp_socket.cc, PingSocket in ping_socket.cc)
// add send and the protocol's own option level.
//
// Delivery: a sender looks the receiver up in the port table (no lock of
// its own held) and calls Deliver on it; the receiver's mu_ is the only
// lock taken. A datagram never waits for room: a full receiver drops it
// (sk_drops, Udp RcvbufErrors), and a loopback send never blocks (the
// sender's skb is orphaned on xmit: its send buffer stays empty).
//
// Locking: mu_ guards the queues and the state below it; it is never held
// while another socket's mu_ is taken, nor while calling into the port
// table or InetSocket (whose ip_mu_ is a leaf of its own). mu_ -> the
// WaitQueue's mutex (Notify).
#ifndef SENTRY_NET_UDP_DGRAM_SOCKET_H_
#define SENTRY_NET_UDP_DGRAM_SOCKET_H_

#include <stdint.h>

#include <deque>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/net/inet/address.h"
#include "sentry/net/inet/inet_socket.h"
#include "sentry/net/inet/ports.h"
#include "sentry/net/namespace.h"
#include "sentry/net/udp/datagram.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::net::udp {

// sk_shutdown bits.
inline constexpr uint8_t kRcvShutdown = 1;
inline constexpr uint8_t kSendShutdown = 2;

// Where a datagram to a destination goes (the route lookup's answer for the
// sandbox's namespace, which has only lo).
enum class RouteKind {
  kLocal,      // a local address: delivered inside the Sentry
  kBroadcast,  // lo's broadcast (RTN_BROADCAST): every matching socket
  kMulticast,  // an IPv4 group out of lo (a source or IP_MULTICAST_IF on
               // lo): the sockets on the port, if lo has the group
  kOffHost,    // anything else: the network mode's host path (hostinet)
};

class DgramSocket : public inet::InetSocket {
 public:
  // A socket of `family` in namespace `ns` (the creator's).
  DgramSocket(int family, int protocol, uint32_t flags, const Ucred& owner,
              inet::Proto proto, NetNamespace& ns);
  ~DgramSocket() override;

  // ---- Delivery (called by senders, no lock held). ----
  // Queues `d` unless the receive buffer is over SO_RCVBUF (then counts a
  // drop). Returns whether it was queued.
  bool Deliver(Datagram d) ABSL_LOCKS_EXCLUDED(mu_);
  // An ICMP error for a datagram this socket sent (__udp4_lib_err /
  // __udp6_lib_err with ip_icmp_error / ipv6_icmp_error): queued when
  // IP_RECVERR (IPV6_RECVERR for an IPv6 error) is on; sk_err set when it
  // is, or, for a hard error, when the socket is connected.
  void DeliverError(ErrReport e, bool harderr) ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Socket. ----
  KResult<void> Bind(Caller& c, const SockAddr& addr) override;
  KResult<void> Connect(Caller& c, const SockAddr& addr) override;
  KResult<SockAddr> GetSockName(Caller& c) override;
  KResult<SockAddr> GetPeerName(Caller& c) override;
  KResult<void> Shutdown(Caller& c, int how) override;
  KResult<size_t> RecvMsg(Caller& c, MessageIo& data,
                          RecvRequest& req) override;
  // SO_PEEK_OFF (UDP: inet_dgram_ops' set_peek_off; ping: EOPNOTSUPP as
  // inet_sockraw_ops has none), SO_ERROR (sk_err first); the rest to
  // InetSocket.
  KResult<void> SetSockOpt(Caller& c, int level, int name,
                           absl::Span<const uint8_t> val) override;
  KResult<size_t> GetSockOpt(Caller& c, int level, int name,
                             absl::Span<uint8_t> val) override;
  KResult<uint64_t> SocketIoctl(Caller& c, uint32_t cmd, uint64_t arg) override;
  uint32_t Readiness(uint32_t mask) override;
  void EventRegister(vfs::WaitEntry* e, uint32_t mask) override {
    wq_.Register(e, mask);
  }
  inet::ProcRow proc_row() const override;

  // The route of a datagram to `dst` (ip_route_output for the sandbox's
  // namespace): ENETUNREACH for a destination no route reaches (an IPv4
  // one from an IPV6_V6ONLY socket), kOffHost for one outside loopback.
  KResult<RouteKind> Route(Caller& c, const inet::IpAddr& dst) const;

  // sk_drops (/proc/net/udp's drops column; tests).
  uint64_t drops() const ABSL_LOCKS_EXCLUDED(mu_);
  // The SNMP counters of one datagram arriving (Ip InReceives, InDelivers)
  // and, for UDP, of its fate (Udp InErrors/RcvbufErrors on a drop).
  void CountArrival(bool v4) const;

 protected:
  // The namespace of this socket (the caller's at socket(2)).
  NetNamespace& ns() const { return *ns_; }
  // inet_send_prepare's autobind (a socket with no port gets one), and
  // sk_err / SEND_SHUTDOWN as sock_alloc_send_pskb reports them; the
  // protocols call these in Linux's order.
  KResult<void> EnsureBound(Caller& c);
  KResult<void> SendChecks() ABSL_LOCKS_EXCLUDED(mu_);
  // The connected peer, if any.
  std::optional<inet::InetAddr> Peer() const;
  // The local address of the binding (connected source, else bound), or
  // nullopt when unbound.
  std::optional<inet::InetAddr> Local() const;
  // Whether recv with MSG_TRUNC returns the datagram's length (UDP) or
  // the bytes copied (ping_recvmsg).
  virtual bool TruncReturnsFullLength() const { return true; }
  // The family's address for a datagram's source (recvfrom).
  SockAddr FromAddr(const inet::InetAddr& a) const;

  // Takes sk_err (sock_error).
  int TakeErrLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int e = err_;
    err_ = 0;
    return e;
  }

  // lock_sock: serializes bind, connect, disconnect and autobind (the
  // binding's changes). bind_mu_ -> mu_; bind_mu_ -> InetSocket::ip_mu_ ->
  // PortTable's mutex.
  absl::Mutex bind_mu_;
  // The queues and state below (a leaf but for the WaitQueue's Notify).
  mutable absl::Mutex mu_;
  vfs::WaitQueue wq_;

 private:
  KResult<size_t> RecvErrQueue(Caller& c, MessageIo& data, RecvRequest& req);
  void Disconnect();

  NetNamespace* const ns_;
  std::deque<Datagram> rq_ ABSL_GUARDED_BY(mu_);
  std::deque<ErrReport> errq_ ABSL_GUARDED_BY(mu_);
  int64_t rmem_ ABSL_GUARDED_BY(mu_) = 0;  // sk_rmem_alloc
  uint64_t drops_ ABSL_GUARDED_BY(mu_) = 0;
  int err_ ABSL_GUARDED_BY(mu_) = 0;  // sk_err
  uint8_t shutdown_ ABSL_GUARDED_BY(mu_) = 0;
  bool connected_ ABSL_GUARDED_BY(mu_) = false;  // TCP_ESTABLISHED
  int32_t peek_off_ ABSL_GUARDED_BY(mu_) = -1;   // SO_PEEK_OFF (-1: off)
  // What bind(2) named (SOCK_BINDADDR_LOCK / SOCK_BINDPORT_LOCK): kept
  // across a disconnect; an address kept without a port binds again with
  // it at the next autobind.
  bool addr_locked_ ABSL_GUARDED_BY(mu_) = false;
  bool port_locked_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<inet::IpAddr> kept_addr_ ABSL_GUARDED_BY(mu_);

  friend class UdpSocket;
  friend class PingSocket;
};

// The description as a DgramSocket (UDP or ping), or null.
DgramSocket* AsDgramSocket(Socket* s);

// The network mode's host path for datagrams to addresses outside the
// sandbox (--network=host, sentry/net/hostinet, later): one hook, set once
// at start-up. Unset (--network=none), such sends and connects are
// ENETUNREACH, as on a namespace with only lo.
struct HostPath {
  KResult<void> (*connect)(Caller& c, DgramSocket& s,
                           const inet::InetAddr& dst) = nullptr;
  KResult<size_t> (*send)(Caller& c, DgramSocket& s, const inet::InetAddr& dst,
                          MessageIo& data, const SendParams& p,
                          int flags) = nullptr;
  // Published UDP ports (--publish=...:P/udp, any network mode): a datagram
  // from `s` to a loopback `dst` that answers a flow the broker relayed in
  // (s is bound at the flow's guest port, dst is the flow's host peer) goes
  // back out through that flow, as conntrack sends a reply back through
  // its NAT; sets *sent and returns true then, false when no flow matches
  // (the datagram stays on the sandbox's loopback). `port`: s's bound port.
  bool (*reply)(Caller& c, uint16_t port, const inet::InetAddr& dst,
                MessageIo& data, KResult<size_t>* sent) = nullptr;
};
HostPath& DatagramHostPath();

}  // namespace sandbox::net::udp

#endif  // SENTRY_NET_UDP_DGRAM_SOCKET_H_
