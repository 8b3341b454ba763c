#!/bin/bash
# Stands in for "runsc do --" in runner_test: runs the command with
# FAKE_SANDBOX=1 so testdata/sample_test.cc behaves differently.
[ "$1" = "--" ] && shift
FAKE_SANDBOX=1 exec "$@"
