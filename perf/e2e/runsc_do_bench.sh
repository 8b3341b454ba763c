#!/bin/bash
# Benchmarks of `runsc do` against native, measured in one run:
#  1. the getppid() round trip: a static program times N getppid calls,
#     natively and inside the sandbox;
#  2. the wall time of `runsc do -- /static/true` against running the same
#     static `true` natively (process start to exit, mean of R runs,
#     interleaved so that machine noise hits both alike).
# Usage: runsc_do_bench.sh [N_GETPPID] [R_RUNS]
# Under Bazel: bazel run //perf/e2e:runsc_do_bench (or bazel test, which
# fails if a sandbox run fails).
set -euo pipefail

n=${1:-200000}
runs=${2:-20}

if [[ -n "${TEST_SRCDIR:-}" || -n "${RUNFILES_DIR:-}" ]]; then
  root="${RUNFILES_DIR:-$TEST_SRCDIR}/${TEST_WORKSPACE:-sandbox}"
else
  root="$0.runfiles/sandbox"
fi
runsc="$root/runsc-compat/runsc"
loop="$root/test/e2e/programs/getppid_loop"
true_bin="$root/test/e2e/programs/true"

# Nanoseconds from bash itself (no fork of date(1) inside the timing).
ns() { local t=${EPOCHREALTIME/./}; echo $((10#$t * 1000)); }

native_ppid=$("$loop" "$n" | sed -n 's/^getppid_ns=//p')
sandbox_ppid=$("$runsc" do -- "$loop" "$n" | sed -n 's/^getppid_ns=//p')
if [[ -z "$sandbox_ppid" ]]; then
  echo "FAIL: the sandbox run of getppid_loop printed nothing" >&2
  exit 1
fi

native_total=0
sandbox_total=0
for ((i = 0; i < runs; i++)); do
  t0=$(ns); "$true_bin"; t1=$(ns)
  "$runsc" do -- "$true_bin"; t2=$(ns)
  native_total=$((native_total + t1 - t0))
  sandbox_total=$((sandbox_total + t2 - t1))
done

awk -v np="$native_ppid" -v sp="$sandbox_ppid" -v nt="$native_total" \
    -v st="$sandbox_total" -v r="$runs" -v n="$n" -v cpus="$(nproc)" \
    -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
  printf "machine: %d CPUs, load average %s at start\n", cpus, load
  printf "getppid round trip (%d calls): native %.0f ns, runsc do %.0f ns, ratio %.1fx\n", n, np, sp, (np != 0 ? sp / np : 0)
  printf "static true, mean of %d runs: native %.2f ms, runsc do %.2f ms, ratio %.1fx\n", r, nt / r / 1e6, st / r / 1e6, (nt != 0 ? st / nt : 0)
}'
