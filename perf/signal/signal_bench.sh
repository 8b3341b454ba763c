#!/bin/bash
# Signal delivery in `runsc do` against native, measured in one run:
# signal_bench (a static program) runs natively, then under `runsc do`,
# twice each, interleaved; the better round counts for each figure.
# Figures (median batch, microseconds per operation): a self-sent signal
# through a handler and rt_sigreturn, a blocked signal taken with
# sigtimedwait, a two-thread tgkill/sigwait ping-pong (one round trip),
# a child stopped and continued (kill + waitpid each way).
# Usage: signal_bench.sh [ITERS]     (default 2000 per batch)
# Under Bazel: bazel run -c opt //perf/signal:signal_bench -- 2000
# (bazel test //perf/signal:signal_bench_test runs it briefly).
set -euo pipefail

iters=${1:-2000}

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
source "$root/perf/lib.sh"

perf_rounds signal_bench -- "$root/perf/signal/signal_bench_prog" "$iters"
perf_machine "$iters operations a batch"
perf_joined | awk -F= '
  { printf "%-26s native %8.1f  runsc do %8.1f  ratio %.2fx\n", $1, $2, $3, ($2 != 0 ? $3 / $2 : 0) }'
