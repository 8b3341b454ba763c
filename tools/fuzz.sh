#!/bin/bash
# Builds every cc_fuzz_target (//bazel:fuzz.bzl) with clang + libFuzzer +
# AddressSanitizer under a separate Bazel output base, and fuzzes each for N
# seconds starting from a copy of its corpus.
#
# Usage: tools/fuzz.sh [--seconds=N] [TARGET...]
#   TARGET: //pkg:name (the cc_fuzz_target's name); default: all of them.
#   --seconds  per target (default 30).
# Env: FUZZ_OUTPUT_BASE (default ~/.cache/bazel-ob/fuzz-clang),
#      FUZZ_OUT (crashes and grown corpora; default a new /tmp/fuzz-XXXXXX).
# Exit status: 0 if no target crashed, 1 if one did (the input is saved in
# FUZZ_OUT/<name>/ and printed), 2 on a build or usage error.
# Reproduce a crash with the gcc replay test: bazel-bin/<pkg>/<name> CRASH_FILE
set -uo pipefail

seconds=30
targets=()
for arg in "$@"; do
  case "$arg" in
    --seconds=*) seconds="${arg#--seconds=}" ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown flag $arg" >&2; exit 2 ;;
    *) targets+=("$arg") ;;
  esac
done

cd "$(dirname "$0")/.." || exit 2
tools/install-deps.sh --dev || exit 2
command -v clang >/dev/null || { echo "fuzz.sh: clang not found (apt-get install clang)" >&2; exit 2; }
ob="${FUZZ_OUTPUT_BASE:-$HOME/.cache/bazel-ob/fuzz-clang}"
out="${FUZZ_OUT:-$(mktemp -d /tmp/fuzz-XXXXXX)}"
bazel=(bazel --output_base="$ob")
trap '"${bazel[@]}" shutdown >/dev/null 2>&1' EXIT

if [ ${#targets[@]} -eq 0 ]; then
  # Every top-level package tree but the bazel-* convenience symlinks, which
  # //... would walk when they belong to another output base.
  universe=""
  for d in */; do
    d="${d%/}"
    case "$d" in bazel-*|third_party) continue ;; esac
    [ -n "$(find "$d" \( -name BUILD -o -name BUILD.bazel \) -print -quit)" ] || continue
    universe="${universe:+$universe + }//$d/..."
  done
  mapfile -t fuzzers < <("${bazel[@]}" query --noshow_progress \
      "attr(tags, '\bfuzz_libfuzzer\b', $universe)" 2>/dev/null)
else
  fuzzers=()
  for t in "${targets[@]}"; do fuzzers+=("${t%_libfuzzer}_libfuzzer"); done
fi
if [ ${#fuzzers[@]} -eq 0 ]; then
  echo "fuzz.sh: no fuzz targets found" >&2
  exit 2
fi

# Everything is instrumented for coverage and ASan; only the *_libfuzzer
# binaries link libFuzzer's main (their own linkopts add -fsanitize=fuzzer).
flags=(
  --repo_env=CC=clang --repo_env=CXX=clang++
  --copt=-fsanitize=fuzzer-no-link,address --copt=-fno-omit-frame-pointer
  --copt=-g --copt=-O1 --linkopt=-fsanitize=address --strip=never
)
echo "fuzz.sh: building ${fuzzers[*]} with clang (output base $ob)"
# ld.gold warns about every ASan symbol: hide that noise.
"${bazel[@]}" build "${flags[@]}" "${fuzzers[@]}" 2>&1 \
    | grep -v "warning: Cannot export local symbol"
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 2
bin="$("${bazel[@]}" info "${flags[@]}" bazel-bin 2>/dev/null)"

status=0
for f in "${fuzzers[@]}"; do
  pkg="${f#//}"; pkg="${pkg%%:*}"
  name="${f##*:}"; name="${name%_libfuzzer}"
  work="$out/$name"
  mkdir -p "$work/corpus" "$work/artifacts"
  # Seed from the source corpus; libFuzzer adds new inputs to $work/corpus.
  while IFS= read -r label; do
    file="${label#//}"; file="${file#:}"; file="${file/://}"
    [ -f "$file" ] && cp "$file" "$work/corpus/"
  done < <("${bazel[@]}" query --noshow_progress \
      "labels(srcs, //$pkg:${name}_corpus)" 2>/dev/null)
  echo "fuzz.sh: fuzzing //$pkg:$name for ${seconds}s ($(ls "$work/corpus" | wc -l) seeds)"
  "$bin/$pkg/${name}_libfuzzer" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1
  rc=$?
  grep -E '^(stat::number_of_executed_units|stat::new_units_added|#[0-9]+ *DONE)' "$work/log" | sed 's/^/  /'
  if [ $rc -ne 0 ]; then
    status=1
    echo "fuzz.sh: //$pkg:$name FAILED (exit $rc); log $work/log; inputs:"
    ls "$work/artifacts" | sed "s|^|  $work/artifacts/|"
  else
    echo "fuzz.sh: //$pkg:$name ok; grown corpus in $work/corpus"
  fi
done
exit $status
