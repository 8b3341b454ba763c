#!/bin/bash
# Process creation in `runsc do` against native, measured in one run:
# spawn_bench (a static program) runs natively, then under `runsc do`,
# twice each, interleaved; the better round counts for each figure.
# Each figure is the median batch of create + child _exit + waitpid:
# fork (copy-on-write mm), vfork (shared mm; the parent waits for the
# child's exit: sentry/kernel/vfork.h) and glibc's posix_spawn
# (clone(CLONE_VM|CLONE_VFORK) + execve of the program itself).
# Usage: spawn_bench.sh [ITERS]     (default 200 per batch)
# Under Bazel: bazel run -c opt //perf/process:spawn_bench -- 200
# (bazel test //perf/process:spawn_bench_test runs it briefly).
set -euo pipefail

iters=${1:-200}

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
source "$root/perf/lib.sh"

perf_rounds spawn_bench -- "$root/perf/process/spawn_bench_prog" "$iters"
perf_machine "$iters creations a batch"
perf_joined | awk -F= '
  { printf "%-26s native %8.1f  runsc do %8.1f  ratio %.2fx\n", $1, $2, $3, ($2 != 0 ? $3 / $2 : 0) }'
