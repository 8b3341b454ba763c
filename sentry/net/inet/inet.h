// The Internet families (AF_INET, AF_INET6): Register adds both to the
// socket layer, with socket(2)'s choice of protocol (inet_create /
// inet6_create over the protosw table):
//   SOCK_STREAM, protocol 0 or IPPROTO_TCP  -> tcp::NewSocket
//   SOCK_DGRAM,  protocol 0 or IPPROTO_UDP  -> udp::NewSocket
//   SOCK_DGRAM,  IPPROTO_ICMP (AF_INET) / IPPROTO_ICMPV6 (AF_INET6)
//                -> udp::NewPingSocket (EACCES unless the caller's gid is
//                   in net.ipv4.ping_group_range)
//   SOCK_DGRAM,  IPPROTO_UDPLITE: EPROTONOSUPPORT (removed from Linux 6.x
//                builds; as a kernel without CONFIG_IP_UDPLITE... logged)
//   SOCK_RAW (any protocol) and AF_PACKET: EPERM, as for a process
//                without CAP_NET_RAW, logged once;
//   SOCK_SEQPACKET / SOCK_STREAM with IPPROTO_SCTP, SOCK_DCCP: ESOCKTNOSUPPORT
//                or EPROTONOSUPPORT as Linux without those modules.
//   Any other type: ESOCKTNOSUPPORT; a protocol the type lacks:
//   EPROTONOSUPPORT.
// socketpair(2) of an Internet family is EOPNOTSUPP.
//
// The protocols register their constructors here (SetProtocols) so that
// this package does not depend on them; families.cc calls Register after
// tcp::Register and udp::Register.
#ifndef SENTRY_NET_INET_INET_H_
#define SENTRY_NET_INET_INET_H_

#include "sentry/base/result.h"
#include "sentry/net/family.h"

namespace sandbox::net::inet {

struct Protocols {
  // socket(2) for `family` (AF_INET/AF_INET6), `flags` open flags.
  KResult<SocketRef> (*tcp)(Caller& c, int family, uint32_t flags) = nullptr;
  KResult<SocketRef> (*udp)(Caller& c, int family, uint32_t flags) = nullptr;
  KResult<SocketRef> (*ping)(Caller& c, int family, uint32_t flags) = nullptr;
};

// Each protocol package sets its entry (start-up, before Register).
Protocols& RegisteredProtocols();

// Registers AF_INET and AF_INET6 (and AF_PACKET, for its EPERM) with the
// socket layer.
void Register();

}  // namespace sandbox::net::inet

#endif  // SENTRY_NET_INET_INET_H_
