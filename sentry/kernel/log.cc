#include "sentry/kernel/log.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <string>

namespace sandbox::kernel {
namespace {

// Set once by SetLogSinks before task threads exist; read without locks.
std::atomic<int> g_log_fd{-1};
std::atomic<bool> g_json{false};
std::atomic<int> g_debug_fd{-1};
std::atomic<int> g_stderr_fd{2};
std::atomic<bool> g_warn_unsupported{false};

void WriteAll(int fd, const std::string& buf) {
  if (fd < 0) return;
  const char* p = buf.data();
  size_t left = buf.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= n;
  }
}

void WriteLine(int fd, std::string_view prefix, std::string_view line) {
  if (fd < 0) return;
  std::string buf;
  buf.reserve(prefix.size() + line.size() + 1);
  buf.append(prefix).append(line).push_back('\n');
  WriteAll(fd, buf);
}

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "error";
}

// `s` between double quotes, escaped as a JSON string.
void AppendQuoted(std::string* out, std::string_view s) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          absl::StrAppendFormat(out, "\\u%04x", c);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

// Sends a warning or error to the log (--log), formatted.
void ToLogs(LogLevel level, std::string_view line) {
  const int log_fd = g_log_fd.load(std::memory_order_relaxed);
  if (log_fd >= 0) {
    WriteAll(log_fd, FormatLogLine(g_json.load(std::memory_order_relaxed)
                                       ? LogFormat::kJson
                                       : LogFormat::kText,
                                   level, line, RealtimeNs()));
  }
}

// The line, "runsc: "-prefixed, to the debug log and, if `to_stderr`, to
// stderr: once when the two are the same FD.
void ToDebugAndStderr(std::string_view line, bool to_stderr) {
  const int debug_fd = g_debug_fd.load(std::memory_order_relaxed);
  const int stderr_fd = g_stderr_fd.load(std::memory_order_relaxed);
  if (!to_stderr || debug_fd != stderr_fd) WriteLine(debug_fd, "runsc: ", line);
  if (to_stderr) WriteLine(stderr_fd, "runsc: ", line);
}

}  // namespace

void SetLogSinks(const LogSinks& sinks) {
  g_log_fd.store(sinks.log_fd);
  g_json.store(sinks.log_format == LogFormat::kJson);
  g_debug_fd.store(sinks.debug_fd);
  g_stderr_fd.store(sinks.stderr_fd);
  g_warn_unsupported.store(sinks.warn_unsupported);
}

int DebugLogFd() { return g_debug_fd.load(); }

std::string FormatLogLine(LogFormat format, LogLevel level,
                          std::string_view msg, int64_t unix_ns) {
  const time_t secs = static_cast<time_t>(unix_ns / 1000000000LL);
  const int64_t frac = unix_ns % 1000000000LL;
  tm t;
  gmtime_r(&secs, &t);
  char stamp[64];
  snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ",
           t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min,
           t.tm_sec, static_cast<long long>(frac));
  std::string out;
  out.reserve(msg.size() + 80);
  if (format == LogFormat::kJson) {
    out.append("{\"level\":\"").append(LevelName(level)).append("\",\"msg\":");
    AppendQuoted(&out, msg);
    out.append(",\"time\":\"").append(stamp).append("\"}\n");
  } else {
    out.append("time=\"").append(stamp).append("\" level=");
    out.append(LevelName(level)).append(" msg=");
    AppendQuoted(&out, msg);
    out.push_back('\n');
  }
  return out;
}

void WriteDebug(std::string_view line) {
  WriteLine(g_debug_fd.load(std::memory_order_relaxed), "", line);
}

void WriteWarning(std::string_view line) {
  ToLogs(LogLevel::kWarning, line);
  WriteLine(g_debug_fd.load(std::memory_order_relaxed), "runsc: ", line);
}

void WriteUnsupported(std::string_view line) {
  ToLogs(LogLevel::kWarning, line);
  ToDebugAndStderr(line, g_warn_unsupported.load(std::memory_order_relaxed));
}

void WriteLoudWarning(std::string_view line) {
  ToLogs(LogLevel::kWarning, line);
  ToDebugAndStderr(line, true);
}

void WriteError(std::string_view line) {
  ToLogs(LogLevel::kError, line);
  ToDebugAndStderr(line, true);
}

}  // namespace sandbox::kernel
