#!/usr/bin/env python3
"""Checks every #include "..." and BUILD.bazel label against tools/layers.txt.

Usage: tools/check-layering.py [WORKSPACE_ROOT]
Prints one line per crossing ("file:line: A may not include B (why)") and
exits 1 if there is any; exits 0 and prints a summary otherwise. The rules
are documented at the top of tools/layers.txt. No dependencies beyond
python3. Scans the files under the root (git ls-files when the root is a
git checkout, else a walk, as in the Bazel sandbox), skipping third_party.
"""

import os
import re
import subprocess
import sys

SOURCE_EXT = ('.cc', '.h', '.c', '.cpp', '.hpp', '.inc', '.S')
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
LABEL_RE = re.compile(r'"@?//([A-Za-z0-9_./-]*)(?::([A-Za-z0-9_./+-]+))?"')
TEST_NAME_RE = re.compile(
    r'(_test|_bench|_benchmark|_fuzz[a-z_]*)\.[a-zA-Z]+$|^testing\.(h|cc)$|'
    r'^fake_.*\.h$')


def load_layers(path):
  """Returns (rank of each prefix, layer name of each prefix, denies)."""
  rank, layer_of, denies = {}, {}, []
  with open(path) as f:
    for n, line in enumerate(f, 1):
      line = line.split('#', 1)[0].strip()
      if not line:
        continue
      m = re.match(r'layer\s+(\S+)\s*:\s*(.+)$', line)
      if m:
        for prefix in m.group(2).split():
          rank[prefix] = len(set(layer_of.values()) | {m.group(1)}) - 1
          layer_of[prefix] = m.group(1)
        continue
      m = re.match(
          r'deny\s+(\S+)\s*->\s*(\S+)(?:\s+except\s+([^:]+))?\s*:\s*(.+)$',
          line)
      if m:
        denies.append((m.group(1), m.group(2), (m.group(3) or '').split(),
                       m.group(4)))
        continue
      sys.exit(f'{path}:{n}: cannot parse: {line}')
  return rank, layer_of, denies


def under(path, prefix):
  return path == prefix or path.startswith(prefix + '/')


def unit_of(path, rank):
  best = None
  for prefix in rank:
    if under(path, prefix) and (best is None or len(prefix) > len(best)):
      best = prefix
  return best


def is_test_file(path):
  return bool(TEST_NAME_RE.search(os.path.basename(path))) or (
      '/testing/' in path)


def is_testing_helper(path):
  base = os.path.basename(path)
  return (base == 'testing' or base.startswith('testing.') or
          '/testing/' in path or
          under(path, 'test/util') or under(path, 'gofer/server'))


def list_files(root):
  try:
    out = subprocess.run(['git', 'ls-files', '--cached', '--others',
                          '--exclude-standard'], cwd=root, check=True,
                         capture_output=True, text=True).stdout.split()
    if out:
      return out
  except (OSError, subprocess.CalledProcessError):
    pass
  files = []
  for d, dirs, names in os.walk(root, followlinks=True):
    dirs[:] = [x for x in dirs if not x.startswith(('bazel-', '.'))]
    for name in names:
      files.append(os.path.relpath(os.path.join(d, name), root))
  return files


def check_edge(src, target, test, rank, layer_of, denies):
  """Returns the reason src may not use target, or None."""
  a, b = unit_of(src, rank), unit_of(target, rank)
  if b is None or a == b:
    return None
  for frm, to, excepts, why in denies:
    if (under(src, frm) and under(target, to) and not under(target, frm) and
        not any(under(target, e) for e in excepts)):
      return why
  if test and is_testing_helper(target):
    return None
  if not test and is_testing_helper(target) and not under(target, 'gofer/server'):
    return 'a testing helper, for tests only'
  la, lb = layer_of[a], layer_of[b]
  if rank[b] < rank[a]:
    return None
  if rank[b] == rank[a]:
    return f'{a} and {b} are peers in layer {la}'
  return f'{la} is below {lb}'


def main():
  root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                         os.path.join(os.path.dirname(__file__), '..'))
  rank, layer_of, denies = load_layers(os.path.join(root, 'tools/layers.txt'))
  errors, edges = [], 0
  for path in sorted(list_files(root)):
    if under(path, 'third_party') or path.startswith('bazel-'):
      continue
    full = os.path.join(root, path)
    if not os.path.isfile(full):
      continue  # deleted in the work tree, still in git's index
    src_unit = unit_of(path, rank)
    if path.endswith(SOURCE_EXT):
      if src_unit is None:
        errors.append(f'{path}:1: not in any layer of tools/layers.txt')
        continue
      test = is_test_file(path)
      with open(full, errors='replace') as f:
        for n, line in enumerate(f, 1):
          m = INCLUDE_RE.match(line)
          if not m:
            continue
          edges += 1
          why = check_edge(path, m.group(1), test, rank, layer_of, denies)
          if why:
            errors.append(f'{path}:{n}: {src_unit} may not include '
                          f'{m.group(1)} ({why})')
    elif os.path.basename(path) in ('BUILD', 'BUILD.bazel') and src_unit:
      pkg = os.path.dirname(path)
      with open(full, errors='replace') as f:
        for n, line in enumerate(f, 1):
          for m in LABEL_RE.finditer(line):
            if m.group(0).startswith('"@') and not m.group(0).startswith('"@//'):
              continue
            target = m.group(1) + '/' + (m.group(2) or '')
            edges += 1
            why = check_edge(pkg + '/BUILD', target, True, rank, layer_of,
                             denies)
            if why:
              errors.append(f'{path}:{n}: {src_unit} may not depend on '
                            f'//{m.group(1)}:{m.group(2) or ""} ({why})')
  for e in errors:
    print(e)
  if errors:
    print(f'check-layering: {len(errors)} crossing(s) of tools/layers.txt')
    return 1
  print(f'check-layering: {edges} includes and labels follow tools/layers.txt')
  return 0


if __name__ == '__main__':
  sys.exit(main())
