#!/bin/bash
# Gofer file-system figures against native, measured in one run: gofer_bench
# (a static program) runs natively, then under `runsc do` (the host root
# served read-only by the Gofer: the Sentry's gofer client, exclusive root,
# cached), on the same host files, twice each, interleaved; the better of
# the two runs counts for each figure.
# Usage: gofer_bench.sh [FILE_MIB] [ITERS] [WALK_DIR]
#        (defaults 1024 100000 /usr; WALK_DIR "tree" walks a tree of 1,000
#        files the script makes, which nothing else changes between runs)
# Under Bazel: bazel run -c opt //perf/gofer:gofer_bench -- 1024 100000 /usr
# (bazel test runs it briefly, with a small file and tree, to prove it works).
# With more than three arguments the last three count: `bazel run` of the
# test target passes its BUILD args (the brief ones) before those given
# after `--`, and those must win.
set -euo pipefail

if (($# > 3)); then
  shift $(($# - 3))
fi
file_mib=${1:-1024}
iters=${2:-100000}
walk=${3:-/usr}

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
source "$root/perf/lib.sh"
# The data must be on the host's root file system (the sandbox's /tmp is
# its own tmpfs): TEST_TMPDIR under bazel test, else /var/tmp.
data=$(mktemp -d -p "${TEST_TMPDIR:-/var/tmp}" gofer_bench.XXXXXX)
trap 'rm -rf "$perf_out" "$data"' EXIT
head -c 64 /dev/zero | tr '\0' x >"$data/small"
dd if=/dev/zero of="$data/big" bs=1M count="$file_mib" status=none
if [[ "$walk" == tree ]]; then
  walk="$data/tree"
  for d in $(seq 20); do
    mkdir -p "$walk/d$d"
    (cd "$walk/d$d" && touch $(seq -f f%g 50))
  done
fi

perf_rounds gofer_bench --root=host-ro -- \
  "$root/perf/gofer/gofer_bench_prog" "$data" "$walk" "$iters"
out=$perf_out

n_entries=$(grep '^walk_entries=' "$out/native" | cut -d= -f2)
s_entries=$(grep '^walk_entries=' "$out/sandbox" | cut -d= -f2)
if [[ "$n_entries" != "$s_entries" ]]; then
  echo "FAIL: the walk of $walk saw $n_entries entries natively," \
    "$s_entries in the sandbox" >&2
  exit 1
fi

printf 'machine: %d CPUs, load average %s; file %d MiB, %d iterations, walk %s (%s entries)\n' \
  "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "$file_mib" "$iters" "$walk" \
  "$n_entries"
join -t= <(grep -v walk_entries "$out/native") \
  <(grep -v walk_entries "$out/sandbox") | awk -F= '
  function ratio(a, b) { return b != 0 ? a / b : 0 }
  { n = $2; s = $3
    if ($1 ~ /_mib_s$/) printf "%-20s native %10.0f  runsc do %10.0f  ratio %.2fx (higher is better)\n", $1, n, s, ratio(s, n)
    else printf "%-20s native %10.1f  runsc do %10.1f  ratio %.2fx\n", $1, n, s, ratio(s, n)
    v[$1] = s; nat[$1] = n }
  END {
    rt = v["getppid_ns"]
    printf "goal: cached stat <= one round trip + 1 us: %.0f <= %.0f ns: %s\n", v["stat_ns"], rt + 1000, (v["stat_ns"] <= rt + 1000 ? "met" : "NOT met")
    printf "goal: open+read+close <= three round trips + 3 us: %.0f <= %.0f ns: %s\n", v["open_read_close_ns"], 3 * rt + 3000, (v["open_read_close_ns"] <= 3 * rt + 3000 ? "met" : "NOT met")
    r = ratio(v["read1m_mib_s"], nat["read1m_mib_s"])
    printf "goal: sequential read >= 0.9x native: %.2fx: %s\n", r, (r >= 0.9 ? "met" : "NOT met")
  }'
