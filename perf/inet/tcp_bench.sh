#!/bin/bash
# TCP over loopback (127.0.0.1 and ::1) in `runsc do` against native, measured in one run:
# tcp_bench (a static program) runs natively, then under `runsc do`,
# twice each, interleaved; the better round counts for each figure.
# Figures: throughput of 64 KiB writes between two processes (MiB/s, the
# best of 5 batches; ratio = sandbox / native, goal >= 0.8) and the 1-byte
# round trip between two processes (µs, median batch; ratio = sandbox /
# native, goal <= 3), and connect+accept+close per second (higher is better).
# Usage: tcp_bench.sh [MIB_PER_BATCH] [ROUND_TRIPS] [CONNECTIONS] (default 256, 5000, 2000)
# Under Bazel: bazel run -c opt //perf/inet:tcp_bench -- 256 5000 2000
# (bazel test //perf/inet:tcp_bench_test runs it briefly).
set -euo pipefail

mib=${1:-256}
n=${2:-5000}
conns=${3:-2000}

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
source "$root/perf/lib.sh"

perf_rounds tcp_bench -- "$root/perf/inet/tcp_bench_prog" "$mib" "$n" "$conns"
perf_machine "$mib MiB a throughput batch, $n round trips a batch, $conns connections a batch"
perf_joined | awk -F= '
  { printf "%-36s native %9.2f  runsc do %9.2f  ratio %.2fx\n", $1, $2, $3, ($2 != 0 ? $3 / $2 : 0) }'
