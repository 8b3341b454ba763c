#!/bin/bash
# Records the host syscalls a gRPC server over a Unix socket makes while it
# serves N control-API calls (strace -f -c), for the Sentry's seccomp
# allowlist. Usage: tools/grpc-syscalls.sh [N]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200}
tools/install-deps.sh
bazel build //runsc-compat/control:grpc_probe >&2
probe=bazel-bin/runsc-compat/control/grpc_probe
dir=$(mktemp -d /tmp/grpcXXXXXX)
trap 'rm -rf "$dir"' EXIT
strace -f -c -o "$dir/summary" "$probe" server "$dir/s" "$n" > "$dir/ready" &
spid=$!
for _ in $(seq 100); do [[ -s $dir/ready ]] && break; sleep 0.1; done
"$probe" client "$dir/s" "$n"
wait "$spid"
cat "$dir/summary"
