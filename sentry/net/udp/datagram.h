// What a datagram socket of the Internet families queues: received
// datagrams (Linux's skbs on sk_receive_queue, with the IP header fields
// recvmsg reports) and ICMP error reports (skbs on sk_error_queue with
// their sock_exterr_skb), and the pure codecs around them: the IP-level
// cmsgs of a send (ip_cmsg_send / ip6_datagram_send_ctl), those of a
// receive (ip_cmsg_recv_offset / ip6_datagram_recv_ctl, sock_recv_cmsgs),
// the Internet checksum.
//
// No locks, no state: values and functions.
#ifndef SENTRY_NET_UDP_DATAGRAM_H_
#define SENTRY_NET_UDP_DATAGRAM_H_

#include <stdint.h>

#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "sentry/base/result.h"
#include "sentry/net/inet/address.h"
#include "sentry/net/inet/inet_socket.h"
#include "sentry/net/message.h"

namespace sandbox::net::udp {

// The largest payloads (__ip_append_data's 0xFFFF - IP - UDP header;
// ip6_append_data's IPV6_MAXPLEN - UDP header).
inline constexpr size_t kMaxUdp4Payload = 65507;
inline constexpr size_t kMaxUdp6Payload = 65527;
// sizeof(icmphdr) / sizeof(icmp6hdr).
inline constexpr size_t kIcmpHdrLen = 8;

// One received datagram.
struct Datagram {
  std::vector<uint8_t> data;  // UDP payload; ping: ICMP header + data
  inet::InetAddr src;         // the sender (port 0 for ping)
  inet::InetAddr dst;         // the header's destination and port
  bool v4 = true;             // an IPv4 packet (v4-mapped addresses)
  int tos = 0;                // IPv4 TOS / IPv6 traffic class
  int ttl = 64;               // IPv4 TTL / IPv6 hop limit
  int64_t tstamp_ns = 0;      // CLOCK_REALTIME at arrival (skb->tstamp)
  int64_t truesize = 0;       // what it charges sk_rmem_alloc
  bool peeked = false;        // a zero-length datagram seen by MSG_PEEK
};

// One ICMP error report (ip_icmp_error / ipv6_icmp_error).
struct ErrReport {
  std::vector<uint8_t> payload;  // the quoted payload after the UDP/ICMP hdr
  inet::InetAddr dst;            // the failed datagram's destination
  inet::IpAddr offender;         // who sent the ICMP error
  inet::IpAddr local;            // the failed datagram's source (the
                                 // ICMP packet's destination)
  int ttl = 64;                  // the ICMP packet's TTL / hop limit
  bool v4 = true;                // an ICMPv4 error (SO_EE_ORIGIN_ICMP)
  uint32_t err = 0;              // ee_errno
  uint8_t type = 0, code = 0;    // ICMP type and code
  int64_t tstamp_ns = 0;
  int64_t truesize = 0;
};

// 127.255.255.255 (lo's broadcast address: the local table's "broadcast
// 127.255.255.255 dev lo") or 255.255.255.255: RTN_BROADCAST routes.
bool IsLoopbackBroadcast(const inet::IpAddr& a);

// skb->truesize of a datagram of `len` bytes as it arrives on loopback
// (SKB_TRUESIZE of the kmalloc'd head: sk_buff + shared info + data with
// the headers, rounded as kmalloc rounds).
int64_t TrueSize(size_t len);

// The IP-level parameters of one send after its cmsgs (ipcm_cookie /
// ipcm6_cookie): values from the socket's options unless a cmsg set them.
struct SendParams {
  int tos = -1;                     // IP_TOS / IPV6_TCLASS (-1: option)
  int ttl = -1;                     // IP_TTL / IPV6_HOPLIMIT (-1: option)
  std::optional<inet::IpAddr> src;  // IP_PKTINFO ipi_spec_dst / IPV6_PKTINFO
  int ifindex = 0;                  // ipi_ifindex / ipi6_ifindex
};

// ip_cmsg_send (v4 = true: SOL_IP messages; the others are ignored, as
// ip_cmsg_send skips levels it does not own) and ip6_datagram_send_ctl
// (v4 = false: SOL_IPV6; an AF_INET6 socket sending to an IPv4 address
// reads the SOL_IP ones). EINVAL for a bad length or value, or an unknown
// type of the level.
KResult<SendParams> ParseSendCmsgs(absl::Span<const ControlMessages::Raw> raw,
                                   bool v4);

// The cmsgs recvmsg attaches to `d` for a socket with options `ip`,
// SOL_SOCKET flags `sol`, of family `family`, in Linux's order: the
// timestamp (sock_recv_cmsgs), then ip_cmsg_recv_offset's (IP_PKTINFO,
// IP_TTL, IP_TOS, IP_ORIGDSTADDR) for IPv4 packets, or, on an AF_INET6
// socket, IPV6_PKTINFO then for IPv6 packets IPV6_HOPLIMIT, IPV6_TCLASS,
// IPV6_ORIGDSTADDR (ip6_datagram_recv_common_ctl / _specific_ctl).
//
// With `icmp_error`, `d` describes the ICMP packet of an error report
// (ip_recv_error / ipv6_recv_error call ip_cmsg_recv /
// ip6_datagram_recv_ctl on it): no timestamp (the caller adds the
// report's), IP_PKTINFO's ipi_spec_dst 0.0.0.0, no ORIGDSTADDR, and on an
// AF_INET6 socket an IPv4 report's SOL_IP cmsgs only.
void AppendRecvCmsgs(const Datagram& d, int family, const inet::IpOptions& ip,
                     const Socket::SolFlags& sol,
                     std::vector<ControlMessages::Raw>* out,
                     bool icmp_error = false);

// The timestamp cmsg alone (SO_TIMESTAMP / SO_TIMESTAMPNS), if asked for.
void AppendTimestamp(int64_t tstamp_ns, const Socket::SolFlags& sol,
                     std::vector<ControlMessages::Raw>* out);

// The IP_RECVERR / IPV6_RECVERR cmsg of `e` for a socket of `family`:
// sock_extended_err followed by the offender's sockaddr.
ControlMessages::Raw ErrCmsg(const ErrReport& e, int family);

// The Internet checksum (RFC 1071) of `data` added to `initial` (a
// partial sum, e.g. the IPv6 pseudo-header's), folded and complemented.
uint16_t InetChecksum(absl::Span<const uint8_t> data, uint32_t initial = 0);
// The partial sum of the ICMPv6 pseudo-header (src, dst, length, 58).
uint32_t Icmp6PseudoSum(const inet::IpAddr& src, const inet::IpAddr& dst,
                        uint32_t len);

// CLOCK_REALTIME now, in ns.
int64_t RealtimeNowNs();

}  // namespace sandbox::net::udp

#endif  // SENTRY_NET_UDP_DATAGRAM_H_
