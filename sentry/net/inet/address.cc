#include "sentry/net/inet/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "absl/strings/str_cat.h"

namespace sandbox::net::inet {
namespace {

// SIN6_LEN_RFC2133: sockaddr_in6 without sin6_scope_id.
constexpr uint32_t kSin6LenRfc2133 = 24;
// offsetof(struct sockaddr, sa_data): the family field alone.
constexpr uint32_t kSaFamilyLen = 2;

constexpr std::array<uint8_t, 12> kV4MappedPrefix = {0, 0, 0, 0, 0,    0,
                                                     0, 0, 0, 0, 0xff, 0xff};

KResult<InetAddr> ParseSin(const SockAddr& a) {
  sockaddr_in sin;
  memcpy(&sin, a.bytes, sizeof(sin));
  InetAddr out;
  out.ip = IpAddr::FromV4Bytes(reinterpret_cast<const uint8_t*>(&sin.sin_addr));
  out.port = ntohs(sin.sin_port);
  return out;
}

KResult<InetAddr> ParseSin6(const SockAddr& a) {
  sockaddr_in6 sin6 = {};
  memcpy(&sin6, a.bytes, std::min<uint32_t>(a.len, sizeof(sin6)));
  InetAddr out;
  out.ip = IpAddr::FromV6Bytes(sin6.sin6_addr.s6_addr);
  out.port = ntohs(sin6.sin6_port);
  out.flowinfo = ntohl(sin6.sin6_flowinfo);
  // sin6_scope_id only when the guest passed a full sockaddr_in6.
  out.scope_id = a.len >= sizeof(sockaddr_in6) ? sin6.sin6_scope_id : 0;
  return out;
}

}  // namespace

IpAddr IpAddr::V4(uint32_t host_order) {
  IpAddr a;
  memcpy(a.b_.data(), kV4MappedPrefix.data(), kV4MappedPrefix.size());
  a.b_[12] = host_order >> 24;
  a.b_[13] = host_order >> 16;
  a.b_[14] = host_order >> 8;
  a.b_[15] = host_order;
  return a;
}

IpAddr IpAddr::FromV4Bytes(const uint8_t* b) {
  return V4(uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 |
            b[3]);
}

IpAddr IpAddr::FromV6Bytes(const uint8_t* b) {
  IpAddr a;
  memcpy(a.b_.data(), b, 16);
  return a;
}

IpAddr IpAddr::LoopbackV6() {
  IpAddr a;
  a.b_[15] = 1;
  return a;
}

bool IpAddr::is_v4() const {
  return memcmp(b_.data(), kV4MappedPrefix.data(), kV4MappedPrefix.size()) == 0;
}

uint32_t IpAddr::v4() const {
  return uint32_t{b_[12]} << 24 | uint32_t{b_[13]} << 16 |
         uint32_t{b_[14]} << 8 | b_[15];
}

bool IpAddr::IsAny() const {
  if (is_v4()) return v4() == 0;
  return b_ == std::array<uint8_t, 16>{};
}

bool IpAddr::IsLoopback() const {
  if (is_v4()) return (v4() >> 24) == 127;
  return *this == LoopbackV6();
}

bool IpAddr::IsMulticast() const {
  if (is_v4()) return (v4() >> 28) == 0xe;
  return b_[0] == 0xff;
}

bool IpAddr::IsLimitedBroadcast() const {
  return is_v4() && v4() == 0xffffffffu;
}

bool IpAddr::IsLinkLocalV6() const {
  return !is_v4() && b_[0] == 0xfe && (b_[1] & 0xc0) == 0x80;
}

std::string IpAddr::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (is_v4()) {
    inet_ntop(AF_INET, b_.data() + 12, buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET6, b_.data(), buf, sizeof(buf));
  }
  return buf;
}

std::string InetAddr::ToString() const {
  if (ip.is_v4()) return absl::StrCat(ip.ToString(), ":", port);
  return absl::StrCat("[", ip.ToString(), "]:", port);
}

// inet_bind_sk/__inet_bind, tcp_v4_connect/__ip4_datagram_connect,
// udp_sendmsg; inet6_bind/__inet6_bind, tcp_v6_connect/
// __ip6_datagram_connect, udpv6_sendmsg.
KResult<InetAddr> ParseSockAddr(int family, const SockAddr& a, AddrUse use) {
  if (family == AF_INET) {
    if (a.len < sizeof(sockaddr_in)) return kEINVAL;
    const uint16_t f = a.family();
    if (f != AF_INET) {
      if (f != AF_UNSPEC) return kEAFNOSUPPORT;
      switch (use) {
        case AddrUse::kBind: {
          // "Compatibility games": AF_UNSPEC binds only INADDR_ANY.
          TRY(InetAddr out, ParseSin(a));
          if (!out.ip.IsAny()) return kEAFNOSUPPORT;
          return out;
        }
        case AddrUse::kSendTo:
          break;  // udp_sendmsg reads it as sockaddr_in
        case AddrUse::kConnect:
        case AddrUse::kDgramConnect:
          return kEAFNOSUPPORT;
      }
    }
    return ParseSin(a);
  }
  if (family != AF_INET6) return kEAFNOSUPPORT;
  const uint16_t f = a.len >= kSaFamilyLen ? a.family() : AF_UNSPEC;
  switch (use) {
    case AddrUse::kDgramConnect:
      // __ip6_datagram_connect: an AF_INET address connects as IPv4.
      if (a.len >= kSaFamilyLen && f == AF_INET) {
        if (a.len < sizeof(sockaddr_in)) return kEINVAL;
        return ParseSin(a);
      }
      [[fallthrough]];
    case AddrUse::kBind:
    case AddrUse::kConnect:
      if (a.len < kSin6LenRfc2133) return kEINVAL;
      if (f != AF_INET6) return kEAFNOSUPPORT;
      return ParseSin6(a);
    case AddrUse::kSendTo:
      if (a.len < kSaFamilyLen) return kEINVAL;
      if (f == AF_INET) {  // udpv6_sendmsg -> udp_sendmsg
        if (a.len < sizeof(sockaddr_in)) return kEINVAL;
        return ParseSin(a);
      }
      if (f != AF_INET6) return kEINVAL;  // AF_UNSPEC: checked by the caller
      if (a.len < kSin6LenRfc2133) return kEINVAL;
      return ParseSin6(a);
  }
  return kEINVAL;
}

SockAddr ToSockAddr(int family, const InetAddr& a) {
  SockAddr out;
  if (family == AF_INET) {
    sockaddr_in sin = {};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(a.port);
    // An IPv6 address has no AF_INET form; it cannot reach an AF_INET
    // socket (0.0.0.0 then).
    const uint32_t v4 = a.ip.is_v4() ? a.ip.v4() : 0;
    sin.sin_addr.s_addr = htonl(v4);
    memcpy(out.bytes, &sin, sizeof(sin));
    out.len = sizeof(sin);
    return out;
  }
  sockaddr_in6 sin6 = {};
  sin6.sin6_family = AF_INET6;
  sin6.sin6_port = htons(a.port);
  memcpy(sin6.sin6_addr.s6_addr, a.ip.bytes().data(), 16);
  sin6.sin6_scope_id = a.scope_id;
  memcpy(out.bytes, &sin6, sizeof(sin6));
  out.len = sizeof(sin6);
  return out;
}

}  // namespace sandbox::net::inet
