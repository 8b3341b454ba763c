#include "sentry/net/families.h"

#include "sentry/net/netlink/netlink.h"
#include "sentry/net/unix/unix.h"

namespace sandbox::net {

void RegisterBuiltinFamilies() {
  // One line per family package (each a Register function of its own).
  unix::Register();
  netlink::Register();
}

}  // namespace sandbox::net
