#!/bin/bash
# //tools:layering_test: runs tools/check-layering.py over the workspace.
# Tagged local and external: it reads the source tree behind the runfiles
# symlink (a glob cannot cross packages), so its result is never cached.
set -u
layers="$(readlink -f "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/layers.txt")"
exec python3 "$(dirname "$layers")/check-layering.py" "$(dirname "$layers")/.."
