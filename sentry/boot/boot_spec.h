// BootSpec: what `runsc do` hands the Sentry (`runsc boot`): the program,
// its arguments and environment, and the Sentry's options. Passed through a
// memfd so the guest's environment never becomes the Sentry's own.
//
// Wire format (little-endian, this host only): "RSB1", then u32 flags, then
// strings (u32 length + bytes) exe_path, cwd, hostname, debug_log, then
// u32 argc + argv strings, u32 envc + envp strings.
#ifndef SENTRY_BOOT_BOOT_SPEC_H_
#define SENTRY_BOOT_BOOT_SPEC_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sandbox::boot {

struct BootSpec {
  std::string exe_path;  // absolute path of the program (AT_EXECFN, exe)
  std::string cwd;
  std::string hostname;
  std::string debug_log;  // file for strace/debug lines; empty: stderr
  bool strace = false;
  bool strace_summary = false;
  std::vector<std::string> argv;
  std::vector<std::string> envp;
};

std::string SerializeBootSpec(const BootSpec& spec);
// Rejects truncated or oversized input (at most 256 MiB, 1M strings).
absl::StatusOr<BootSpec> ParseBootSpec(const std::string& data);

// Writes the spec to a new sealed memfd; returns the FD (close-on-exec).
absl::StatusOr<int> WriteBootSpecToMemfd(const BootSpec& spec);
absl::StatusOr<BootSpec> ReadBootSpecFromFd(int fd);

}  // namespace sandbox::boot

#endif  // SENTRY_BOOT_BOOT_SPEC_H_
