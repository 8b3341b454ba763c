// socket(2) for UDP and ping sockets, and their registration with the
// Internet families (inet.h).
#include <errno.h>
#include <sys/socket.h>

#include <memory>

#include "sentry/kernel/auth/credentials.h"
#include "sentry/net/inet/inet.h"
#include "sentry/net/namespace.h"
#include "sentry/net/udp/udp.h"

namespace sandbox::net::udp {
namespace {

// ping_init_sock: the egid, or a supplementary group, inside
// net.ipv4.ping_group_range (both ends included; "1 0" admits nobody).
bool MayPing(const Caller& c) {
  NetSysctls& s = NamespaceOf(c).sysctl();
  const int64_t lo = s.ping_group_lo.load();
  const int64_t hi = s.ping_group_hi.load();
  auto in = [&](int64_t g) { return lo <= g && g <= hi; };
  if (c.io.creds == nullptr) return in(c.ucred.gid);
  if (in(c.io.creds->egid)) return true;
  for (auto g : c.io.creds->groups) {
    if (in(g)) return true;
  }
  return false;
}

}  // namespace

KResult<SocketRef> NewUdpSocket(Caller& c, int family, uint32_t flags) {
  if (family != AF_INET && family != AF_INET6) return kEAFNOSUPPORT;
  return SocketRef(
      std::make_shared<UdpSocket>(family, flags, c.ucred, NamespaceOf(c)));
}

KResult<SocketRef> NewPingSocket(Caller& c, int family, uint32_t flags) {
  if (family != AF_INET && family != AF_INET6) return kEAFNOSUPPORT;
  if (!MayPing(c)) return kEACCES;
  return SocketRef(
      std::make_shared<PingSocket>(family, flags, c.ucred, NamespaceOf(c)));
}

void Register() {
  inet::Protocols& p = inet::RegisteredProtocols();
  p.udp = &NewUdpSocket;
  p.ping = &NewPingSocket;
}

}  // namespace sandbox::net::udp
