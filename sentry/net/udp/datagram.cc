#include "sentry/net/udp/datagram.h"

#include <linux/errqueue.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>

// Not in every libc's headers (linux/in.h, linux/in6.h).
#ifndef IP_PROTOCOL
#define IP_PROTOCOL 52
#endif
#ifndef IPV6_FLOWINFO
#define IPV6_FLOWINFO 11
#endif

namespace sandbox::net::udp {
namespace {

template <typename T>
ControlMessages::Raw Cmsg(int level, int type, const T& v) {
  ControlMessages::Raw r;
  r.level = level;
  r.type = type;
  r.data.resize(sizeof(T));
  memcpy(r.data.data(), &v, sizeof(T));
  return r;
}

bool ReadInt(const ControlMessages::Raw& m, int* v) {
  if (m.data.size() != sizeof(int)) return false;
  memcpy(v, m.data.data(), sizeof(int));
  return true;
}

in_addr V4Of(const inet::IpAddr& a) {
  in_addr r;
  memcpy(&r, a.bytes().data() + 12, 4);
  return r;
}
in6_addr V6Of(const inet::IpAddr& a) {
  in6_addr r;
  memcpy(&r, a.bytes().data(), 16);
  return r;
}

// SKB_DATA_ALIGN(sizeof(struct sk_buff)) + SKB_DATA_ALIGN(sizeof(struct
// skb_shared_info)) on x86-64.
constexpr int64_t kSkbOverhead = 256 + 320;
// The headroom and headers a loopback UDP skb's head holds besides the
// payload (LL_RESERVED_SPACE, IP and UDP headers).
constexpr int64_t kHeadersRoom = 16 + 16 + 40 + 8;

}  // namespace

bool IsLoopbackBroadcast(const inet::IpAddr& a) {
  return a.is_v4() && (a.v4() == 0x7fffffff || a.v4() == 0xffffffff);
}

int64_t TrueSize(size_t len) {
  int64_t need = static_cast<int64_t>(len) + kHeadersRoom + 320;
  // kmalloc's power-of-two buckets up to a page, then whole pages.
  int64_t alloc = 64;
  if (need <= 4096) {
    while (alloc < need) alloc <<= 1;
  } else {
    alloc = (need + 4095) / 4096 * 4096;
  }
  return alloc - 320 + kSkbOverhead;
}

KResult<SendParams> ParseSendCmsgs(absl::Span<const ControlMessages::Raw> raw,
                                   bool v4) {
  SendParams p;
  for (const ControlMessages::Raw& m : raw) {
    if (v4) {
      // ip_cmsg_send (allow_ipv6 is the socket's family's business: an
      // IPV6_PKTINFO with a v4-mapped address sets the source).
      if (m.level == SOL_IPV6 && m.type == IPV6_PKTINFO) {
        if (m.data.size() < sizeof(in6_pktinfo)) return kEINVAL;
        in6_pktinfo pi;
        memcpy(&pi, m.data.data(), sizeof(pi));
        inet::IpAddr a = inet::IpAddr::FromV6Bytes(pi.ipi6_addr.s6_addr);
        if (!a.is_v4()) return kEINVAL;
        if (pi.ipi6_ifindex != 0) p.ifindex = static_cast<int>(pi.ipi6_ifindex);
        p.src = a;
        continue;
      }
      if (m.level != SOL_IP) continue;
      int v;
      switch (m.type) {
        case IP_RETOPTS:
          // ip_options_get: at most 40 bytes of options (kept, unused:
          // loopback has no use for them).
          if (m.data.size() > 40) return kEINVAL;
          break;
        case IP_PKTINFO: {
          if (m.data.size() != sizeof(in_pktinfo)) return kEINVAL;
          in_pktinfo pi;
          memcpy(&pi, m.data.data(), sizeof(pi));
          if (pi.ipi_ifindex != 0) p.ifindex = pi.ipi_ifindex;
          uint8_t b[4];
          memcpy(b, &pi.ipi_spec_dst, 4);
          p.src = inet::IpAddr::FromV4Bytes(b);
          break;
        }
        case IP_TTL:
          if (!ReadInt(m, &v)) return kEINVAL;
          if (v < 1 || v > 255) return kEINVAL;
          p.ttl = v;
          break;
        case IP_TOS:
          if (m.data.size() == sizeof(int)) {
            memcpy(&v, m.data.data(), sizeof(int));
          } else if (m.data.size() == 1) {
            v = m.data[0];
          } else {
            return kEINVAL;
          }
          if (v < 0 || v > 255) return kEINVAL;
          p.tos = v;
          break;
        case IP_PROTOCOL:
          if (!ReadInt(m, &v)) return kEINVAL;
          if (v < 1 || v > 255) return kEINVAL;
          break;
        default:
          return kEINVAL;
      }
      continue;
    }
    // ip6_datagram_send_ctl.
    if (m.level != SOL_IPV6) continue;
    int v;
    switch (m.type) {
      case IPV6_PKTINFO:
      case IPV6_2292PKTINFO: {
        if (m.data.size() < sizeof(in6_pktinfo)) return kEINVAL;
        in6_pktinfo pi;
        memcpy(&pi, m.data.data(), sizeof(pi));
        if (pi.ipi6_ifindex != 0) p.ifindex = static_cast<int>(pi.ipi6_ifindex);
        inet::IpAddr a = inet::IpAddr::FromV6Bytes(pi.ipi6_addr.s6_addr);
        if (a.IsLinkLocalV6() && p.ifindex == 0) return kEINVAL;
        if (!a.IsAny()) p.src = a;
        break;
      }
      case IPV6_FLOWINFO:
        if (m.data.size() < sizeof(uint32_t)) return kEINVAL;
        break;
      case IPV6_2292HOPOPTS:
      case IPV6_HOPOPTS:
      case IPV6_2292DSTOPTS:
      case IPV6_DSTOPTS:
      case IPV6_RTHDRDSTOPTS:
      case IPV6_2292RTHDR:
      case IPV6_RTHDR:
        // Extension headers: at least their 2-byte header (ipv6_optlen).
        if (m.data.size() < 2) return kEINVAL;
        break;
      case IPV6_2292HOPLIMIT:
      case IPV6_HOPLIMIT:
        if (!ReadInt(m, &v)) return kEINVAL;
        if (v < -1 || v > 0xff) return kEINVAL;
        p.ttl = v;
        break;
      case IPV6_TCLASS:
        if (!ReadInt(m, &v)) return kEINVAL;
        if (v < -1 || v > 0xff) return kEINVAL;
        p.tos = v;
        break;
      case IPV6_DONTFRAG:
        if (!ReadInt(m, &v)) return kEINVAL;
        if (v < 0 || v > 1) return kEINVAL;
        break;
      default:
        return kEINVAL;
    }
  }
  return p;
}

void AppendTimestamp(int64_t ns, const Socket::SolFlags& sol,
                     std::vector<ControlMessages::Raw>* out) {
  if (!sol.rcvtstamp) return;
  if (sol.rcvtstampns) {
    timespec ts{static_cast<time_t>(ns / 1000000000),
                static_cast<long>(ns % 1000000000)};
    out->push_back(Cmsg(SOL_SOCKET, SCM_TIMESTAMPNS, ts));
  } else {
    timeval tv{static_cast<time_t>(ns / 1000000000),
               static_cast<suseconds_t>((ns % 1000000000) / 1000)};
    out->push_back(Cmsg(SOL_SOCKET, SCM_TIMESTAMP, tv));
  }
}

void AppendRecvCmsgs(const Datagram& d, int family, const inet::IpOptions& ip,
                     const Socket::SolFlags& sol,
                     std::vector<ControlMessages::Raw>* out, bool icmp_error) {
  if (!icmp_error) AppendTimestamp(d.tstamp_ns, sol, out);
  if (family == AF_INET6 && ip.recvpktinfo && !(icmp_error && d.v4)) {
    // ip6_datagram_recv_common_ctl: an IPv4 packet's destination mapped.
    in6_pktinfo pi{};
    pi.ipi6_addr = V6Of(d.dst.ip);
    pi.ipi6_ifindex = 1;  // lo
    out->push_back(Cmsg(SOL_IPV6, IPV6_PKTINFO, pi));
  }
  if (d.v4) {
    // ip_cmsg_recv_offset.
    if (ip.pktinfo) {
      in_pktinfo pi{};
      pi.ipi_ifindex = 1;  // lo
      // fib_compute_spec_dst: the header's destination for a local
      // route; lo's address for a broadcast.
      if (!icmp_error) {
        pi.ipi_spec_dst = IsLoopbackBroadcast(d.dst.ip)
                              ? V4Of(inet::IpAddr::LoopbackV4())
                              : V4Of(d.dst.ip);
      }
      pi.ipi_addr = V4Of(d.dst.ip);
      out->push_back(Cmsg(SOL_IP, IP_PKTINFO, pi));
    }
    if (ip.recvttl) out->push_back(Cmsg(SOL_IP, IP_TTL, d.ttl));
    if (ip.recvtos) {
      uint8_t tos = static_cast<uint8_t>(d.tos);
      out->push_back(Cmsg(SOL_IP, IP_TOS, tos));
    }
    if (ip.recvorigdstaddr && !icmp_error) {
      sockaddr_in sin{};
      sin.sin_family = AF_INET;
      sin.sin_port = htons(d.dst.port);
      sin.sin_addr = V4Of(d.dst.ip);
      out->push_back(Cmsg(SOL_IP, IP_ORIGDSTADDR, sin));
    }
    return;
  }
  if (family != AF_INET6) return;
  // ip6_datagram_recv_specific_ctl.
  if (ip.recvhoplimit) out->push_back(Cmsg(SOL_IPV6, IPV6_HOPLIMIT, d.ttl));
  if (ip.recvtclass) out->push_back(Cmsg(SOL_IPV6, IPV6_TCLASS, d.tos));
  if (ip.recvorigdstaddr6 && !icmp_error) {
    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(d.dst.port);
    sin6.sin6_addr = V6Of(d.dst.ip);
    out->push_back(Cmsg(SOL_IPV6, IPV6_ORIGDSTADDR, sin6));
  }
}

ControlMessages::Raw ErrCmsg(const ErrReport& e, int family) {
  sock_extended_err ee{};
  ee.ee_errno = e.err;
  ee.ee_origin = e.v4 ? SO_EE_ORIGIN_ICMP : SO_EE_ORIGIN_ICMP6;
  ee.ee_type = e.type;
  ee.ee_code = e.code;
  ControlMessages::Raw r;
  if (family == AF_INET) {
    r.level = SOL_IP;
    r.type = IP_RECVERR;
    sockaddr_in off{};
    off.sin_family = AF_INET;
    off.sin_addr = V4Of(e.offender);
    r.data.resize(sizeof(ee) + sizeof(off));
    memcpy(r.data.data(), &ee, sizeof(ee));
    memcpy(r.data.data() + sizeof(ee), &off, sizeof(off));
    return r;
  }
  // ipv6_recv_error: IPv4 errors as v4-mapped offenders.
  r.level = SOL_IPV6;
  r.type = IPV6_RECVERR;
  sockaddr_in6 off{};
  off.sin6_family = AF_INET6;
  off.sin6_addr = V6Of(e.offender);
  r.data.resize(sizeof(ee) + sizeof(off));
  memcpy(r.data.data(), &ee, sizeof(ee));
  memcpy(r.data.data() + sizeof(ee), &off, sizeof(off));
  return r;
}

uint16_t InetChecksum(absl::Span<const uint8_t> d, uint32_t initial) {
  uint64_t sum = initial;
  size_t i = 0;
  for (; i + 1 < d.size(); i += 2) sum += (uint32_t{d[i]} << 8) | d[i + 1];
  if (i < d.size()) sum += uint32_t{d[i]} << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

uint32_t Icmp6PseudoSum(const inet::IpAddr& src, const inet::IpAddr& dst,
                        uint32_t len) {
  uint64_t sum = 0;
  for (const inet::IpAddr* a : {&src, &dst}) {
    const auto& b = a->bytes();
    for (size_t i = 0; i < 16; i += 2) sum += (uint32_t{b[i]} << 8) | b[i + 1];
  }
  sum += len >> 16;
  sum += len & 0xffff;
  sum += IPPROTO_ICMPV6;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint32_t>(sum);
}

int64_t RealtimeNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace sandbox::net::udp
