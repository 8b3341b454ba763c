/* The vDSO's data page ([vvar]): what the Sentry publishes and the guest's
 * vDSO reads. Shared by the vDSO (C, built with -nostdlib) and the Sentry
 * (C++): plain C, fixed-width fields, no pointers.
 *
 * Protocol (a seqcount, as Linux's vdso_data): the Sentry (the only
 * writer, one thread) makes `seq` odd, rewrites the fields, then makes it
 * even; a reader retries while `seq` is odd or changed across its reads.
 *
 * Clocks: CLOCK_MONOTONIC and CLOCK_MONOTONIC_RAW are straight lines of
 * the TSC:
 *   ns = base_ns + ((tsc - base_cycles) * mult) >> shift   (tsc >= base)
 * CLOCK_REALTIME = MONOTONIC + realtime_offset_ns and CLOCK_BOOTTIME =
 * MONOTONIC + boottime_offset_ns (the _COARSE clocks are the fine ones).
 * With `enabled` 0 (no invariant TSC, calibration not done or off) every
 * call makes the real syscall. */
#ifndef SENTRY_VDSO_VDSO_DATA_H_
#define SENTRY_VDSO_VDSO_DATA_H_

#include <stdint.h>

#ifdef __cplusplus
namespace sandbox::vdso {
#endif

struct VdsoClock {
  uint64_t base_cycles;
  int64_t base_ns;
  uint64_t mult;
  uint32_t shift;
  uint32_t pad;
};

struct VdsoData {
  uint32_t seq;
  uint32_t enabled;
  struct VdsoClock mono;
  struct VdsoClock raw;
  int64_t realtime_offset_ns;
  int64_t boottime_offset_ns;
  /* clock_getres: the fine clocks and the _COARSE ones (the host's). */
  int64_t hres_res_ns;
  int64_t coarse_res_ns;
};

/* Pages of [vvar] (Linux 6.1 x86-64: vvar, pvclock, hvclock, timens); the
 * data is at the start of the first. */
#define VDSO_VVAR_PAGES 4

#ifdef __cplusplus
}  // namespace sandbox::vdso
#endif

#endif /* SENTRY_VDSO_VDSO_DATA_H_ */
