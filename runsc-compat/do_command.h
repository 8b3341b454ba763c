// `runsc do`: runs one program in a new sandbox and returns its status.
#ifndef RUNSC_COMPAT_DO_COMMAND_H_
#define RUNSC_COMPAT_DO_COMMAND_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace sandbox::runsc {

// One --bind=HOST[:GUEST][:ro][:suid][:uds].
struct BindFlag {
  std::string host;   // as given (made absolute by DoCommand)
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

// argv[0] is "do". Returns the CLI's exit status.
int DoCommand(int argc, char** argv);
void PrintDoHelp(int fd);

}  // namespace sandbox::runsc

#endif  // RUNSC_COMPAT_DO_COMMAND_H_
