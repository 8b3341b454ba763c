#include "sentry/net/families.h"

#include "sentry/net/unix/unix.h"

namespace sandbox::net {

void RegisterBuiltinFamilies() {
  // One line per family package (each a Register function of its own).
  unix::Register();
}

}  // namespace sandbox::net
