// UDP (SOCK_DGRAM of AF_INET/AF_INET6) and ping sockets (SOCK_DGRAM with
// IPPROTO_ICMP / IPPROTO_ICMPV6) in the sandbox's network namespace, over
// loopback: Linux's udp.c/udp_v6 (udp_sendmsg, udpv6_sendmsg, the
// lookups of __udp4_lib_lookup) and ping.c.
//
// A datagram between sandbox sockets never becomes a packet: the sender
// routes it (DgramSocket::Route), finds the receiver in the protocol's
// port table (PortTable::FindReceiver: connected sockets for their peer
// above unconnected ones, SO_REUSEPORT groups spread by the source's hash)
// and queues it there with the header fields recvmsg reports. Nobody
// bound: the ICMP port unreachable Linux's loopback would bring back is
// reported to the sender at once (ECONNREFUSED on a connected socket's
// next call, the error queue with IP_RECVERR). Ping sockets: an echo
// request to a local address is answered at once with the reply Linux's
// icmp_echo / icmpv6_echo_reply would send.
//
// Destinations outside loopback go to DatagramHostPath() (dgram_socket.h):
// ENETUNREACH until the network mode's host path sets it.
//
// Multicast (IPv4, over lo as Linux does in a namespace with only lo): a
// send to a group whose source is on lo (a bound local address,
// IP_MULTICAST_IF or IP_PKTINFO naming lo) reaches, if some socket joined
// the group on lo, every socket on the port bound to the wildcard or the
// group that joined it or keeps IP_MULTICAST_ALL, with TTL
// IP_MULTICAST_TTL; any other multicast send is the off-host branch
// (ENETUNREACH with --network=none). IPv6 groups: the off-host branch.
#ifndef SENTRY_NET_UDP_UDP_H_
#define SENTRY_NET_UDP_UDP_H_

#include <stdint.h>

#include <optional>
#include <vector>

#include "sentry/base/result.h"
#include "sentry/net/family.h"
#include "sentry/net/udp/dgram_socket.h"

namespace sandbox::net::udp {

// Sets inet::RegisteredProtocols().udp and .ping (start-up, before
// inet::Register).
// (/proc/net/udp, udp6, icmp and icmp6 are sentry/net/inet's, from
// proc_row().)
void Register();

// socket(2) of a UDP socket / a ping socket of `family` (AF_INET or
// AF_INET6). A ping socket needs the caller's egid or one of its
// supplementary groups inside net.ipv4.ping_group_range (ping_init_sock):
// EACCES otherwise.
KResult<SocketRef> NewUdpSocket(Caller& c, int family, uint32_t flags);
KResult<SocketRef> NewPingSocket(Caller& c, int family, uint32_t flags);

class UdpSocket final : public DgramSocket {
 public:
  UdpSocket(int family, uint32_t flags, const Ucred& owner, NetNamespace& ns);

  KResult<size_t> SendMsg(Caller& c, MessageIo& data,
                          SendRequest& req) override;
  // SOL_UDP (udp_lib_setsockopt): UDP_CORK, UDP_ENCAP, UDP_NO_CHECK6_TX/RX,
  // UDP_SEGMENT, UDP_GRO; the rest to InetSocket.
  KResult<void> SetSockOpt(Caller& c, int level, int name,
                           absl::Span<const uint8_t> val) override;
  KResult<size_t> GetSockOpt(Caller& c, int level, int name,
                             absl::Span<uint8_t> val) override;
  // SIOCOUTQ counts a corked datagram (sk_wmem_alloc of the pending
  // frames); the rest is DgramSocket's.
  KResult<uint64_t> SocketIoctl(Caller& c, uint32_t cmd, uint64_t arg) override;

 private:
  // A datagram being built under UDP_CORK / MSG_MORE (up->pending): its
  // route and header fields are those of its first send; later sends
  // append to it until one without MSG_MORE (cork off) pushes it.
  struct Pending {
    RouteKind route = RouteKind::kLocal;
    inet::InetAddr src, dst;
    bool v4 = true;
    int tos = 0, ttl = 64, gso = 0;
    std::vector<uint8_t> data;
  };
  // Sends `p` (udp_push_pending_frames), cut in UDP_SEGMENT segments.
  void Push(Caller& c, Pending p);
  // Sends one datagram (a UDP_SEGMENT segment) from `src` to `dst`.
  void SendLocal(Caller& c, RouteKind route, const inet::InetAddr& src,
                 const inet::InetAddr& dst, bool v4, int tos, int ttl,
                 std::vector<uint8_t> payload);

  absl::Mutex udp_mu_;  // the SOL_UDP options (a leaf)
  int cork_ ABSL_GUARDED_BY(udp_mu_) = 0;
  int encap_ ABSL_GUARDED_BY(udp_mu_) = 0;
  int no_check6_tx_ ABSL_GUARDED_BY(udp_mu_) = 0;
  int no_check6_rx_ ABSL_GUARDED_BY(udp_mu_) = 0;
  int gso_size_ ABSL_GUARDED_BY(udp_mu_) = 0;
  int gro_ ABSL_GUARDED_BY(udp_mu_) = 0;
  std::optional<Pending> pending_ ABSL_GUARDED_BY(udp_mu_);
};

class PingSocket final : public DgramSocket {
 public:
  PingSocket(int family, uint32_t flags, const Ucred& owner, NetNamespace& ns);

  KResult<void> Bind(Caller& c, const SockAddr& addr) override;
  KResult<size_t> SendMsg(Caller& c, MessageIo& data,
                          SendRequest& req) override;
  KResult<size_t> RecvMsg(Caller& c, MessageIo& data,
                          RecvRequest& req) override;
  // ping_prot has no ioctl: ENOTTY for SIOCINQ/SIOCOUTQ.
  KResult<uint64_t> SocketIoctl(Caller& c, uint32_t cmd,
                                uint64_t arg) override {
    return Socket::SocketIoctl(c, cmd, arg);
  }

 protected:
  bool TruncReturnsFullLength() const override { return false; }
};

}  // namespace sandbox::net::udp

#endif  // SENTRY_NET_UDP_UDP_H_
