// runsc: the sandbox's command-line interface.
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "runsc-compat/broker_command.h"
#include "runsc-compat/do_command.h"
#include "runsc-compat/do_flags.h"
#include "runsc-compat/flags.h"
#include "runsc-compat/gofer_command.h"
#include "runsc-compat/log_flags.h"
#include "sentry/boot/boot.h"

namespace {

constexpr char kHelp[] =
    R"(Usage: runsc COMMAND [flags] [args...]

A user-space kernel sandbox: programs run against the Sentry, which
implements Linux in user space; their code runs in stub processes whose
every syscall and fault goes to the Sentry (the systrap platform).

Global flags (before COMMAND, as runc takes them): --log=FILE,
--log-format=text|json, --debug-log=FILE|DIR, --warn-unsupported; they
mean what they mean after 'do' (see 'runsc do --help').

Commands:
  do      run a program in a new sandbox (see 'runsc do --help')
  help    show this help, 'runsc help COMMAND', or 'runsc help syscalls'
          (every x86-64 syscall with its support level)

Internal:
  boot    the Sentry process that 'runsc do' starts (not for direct use)
  gofer   the Gofer process that 'runsc do' starts to serve the host's
          files (not for direct use; flags as //gofer:gofer's)
  broker  the network broker that 'runsc do' starts for --network=host
          and --publish: the only process that opens host sockets for the
          sandbox (not for direct use; flags in broker/broker.h)
)";

void PrintHelp(int fd) { (void)!write(fd, kHelp, sizeof(kHelp) - 1); }

// How many arguments from argv[1] are global flags: the log flags
// (log_flags.h) with their values, which main moves after the command name
// so that `runsc --log=F do ...` is `runsc do --log=F ...`.
size_t CountGlobalFlags(int argc, char** argv) {
  sandbox::boot::BootSpec unused;
  return sandbox::runsc::flags::CountLeading(
      sandbox::runsc::LogFlagTable(&unused), argc, argv, 1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  const size_t globals = CountGlobalFlags(argc, argv);
  if (globals > 0 && 1 + globals < args.size()) {
    // [runsc, G..., cmd, rest...] -> [runsc, cmd, G..., rest...].
    std::rotate(args.begin() + 1, args.begin() + 1 + globals,
                args.begin() + 2 + globals);
  }
  args.push_back(nullptr);
  argc = static_cast<int>(args.size() - 1);
  argv = args.data();
  if (argc < 2) {
    PrintHelp(2);
    return 2;
  }
  std::string_view cmd = argv[1];
  if (cmd == "-h" || cmd == "--help") {
    PrintHelp(1);
    return 0;
  }
  if (cmd == "help") {
    if (argc > 2 && std::string_view(argv[2]) == "do") {
      sandbox::runsc::PrintDoHelp(1);
    } else if (argc > 2 && std::string_view(argv[2]) == "syscalls") {
      std::string s = sandbox::boot::DescribeSyscalls();
      (void)!write(1, s.data(), s.size());
    } else {
      PrintHelp(1);
    }
    return 0;
  }
  if (cmd == "do") return sandbox::runsc::DoCommand(argc - 1, argv + 1);
  if (cmd == "boot") return sandbox::boot::BootMain(argc - 1, argv + 1);
  if (cmd == "gofer") return sandbox::runsc::GoferCommand(argc - 1, argv + 1);
  if (cmd == "broker") {
    return sandbox::runsc::BrokerCommand(argc - 1, argv + 1);
  }
  absl::FPrintF(stderr, "runsc: unknown command '%s'\nTry 'runsc --help'.\n",
                cmd);
  return 2;
}
