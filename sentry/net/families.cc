#include "sentry/net/families.h"

#include "sentry/net/netlink/netlink.h"

namespace sandbox::net {

void RegisterBuiltinFamilies() {
  // One line per family package (each a Register function of its own).
  netlink::Register();
}

}  // namespace sandbox::net
