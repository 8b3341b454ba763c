#!/bin/bash
# redis-benchmark requests per second in `runsc do` against native, in one
# run (issue 21; goal: the sandbox at least 0.5x native). Debian's
# redis-server and redis-benchmark both run natively over the host's
# loopback, then both inside one `runsc do` over the sandbox's own loopback
# (the Sentry's TCP), twice each, interleaved, so that machine noise hits
# both alike; per test the better round counts. Prints one line per test
# (requests per second native and sandboxed, ratio = sandbox / native) and
# the geometric mean of the ratios against the goal.
# Usage: redis_bench.sh [REQUESTS] [TESTS] [CLIENTS] [ROUNDS]
#   (defaults 100000; ping,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,
#   spop,zadd,zpopmin,lrange_100,mset; 50: redis-benchmark's -n, -t, -c;
#   3 rounds)
# Under Bazel: bazel run -c opt //perf/inet:redis_bench -- 100000
# (bazel test //perf/inet:redis_bench_test runs it briefly: it fails only
# when the sandbox run fails or reports no figure; the goal is reported).
set -euo pipefail

requests=${1:-100000}
tests=${2:-ping,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,mset}
clients=${3:-50}
rounds=${4:-3}

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"

skip() {
  echo "SKIP: $1"
  if [[ -n "${XML_OUTPUT_FILE:-}" ]]; then
    cat >"$XML_OUTPUT_FILE" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="redis_bench" tests="1" skipped="1">
<testcase name="redis_bench"><skipped message="$1"/></testcase>
</testsuite></testsuites>
XML
  fi
  exit 0
}
for p in /usr/bin/redis-server /usr/bin/redis-benchmark /usr/bin/redis-cli; do
  [[ -x $p ]] || skip "no $p (Debian's redis-server and redis-tools: tools/install-deps.sh)"
done

source "$root/perf/lib.sh"

# One round, run as `bash -c "$round" redis PORT REQUESTS TESTS CLIENTS`
# natively and in the sandbox: a server on 127.0.0.1:PORT (no persistence,
# its files in a temporary directory), the benchmark against it, then
# NAME=RPS lines (names lower-cased, "LPUSH (needed to benchmark LRANGE)"
# as lpush_for_lrange). Bounded: 10 s for the server to come up, 600 s for
# the benchmark; the server never outlives the round.
round='
set -u
port=$1 n=$2 t=$3 c=$4
dir=$(mktemp -d "${TMPDIR:-/var/tmp}/redis_bench.XXXXXX")
/usr/bin/redis-server --bind 127.0.0.1 --port "$port" --save "" \
  --appendonly no --dir "$dir" --daemonize no --logfile "$dir/log" &
server=$!
trap "kill $server 2>/dev/null; rm -rf $dir" EXIT
up=no
while ((SECONDS < 10)) && kill -0 "$server" 2>/dev/null; do
  if [[ $(/usr/bin/redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]; then
    up=yes
    break
  fi
  sleep 0.02
done
if [[ $up != yes ]]; then
  echo "redis-server did not come up; its log:" >&2
  cat "$dir/log" >&2
  exit 1
fi
timeout 600 /usr/bin/redis-benchmark -h 127.0.0.1 -p "$port" -n "$n" -t "$t" \
  -c "$c" --csv >"$dir/csv" 2>"$dir/err" || {
  echo "redis-benchmark failed:" >&2
  cat "$dir/err" >&2
  exit 1
}
/usr/bin/redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1
wait "$server"
awk -F"\"" "NR > 1 && \$2 != \"\" {
  name = tolower(\$2)
  if (name ~ /needed to benchmark/) name = \"lpush_for_lrange\"
  sub(/ .*/, \"\", name)
  print name \"_rps=\" \$4 }" "$dir/csv"
'

# A port on the host's 127.0.0.1 where nothing listens now, below the
# ephemeral range (so no outgoing connection holds it); the sandbox has a
# loopback of its own: the same number serves there.
read -r low _ </proc/sys/net/ipv4/ip_local_port_range || low=32768
((low > 12000)) || low=32768
port=
for ((i = 0; i < 50; i++)); do
  p=$((10000 + RANDOM % (low - 10000)))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    port=$p
    break
  fi
done
[[ -n $port ]] || { echo "FAIL: no free port on 127.0.0.1" >&2; exit 1; }

args=(redis "$port" "$requests" "$tests" "$clients")
for ((r = 1; r <= rounds; r++)); do
  if ! /bin/bash -c "$round" "${args[@]}" >"$perf_out/native.$r"; then
    echo "FAIL: the native round failed" >&2
    exit 1
  fi
  if ! "$runsc" do -- /bin/bash -c "$round" "${args[@]}" >"$perf_out/sandbox.$r"; then
    echo "FAIL: the sandbox round failed" >&2
    exit 1
  fi
done

# Per test, the better (higher) rate of the rounds.
best() {
  cat "$@" | awk -F= '
    { v = $2 + 0; k = $1
      if (!(k in b)) { b[k] = v; order[n++] = k } else if (v > b[k]) b[k] = v }
    END { for (i = 0; i < n; i++) print order[i] "=" b[order[i]] }'
}
best "$perf_out"/native.* >"$perf_out/native"
best "$perf_out"/sandbox.* >"$perf_out/sandbox"
if [[ ! -s $perf_out/sandbox ]]; then
  echo "FAIL: the sandbox rounds reported no figure" >&2
  exit 1
fi

perf_machine "redis-benchmark -n $requests -c $clients, both ends on loopback, best of $rounds rounds"
# Joined in the native run's order of tests.
awk -F= 'NR == FNR { s[$1] = $2; next }
  ($1 in s) {
    r = ($2 != 0 ? s[$1] / $2 : 0)
    printf "%-22s native %10.0f req/s  runsc do %10.0f req/s  ratio %.2fx\n", $1, $2, s[$1], r
    if (r > 0) { lsum += log(r); k++ }
  }
  END {
    g = (k ? exp(lsum / k) : 0)
    printf "redis-benchmark, geometric mean of %d ratios: %.2fx (goal: at least 0.5x): %s\n", k, g, (g >= 0.5 ? "met" : "NOT met")
  }' "$perf_out/sandbox" "$perf_out/native"
