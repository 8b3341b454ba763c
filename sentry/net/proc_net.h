// The files of /proc/net (and /proc/PID/net, the same for a namespace):
// a registry of generators, so each family owns its file without procfs
// knowing it. procfs (sentry/fs/proc) lists the names registered when it
// is built and calls the generator on every read (seq_file: the state of
// the moment).
//
// Built in: "dev" and "if_inet6" (stack::Interfaces), and header-only
// "netlink" and "unix" until their families register the real ones:
//   netlink::Register():  RegisterProcNetFile("netlink", ...)
//   the AF_UNIX family:   RegisterProcNetFile("unix", fn), with fn giving
//     Linux's unix_seq_show text, header line included.
// Register before procfs is built (RegisterBuiltinFamilies runs at boot
// before the first mount); a name registered later is readable only if it
// was listed already. Replacing a generator is fine at any time.
//
// Thread-safety: the registry is under its own mutex (a leaf); generators
// run without it held.
#ifndef SENTRY_NET_PROC_NET_H_
#define SENTRY_NET_PROC_NET_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sentry/net/namespace.h"

namespace sandbox::net {

using ProcNetGenerator = std::function<std::string(NetNamespace&)>;

// Adds or replaces /proc/net/`name`.
void RegisterProcNetFile(std::string name, ProcNetGenerator gen);
// The registered names, sorted.
std::vector<std::string> ProcNetFileNames();
// The content of /proc/net/`name` in `ns`, or nullopt if not registered.
std::optional<std::string> GenerateProcNetFile(std::string_view name,
                                               NetNamespace& ns);

// The header lines of /proc/net/unix and /proc/net/netlink.
inline constexpr std::string_view kProcNetUnixHeader =
    "Num       RefCount Protocol Flags    Type St Inode Path\n";
inline constexpr std::string_view kProcNetNetlinkHeader =
    "sk               Eth Pid        Groups   Rmem     Wmem     Dump  Locks  "
    "  Drops    Inode\n";

}  // namespace sandbox::net

#endif  // SENTRY_NET_PROC_NET_H_
