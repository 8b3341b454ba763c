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

flags::Table LogFlagTable(boot::BootSpec* spec) {
  using flags::Arg;
  return {
      {.name = "log",
       .arg = Arg::kRequired,
       .value_name = "FILE",
       .help = {{"", R"(append the sandbox's warnings and errors
(unsupported syscalls, failures) to FILE; without
it they are dropped, except errors that end the
sandbox, which reach stderr (exit status 125))"}},
       .set = flags::SetNonEmpty(&spec->log, "--log needs a FILE")},
      {.name = "log-format",
       .arg = Arg::kRequired,
       .value_name = "text|json",
       .default_value = "text",
       .help = {{"", R"(--log's lines: 'time="..." level=... msg="..."'
(default) or JSON lines with level, msg and time)"}},
       .set = flags::SetChoice<bool>(&spec->log_json,
                                     {{"text", false}, {"json", true}},
                                     "expected --log-format=text or json")},
      {.name = "debug-log",
       .arg = Arg::kRequired,
       .value_name = "FILE|DIR",
       .help = {{"", R"(write strace, debug lines and warnings to FILE, or
to a new runsc.log.%TIMESTAMP%.%COMMAND% in DIR (a
directory, or a path ending in '/'); default: stderr
with --strace/--strace-summary, else nowhere)"}},
       .set =
           [spec](const flags::Given& g) {
             if (g.value.empty()) {
               return absl::InvalidArgumentError(
                   "--debug-log needs a FILE or DIR");
             }
             timespec ts;
             clock_gettime(CLOCK_REALTIME, &ts);
             spec->debug_log = DebugLogPath(
                 g.value, "do", ts.tv_sec * 1000000LL + ts.tv_nsec / 1000);
             return absl::OkStatus();
           }},
      {.name = "warn-unsupported",
       .help = {{"", R"(also print a note on stderr the first time the
program makes each syscall the sandbox does not
implement (for compatibility testing))"}},
       .set = flags::SetTrue(&spec->warn_unsupported)},
  };
}

}  // namespace sandbox::runsc
