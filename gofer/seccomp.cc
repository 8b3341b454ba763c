#include "gofer/seccomp.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>

#include <cerrno>
#include <memory>

#include "absl/strings/str_cat.h"

namespace gofer {
namespace {

// Debian 12's libseccomp predates it; the number is fixed on x86-64.
constexpr int kSysFchmodat2 = 452;

// Calls allowed with any arguments.
constexpr int kAllowed[] = {
    // The connection.
    SCMP_SYS(recvmsg),
    SCMP_SYS(sendmsg),
    SCMP_SYS(write),
    SCMP_SYS(close),
    SCMP_SYS(fcntl),
    SCMP_SYS(lseek),
    // File serving, all relative to directory FDs.
    SCMP_SYS(openat2),
    SCMP_SYS(newfstatat),
    SCMP_SYS(fstat),
    SCMP_SYS(statx),
    SCMP_SYS(fstatfs),
    SCMP_SYS(getdents64),
    SCMP_SYS(mkdirat),
    SCMP_SYS(mknodat),
    SCMP_SYS(symlinkat),
    SCMP_SYS(linkat),
    SCMP_SYS(readlinkat),
    SCMP_SYS(unlinkat),
    SCMP_SYS(renameat2),
    SCMP_SYS(renameat),  // glibc's renameat2() with flags 0 calls renameat
    SCMP_SYS(fchownat),
    SCMP_SYS(fchmod),
    kSysFchmodat2,
    SCMP_SYS(utimensat),
    SCMP_SYS(fsync),
    SCMP_SYS(ftruncate),
    SCMP_SYS(fgetxattr),
    SCMP_SYS(fsetxattr),
    SCMP_SYS(flistxattr),
    SCMP_SYS(fremovexattr),
    // Memory, threads, signals and time for the C++ runtime.
    SCMP_SYS(mmap),
    SCMP_SYS(munmap),
    SCMP_SYS(mprotect),
    SCMP_SYS(mremap),
    SCMP_SYS(madvise),
    SCMP_SYS(brk),
    SCMP_SYS(futex),
    SCMP_SYS(set_robust_list),
    SCMP_SYS(rseq),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigaction),
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(sched_yield),
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
    SCMP_SYS(gettid),
    SCMP_SYS(getpid),
    SCMP_SYS(tgkill),
    SCMP_SYS(nanosleep),
    SCMP_SYS(clock_nanosleep),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(getrandom),
    SCMP_SYS(restart_syscall),
};

}  // namespace

absl::Status InstallSeccomp(bool host_sockets) {
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(
      seccomp_init(SCMP_ACT_KILL_PROCESS), seccomp_release);
  if (ctx == nullptr) return absl::InternalError("seccomp_init failed");
  auto check = [](int rc, const char* what) {
    return rc == 0 ? absl::OkStatus()
                   : absl::ErrnoToStatus(-rc, absl::StrCat("seccomp ", what));
  };
  for (int nr : kAllowed) {
    absl::Status s =
        check(seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0), "allow");
    if (!s.ok()) return s;
  }
  // openat only with O_NOFOLLOW (the fallback of kernels without openat2).
  absl::Status s = check(
      seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                       SCMP_A2(SCMP_CMP_MASKED_EQ, O_NOFOLLOW, O_NOFOLLOW)),
      "openat");
  if (!s.ok()) return s;
  if (host_sockets) {
    for (int nr : {SCMP_SYS(bind), SCMP_SYS(connect), SCMP_SYS(fchdir),
                   SCMP_SYS(umask)}) {
      s = check(seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0),
                "host sockets");
      if (!s.ok()) return s;
    }
    // AF_UNIX only (the Gofer has no network namespace of the host's
    // anyway: confine.h).
    s = check(seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                               SCMP_A0(SCMP_CMP_EQ, AF_UNIX)),
              "socket");
    if (!s.ok()) return s;
  }
  // Threads only (no new processes): clone with CLONE_THREAD; clone3's
  // flags are in memory, so it answers ENOSYS and glibc falls back to clone.
  s = check(
      seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                       SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD)),
      "clone");
  if (!s.ok()) return s;
  s = check(
      seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0),
      "clone3");
  if (!s.ok()) return s;
  return check(seccomp_load(ctx.get()), "load");
}

}  // namespace gofer
