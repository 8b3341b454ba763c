#!/bin/bash
# UDP over loopback in `runsc do` against native, measured in one run:
# udp_bench (a static program) runs natively, then under `runsc do`, twice
# each, interleaved; the better round counts for each figure. Figures: the
# round trip of a 1-byte and a 1400-byte datagram between two processes
# over 127.0.0.1 and ::1 (µs, median batch; ratio = sandbox / native,
# goal <= 3).
# Usage: udp_bench.sh [ROUND_TRIPS]  (default 5000)
# Under Bazel: bazel run -c opt //perf/inet:udp_bench -- 5000
# (bazel test //perf/inet:udp_bench_test runs it briefly).
set -euo pipefail

n=${1:-5000}

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
source "$root/perf/lib.sh"

perf_rounds udp_bench -- "$root/perf/inet/udp_bench_prog" "$n"
perf_machine "$n round trips a batch"
perf_joined | awk -F= '
  { printf "%-30s native %9.2f  runsc do %9.2f  ratio %.2fx\n", $1, $2, $3, ($2 != 0 ? $3 / $2 : 0) }'
