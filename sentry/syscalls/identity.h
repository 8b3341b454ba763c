// Shared between the identity files and prctl (process.cc).
#ifndef SENTRY_SYSCALLS_IDENTITY_H_
#define SENTRY_SYSCALLS_IDENTITY_H_

#include <stdint.h>

#include "sentry/syscalls/args.h"

namespace sandbox::syscalls {

// prctl(2)'s capability options (identity_caps.cc): PR_CAPBSET_READ,
// PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_GET/SET_KEEPCAPS,
// PR_GET/SET_SECUREBITS. EINVAL for any other option.
KResult<uint64_t> CapabilityPrctl(Task& t, int option, uint64_t arg2,
                                  uint64_t arg3, uint64_t arg4, uint64_t arg5);

}  // namespace sandbox::syscalls

#endif  // SENTRY_SYSCALLS_IDENTITY_H_
