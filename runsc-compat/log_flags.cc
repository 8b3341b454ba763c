#include "runsc-compat/log_flags.h"

#include <sys/stat.h>
#include <time.h>

#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace sandbox::runsc {

std::string DebugLogPath(std::string_view value, std::string_view command,
                         int64_t unix_us) {
  std::string path(value);
  struct stat st;
  if (!path.empty() && path.back() != '/' && stat(path.c_str(), &st) == 0 &&
      S_ISDIR(st.st_mode)) {
    path.push_back('/');
  }
  if (!path.empty() && path.back() == '/') {
    path.append("runsc.log.%TIMESTAMP%.%COMMAND%");
  }
  const time_t secs = static_cast<time_t>(unix_us / 1000000);
  tm t;
  gmtime_r(&secs, &t);
  // gVisor's layout: Go's "20060102-150405.000000".
  const std::string stamp = absl::StrFormat(
      "%04d%02d%02d-%02d%02d%02d.%06d", t.tm_year + 1900, t.tm_mon + 1,
      t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, unix_us % 1000000);
  return absl::StrReplaceAll(
      path, {{"%TIMESTAMP%", stamp}, {"%COMMAND%", std::string(command)}});
}

LogFlag ParseLogFlag(std::string_view arg, boot::BootSpec* spec,
                     std::string* error) {
  auto value = [&](std::string_view name, std::string_view* v) {
    if (arg.substr(0, name.size()) != name) return false;
    *v = arg.substr(name.size());
    return true;
  };
  std::string_view v;
  if (arg == "--warn-unsupported") {
    spec->warn_unsupported = true;
  } else if (value("--log=", &v)) {
    if (v.empty()) {
      *error = "--log needs a FILE";
      return LogFlag::kBad;
    }
    spec->log = std::string(v);
  } else if (value("--log-format=", &v)) {
    if (v != "text" && v != "json") {
      *error = absl::StrFormat("%s: expected --log-format=text or json", arg);
      return LogFlag::kBad;
    }
    spec->log_json = v == "json";
  } else if (value("--debug-log=", &v)) {
    if (v.empty()) {
      *error = "--debug-log needs a FILE or DIR";
      return LogFlag::kBad;
    }
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    spec->debug_log =
        DebugLogPath(v, "do", ts.tv_sec * 1000000LL + ts.tv_nsec / 1000);
  } else {
    return LogFlag::kNotALogFlag;
  }
  return LogFlag::kParsed;
}

}  // namespace sandbox::runsc
