#!/bin/bash
# Runs mm_stress under `runsc do` (the real systrap platform) and checks it.
set -u
runsc="$1"
prog="$(realpath "$2")"
runsc="$(realpath "$runsc")"
out="$("$runsc" do -- "$prog" 2>"${TEST_TMPDIR:-/tmp}/stderr")"
rc=$?
echo "$out"
if [ $rc -ne 0 ] || [ "$out" != "mm ok" ]; then
  echo "mm_stress under runsc: exit $rc" >&2
  cat "${TEST_TMPDIR:-/tmp}/stderr" >&2
  exit 1
fi
# And natively, so the program itself is known good.
native="$("$prog")" || { echo "native run failed: $native" >&2; exit 1; }
[ "$native" = "mm ok" ] || { echo "native: $native" >&2; exit 1; }
