#include "sentry/net/inet/inet.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>

#include "sentry/kernel/auth/credentials.h"
#include "sentry/kernel/log.h"
#include "sentry/net/inet/inet_socket.h"
#include "sentry/net/inet/proc.h"
#include "sentry/net/namespace.h"

namespace sandbox::net::inet {
namespace {

constexpr int kIpprotoMax = 263;  // IPPROTO_MAX (with IPPROTO_MPTCP, 262)
constexpr int kAfPacket = 17;     // AF_PACKET
constexpr int kSockPacket = 10;   // SOCK_PACKET
#ifndef IPPROTO_MPTCP
constexpr int IPPROTO_MPTCP = 262;
#endif

std::atomic<bool> raw_logged{false};
std::atomic<bool> packet_logged{false};
std::atomic<bool> other_logged{false};

using Ctor = KResult<SocketRef> (*)(Caller&, int, uint32_t);

// One entry of inetsw[type] / inetsw6[type] (inet_protosw): the protocol
// and its constructor; protocol 0 (IPPROTO_IP) is the wildcard of raw.
struct Protosw {
  int protocol;
  Ctor ctor;  // null: the raw entry (EPERM)
};

// ping_init_sock: the caller's egid or a supplementary group in
// net.ipv4.ping_group_range.
bool PingAllowed(const Caller& c, NetNamespace& ns) {
  const int64_t lo = ns.sysctl().ping_group_lo.load();
  const int64_t hi = ns.sysctl().ping_group_hi.load();
  auto in = [&](uint32_t gid) { return lo <= gid && gid <= hi; };
  if (c.io.creds == nullptr) return in(c.ucred.gid);
  if (in(c.io.creds->egid)) return true;
  for (uint32_t g : c.io.creds->groups) {
    if (in(g)) return true;
  }
  return false;
}

// inet_create / inet6_create.
KResult<SocketRef> Create(int family, Caller& c, int type, int protocol,
                          uint32_t flags) {
  if (protocol < 0 || protocol >= kIpprotoMax) return kEINVAL;
  const Protocols& p = RegisteredProtocols();
  const int icmp = family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6;
  // The table of `type`, in registration order: the protocols present.
  Protosw sw[3];
  int n = 0;
  switch (type) {
    case SOCK_STREAM:
      if (p.tcp != nullptr) sw[n++] = {IPPROTO_TCP, p.tcp};
      break;
    case SOCK_DGRAM:
      if (p.udp != nullptr) sw[n++] = {IPPROTO_UDP, p.udp};
      if (p.ping != nullptr) sw[n++] = {icmp, p.ping};
      break;
    case SOCK_RAW:
      sw[n++] = {IPPROTO_IP, nullptr};
      break;
    default:
      break;
  }
  // The lookup loop of inet_create: an exact match (not IPPROTO_IP), or
  // protocol 0 taking the first entry, or the wildcard entry.
  Errno err = kESOCKTNOSUPPORT;
  const Protosw* answer = nullptr;
  for (int i = 0; i < n; i++) {
    err = Errno(0);
    if (protocol == sw[i].protocol) {
      if (protocol != IPPROTO_IP) {
        answer = &sw[i];
        break;
      }
    } else {
      if (protocol == IPPROTO_IP || sw[i].protocol == IPPROTO_IP) {
        answer = &sw[i];
        break;
      }
    }
    err = kEPROTONOSUPPORT;
  }
  if (answer == nullptr) {
    if (err == Errno(0)) err = kEPROTONOSUPPORT;
    // Protocols a distribution kernel has as modules: say so once.
    if ((protocol == IPPROTO_UDPLITE || protocol == IPPROTO_SCTP ||
         protocol == IPPROTO_MPTCP) &&
        !other_logged.exchange(true)) {
      kernel::LogUnsupported(
          "socket: Internet protocol %d (UDP-Lite, SCTP, MPTCP) is not "
          "supported (%s)",
          protocol, err.name());
    }
    return err;
  }
  if (answer->ctor == nullptr) {  // SOCK_RAW without CAP_NET_RAW
    if (!raw_logged.exchange(true)) {
      kernel::LogUnsupported(
          "socket: raw Internet sockets are not supported (EPERM, as "
          "without CAP_NET_RAW)");
    }
    return kEPERM;
  }
  NetNamespace& ns = NamespaceOf(c);
  if (answer->ctor == p.ping && answer->protocol == icmp &&
      !PingAllowed(c, ns)) {
    return kEACCES;
  }
  TRY(SocketRef s, answer->ctor(c, family, flags));
  if (auto* is = dynamic_cast<InetSocket*>(s.get())) is->AttachNamespace(ns);
  return s;
}

KResult<SocketRef> CreatePacket(Caller&, int, int, uint32_t) {
  // packet_create: CAP_NET_RAW first.
  if (!packet_logged.exchange(true)) {
    kernel::LogUnsupported(
        "socket: AF_PACKET sockets are not supported (EPERM, as without "
        "CAP_NET_RAW)");
  }
  return kEPERM;
}

KResult<SocketRef> Create4(Caller& c, int type, int protocol, uint32_t flags) {
  // __sock_create turns PF_INET/SOCK_PACKET into PF_PACKET.
  if (type == kSockPacket) return CreatePacket(c, type, protocol, flags);
  return Create(AF_INET, c, type, protocol, flags);
}

KResult<SocketRef> Create6(Caller& c, int type, int protocol, uint32_t flags) {
  return Create(AF_INET6, c, type, protocol, flags);
}

}  // namespace

Protocols& RegisteredProtocols() {
  static Protocols* p = new Protocols;
  return *p;
}

void Register() {
  RegisterFamily({AF_INET, "inet", &Create4, nullptr});
  RegisterFamily({AF_INET6, "inet6", &Create6, nullptr});
  RegisterFamily({kAfPacket, "packet", &CreatePacket, nullptr});
  RegisterProcFiles();
}

}  // namespace sandbox::net::inet
