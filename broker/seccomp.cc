#include "broker/seccomp.h"

#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>

#include <memory>

#include "absl/strings/str_cat.h"

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
    SCMP_SYS(sched_getaffinity),
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
    SCMP_SYS(gettid),
    SCMP_SYS(getpid),
    SCMP_SYS(tgkill),
    SCMP_SYS(nanosleep),
    SCMP_SYS(clock_nanosleep),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(getrandom),  // DNS query IDs
    SCMP_SYS(restart_syscall),
};

}  // namespace

absl::Status InstallSeccomp() {
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
  for (int family : {AF_INET, AF_INET6}) {
    absl::Status s =
        check(seccomp_rule_add(
                  ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                  SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(family))),
              "socket");
    if (!s.ok()) return s;
  }
  absl::Status s =
      check(seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1,
                             SCMP_A0(SCMP_CMP_EQ, AF_UNIX)),
            "socketpair");
  if (!s.ok()) return s;
  // Threads only: clone with CLONE_THREAD; clone3's flags are in memory,
  // so it answers ENOSYS and glibc falls back to clone.
  s = check(
      seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                       SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD)),
      "clone");
  if (!s.ok()) return s;
  s = check(
      seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0),
      "clone3");
  if (!s.ok()) return s;
  // glibc and Abseil may probe /proc or /sys lazily: fail, never kill.
  for (int nr : {SCMP_SYS(open), SCMP_SYS(openat)}) {
    s = check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EACCES), nr, 0),
              "open");
    if (!s.ok()) return s;
  }
  return check(seccomp_load(ctx.get()), "load");
}

}  // namespace sandbox::broker
