// The Sentry's seccomp allowlist: the host syscalls the Sentry makes after
// boot set-up (measured, docs/sentry-host-syscalls.md, and read from the
// code for rare paths), plus the platform's own (SystrapSeccompSyscalls),
// with arguments pinned where that is cheap. Any other host syscall kills
// the whole Sentry (SECCOMP_RET_KILL_PROCESS), or, in the debug mode
// (`runsc do --debug-seccomp`), is reported on stderr and fails with ENOSYS.
//
// No host file can be opened (open/openat/openat2 fail with EACCES: glibc
// and Abseil open /sys and /dev/tty files lazily in paths that handle the
// failure), no process started (execve, fork-like clone), no socket made
// or connected, no mount, namespace, ptrace, BPF or key call; mmap and
// mprotect cannot make memory executable.
//
// The rule list is data (SentryAllowlist) so that unit tests can check it
// without installing it; InstallSentryFilter turns it into BPF with
// libseccomp and loads it on every thread of the process (TSYNC).
#ifndef SENTRY_CONFINE_SECCOMP_H_
#define SENTRY_CONFINE_SECCOMP_H_

#include <stdint.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace sandbox::confine {

// (arg[index] & mask) == value.
struct ArgCheck {
  unsigned index = 0;
  uint64_t mask = ~uint64_t{0};
  uint64_t value = 0;
};

// One rule: syscall `nr` gets `action` when every check holds. Several
// rules for one syscall are alternatives (any may match); a syscall no rule
// matches gets the default action.
struct Rule {
  enum Action { kAllow, kErrno };
  int nr = -1;
  std::vector<ArgCheck> args;
  Action action = kAllow;
  int errno_value = 0;  // kErrno only
  const char* why = "";
};

struct AllowlistOptions {
  // The Sentry's host pid: signals it queues go to itself only.
  pid_t self_pid = 0;
  // A Gofer mount serves host Unix sockets (runsc do --bind=...:uds): the
  // Sentry listens, accepts and shuts down on the sockets the Gofer
  // donates (sentry/net/hostunix). Never socket, bind or connect.
  bool host_sockets = false;
  // The sandbox has a network broker (runsc do --network=host or
  // --publish): the Sentry shuts down, reads and sets options of, and asks
  // FIONREAD/SIOCOUTQ of the host Internet sockets the broker donates
  // (sentry/net/hostinet). Never socket, bind or connect: the broker makes
  // and connects them.
  bool host_network = false;
};

// The rules, in a fixed order (documentation order; see seccomp.cc).
std::vector<Rule> SentryAllowlist(const AllowlistOptions& options);

enum class SeccompMode {
  kKill,   // default action SECCOMP_RET_KILL_PROCESS
  kTrace,  // debug: SECCOMP_RET_TRAP; a SIGSYS handler reports the call on
           // stderr and makes it fail with ENOSYS
};

// Validates `rules` (numbers known to libseccomp, argument indexes < 6, no
// rule both allowing and failing one syscall) and returns the first problem.
absl::Status CheckRules(const std::vector<Rule>& rules);

// Loads the filter on all threads (SECCOMP_FILTER_FLAG_TSYNC). Requires
// no_new_privs (ConfineProcess sets it) or CAP_SYS_ADMIN. Irreversible.
absl::Status InstallSentryFilter(const std::vector<Rule>& rules,
                                 SeccompMode mode);

// The syscall's name for messages ("openat"), or its number as text.
std::string SyscallName(int nr);

}  // namespace sandbox::confine

#endif  // SENTRY_CONFINE_SECCOMP_H_
