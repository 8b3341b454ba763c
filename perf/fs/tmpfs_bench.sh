#!/bin/bash
# tmpfs file-system figures against native tmpfs, measured in one run:
# tmpfs_bench (a static program) runs natively on /dev/shm, then under
# `runsc do` on the sandbox's /dev/shm (the Sentry's tmpfs), twice each,
# interleaved, and the better of the two runs counts for each figure.
# Usage: tmpfs_bench.sh [FILE_MIB] [ITERS]     (defaults 1024 100000)
# Under Bazel: bazel run -c opt //perf/fs:tmpfs_bench -- 1024 100000
# (bazel test //perf/fs:tmpfs_bench_test runs it briefly, with a small
# file, to prove it works).
set -euo pipefail

file_mib=${1:-1024}
iters=${2:-100000}

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
source "$root/perf/lib.sh"

perf_rounds tmpfs_bench -- \
  "$root/perf/fs/tmpfs_bench_prog" /dev/shm "$file_mib" "$iters"
out=$perf_out

printf 'machine: %d CPUs, load average %s; file %d MiB, %d iterations\n' \
  "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "$file_mib" "$iters"
join -t= "$out/native" "$out/sandbox" | awk -F= '
  { n = $2; s = $3
    if ($1 ~ /_mib_s$/) printf "%-20s native %10.0f  runsc do %10.0f  ratio %.2fx (higher is better)\n", $1, n, s, (n != 0 ? s / n : 0)
    else printf "%-20s native %10.1f  runsc do %10.1f  ratio %.2fx\n", $1, n, s, (n != 0 ? s / n : 0)
    v[$1] = s; nv[$1] = n }
  END {
    rt = v["getppid_ns"]
    for (k in v) if (k == "stat_ns")
      printf "goal: stat <= one round trip + 1 us: %.0f <= %.0f ns: %s\n", v[k], rt + 1000, (v[k] <= rt + 1000 ? "met" : "NOT met")
    rtb = v["getppid_best_ns"]
    for (k in v) if (k == "stat_best_ns")
      printf "goal (best batches): stat <= one round trip + 1 us: %.0f <= %.0f ns: %s\n", v[k], rtb + 1000, (v[k] <= rtb + 1000 ? "met" : "NOT met")
    for (k in v) if (k == "stat_best_ns")
      printf "stat beyond a round trip (best batches): runsc do %.0f ns, native %.0f ns\n", v[k] - rtb, nv["stat_best_ns"] - nv["getppid_best_ns"]
  }'
