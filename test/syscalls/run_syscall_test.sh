#!/bin/bash
# Test wrapper made by //bazel:syscall_test.bzl: runs the syscall test runner
# (first argument) with the remaining arguments. The runner writes per-case
# XML to $XML_OUTPUT_FILE itself.
runner="$1"
shift
exec "$runner" "$@"
