// Dropping capabilities, the step every confined process of the sandbox
// (the Sentry, the Gofer, the network broker) takes before its seccomp
// filter: each calls it from its own confine step.
//
// Thread-safety: changes the calling thread's credentials only; called
// single-threaded (the confine steps' precondition).
#ifndef HOSTCONFINE_CAPABILITIES_H_
#define HOSTCONFINE_CAPABILITIES_H_

#include <stdint.h>

#include "absl/status/status.h"

namespace sandbox::hostconfine {

// Drops every capability but those whose bit is set in `keep` (bit N is
// capability N) from the bounding set (EINVAL past the kernel's last
// capability and EPERM without CAP_SETPCAP are not errors), clears the
// ambient set, keeps only `keep` in the effective and permitted sets (none
// inheritable) and sets no_new_privs. Errors name the step.
absl::Status DropCapabilitiesExcept(uint64_t keep);

}  // namespace sandbox::hostconfine

#endif  // HOSTCONFINE_CAPABILITIES_H_
