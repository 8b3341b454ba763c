#!/bin/bash
# Checks Abseil's lock annotations (ABSL_GUARDED_BY, ABSL_EXCLUSIVE_LOCKS_REQUIRED,
# ...) with clang's -Wthread-safety. Bazel's toolchain is gcc, which ignores
# them, so this compiles every C++ source of the tree once more with clang,
# syntax only.
#
# Usage: tools/thread-safety.sh [--selftest] [--direct] [TARGET_PATTERN...]
#   TARGET_PATTERN  what to check (default: every top-level package tree);
#                   with --direct, source files (default: all of them).
#   --selftest      only check that a known violation is caught.
#   --direct        no second output base and no aquery: every C++ source of
#                   the repository (git ls-files; not third_party, and not the
#                   guest programs and tests of test/ and perf/) is checked
#                   with `clang++ -I. -Ibazel-bin` against the generated headers
#                   the last `bazel build`/`bazel test` of the main output base
#                   left in bazel-bin (the system's Abseil, gtest, gRPC and
#                   protobuf headers are Debian's, as Bazel's build uses). What
#                   tools/test.sh (so CI) runs after the tests.
# How: builds the targets with Bazel under a separate output base (so that
# generated headers exist), asks `bazel aquery` for every CppCompile command
# line (paths relative to Bazel's execroot, which becomes each entry's
# "directory"), writes them as compile_commands.json at the top of the tree
# (for clangd and clang-tidy: `clang-tidy -p . FILE.cc`), and reruns each
# source of this repository (not bazel-out/ or external/) as `clang++
# -fsyntax-only -Wthread-safety -Werror=thread-safety`, gcc-only flags dropped.
# (Not bear: under `bear -- bazel --batch build` in a fresh output base,
# Bazel 4.2.3's C++ autoconfiguration hangs in `gcc -E -xc -` behind bear's
# wrapper; aquery gives the same command lines and needs no clean rebuild.)
# Env: THREAD_SAFETY_OUTPUT_BASE (default ~/.cache/bazel-ob/thread-safety).
# Exit status: 0 clean, 1 violations (or a file clang cannot compile), 2 setup.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
tools/install-deps.sh --dev || exit 2
root="$PWD"
selftest=0
direct=0
patterns=()
for arg in "$@"; do
  case "$arg" in
    --selftest) selftest=1 ;;
    --direct) direct=1 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "thread-safety: unknown flag $arg" >&2; exit 2 ;;
    *) patterns+=("$arg") ;;
  esac
done
for tool in clang++ python3; do
  command -v "$tool" >/dev/null || { echo "thread-safety: $tool not found (tools/install-deps.sh)" >&2; exit 2; }
done

clang_flags=(-fsyntax-only -Wthread-safety -Wthread-safety-beta
             -Werror=thread-safety -Wno-unknown-warning-option)

