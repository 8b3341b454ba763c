#include "hostconfine/seccomp_filter.h"

#include <errno.h>
#include <sched.h>

#include "absl/strings/str_cat.h"

namespace sandbox::hostconfine {
namespace {

// The C++ runtime's calls (AllowRuntime).
constexpr int kRuntime[] = {
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

absl::Status Check(int rc, const char* what) {
  return rc == 0 ? absl::OkStatus()
                 : absl::ErrnoToStatus(-rc, absl::StrCat("seccomp ", what));
}

}  // namespace

absl::StatusOr<SeccompFilter> SeccompFilter::KillByDefault() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
  if (ctx == nullptr) return absl::InternalError("seccomp_init failed");
  return SeccompFilter(ctx);
}

absl::Status SeccompFilter::Allow(absl::Span<const int> nrs, const char* what) {
  for (int nr : nrs) {
    absl::Status s =
        Check(seccomp_rule_add(ctx_.get(), SCMP_ACT_ALLOW, nr, 0), what);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status SeccompFilter::AllowIf(int nr, scmp_arg_cmp cmp,
                                    const char* what) {
  return Check(seccomp_rule_add(ctx_.get(), SCMP_ACT_ALLOW, nr, 1, cmp), what);
}

absl::Status SeccompFilter::Fail(int nr, int err, const char* what) {
  return Check(seccomp_rule_add(ctx_.get(), SCMP_ACT_ERRNO(err), nr, 0), what);
}

absl::Status SeccompFilter::AllowRuntime() { return Allow(kRuntime, "allow"); }

absl::Status SeccompFilter::AllowThreadsOnly() {
  absl::Status s =
      AllowIf(SCMP_SYS(clone),
              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD), "clone");
  if (!s.ok()) return s;
  return Fail(SCMP_SYS(clone3), ENOSYS, "clone3");
}

absl::Status SeccompFilter::Load() {
  return Check(seccomp_load(ctx_.get()), "load");
}

}  // namespace sandbox::hostconfine
