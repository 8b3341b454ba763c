#include "gofer/seccomp.h"

#include <fcntl.h>
#include <seccomp.h>
#include <sys/socket.h>

#include "hostconfine/seccomp_filter.h"

namespace gofer {
namespace {

// Debian 12's libseccomp predates it; the number is fixed on x86-64.
constexpr int kSysFchmodat2 = 452;

// Calls allowed with any arguments.
constexpr int kAllowed[] = {
    // The connection.
    SCMP_SYS(recvmsg), SCMP_SYS(sendmsg), SCMP_SYS(write), SCMP_SYS(close),
    SCMP_SYS(fcntl), SCMP_SYS(lseek),
    // File serving, all relative to directory FDs.
    SCMP_SYS(openat2), SCMP_SYS(newfstatat), SCMP_SYS(fstat), SCMP_SYS(statx),
    SCMP_SYS(fstatfs), SCMP_SYS(getdents64), SCMP_SYS(mkdirat),
    SCMP_SYS(mknodat), SCMP_SYS(symlinkat), SCMP_SYS(linkat),
    SCMP_SYS(readlinkat), SCMP_SYS(unlinkat), SCMP_SYS(renameat2),
    SCMP_SYS(renameat),  // glibc's renameat2() with flags 0 calls renameat
    SCMP_SYS(fchownat), SCMP_SYS(fchmod), kSysFchmodat2, SCMP_SYS(utimensat),
    SCMP_SYS(fsync), SCMP_SYS(ftruncate), SCMP_SYS(fgetxattr),
    SCMP_SYS(fsetxattr), SCMP_SYS(flistxattr), SCMP_SYS(fremovexattr),
    // (and the C++ runtime's calls: AllowRuntime)
};

}  // namespace

absl::Status InstallSeccomp(bool host_sockets) {
  absl::StatusOr<sandbox::hostconfine::SeccompFilter> f =
      sandbox::hostconfine::SeccompFilter::KillByDefault();
  if (!f.ok()) return f.status();
  absl::Status s = f->Allow(kAllowed, "allow");
  if (!s.ok()) return s;
  s = f->AllowRuntime();
  if (!s.ok()) return s;
  // openat only with O_NOFOLLOW (the fallback of kernels without openat2).
  s = f->AllowIf(SCMP_SYS(openat),
                 SCMP_A2(SCMP_CMP_MASKED_EQ, O_NOFOLLOW, O_NOFOLLOW), "openat");
  if (!s.ok()) return s;
  if (host_sockets) {
    s = f->Allow(
        {SCMP_SYS(bind), SCMP_SYS(connect), SCMP_SYS(fchdir), SCMP_SYS(umask)},
        "host sockets");
    if (!s.ok()) return s;
    // AF_UNIX only (the Gofer has no network namespace of the host's
    // anyway: confine.h).
    s = f->AllowIf(SCMP_SYS(socket), SCMP_A0(SCMP_CMP_EQ, AF_UNIX), "socket");
    if (!s.ok()) return s;
  }
  s = f->AllowThreadsOnly();
  if (!s.ok()) return s;
  return f->Load();
}

}  // namespace gofer
