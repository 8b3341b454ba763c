#!/bin/bash
# vDSO clock reads in `runsc do` against native, measured in one run:
# clock_bench (a static program) runs natively, then under `runsc do`,
# twice each, interleaved; the better round counts for each figure.
# clock_gettime/gettimeofday/time go through the vDSO (sentry/vdso);
# syscall_clock_gettime_ns is the raw syscall (a round trip in the
# sandbox), for reference.
# Usage: clock_bench.sh [ITERS]     (default 200000)
# Under Bazel: bazel run -c opt //perf/vdso:clock_bench -- 200000
# (bazel test //perf/vdso:clock_bench_test runs it briefly).
set -euo pipefail

iters=${1:-200000}

if [[ -n "${TEST_SRCDIR:-}" || -n "${RUNFILES_DIR:-}" ]]; then
  root="${RUNFILES_DIR:-$TEST_SRCDIR}/${TEST_WORKSPACE:-sandbox}"
else
  root="$0.runfiles/sandbox"
fi
runsc="$root/runsc-compat/runsc"
bench="$root/perf/vdso/clock_bench_prog"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for round in 1 2; do
  "$bench" "$iters" >"$out/native.$round"
  if ! "$runsc" do -- "$bench" "$iters" >"$out/sandbox.$round"; then
    echo "FAIL: the sandbox run of clock_bench failed" >&2
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

printf 'machine: %d CPUs, load average %s; %d calls a batch\n' \
  "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "$iters"
join -t= "$out/native" "$out/sandbox" | awk -F= '
  { printf "%-28s native %8.1f  runsc do %8.1f  ratio %.2fx\n", $1, $2, $3, $3 / $2
    v[$1] = $3; nv[$1] = $2 }
  END {
    k = "clock_gettime_monotonic_ns"
    printf "goal: clock_gettime <= 2x native (no round trip): %.1f <= %.1f ns: %s\n", v[k], 2 * nv[k], (v[k] <= 2 * nv[k] ? "met" : "NOT met") }'
