// The broker's seccomp allowlist (libseccomp): what making, connecting and
// donating host sockets needs, nothing else; any other call kills the
// process (SECCOMP_RET_KILL_PROCESS).
//
// socket(2) only for AF_INET and AF_INET6 (and socketpair only AF_UNIX,
// for UDP publish flows); connect, accept4, the send/recv family, poll,
// setsockopt/getsockopt, close, fcntl. No bind or listen (the published
// ports' listeners are made before the filter), no open, no execve, no
// process (clone only with CLONE_THREAD: the resolver threads), no mount,
// ptrace or namespace call.
//
// Install it last, while single-threaded (threads made later inherit it).
#ifndef BROKER_SECCOMP_H_
#define BROKER_SECCOMP_H_

#include "absl/status/status.h"

namespace sandbox::broker {

absl::Status InstallSeccomp();

}  // namespace sandbox::broker

#endif  // BROKER_SECCOMP_H_
