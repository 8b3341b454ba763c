#!/bin/bash
# Rewrites test/syscalls/linux/sandbox_expected_failures.txt from a real run
# of every syscall test natively and under runsc: each case that passes
# natively but not in the sandbox gets a line. Reasons already in the file
# are kept; a new case gets one guessed from a run of it alone (the syscalls
# the Sentry logs as unimplemented, else the failed check). Review the diff,
# shorten or correct the guessed reasons, and commit the file.
#
#   tools/update-syscall-expectations.sh
#   BAZEL="bazel --output_base=/root/.cache/bazel-ob/NAME" \
#       tools/update-syscall-expectations.sh
#
# Exits non-zero if a case fails natively (the file is still rewritten).
set -euo pipefail
cd "$(dirname "$0")/.."
file="$PWD/test/syscalls/linux/sandbox_expected_failures.txt"
# Flags after "--" come after the target's own: the last --expected_failures
# (the source file, not its runfiles copy) wins.
${BAZEL:-bazel} run //test/syscalls/linux:report_sandbox -- \
  --expected_failures="$file" --update_expected_failures
git --no-pager diff --stat -- "$file" || true
