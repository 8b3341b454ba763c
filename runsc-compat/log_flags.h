// The log flags of `runsc do` (as runc and gVisor name them), which main.cc
// also accepts before the subcommand as global flags:
//   --log=FILE              the sandbox's warnings and errors
//   --log-format=text|json  logrus text lines or JSON lines (level, msg,
//                           time), as runc writes them
//   --debug-log=FILE|DIR    strace, debug lines and warnings; a DIR (an
//                           existing directory or a path ending in '/')
//                           gets a new file "runsc.log.TIMESTAMP.do" in it;
//                           %TIMESTAMP% and %COMMAND% expand as in gVisor
//   --warn-unsupported      unsupported-syscall notes on stderr as well
// Without them the sandbox's diagnostics are dropped, except the errors
// that end it (exit status 125), which reach stderr once.
#ifndef RUNSC_COMPAT_LOG_FLAGS_H_
#define RUNSC_COMPAT_LOG_FLAGS_H_

#include <stdint.h>

#include <string>
#include <string_view>

#include "runsc-compat/flags.h"
#include "sentry/boot/boot_spec.h"

namespace sandbox::runsc {

// The log flags' table rows, setting `spec`'s log fields (--help's text
// included): part of `runsc do`'s table, and main.cc's global flags.
flags::Table LogFlagTable(boot::BootSpec* spec);

// The debug-log path for `value` at `unix_us` for `command` (gVisor's
// rules, above).
std::string DebugLogPath(std::string_view value, std::string_view command,
                         int64_t unix_us);

}  // namespace sandbox::runsc

#endif  // RUNSC_COMPAT_LOG_FLAGS_H_
