#!/bin/bash
# Runs overlay_bench briefly (bazel test) to prove it works and prints its
# figures; the real figures: bazel run -c opt //perf/overlay:overlay_bench
set -euo pipefail
bench="$1"
out=$(OVERLAY_BENCH_ITERS="${2:-2000}" "$bench")
echo "$out"
for fig in "stat overlay-lower" "stat overlay-upper" \
    "open+read+close overlay-lower" "open+read+close overlay-upper"; do
  if ! grep -q "^$fig .*ratio to native" <<<"$out"; then
    echo "FAIL: no figure for $fig" >&2
    exit 1
  fi
done
