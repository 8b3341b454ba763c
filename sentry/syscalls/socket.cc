// Sockets: none yet. socket(2) fails with EAFNOSUPPORT for every family, as
// a kernel built without networking does, so C libraries give up quietly
// (glibc's nscd and syslog lookups) instead of logging an unknown syscall.
// Networking comes with its own issue; then this file holds the family.
#include <errno.h>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/table.h"

namespace sandbox::syscalls {

void RegisterSocketSyscalls(SyscallTable& t) {
  using namespace abi;  // NOLINT: nr::
  t.Unsupported(nr::socket, Errno(EAFNOSUPPORT),
                "no networking yet: every family is EAFNOSUPPORT");
}

}  // namespace sandbox::syscalls
