#!/bin/bash
# Builds runsc and runs a real program in a sandbox.
#
#   tools/demo.sh                       # a short tour with busybox (static)
#   tools/demo.sh /abs/path/PROG ARGS   # runs PROG under `runsc do --`
#
# Today the Sentry runs statically linked x86-64 programs given by absolute
# path, on a tmpfs root holding a copy of the program, the working directory,
# /tmp and /dev/shm (no Gofer or execve yet); see README.md.
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
run "$runsc" do -- /bin/busybox uname -a
run "$runsc" do -- /bin/busybox echo "hello from inside the sandbox"
echo "\$ echo 'some data' | $runsc do -- /bin/busybox sha256sum   (then natively)" >&2
echo 'some data' | "$runsc" do -- /bin/busybox sha256sum
echo 'some data' | /bin/busybox sha256sum
run "$runsc" do -- /bin/busybox sh -c \
  'mkdir -p /tmp/d && echo hello > /tmp/d/f && ls -l /tmp/d && pwd'
echo "\$ $runsc do --strace-summary -- /bin/busybox true" >&2
"$runsc" do --strace-summary -- /bin/busybox true
