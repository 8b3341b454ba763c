#!/bin/bash
# timerfd and signalfd in `runsc do` against native, measured in one run:
# fd_notify_bench (a static program) runs natively, then under `runsc do`,
# twice each, interleaved; the better round counts for each figure. Figures
# (median batch, microseconds per operation): timerfd_settime (100 us) to
# the read of its expiration, timerfd_gettime, kill to the signalfd read.
# Usage: fd_notify_bench.sh [ITERS]     (default 2000 per batch)
# Under Bazel: bazel run -c opt //perf/fdnotify:fd_notify_bench -- 2000
# (bazel test //perf/fdnotify:fd_notify_bench_test runs it briefly).
set -euo pipefail

iters=${1:-2000}

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
source "$root/perf/lib.sh"

perf_rounds fd_notify_bench -- "$root/perf/fdnotify/fd_notify_bench_prog" "$iters"
perf_machine "$iters operations a batch (settime-to-read: $((iters / 20)))"
perf_joined | awk -F= '
  { printf "%-34s native %8.2f  runsc do %8.2f  ratio %.2fx\n", $1, $2, $3, ($2 != 0 ? $3 / $2 : 0) }'
