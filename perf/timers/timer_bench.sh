#!/bin/bash
# Timers in `runsc do` against native, measured in one run: timer_bench (a
# static program) runs natively, then under `runsc do`, twice each,
# interleaved; the better round counts for each figure. Figures (median
# batch, microseconds per operation): setitimer arm+disarm, getitimer,
# clock_gettime(CLOCK_PROCESS_CPUTIME_ID), timer_settime (100 us) to the
# signal taken by sigwaitinfo.
# Usage: timer_bench.sh [ITERS]     (default 2000 per batch)
# Under Bazel: bazel run -c opt //perf/timers:timer_bench -- 2000
# (bazel test //perf/timers:timer_bench_test runs it briefly).
set -euo pipefail

iters=${1:-2000}

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
source "$root/perf/lib.sh"

perf_rounds timer_bench -- "$root/perf/timers/timer_bench_prog" "$iters"
perf_machine "$iters operations a batch (settime-to-signal: $((iters / 20)))"
perf_joined | awk -F= '
  { printf "%-34s native %8.2f  runsc do %8.2f  ratio %.2fx\n", $1, $2, $3, ($2 != 0 ? $3 / $2 : 0) }'
