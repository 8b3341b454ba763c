// The Sentry's log: one write(2) per line, so lines from concurrent task
// threads never interleave.
//
// Warnings (unsupported syscalls, sandbox failures) go to the warning FD
// (stderr by default); debug lines (strace, info) to the debug FD, which is
// the warning FD unless --debug-log names a file. A negative FD drops.
#ifndef SENTRY_KERNEL_LOG_H_
#define SENTRY_KERNEL_LOG_H_

#include <string_view>

#include "absl/strings/str_format.h"

namespace sandbox::kernel {

void SetLogFds(int warning_fd, int debug_fd);
int DebugLogFd();

// Writes `line` plus a newline, prefixed with "runsc: " for warnings.
void WriteWarning(std::string_view line);
void WriteDebug(std::string_view line);

template <typename... Args>
void LogWarning(const absl::FormatSpec<Args...>& fmt, const Args&... args) {
  WriteWarning(absl::StrFormat(fmt, args...));
}
template <typename... Args>
void LogDebug(const absl::FormatSpec<Args...>& fmt, const Args&... args) {
  WriteDebug(absl::StrFormat(fmt, args...));
}

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_LOG_H_
