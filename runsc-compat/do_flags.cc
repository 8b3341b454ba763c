#include "runsc-compat/do_flags.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "runsc-compat/log_flags.h"

namespace sandbox::runsc {
namespace {

constexpr char kDoUsage[] =
    R"(Usage: runsc do [flags] [--] PROGRAM [ARGS...]

Runs PROGRAM in a new sandbox with the caller's arguments, environment,
working directory and standard input/output/error, and exits with its
status (128+N when it is killed by signal N). SIGINT, SIGTERM, SIGHUP,
SIGQUIT, SIGUSR1 and SIGUSR2 sent to runsc are passed to the program. When
runsc ends, every process of the sandbox ends with it.

The sandbox's root file system is, by default, the host's "/" served
read-only by a Gofer process (`runsc gofer`, confined: the host's /proc,
/sys, /dev, /tmp, /run and every other mount point below "/" are served as
empty directories), under an in-memory
overlay: the program's changes stay in the sandbox's memory and vanish
with it (the host is never written). /dev, /proc and /sys are the
sandbox's own, /tmp and /dev/shm are empty tmpfs mounts; the sandbox's
own mounts are locked (umount EINVAL, as Linux's MNT_LOCKED). The working
directory is the caller's, if the sandbox has it (else "/", with a
warning in --log).

PROGRAM is found as execvp(3) would, inside the sandbox's file system: a
name with a '/' is used as is (relative to the working directory); else
each directory of the program's PATH (default "/bin:/usr/bin") is tried,
past ones where it is missing or not executable. "#!" scripts and
dynamically linked programs (PT_INTERP) load as execve loads them.

Flags:
)";

constexpr char kDoNotes[] =
    R"(
The program's standard output and error carry only what it writes: the
sandbox's own diagnostics go to --log and --debug-log (see above). These
flags may also come before 'do' (runsc --log=FILE do ...).

Exit status: the program's, or 2 for bad flags, 125 if the sandbox (or
its Gofer) failed, 126 if PROGRAM cannot be executed (found but not
executable, not ELF, no permission), 127 if it is not found.
)";

