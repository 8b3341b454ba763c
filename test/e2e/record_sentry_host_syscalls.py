#!/usr/bin/env python3
"""Records the host syscalls the Sentry makes while running programs.

Runs `strace -f` over `runsc do -- PROGRAM` for each program given, keeps
only the Sentry's own threads (the process `runsc do` forks, after it
execs `runsc boot`, and the threads it clones), not the CLI and not the
stub processes the platform clones, and prints a Markdown table: syscall,
calls per program, total.

Usage: record_sentry_host_syscalls.py RUNSC PROGRAM[:ARGS] ...
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

LINE = re.compile(r"^(\d+)\s+(.*)$")
CALL = re.compile(r"^([a-z0-9_]+)\(")
RESUMED = re.compile(r"^<\.\.\. ([a-z0-9_]+) resumed>")
RESULT = re.compile(r"\)\s+=\s+(-?\d+|\?)")


def parse(path):
    """Yields (pid, syscall, full text) for each completed call."""
    pending = {}
    with open(path) as f:
        for raw in f:
            m = LINE.match(raw.rstrip("\n"))
            if not m:
                continue
            pid, rest = int(m.group(1)), m.group(2)
            if rest.startswith("+++") or rest.startswith("---"):
                continue
            r = RESUMED.match(rest)
            if r:
                name = r.group(1)
                text = pending.pop(pid, name + "(") + rest[r.end():]
                yield pid, name, text
                continue
            c = CALL.match(rest)
            if not c:
                continue
            if rest.endswith("<unfinished ...>"):
                pending[pid] = rest[: -len("<unfinished ...>")]
                continue
            yield pid, c.group(1), rest


def sentry_calls(path):
    calls = list(parse(path))
    if not calls:
        return collections.Counter()
    cli = calls[0][0]
    sentry = None
    threads = set()
    counts = collections.Counter()
    for pid, name, text in calls:
        res = RESULT.search(text)
        ret = int(res.group(1)) if res and res.group(1) != "?" else -1
        if sentry is None:
            if pid == cli and name in ("clone", "clone3", "fork", "vfork") and ret > 0:
                sentry = ret
                threads.add(sentry)
            continue
        if pid not in threads:
            continue
        counts[name] += 1
        if name in ("clone", "clone3") and ret > 0 and "CLONE_THREAD" in text:
            threads.add(ret)
    return counts


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    runsc = sys.argv[1]
    per_program = collections.OrderedDict()
    for spec in sys.argv[2:]:
        prog, _, args = spec.partition(":")
        with tempfile.NamedTemporaryFile(suffix=".strace") as out:
            cmd = ["strace", "-f", "-qq", "-o", out.name, runsc, "do", "--",
                   prog] + (args.split(",") if args else [])
            r = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
            per_program[os.path.basename(prog)] = (r.returncode,
                                                   sentry_calls(out.name))
    names = sorted(set().union(*(c for _, c in per_program.values())))
    progs = list(per_program)
    print("| syscall | " + " | ".join(progs) + " | total |")
    print("|---|" + "---|" * (len(progs) + 1))
    for n in names:
        row = [per_program[p][1].get(n, 0) for p in progs]
        print("| %s | %s | %d |" % (n, " | ".join(str(x) for x in row),
                                    sum(row)))
    print()
    print("Exit status per program: " + ", ".join(
        "%s=%d" % (p, per_program[p][0]) for p in progs))
    print("Distinct syscalls: %d" % len(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