if [ $selftest -eq 1 ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  cat >"$tmp/bad.cc" <<'CC'
#include "absl/synchronization/mutex.h"
class Counter {
 public:
  void Bad() { ++n_; }  // Not holding mu_.
  void Good() { absl::MutexLock l(&mu_); ++n_; }
 private:
  absl::Mutex mu_;
  int n_ ABSL_GUARDED_BY(mu_) = 0;
};
CC
  if clang++ -std=c++20 "${clang_flags[@]}" "$tmp/bad.cc" 2>"$tmp/err"; then
    echo "thread-safety: SELFTEST FAILED: the violation was not reported" >&2
    exit 1
  fi
  if ! grep -q "requires holding mutex 'mu_'" "$tmp/err"; then
    echo "thread-safety: SELFTEST FAILED: unexpected error:" >&2
    cat "$tmp/err" >&2
    exit 1
  fi
  echo "thread-safety: selftest ok (a write without the lock is an error)"
  exit 0
fi

if [ $direct -eq 1 ]; then
  [ -d bazel-bin ] || { echo "thread-safety: no bazel-bin (build first)" >&2; exit 2; }
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  # Not the guest programs of test/ and perf/ (no locks of ours there).
  if [ ${#patterns[@]} -gt 0 ]; then
    # --direct FILE...: just these sources (a helper checking its change).
    printf '%s\n' "${patterns[@]}" >"$tmp/files"
  else
    git ls-files '*.cc' | grep -v '^third_party/\|^test/\|^perf/' >"$tmp/files"
  fi
  total=$(wc -l <"$tmp/files")
  start=$(date +%s)
  # One clang per file, as many at once as there are CPUs; a file's errors
  # go to its own log so that parallel output does not interleave.
  xargs -P "$(nproc)" -I{} sh -c '
    d="$1"; f="$2"; shift 2
    log="$d/$(echo "$f" | tr / _).log"
    clang++ -std=c++20 "$@" 2>"$log" >/dev/null || echo "$f" >>"$d/failed"
  ' _ "$tmp" {} "${clang_flags[@]}" -I. -Ibazel-bin {} <"$tmp/files" 2>/dev/null
  n=0
  if [ -f "$tmp/failed" ]; then
    n=$(wc -l <"$tmp/failed")
    while read -r f; do
      echo "thread-safety: $f:"
      grep -E "error|note" "$tmp/$(echo "$f" | tr / _).log" | head -20
    done <"$tmp/failed"
  fi
  echo "thread-safety: $total files checked in $(( $(date +%s) - start )) s, $n with errors"
  [ "$n" -eq 0 ] && exit 0 || exit 1
fi

ob="${THREAD_SAFETY_OUTPUT_BASE:-$HOME/.cache/bazel-ob/thread-safety}"
bazel=(bazel --output_base="$ob")
trap '"${bazel[@]}" shutdown >/dev/null 2>&1' EXIT
if [ ${#patterns[@]} -eq 0 ]; then
  # Not //...: the bazel-* symlinks of another output base would be walked.
  for d in */; do
    d="${d%/}"
    case "$d" in bazel-*|third_party) continue ;; esac
    [ -n "$(find "$d" \( -name BUILD -o -name BUILD.bazel \) -print -quit)" ] || continue
    patterns+=("//$d/...")
  done
fi
mkdir -p "$ob"
echo "thread-safety: building ${patterns[*]} (output base $ob)"
# Targets tagged manual (e.g. libFuzzer binaries) are skipped by patterns.
if ! "${bazel[@]}" build --keep_going "${patterns[@]}" </dev/null >"$ob/build.log" 2>&1; then
  echo "thread-safety: the build had errors (see $ob/build.log); checking the rest"
fi
query="mnemonic('CppCompile', deps(set(${patterns[*]})))"
"${bazel[@]}" aquery --keep_going --output=jsonproto "$query" </dev/null \
    >"$ob/aquery.json" 2>"$ob/aquery.log"
execroot="$("${bazel[@]}" info execution_root 2>/dev/null)"

python3 - "$ob/aquery.json" "$execroot" "$root" "${clang_flags[@]}" <<'PY'
import concurrent.futures, json, os, subprocess, sys

aquery, execroot, root, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
try:
    actions = json.load(open(aquery)).get("actions", [])
except (OSError, ValueError) as err:
    print(f"thread-safety: cannot read aquery output: {err}")
    sys.exit(2)
entries = []
for a in actions:
    args = a.get("arguments", [])
    if "-c" in args and args.index("-c") + 1 < len(args):
        entries.append({"directory": execroot, "arguments": args,
                        "file": args[args.index("-c") + 1]})
# gcc-only flags clang rejects, and output flags a syntax check does not need.
DROP = {"-fno-canonical-system-headers", "-c", "-MD"}
DROP_WITH_VALUE = {"-o", "-MF"}
jobs = []
seen = set()
for e in entries:
    f = e["file"]
    if f.startswith(("bazel-out/", "external/", "/")) or not f.endswith((".cc", ".cpp")):
        continue
    if f in seen:
        continue
    seen.add(f)
    args = e["arguments"]
    out = ["clang++"]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in DROP or a.startswith("-Wno-free-nonheap-object"):
            continue
        if a in DROP_WITH_VALUE:
            skip = True
            continue
        out.append(a)
    jobs.append((f, e["directory"], out + extra))

# A clang-ready copy at the top of the tree for clangd and clang-tidy: each
# file named by its path in the work tree, compiled from the execroot.
def normalized(f, d, cmd):
    abs_f = os.path.join(root, f)
    return {"directory": d, "file": abs_f,
            "arguments": [abs_f if a == f else a for a in cmd[:-len(extra)]]}
with open(os.path.join(root, "compile_commands.json"), "w") as out:
    json.dump([normalized(*j) for j in jobs], out, indent=1)

def run(job):
    f, d, cmd = job
    p = subprocess.run(cmd, cwd=d, capture_output=True, text=True)
    return f, p.returncode, p.stderr

if not jobs:
    print("thread-safety: no compile commands found (see aquery.log)")
    sys.exit(2)
bad = []
with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
    for f, rc, err in ex.map(run, jobs):
        if rc != 0:
            bad.append(f)
            sys.stdout.write(f"==== {f}\n{err}\n")
        elif "warning:" in err and "thread-safety" in err:
            sys.stdout.write(f"==== {f} (warnings)\n{err}\n")
print(f"thread-safety: {len(jobs)} files checked, {len(bad)} with errors")
sys.exit(1 if bad else 0)
PY
