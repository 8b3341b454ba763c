#include "broker/seccomp.h"

#include <errno.h>
#include <seccomp.h>
#include <sys/socket.h>

#include "hostconfine/seccomp_filter.h"

namespace sandbox::broker {
namespace {

// Calls allowed with any arguments.
constexpr int kAllowed[] = {
    // Host sockets and the Sentry's connection.
    SCMP_SYS(connect),
    SCMP_SYS(accept4),
    SCMP_SYS(recvmsg),
    SCMP_SYS(sendmsg),
    SCMP_SYS(recvfrom),
    SCMP_SYS(sendto),
    SCMP_SYS(getsockopt),
    SCMP_SYS(setsockopt),
    SCMP_SYS(getsockname),
    SCMP_SYS(poll),
    SCMP_SYS(ppoll),
    SCMP_SYS(read),
    SCMP_SYS(write),
    SCMP_SYS(close),
    SCMP_SYS(fcntl),
    // With the C++ runtime's calls (AllowRuntime; its getrandom also makes
    // the DNS query IDs).
    SCMP_SYS(sched_getaffinity),
};

}  // namespace

absl::Status InstallSeccomp() {
  absl::StatusOr<hostconfine::SeccompFilter> f =
      hostconfine::SeccompFilter::KillByDefault();
  if (!f.ok()) return f.status();
  absl::Status s = f->Allow(kAllowed, "allow");
  if (!s.ok()) return s;
  s = f->AllowRuntime();
  if (!s.ok()) return s;
  for (int family : {AF_INET, AF_INET6}) {
    s = f->AllowIf(SCMP_SYS(socket),
                   SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(family)),
                   "socket");
    if (!s.ok()) return s;
  }
  s = f->AllowIf(SCMP_SYS(socketpair), SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
                 "socketpair");
  if (!s.ok()) return s;
  s = f->AllowThreadsOnly();
  if (!s.ok()) return s;
  // glibc and Abseil may probe /proc or /sys lazily: fail, never kill.
  for (int nr : {SCMP_SYS(open), SCMP_SYS(openat)}) {
    s = f->Fail(nr, EACCES, "open");
    if (!s.ok()) return s;
  }
  return f->Load();
}

}  // namespace sandbox::broker
