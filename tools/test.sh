#!/bin/bash
# Builds everything and runs every test: the README's test command.
# Installs dependencies first. Leaves no Bazel server running (--batch).
# Last line: "N passed, N failed, N skipped", counted per gtest case.
set -uo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }

# The layering check, first for an early message; //tools:layering_test
# runs it again inside bazel test, where a crossing counts as a failure.
python3 tools/check-layering.py || echo "check-layering failed: see above"

log=$(mktemp /tmp/bazel-test.XXXXXX.log)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
bazel --batch test //... "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
echo "bazel test exited $rc after $(( $(date +%s) - start )) s"
# The lock annotations, checked by clang against what the build generated
# (one more case in the count).
if tools/thread-safety.sh --direct; then
  echo "//tools:thread_safety_check PASSED" >>"$log"
else
  echo "//tools:thread_safety_check FAILED" >>"$log"
fi
# The sources follow .clang-format (one more case).
if tools/check-format.sh; then
  echo "//tools:format_check PASSED" >>"$log"
else
  echo "//tools:format_check FAILED" >>"$log"
fi
# bazel test leaves the bazel-testlogs symlink; no second (batch) JVM start.
python3 tools/count-tests.py "$log" "$(readlink -f bazel-testlogs)"
count_rc=$?
if [[ $rc != 0 || $count_rc != 0 ]]; then
  exit 1
fi
exit 0
