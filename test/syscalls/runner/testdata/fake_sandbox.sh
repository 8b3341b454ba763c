#!/bin/bash
# Stands in for "runsc do --" in runner_test: runs the command with
# FAKE_SANDBOX=1 so testdata/sample_test.cc behaves differently.
# --cwd-must-be=DIR (runner_test of "{TMPDIR}"): fails unless run in DIR.
if [[ "$1" == --cwd-must-be=* ]]; then
  if [ "$(pwd -P)" != "$(cd "${1#--cwd-must-be=}" && pwd -P)" ]; then
    echo "fake_sandbox: cwd $(pwd) is not ${1#--cwd-must-be=}" >&2
    exit 3
  fi
  shift
fi
[ "$1" = "--" ] && shift
FAKE_SANDBOX=1 exec "$@"
