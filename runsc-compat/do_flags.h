// `runsc do`'s flags: what they set (DoOptions), their table (flags.h),
// the checks across them, and `runsc do --help`.
#ifndef RUNSC_COMPAT_DO_FLAGS_H_
#define RUNSC_COMPAT_DO_FLAGS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "runsc-compat/flags.h"
#include "runsc-compat/limit_flags.h"
#include "runsc-compat/network_flags.h"
#include "sentry/boot/boot_spec.h"

namespace sandbox::runsc {

// One --bind=HOST[:GUEST][:ro][:suid][:uds].
struct BindFlag {
  std::string host;   // as given (made absolute by ParseDoFlags)
  std::string guest;  // absolute; default: host
  bool read_only = false;
  // Set-id bits and any owner reach the host (unsafe); else nosuid/nodev.
  bool suid = false;
  // The guest may bind and connect Unix sockets in HOST (host sockets made
  // and connected by the Gofer).
  bool uds = false;
};
// Parses the flag's value; InvalidArgument with the reason on bad input
// (an empty HOST, a relative GUEST, GUEST "/", more than two path parts).
// ":ro", ":suid" and ":uds" may come in any order.
absl::StatusOr<BindFlag> ParseBindFlag(std::string_view value);

// --root: what the sandbox's root file system is.
enum class RootFlag {
  kHost,    // the host's root through the Gofer under an overlay
  kHostRo,  // the same without the overlay
  kTmpfs,   // a tmpfs holding a copy of the program
};

// What `runsc do`'s flags set.
struct DoOptions {
  // The Sentry's options the flags set directly (--strace, --hostname,
  // the log flags, ...); DoCommand fills in the rest.
  boot::BootSpec spec;
  RootFlag root = RootFlag::kHost;
  std::vector<BindFlag> binds;
  LimitFlags limits = DefaultLimits();
  NetworkFlags net;
  bool help = false;  // -h, --help
};

// The table of `runsc do`'s flags setting `o`'s fields, in --help's order:
// the general flags (with the log flags), the limits, the network.
flags::Table DoFlagTable(DoOptions* o);

// Parses argv[1..argc) (argv[0] is "do") into `o`: the flags, then the
// checks that need them all (a PROGRAM given; at most kMaxGoferMounts
// binds; each bind's HOST an existing directory, made absolute). Returns
// the index of PROGRAM, or InvalidArgument with the message for the user.
// With -h or --help, stops there with o->help set.
absl::StatusOr<int> ParseDoFlags(int argc, char* const* argv, DoOptions* o);

// `runsc do --help`, made from the table.
std::string DoHelp();
void PrintDoHelp(int fd);

}  // namespace sandbox::runsc

#endif  // RUNSC_COMPAT_DO_FLAGS_H_
