// A libseccomp filter that kills the process on any call it does not
// allow: the builder the Gofer's and the network broker's allowlists
// (gofer/seccomp.h, broker/seccomp.h) are written with. (The Sentry's
// table-driven allowlist, sentry/confine/seccomp.h, has its own.)
//
// Each rule's error is an absl::Status naming the rule ("seccomp WHAT").
// Thread-safety: one thread builds and loads a filter.
#ifndef HOSTCONFINE_SECCOMP_FILTER_H_
#define HOSTCONFINE_SECCOMP_FILTER_H_

#include <seccomp.h>
#include <stdint.h>

#include <initializer_list>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sandbox::hostconfine {

class SeccompFilter {
 public:
  // A filter whose default action is SCMP_ACT_KILL_PROCESS.
  static absl::StatusOr<SeccompFilter> KillByDefault();

  // `nr` with any arguments, for each of `nrs`.
  absl::Status Allow(absl::Span<const int> nrs, const char* what);
  absl::Status Allow(std::initializer_list<int> nrs, const char* what) {
    return Allow(absl::MakeConstSpan(nrs.begin(), nrs.size()), what);
  }
  // `nr` when its arguments match `cmp` (one comparison).
  absl::Status AllowIf(int nr, scmp_arg_cmp cmp, const char* what);
  // `nr` fails with `err` instead of killing.
  absl::Status Fail(int nr, int err, const char* what);
  // Memory, threads, signals and time for the C++ runtime (mmap, futex,
  // rt_sigaction, clock_gettime, getrandom, ...), with any arguments.
  absl::Status AllowRuntime();
  // Threads only, no new processes: clone with CLONE_THREAD; clone3's
  // flags are in memory, so it answers ENOSYS and glibc falls back to
  // clone.
  absl::Status AllowThreadsOnly();
  // Loads the filter into the calling process.
  absl::Status Load();

 private:
  explicit SeccompFilter(scmp_filter_ctx ctx) : ctx_(ctx, seccomp_release) {}

  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx_;
};

}  // namespace sandbox::hostconfine

#endif  // HOSTCONFINE_SECCOMP_FILTER_H_
