// The Sentry's entry point (`runsc boot`): creates the platform, the kernel
// and the first process from a BootSpec, runs it, and reports how it ended.
//
// Process model: `runsc do` (the CLI) forks and executes `runsc boot` with
// the spec memfd, the executable's FD and a status pipe; the Sentry is a
// separate process so that its own confinement (namespaces, seccomp) will
// apply to it alone. It dies with the CLI (PR_SET_PDEATHSIG), and its stubs
// die with it.
#ifndef SENTRY_BOOT_BOOT_H_
#define SENTRY_BOOT_BOOT_H_

#include <stdint.h>

#include <string>

namespace sandbox::boot {

// How the sandbox ended, written once to the status FD by `runsc boot`.
struct BootStatus {
  static constexpr uint32_t kMagic = 0x52534253;  // "SBSR"
  enum Kind : uint32_t {
    kGuestExited = 1,    // value: the shell status (code, or 128+signal)
    kExecFailed = 2,     // value: the errno of the failed exec
    kSandboxFailed = 3,  // value: unused; the Sentry printed why
  };
  uint32_t magic = kMagic;
  uint32_t kind = kSandboxFailed;
  int32_t value = 0;
  uint32_t reserved = 0;
};

// The FDs `runsc do` passes to `runsc boot`.
inline constexpr int kSpecFd = 3;
inline constexpr int kExecFd = 4;
inline constexpr int kStatusFd = 5;

// Runs the sandbox; returns the process exit code for `runsc boot`.
int BootMain(int argc, char** argv);

// The syscall table's support levels, one line per number (`runsc help
// syscalls`). Here so that the CLI reaches the Sentry only through boot.
std::string DescribeSyscalls();

}  // namespace sandbox::boot

#endif  // SENTRY_BOOT_BOOT_H_
