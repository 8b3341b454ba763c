#include "sentry/net/namespace.h"

namespace sandbox::net {

NetNamespace& NetNamespace::Root() {
  static NetNamespace* ns = new NetNamespace;
  return *ns;
}

}  // namespace sandbox::net
