// Confinement of the broker process, applied after it has read what it
// needs of the host (/etc/hosts, /etc/resolv.conf) and made the published
// ports' listeners, before it serves anything. It keeps the host's network
// namespace (its whole job is host sockets) and loses everything else:
//   0. when not root: a new user namespace first, mapping only the
//      caller's uid and gid (to 0), so that the steps below are allowed;
//   1. new mount, IPC and UTS namespaces (the network one stays: the
//      host's), mount propagation to the host cut (MS_PRIVATE);
//   2. an empty tmpfs (4 KiB, mode 0500) mounted on a staging directory,
//      pivot_root into it, the old root detached, the new root remounted
//      read-only, nosuid, nodev, noexec: no host file is reachable by path;
//   3. every capability dropped (bounding set emptied, effective,
//      permitted, inheritable and ambient cleared), no_new_privs set.
// The seccomp allowlist (seccomp.h) comes after, last.
//
// Precondition: single-threaded. Errors name the step.
#ifndef BROKER_CONFINE_H_
#define BROKER_CONFINE_H_

#include "absl/status/status.h"

namespace sandbox::broker {

absl::Status Confine();

// Step 3 alone (also used unconfined, for tests).
absl::Status DropAllCapabilities();

}  // namespace sandbox::broker

#endif  // BROKER_CONFINE_H_
