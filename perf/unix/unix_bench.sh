#!/bin/bash
# AF_UNIX stream sockets in `runsc do` against native, measured in one run:
# unix_bench (a static program) runs natively, then under `runsc do`,
# twice each, interleaved; the better round counts for each figure.
# Figures: throughput of 64 KiB writes between two processes (MiB/s, the
# best of 5 batches; ratio = sandbox / native, goal >= 0.7) and the 1-byte
# round trip between two processes (µs, median batch; ratio = sandbox /
# native, goal <= 3), over socketpair(2) and over a path socket.
# Usage: unix_bench.sh [MIB_PER_BATCH] [ROUND_TRIPS]  (default 256, 5000)
# Under Bazel: bazel run -c opt //perf/unix:unix_bench -- 256 5000
# (bazel test //perf/unix:unix_bench_test runs it briefly).
set -euo pipefail

mib=${1:-256}
n=${2:-5000}

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
source "$root/perf/lib.sh"

perf_rounds unix_bench -- "$root/perf/unix/unix_bench_prog" "$mib" "$n"
perf_machine "$mib MiB a throughput batch, $n round trips a batch"
perf_joined | awk -F= '
  { printf "%-30s native %9.2f  runsc do %9.2f  ratio %.2fx\n", $1, $2, $3, ($2 != 0 ? $3 / $2 : 0) }'
