// The Sentry's log: one write(2) per line, so lines from concurrent task
// threads never interleave.
//
// The guest's stdio carries only what the guest writes, so the sandbox's
// diagnostics go to sinks of their own (SetLogSinks, set once at boot):
//   - the log (`--log=FILE`): warnings and errors, one line each, as text
//     (`time="..." level=warning msg="..."`, logrus's text form, as runc
//     writes) or JSON lines ({"level":..,"msg":..,"time":..}, as runc's
//     --log-format=json);
//   - the debug log (`--debug-log`, or stderr with --strace): strace and
//     debug lines, and every warning and error too, plain text;
//   - stderr: only errors that end the sandbox (LogError, "runsc: " prefix),
//     the warning of --unconfined (LogLoudWarning) and, with
//     `--warn-unsupported`, unsupported-syscall notes (LogUnsupported). A line
//     goes to stderr once even when the debug log is stderr too.
// A negative FD drops that sink; with no sinks set, warnings are dropped.
#ifndef SENTRY_KERNEL_LOG_H_
#define SENTRY_KERNEL_LOG_H_

#include <string>
#include <string_view>

#include "absl/strings/str_format.h"

namespace sandbox::kernel {

enum class LogFormat { kText, kJson };
enum class LogLevel { kDebug, kWarning, kError };

struct LogSinks {
  int log_fd = -1;  // --log: warnings and errors in `log_format`
  LogFormat log_format = LogFormat::kText;
  int debug_fd = -1;  // --debug-log (or stderr for --strace): everything
  int stderr_fd = 2;  // errors; unsupported notes with warn_unsupported
  bool warn_unsupported = false;
};

// Not thread-safe against concurrent logging: call before the first task
// runs (boot) or from a single-threaded test.
void SetLogSinks(const LogSinks& sinks);
int DebugLogFd();

// One log line in `format` at `level`, stamped with `unix_ns` (exposed for
// tests): `time="2026-12-01T16:20:08.123456789Z" level=warning msg="..."`
// or {"level":"warning","msg":"...","time":"..."}; quotes, backslashes
// and control characters escaped as JSON does (logrus quotes the same way).
std::string FormatLogLine(LogFormat format, LogLevel level,
                          std::string_view msg, int64_t unix_ns);

void WriteDebug(std::string_view line);
void WriteWarning(std::string_view line);
void WriteUnsupported(std::string_view line);
void WriteLoudWarning(std::string_view line);
void WriteError(std::string_view line);

template <typename... Args>
void LogDebug(const absl::FormatSpec<Args...>& fmt, const Args&... args) {
  WriteDebug(absl::StrFormat(fmt, args...));
}
// A problem the sandbox survives: the log and the debug log only.
template <typename... Args>
void LogWarning(const absl::FormatSpec<Args...>& fmt, const Args&... args) {
  WriteWarning(absl::StrFormat(fmt, args...));
}
// A syscall the guest made that the Sentry does not implement (fully): a
// warning, also on stderr with --warn-unsupported.
template <typename... Args>
void LogUnsupported(const absl::FormatSpec<Args...>& fmt, const Args&... args) {
  WriteUnsupported(absl::StrFormat(fmt, args...));
}
// A warning the user asked for by a debugging flag and must not miss
// (--unconfined): the logs and stderr.
template <typename... Args>
void LogLoudWarning(const absl::FormatSpec<Args...>& fmt, const Args&... args) {
  WriteLoudWarning(absl::StrFormat(fmt, args...));
}
// The sandbox cannot go on (its exit status is 125): stderr and the logs.
template <typename... Args>
void LogError(const absl::FormatSpec<Args...>& fmt, const Args&... args) {
  WriteError(absl::StrFormat(fmt, args...));
}

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_LOG_H_
