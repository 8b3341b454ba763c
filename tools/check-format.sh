#!/bin/bash
# Checks that every C++ file (.cc .h .cpp .hpp) tracked by git, plus new
# unignored ones, follows .clang-format.
# Usage: tools/check-format.sh [--fix] [FILE...]  (other files are ignored)
#   --fix   rewrite the files in place instead of reporting.
# Exit status: 0 when all files are formatted (or were fixed), 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
tools/install-deps.sh --dev || exit 2
fix=0
files=()
for arg in "$@"; do
  case "$arg" in
    --fix) fix=1 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) files+=("$(realpath -m -- "$arg")") ;;
  esac
done
command -v clang-format >/dev/null || { echo "check-format: clang-format not found (apt-get install clang-format)" >&2; exit 2; }
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard \
      -- '*.cc' '*.h' '*.cpp' '*.hpp' ':!:third_party/**' | sort -u)
fi
# Only C++ sources (even when named on the command line), and skip files
# deleted from the work tree but still in the index.
existing=()
for f in "${files[@]}"; do
  case "$f" in *.cc|*.h|*.cpp|*.hpp) ;; *) continue ;; esac
  [ -f "$f" ] && existing+=("$f")
done
if [ ${#existing[@]} -eq 0 ]; then echo "check-format: no C++ files"; exit 0; fi
if [ $fix -eq 1 ]; then
  clang-format -i --style=file "${existing[@]}" && echo "check-format: formatted ${#existing[@]} files"
  exit $?
fi
bad=()
for f in "${existing[@]}"; do
  clang-format --dry-run -Werror --style=file "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -ne 0 ]; then
  printf 'check-format: not formatted: %s\n' "${bad[@]}"
  echo "check-format: ${#bad[@]} of ${#existing[@]} files need formatting; run tools/check-format.sh --fix"
  exit 1
fi
echo "check-format: all ${#existing[@]} C++ files formatted"
