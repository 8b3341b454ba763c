#!/bin/bash
# vDSO clock reads in `runsc do` against native, measured in one run:
# clock_bench (a static program) runs natively, then under `runsc do`,
# twice each, interleaved; the better round counts for each figure.
# clock_gettime/gettimeofday/time go through the vDSO (sentry/vdso);
# syscall_clock_gettime_ns is the raw syscall (a round trip in the
# sandbox), for reference.
# Usage: clock_bench.sh [ITERS]     (default 200000)
# Under Bazel: bazel run -c opt //perf/vdso:clock_bench -- 200000
# (bazel test //perf/vdso:clock_bench_test runs it briefly).
set -euo pipefail

iters=${1:-200000}

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
source "$root/perf/lib.sh"

perf_rounds clock_bench -- "$root/perf/vdso/clock_bench_prog" "$iters"
perf_machine "$iters calls a batch"
perf_joined | awk -F= '
  { printf "%-28s native %8.1f  runsc do %8.1f  ratio %.2fx\n", $1, $2, $3, ($2 != 0 ? $3 / $2 : 0)
    v[$1] = $3; nv[$1] = $2 }
  END {
    k = "clock_gettime_monotonic_ns"
    printf "goal: clock_gettime <= 2x native (no round trip): %.1f <= %.1f ns: %s\n", v[k], 2 * nv[k], (v[k] <= 2 * nv[k] ? "met" : "NOT met") }'
