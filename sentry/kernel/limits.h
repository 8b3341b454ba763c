// Resource limits (getrlimit/setrlimit/prlimit64), per thread group.
#ifndef SENTRY_KERNEL_LIMITS_H_
#define SENTRY_KERNEL_LIMITS_H_

#include <sys/resource.h>

#include <array>

#include "sentry/abi/linux.h"

namespace sandbox::kernel {

struct LimitSet {
  std::array<abi::Rlimit64, abi::kRlimNlimits> limits;

  // Linux's defaults for init (include/asm-generic/resource.h) with
  // RLIMIT_NOFILE at 1024/4096 and RLIMIT_NPROC/SIGPENDING at `nproc`.
  static LimitSet Defaults(uint64_t nproc = 63704) {
    constexpr uint64_t kInf = abi::kRlimInfinity;
    LimitSet s;
    for (auto& l : s.limits) l = {kInf, kInf};
    s.limits[RLIMIT_STACK] = {8 << 20, kInf};
    s.limits[RLIMIT_CORE] = {0, kInf};
    s.limits[RLIMIT_NPROC] = {nproc, nproc};
    s.limits[RLIMIT_NOFILE] = {1024, 4096};
    s.limits[RLIMIT_MEMLOCK] = {8 << 20, 8 << 20};
    s.limits[RLIMIT_SIGPENDING] = {nproc, nproc};
    s.limits[RLIMIT_MSGQUEUE] = {819200, 819200};
    s.limits[RLIMIT_NICE] = {0, 0};
    s.limits[RLIMIT_RTPRIO] = {0, 0};
    return s;
  }

  // The limits a sandbox's init starts with: the caller's, as a container
  // runtime passes them (`host[i]`, read by the boot before it changes any
  // of its own), except where the Sentry must cap them: RLIMIT_NOFILE at
  // `nr_open` (the guest's fs.nr_open; setrlimit above it is EPERM).
  static LimitSet FromCaller(
      const std::array<abi::Rlimit64, abi::kRlimNlimits>& host,
      uint64_t nr_open) {
    LimitSet s;
    s.limits = host;
    abi::Rlimit64& nofile = s.limits[RLIMIT_NOFILE];
    if (nofile.rlim_max > nr_open) nofile.rlim_max = nr_open;
    if (nofile.rlim_cur > nofile.rlim_max) nofile.rlim_cur = nofile.rlim_max;
    return s;
  }

  const abi::Rlimit64& Get(int resource) const { return limits[resource]; }
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_LIMITS_H_
