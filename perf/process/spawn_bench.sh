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

if [[ -n "${TEST_SRCDIR:-}" || -n "${RUNFILES_DIR:-}" ]]; then
  root="${RUNFILES_DIR:-$TEST_SRCDIR}/${TEST_WORKSPACE:-sandbox}"
else
  root="$0.runfiles/sandbox"
fi
runsc="$root/runsc-compat/runsc"
bench="$root/perf/process/spawn_bench_prog"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for round in 1 2; do
  "$bench" "$iters" >"$out/native.$round"
  if ! "$runsc" do -- "$bench" "$iters" >"$out/sandbox.$round"; then
    echo "FAIL: the sandbox run of spawn_bench failed" >&2
    exit 1
  fi
done

best() {
  cat "$@" | awk -F= '
    { v = $2 + 0; k = $1
      if (!(k in b)) { b[k] = v; order[n++] = k } else if (v < b[k]) b[k] = v }
    END { for (i = 0; i < n; i++) print order[i] "=" b[order[i]] }'
}
best "$out"/native.* >"$out/native"
best "$out"/sandbox.* >"$out/sandbox"

printf 'machine: %d CPUs, load average %s; %d creations a batch\n' \
  "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "$iters"
join -t= "$out/native" "$out/sandbox" | awk -F= '
  { printf "%-26s native %8.1f  runsc do %8.1f  ratio %.2fx\n", $1, $2, $3, $3 / $2 }'
