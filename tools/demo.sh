#!/bin/bash
# Builds runsc and runs a real program in a sandbox.
#
#   tools/demo.sh                       # a short tour with busybox (static)
#   tools/demo.sh PROG ARGS             # runs PROG under `runsc do --`
#
# The sandbox's root is the host's "/", served read-only by the Gofer;
# PROG is found through PATH inside the sandbox; /tmp and /dev/shm are the
# sandbox's own tmpfs; --bind adds writable host directories. See README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
bazel --batch build //runsc-compat:runsc >&2
runsc=$PWD/bazel-bin/runsc-compat/runsc

if (($# > 0)); then
  exec "$runsc" do -- "$@"
fi

run() {
  echo "\$ $*" >&2
  "$@"
}
run "$runsc" do -- busybox uname -a
run "$runsc" do -- busybox head -3 /etc/os-release
run "$runsc" do -- busybox sh -c 'touch /etc/demo && ls /etc/demo'
echo "(the write went to the sandbox's in-memory overlay: the host's /etc" \
  "has no demo: $(ls /etc/demo 2>&1 >/dev/null || true))" >&2
demo_dir=$(mktemp -d -p "$PWD" demo.XXXXXX)
run "$runsc" do --bind="$demo_dir":/tmp/host -- busybox sh -c \
  'echo written in the sandbox > /tmp/host/f'
run cat "$demo_dir/f"
rm -rf "$demo_dir"
run "$runsc" do -- /bin/busybox echo "hello from inside the sandbox"
echo "\$ echo 'some data' | $runsc do -- /bin/busybox sha256sum   (then natively)" >&2
echo 'some data' | "$runsc" do -- /bin/busybox sha256sum
echo 'some data' | /bin/busybox sha256sum
run "$runsc" do -- /bin/busybox sh -c \
  'mkdir -p /tmp/d && echo hello > /tmp/d/f && ls -l /tmp/d && pwd'
echo "\$ $runsc do --strace-summary -- /bin/busybox true" >&2
"$runsc" do --strace-summary -- /bin/busybox true
