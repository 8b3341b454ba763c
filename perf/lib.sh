# Shared steps of the perf/ scripts that compare a static program's figures
# natively and under `runsc do`. Source it after setting `root` (the
# runfiles root):
#
#   root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
#   source "$root/perf/lib.sh"
#
# The program prints one NAME=VALUE line per figure.

runsc="$root/runsc-compat/runsc"
perf_out=$(mktemp -d)
trap 'rm -rf "$perf_out"' EXIT

# perf_rounds NAME [RUNSC_FLAG...] -- PROGRAM [ARG...]
# Runs PROGRAM natively, then under `runsc do RUNSC_FLAG... --`, twice
# each, interleaved (so that machine noise hits both alike), and keeps per
# figure the better round in $perf_out/native and $perf_out/sandbox. Exits
# 1 if a sandbox run fails.
perf_rounds() {
  local name=$1 flags=()
  shift
  while [[ $1 != -- ]]; do
    flags+=("$1")
    shift
  done
  shift
  local round
  for round in 1 2; do
    "$@" >"$perf_out/native.$round"
    if ! "$runsc" do "${flags[@]}" -- "$@" >"$perf_out/sandbox.$round"; then
      echo "FAIL: the sandbox run of $name failed" >&2
      exit 1
    fi
  done
  perf_best "$perf_out"/native.? >"$perf_out/native"
  perf_best "$perf_out"/sandbox.? >"$perf_out/sandbox"
}

# perf_best FILE...: per figure, the best value over the files: the
# highest for throughputs (names ending in _mib_s), else the lowest.
perf_best() {
  cat "$@" | awk -F= '
    { v = $2 + 0; k = $1
      if (!(k in b)) { b[k] = v; order[n++] = k }
      else if (k ~ /_mib_s$/ ? v > b[k] : v < b[k]) b[k] = v }
    END { for (i = 0; i < n; i++) print order[i] "=" b[order[i]] }'
}

# perf_machine WHAT: the first output line (CPUs, load average, WHAT).
perf_machine() {
  printf 'machine: %d CPUs, load average %s; %s\n' \
    "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "$1"
}

# perf_joined: "NAME=NATIVE=SANDBOX" lines, one per figure both runs have.
perf_joined() {
  join -t= "$perf_out/native" "$perf_out/sandbox"
}
