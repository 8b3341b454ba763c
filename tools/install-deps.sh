#!/bin/bash
# Installs the Debian packages the build and the tests need. Idempotent: when
# everything is present it only checks (well under a second).
set -euo pipefail

PACKAGES=(
  bazel-bootstrap
  g++
  pkg-config
  libabsl-dev
  libprotobuf-dev
  protobuf-compiler
  libgrpc++-dev
  protobuf-compiler-grpc
  libseccomp-dev
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  python3
  strace
  file
  busybox-static
  libpython3.11-testsuite
  # test/e2e/jupyter_test: a Jupyter kernel on the ipc transport.
  python3-ipykernel
  python3-jupyter-client
  python3-numpy
  # test/e2e/inet_apps_test, inet_python_test and perf/inet/redis_bench:
  # real servers and clients over the sandbox's loopback (each case skips
  # without its package).
  curl
  redis-server
  redis-tools
  golang-go
  nodejs
)

# --dev: also the tools of tools/fuzz.sh, tools/thread-safety.sh and
# tools/check-format.sh (clang, libFuzzer and sanitizer runtimes).
if [[ ${1:-} == --dev ]]; then
  PACKAGES+=(clang libclang-rt-14-dev clang-format clang-tidy)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=()
if [[ $(id -u) != 0 ]]; then SUDO=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q >&2
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
