#!/bin/bash
# poll and epoll in `runsc do` against native, measured in one run:
# poll_bench (a static program) runs natively, then under `runsc do`,
# twice each, interleaved; the better round counts for each figure.
# Figures (median batch, microseconds per operation): a two-thread
# ping-pong over two pipes waiting in poll(2) and in epoll_wait(2) (one
# round trip), and one poll(2) / epoll_wait(2) call on N ready eventfds.
# Usage: poll_bench.sh [ITERS] [N]   (default 2000 per batch, N = 100)
# Under Bazel: bazel run -c opt //perf/poll:poll_bench -- 2000
# (bazel test //perf/poll:poll_bench_test runs it briefly).
set -euo pipefail

iters=${1:-2000}
n=${2:-100}

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
source "$root/perf/lib.sh"

perf_rounds poll_bench -- "$root/perf/poll/poll_bench_prog" "$iters" "$n"
perf_machine "$iters round trips a batch, $n ready fds"
perf_joined | awk -F= '
  { printf "%-26s native %8.1f  runsc do %8.1f  ratio %.2fx\n", $1, $2, $3, ($2 != 0 ? $3 / $2 : 0) }'
