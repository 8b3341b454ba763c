#include "sentry/net/families.h"

#include "sentry/net/inet/inet.h"
#include "sentry/net/netlink/netlink.h"
#include "sentry/net/tcp/tcp.h"
#include "sentry/net/udp/udp.h"
#include "sentry/net/unix/unix.h"

namespace sandbox::net {

void RegisterBuiltinFamilies() {
  // One line per family package (each a Register function of its own).
  unix::Register();
  netlink::Register();
  // The Internet protocols fill inet::RegisteredProtocols() first, then
  // the families register AF_INET/AF_INET6/AF_PACKET over them.
  tcp::Register();
  udp::Register();
  inet::Register();
}

}  // namespace sandbox::net
