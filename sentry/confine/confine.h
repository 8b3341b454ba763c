// Self-confinement of the Sentry (`runsc boot`), in two stages because of
// what Linux applies per thread and what the platform needs:
//
// Stage 1, ConfineProcess, while the Sentry is still single-threaded: after
// the boot spec is read and the debug log opened, before the platform
// exists. Namespaces, the root, capabilities and no_new_privs belong to a
// thread (unshare, pivot_root, capset, PR_SET_NO_NEW_PRIVS affect the
// calling thread only), so they are set before any thread exists and every
// later thread (platform probes and service thread, task threads) and the
// stubs inherit them. In order:
//   1. Every FD but 0, 1, 2 and `keep_fds` is closed (close_range over the
//      gaps), so nothing inherited by accident survives.
//   2. Host facts that Abseil reads from /sys lazily are read now, while
//      they are visible (the CPU count; the TSC frequency where the host
//      has a file for it, else Abseil measures it later, without files).
//   3. Without CAP_SYS_ADMIN (a non-root caller), a new user namespace
//      mapping only the caller's uid and gid to themselves.
//   4. New mount, IPC and UTS namespaces, and a new, empty network
//      namespace (`new_network`); mount propagation to the host cut.
//   5. A 4 KiB tmpfs (nosuid, nodev, noexec) becomes the root through
//      pivot_root; the old root is detached and the new one remounted
//      read-only: no host file is reachable by path any more. The working
//      directory is "/".
//   6. Secure bits locked (no capability regained through uid 0), every
//      capability dropped from the bounding, ambient, inheritable,
//      permitted and effective sets (the platform needs none: stubs are the
//      Sentry's own children with its uid, signalled and pinned without
//      privilege), then no_new_privs.
// Stage 2, InstallSentryFilter (seccomp.h), the last step before the first
// guest instruction: after the platform, the memory file, the Gofer
// connection and the root mount exist, once every host call made only at
// set-up is done. It must come after the platform because the source stub
// every stub is cloned from must not inherit the Sentry's filter; TSYNC puts
// it on the threads that already run.
//
// Not done (see README.md): a PID namespace (stubs report their own tids,
// which must be the Sentry's view), a change of uid, RLIMIT_NOFILE.
#ifndef SENTRY_CONFINE_CONFINE_H_
#define SENTRY_CONFINE_CONFINE_H_

#include <vector>

#include "absl/status/status.h"

namespace sandbox::confine {

struct ConfineOptions {
  // FDs besides 0, 1 and 2 that stay open (status pipe, debug log, donated
  // files and sockets). Everything else is closed.
  std::vector<int> keep_fds;
  bool new_network = true;
};

// Stage 1. Fails (naming the step) if the process has more than one thread
// or a step is refused; the process is then partly confined and must exit.
absl::Status ConfineProcess(const ConfineOptions& options);

// Step 1 alone: closes every FD of the process except 0, 1, 2 and `keep`.
absl::Status CloseFdsExcept(std::vector<int> keep);

// Step 6 alone (also for tests in a forked child): drops every capability
// and sets no_new_privs.
absl::Status DropAllCapabilities();

}  // namespace sandbox::confine

#endif  // SENTRY_CONFINE_CONFINE_H_
