#include "sentry/net/families.h"

namespace sandbox::net {

void RegisterBuiltinFamilies() {
  // One line per family package (each a Register function of its own).
}

}  // namespace sandbox::net
