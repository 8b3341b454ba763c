#!/bin/bash
# Python start-up in `runsc do` against native, measured in one run (#7):
#  1. /usr/bin/python3 -c pass
#  2. /usr/bin/python3 -c 'import json, sqlite3'
#  3. the Sentry's own start-up: `runsc do -- <static true>` against the same
#     static true natively, so the interpreter's share can be told apart.
# Runs are interleaved (native, then sandbox) so that machine noise hits both
# alike; each figure is the median of R runs, timed by bash's $EPOCHREALTIME
# (no fork inside the timing).
# Usage: python_bench.sh [RUNS]   (default 11)
# Under Bazel: bazel run -c opt //perf/e2e:python_bench -- 21
# (bazel test runs it briefly to prove it works; it fails if a sandbox run
# fails or prints something else than the native run).
set -euo pipefail

runs=${1:-11}
py=/usr/bin/python3

if [[ -n "${TEST_SRCDIR:-}" || -n "${RUNFILES_DIR:-}" ]]; then
  root="${RUNFILES_DIR:-$TEST_SRCDIR}/${TEST_WORKSPACE:-sandbox}"
else
  root="$0.runfiles/sandbox"
fi
runsc="$root/runsc-compat/runsc"
true_bin="$root/test/e2e/programs/true"

skip() {
  echo "SKIP: $1"
  if [[ -n "${XML_OUTPUT_FILE:-}" ]]; then
    cat >"$XML_OUTPUT_FILE" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="python_bench" tests="1" skipped="1">
<testcase name="python_bench"><skipped message="$1"/></testcase>
</testsuite></testsuites>
XML
  fi
  exit 0
}
[[ -x "$py" ]] || skip "$py is not installed (apt-get install python3)"

# Nanoseconds from bash itself.
ns() { local t=${EPOCHREALTIME/./}; echo $((10#$t * 1000)); }

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Correctness first: the sandbox prints what the host prints.
check='import json, sqlite3, os; print(json.dumps({"v": sqlite3.sqlite_version, "cwd": os.getcwd()}))'
want=$("$py" -c "$check")
got=$("$runsc" do -- "$py" -c "$check") || {
  echo "FAIL: python3 in runsc do failed" >&2
  exit 1
}
if [[ "$want" != "$got" ]]; then
  echo "FAIL: python3 printed '$got' in the sandbox, '$want' natively" >&2
  exit 1
fi

# measure NAME CMD...: appends one native and one sandbox time (ns).
measure() {
  local name=$1 t0 t1 t2
  shift
  t0=$(ns); "$@" >/dev/null; t1=$(ns)
  "$runsc" do -- "$@" >/dev/null; t2=$(ns)
  echo $((t1 - t0)) >>"$out/$name.native"
  echo $((t2 - t1)) >>"$out/$name.sandbox"
}

for ((i = 0; i < runs; i++)); do
  measure true "$true_bin"
  measure pass "$py" -c pass
  measure import "$py" -c 'import json, sqlite3'
done

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1 /proc/loadavg)"
for name in true pass import; do
  n=$(median <"$out/$name.native")
  s=$(median <"$out/$name.sandbox")
  case $name in
    true) label="Sentry start-up (static true)" ;;
    pass) label="python3 -c pass" ;;
    import) label="python3 -c 'import json, sqlite3'" ;;
  esac
  awk -v l="$label" -v n="$n" -v s="$s" -v r="$runs" 'BEGIN {
    printf "%s, median of %d: native %.1f ms, runsc do %.1f ms, ratio %.1fx\n", l, r, n / 1e6, s / 1e6, (n != 0 ? s / n : 0) }'
done

# Where the sandbox's time goes, as counts (they do not depend on the load):
# syscalls the Sentry served and the mm's fault/mapping work, from one
# --strace-summary run of each Python case.
for name in pass import; do
  case $name in
    pass) args=(-c pass) ;;
    import) args=(-c 'import json, sqlite3') ;;
  esac
  summary=$("$runsc" do --strace-summary -- "$py" "${args[@]}" 2>&1 >/dev/null) || true
  calls=$(awk '$NF == "total" {print $1; exit}' <<<"$summary")
  mmline=$(grep -m1 '^mm: ' <<<"$summary" || true)
  # clock_gettime: 0 with the vDSO serving the clocks (sentry/vdso).
  clocks=$(awk '$NF == "clock_gettime" {print $1; exit}' <<<"$summary")
  echo "counts, python3 ${args[*]}: ${calls:-?} syscalls" \
    "(clock_gettime ${clocks:-0}); ${mmline:-mm: no counts}"
done
