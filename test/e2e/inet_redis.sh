#!/bin/bash
# Debian's redis-server on 127.0.0.1:PORT and `redis-benchmark -q -n N`
# against it, for test/e2e's inet_apps_test (run with bash -c). It prints the
# name of each test the benchmark completed (not its figures), a SET/GET
# through redis-cli and the exit statuses, so that the sandbox's output can
# be compared with the native run's. Bounded: 10 s for the server to come
# up, 900 s for the benchmark (the sandbox serves syscalls far slower
# than the host on a loaded machine: see perf/inet:redis_bench).
# Usage: inet_redis.sh PORT N
set -u
port=$1 n=$2 dir=$(mktemp -d "${TMPDIR:-/var/tmp}/redis.XXXXXX")
/usr/bin/redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
  --dir "$dir" --daemonize no --logfile "$dir/log" &
server=$!
# The server never outlives the script (nor its directory).
trap 'kill "$server" 2>/dev/null; rm -rf "$dir"' EXIT
up=no
while ((SECONDS < 10)) && kill -0 "$server" 2>/dev/null; do
  if [[ $(/usr/bin/redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]; then up=yes; break; fi
  sleep 0.02
done
echo "server up: $up"
if [[ $up != yes ]]; then
  echo "redis-server's log:" >&2
  cat "$dir/log" >&2
  exit 1
fi
timeout 900 /usr/bin/redis-benchmark -h 127.0.0.1 -p "$port" -q -n "$n" >"$dir/bench" 2>&1
echo "benchmark exit: $?"
# -q prints progress with \r, then "NAME: N requests per second, p50=..." per test.
tr '\r' '\n' <"$dir/bench" | sed -n 's/^\([A-Z][A-Z0-9_]*\( ([^)]*)\)\{0,1\}\): [0-9.]* requests per second.*/\1/p'
/usr/bin/redis-cli -h 127.0.0.1 -p "$port" set k v
/usr/bin/redis-cli -h 127.0.0.1 -p "$port" get k
/usr/bin/redis-cli -h 127.0.0.1 -p "$port" shutdown nosave
wait "$server"
echo "server exit: $?"
