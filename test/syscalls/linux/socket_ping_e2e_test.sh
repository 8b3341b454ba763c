#!/bin/bash
# iputils ping in `runsc do` over ping sockets (raw sockets are EPERM in
# the sandbox, so ping falls back to SOCK_DGRAM IPPROTO_ICMP/ICMPV6):
# `ping -c 2 127.0.0.1` and `ping -6 -c 2 ::1` must exit 0 with both
# replies, as natively. ping is installed if missing; the test is skipped
# (with the reason) when it cannot be.
set -uo pipefail

root="${RUNFILES_DIR:-${TEST_SRCDIR:-$0.runfiles}}/${TEST_WORKSPACE:-sandbox}"
runsc="$root/runsc-compat/runsc"

ping=$(command -v ping || true)
if [[ -z $ping ]]; then
  if command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
    timeout 300 apt-get install -y -qq iputils-ping >/dev/null 2>&1 || true
  fi
  ping=$(command -v ping || true)
fi
if [[ -z $ping ]]; then
  echo "SKIPPED: iputils-ping is not installed and could not be installed"
  exit 0
fi

fail=0
for args in "-c 2 -i 0.2 127.0.0.1" "-6 -c 2 -i 0.2 ::1" "-c 1 -s 1000 127.0.0.2"; do
  # shellcheck disable=SC2086
  out=$(timeout 60 "$runsc" do -- "$ping" $args 2>&1)
  rc=$?
  want=$(echo "$args" | sed -E 's/.*-c ([0-9]+).*/\1/')
  if [[ $rc != 0 ]] || ! grep -q "$want packets transmitted, $want received" <<<"$out"; then
    echo "FAIL: runsc do ping $args (exit $rc):"
    echo "$out"
    fail=1
  else
    echo "ok: ping $args"
  fi
done
exit $fail
