#!/bin/bash
# Signal delivery in `runsc do` against native, measured in one run:
# signal_bench (a static program) runs natively, then under `runsc do`,
# twice each, interleaved; the better round counts for each figure.
# Figures (median batch, microseconds per operation): a self-sent signal
# through a handler and rt_sigreturn, a blocked signal taken with
# sigtimedwait, a two-thread tgkill/sigwait ping-pong (one round trip).
# Usage: signal_bench.sh [ITERS]     (default 2000 per batch)
# Under Bazel: bazel run -c opt //perf/signal:signal_bench -- 2000
# (bazel test //perf/signal:signal_bench_test runs it briefly).
set -euo pipefail

iters=${1:-2000}

if [[ -n "${TEST_SRCDIR:-}" || -n "${RUNFILES_DIR:-}" ]]; then
  root="${RUNFILES_DIR:-$TEST_SRCDIR}/${TEST_WORKSPACE:-sandbox}"
else
  root="$0.runfiles/sandbox"
fi
runsc="$root/runsc-compat/runsc"
bench="$root/perf/signal/signal_bench_prog"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for round in 1 2; do
  "$bench" "$iters" >"$out/native.$round"
  if ! "$runsc" do -- "$bench" "$iters" >"$out/sandbox.$round"; then
    echo "FAIL: the sandbox run of signal_bench failed" >&2
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

printf 'machine: %d CPUs, load average %s; %d operations a batch\n' \
  "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "$iters"
join -t= "$out/native" "$out/sandbox" | awk -F= '
  { printf "%-26s native %8.1f  runsc do %8.1f  ratio %.2fx\n", $1, $2, $3, $3 / $2 }'
