// Internet addresses as the Internet families use them: one IpAddr type for
// IPv4 and IPv6 (IPv4 held v4-mapped, ::ffff:a.b.c.d, so that an AF_INET6
// socket's v4-mapped peers and AF_INET sockets compare in one space), the
// (address, port) pair, and the sockaddr_in/sockaddr_in6 codec with
// Linux's checks and errnos.
//
// Pure values: no locks, no state.
#ifndef SENTRY_NET_INET_ADDRESS_H_
#define SENTRY_NET_INET_ADDRESS_H_

#include <stdint.h>

#include <array>
#include <string>
#include <utility>

#include "sentry/base/result.h"
#include "sentry/net/message.h"

namespace sandbox::net::inet {

class IpAddr {
 public:
  IpAddr() = default;  // :: (the IPv6 wildcard)
  // From an IPv4 address in host byte order (0x7f000001: 127.0.0.1).
  static IpAddr V4(uint32_t host_order);
  // From 4 bytes in network order (sin_addr) / 16 bytes (sin6_addr).
  static IpAddr FromV4Bytes(const uint8_t* b);
  static IpAddr FromV6Bytes(const uint8_t* b);
  static IpAddr AnyV4() { return V4(0); }  // 0.0.0.0, v4-mapped
  static IpAddr AnyV6() { return IpAddr(); }
  static IpAddr LoopbackV4() { return V4(0x7f000001); }
  static IpAddr LoopbackV6();  // ::1

  // Whether this is an IPv4 address (v4-mapped).
  bool is_v4() const;
  // The IPv4 address in host byte order (is_v4() only).
  uint32_t v4() const;
  const std::array<uint8_t, 16>& bytes() const { return b_; }

  // 0.0.0.0 or ::.
  bool IsAny() const;
  // 127.0.0.0/8 or ::1.
  bool IsLoopback() const;
  // 224.0.0.0/4 or ff00::/8.
  bool IsMulticast() const;
  // 255.255.255.255.
  bool IsLimitedBroadcast() const;
  // fe80::/10.
  bool IsLinkLocalV6() const;

  // "127.0.0.1", "::1" (inet_ntop's text; IPv4 without the ::ffff:).
  std::string ToString() const;

  bool operator==(const IpAddr& o) const { return b_ == o.b_; }
  bool operator!=(const IpAddr& o) const { return b_ != o.b_; }
  bool operator<(const IpAddr& o) const { return b_ < o.b_; }
  template <typename H>
  friend H AbslHashValue(H h, const IpAddr& a) {
    return H::combine(std::move(h), a.b_);
  }

 private:
  std::array<uint8_t, 16> b_{};
};

// An address and port (host byte order), with sockaddr_in6's flow label
// and scope id.
struct InetAddr {
  IpAddr ip;
  uint16_t port = 0;
  uint32_t flowinfo = 0;
  uint32_t scope_id = 0;

  bool operator==(const InetAddr& o) const {
    return ip == o.ip && port == o.port;
  }
  bool operator!=(const InetAddr& o) const { return !(*this == o); }
  template <typename H>
  friend H AbslHashValue(H h, const InetAddr& a) {
    return H::combine(std::move(h), a.ip, a.port);
  }
  // "127.0.0.1:80", "[::1]:80" (for logs).
  std::string ToString() const;
};

// What an address is parsed for: the checks differ (inet_bind,
// inet_stream_connect/tcp_v4_connect, udp_sendmsg, and their IPv6
// counterparts). kDgramConnect is connect(2) of a datagram socket: an
// AF_INET6 UDP/ping socket accepts a sockaddr_in there
// (__ip6_datagram_connect: connects as IPv4; the caller refuses it with
// EAFNOSUPPORT when IPV6_V6ONLY); for AF_INET it is kConnect.
enum class AddrUse { kBind, kConnect, kSendTo, kDgramConnect };

// Parses the address a guest passed to a socket of `family` (AF_INET or
// AF_INET6), as Linux does for `use`:
//   AF_INET:  len < sizeof(sockaddr_in) (16) -> EINVAL; sin_family other
//             than AF_INET -> EAFNOSUPPORT, except AF_UNSPEC with
//             INADDR_ANY for kBind (inet_bind's compatibility case) and
//             AF_UNSPEC for kSendTo (udp_sendmsg accepts it).
//   AF_INET6: len < SIN6_LEN_RFC2133 (24) -> EINVAL; sin6_family other
//             than AF_INET6 -> EAFNOSUPPORT (kBind, kConnect), EINVAL
//             for kSendTo (udpv6_sendmsg; there a sockaddr_in of >= 16
//             bytes is an IPv4 destination, and AF_UNSPEC means "no
//             address": the caller checks it first); v4-mapped addresses
//             become IPv4 ones (is_v4()); sin6_scope_id is read only from
//             a full 28-byte sockaddr_in6.
// The port is converted to host order. (AF_UNSPEC for connect(2) is a
// disconnect: the caller checks SockAddr::family() before parsing.)
KResult<InetAddr> ParseSockAddr(int family, const SockAddr& a, AddrUse use);

// The sockaddr a socket of `family` reports for `a` (getsockname,
// getpeername, accept, recvfrom): sockaddr_in for AF_INET, sockaddr_in6
// for AF_INET6 (IPv4 addresses v4-mapped, sin6_flowinfo 0, sin6_scope_id
// as given).
SockAddr ToSockAddr(int family, const InetAddr& a);

}  // namespace sandbox::net::inet

#endif  // SENTRY_NET_INET_ADDRESS_H_