// The general flags, the log flags among them (--help's "Flags:").
flags::Table GeneralFlags(DoOptions* o) {
  using flags::Arg;
  flags::Table t = {
      {.name = "root",
       .arg = Arg::kRequired,
       .value_name = "host|host-ro|tmpfs",
       .default_value = "host",
       .help = {{"--root=host",
                 R"(the host's root through the Gofer, read-only, under
an in-memory overlay (default))"},
                {"--root=host-ro",
                 "the same without the overlay: writes fail with EROFS"},
                {"--root=tmpfs",
                 R"(an in-memory root holding only a copy of PROGRAM
(an absolute path, copied from the host) and an empty
working directory)"}},
       .set = flags::SetChoice<RootFlag>(
           &o->root,
           {{"host", RootFlag::kHost},
            {"host-ro", RootFlag::kHostRo},
            {"tmpfs", RootFlag::kTmpfs}},
           "expected --root=host or --root=tmpfs (or --root=host-ro)")},
      {.name = "bind",
       .arg = Arg::kRequired,
       .value_name = "HOST[:GUEST][:ro][:suid][:uds]",
       .help = {{"", R"(mount the host directory HOST at GUEST (default: the
same path) over the root, served by the Gofer on its
own connection; writable (writes reach the host)
unless ':ro'. Repeatable. GUEST is created if missing
and its parent is writable (e.g. below /tmp).
nosuid and nodev on both sides: the host's files get
no set-user/group-ID bits (cleared on create and
chmod; directories keep set-group-ID), no device
nodes, no security.* or trusted.* xattrs, and only
the caller's uid and gid as owners (chown to another
id is EINVAL). ':suid' lets modes and owners through
as asked: UNSAFE, a setuid-root file planted by the
sandbox gives root to any host user who runs it.
':uds' lets the guest bind and connect Unix sockets
in HOST: a socket bound there is a host socket that
host programs can connect to, and a connect reaches
the host socket there (the Gofer makes both; no
other host socket is reachable, no symlink out of
HOST is followed). Without it, the host's socket
files in HOST refuse connections (ECONNREFUSED).)"}},
       .set =
           [o](const flags::Given& g) {
             absl::StatusOr<BindFlag> b = ParseBindFlag(g.value);
             if (!b.ok()) return b.status();
             o->binds.push_back(*std::move(b));
             return absl::OkStatus();
           }},
      {.name = "strace",
       .help = {{"", R"(log every syscall with its arguments and result, as
strace -tt -T does: entry time, then the time the
Sentry took in <seconds>)"}},
       .set = flags::SetTrue(&o->spec.strace)},
      {.name = "strace-summary",
       .help = {{"", R"(print a per-syscall count table when the sandbox
ends, then where time went outside syscalls: guest
faults and host mappings (mm), Gofer calls by type
with the time waited (gofer), stub calls and
guest-side copies (systrap))"}},
       .set = flags::SetTrue(&o->spec.strace_summary)},
  };
  for (flags::Flag& f : LogFlagTable(&o->spec)) t.push_back(std::move(f));
  flags::Table rest = {
      {.name = "hostname",
       .arg = Arg::kRequired,
       .value_name = "NAME",
       .help = {{"", "the sandbox's host name (default: the host's)"}},
       .set = flags::SetString(&o->spec.hostname)},
      {.name = "unconfined",
       .help = {{"", R"(debugging only: the Sentry skips its confinement
(namespaces, empty root, capabilities, seccomp))"}},
       .set = flags::SetTrue(&o->spec.unconfined)},
      {.name = "debug-seccomp",
       .help = {{"", R"(a host syscall outside the Sentry's seccomp allowlist
is reported on stderr and fails with ENOSYS instead of
killing the sandbox)"}},
       .set = flags::SetTrue(&o->spec.debug_seccomp)},
      {.name = "help",
       .alias = 'h',
       .help = {{"-h, --help", "show this help"}},
       .set = flags::SetTrue(&o->help),
       .stops = true},
  };
  for (flags::Flag& f : rest) t.push_back(std::move(f));
  return t;
}

// Each bind's host directory, absolute and checked here so that a typo is
// a usage error rather than a Gofer failure.
absl::Status CheckBinds(std::vector<BindFlag>* binds) {
  if (binds->size() > boot::kMaxGoferMounts) {
    return absl::InvalidArgumentError(
        absl::StrFormat("at most %d --bind flags", boot::kMaxGoferMounts));
  }
  for (BindFlag& b : *binds) {
    char real[PATH_MAX];
    struct stat st;
    if (realpath(b.host.c_str(), real) == nullptr || stat(real, &st) != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--bind: %s: %s", b.host, strerror(errno)));
    }
    if (!S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--bind: %s: not a directory", b.host));
    }
    if (b.guest == b.host && b.host[0] != '/') b.guest = real;
    b.host = real;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BindFlag> ParseBindFlag(std::string_view value) {
  std::vector<std::string> parts =
      absl::StrSplit(absl::string_view(value.data(), value.size()), ':');
  BindFlag b;
  for (int k = 0; k < 3 && parts.size() > 1; ++k) {
    if (!b.read_only && parts.back() == "ro") {
      b.read_only = true;
      parts.pop_back();
    } else if (!b.suid && parts.back() == "suid") {
      b.suid = true;
      parts.pop_back();
    } else if (!b.uds && parts.back() == "uds") {
      b.uds = true;
      parts.pop_back();
    }
  }
  if (parts.size() > 2 || parts[0].empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--bind=%s: expected HOST[:GUEST][:ro][:suid][:uds] (no ':' in "
        "paths)",
        value));
  }
  b.host = parts[0];
  b.guest = parts.size() == 2 ? parts[1] : parts[0];
  if (b.guest.empty() || b.guest[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrFormat("--bind=%s: GUEST must be an absolute path", value));
  }
  if (b.guest.find_first_not_of('/') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--bind=%s: cannot bind over the root", value));
  }
  return b;
}

flags::Table DoFlagTable(DoOptions* o) {
  flags::Table t = GeneralFlags(o);
  for (flags::Flag& f : LimitFlagTable(&o->limits)) t.push_back(std::move(f));
  for (flags::Flag& f : NetworkFlagTable(&o->net)) t.push_back(std::move(f));
  return t;
}

absl::StatusOr<int> ParseDoFlags(int argc, char* const* argv, DoOptions* o) {
  absl::StatusOr<int> next = flags::Parse(DoFlagTable(o), argc, argv, 1);
  if (!next.ok() || o->help) return next;
  if (*next >= argc) return absl::InvalidArgumentError("no PROGRAM given");
  if (absl::Status s = CheckBinds(&o->binds); !s.ok()) return s;
  return next;
}

std::string DoHelp() {
  DoOptions unused;
  return std::string(kDoUsage) + flags::FormatHelp(GeneralFlags(&unused)) +
         kDoNotes + "\n" + LimitFlagsHelp() + "\n" + NetworkFlagsHelp();
}

void PrintDoHelp(int fd) {
  const std::string help = DoHelp();
  (void)!write(fd, help.data(), help.size());
}

}  // namespace sandbox::runsc
