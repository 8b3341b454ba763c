#!/usr/bin/env python3
"""Counts gtest cases of the test targets one `bazel test` invocation ran.

Reads the invocation's console log for the per-target status lines
("//pkg:target   PASSED in 0.2s", "(cached) PASSED", "FAILED", "TIMEOUT",
"NO STATUS", "FAILED TO BUILD"), then each target's test.xml under
bazel-testlogs. Only the targets named in this log are counted, so stale XML
of deleted targets in a reused output base never counts. A target that failed
without XML (crash, timeout, build failure) counts as one failed case.

Prints "N passed, N failed, N skipped" as its last line. Exits 1 if anything
failed or if no test case ran.
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

STATUS = re.compile(
    r"^(//\S+)\s+(?:\(cached\)\s+)?(PASSED|FAILED TO BUILD|FAILED|TIMEOUT|"
    r"NO STATUS|INCOMPLETE|FLAKY|SKIPPED)\b")


def count_xml(path):
    passed = failed = skipped = 0
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif (case.find("skipped") is not None
              or case.get("result") == "skipped"
              or case.get("status") == "notrun"):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main():
    log, testlogs = sys.argv[1], sys.argv[2]
    passed = failed = skipped = 0
    targets = {}
    with open(log, errors="replace") as f:
        for line in f:
            m = STATUS.match(line.strip())
            if m:
                targets[m.group(1)] = m.group(2)
    for label, status in sorted(targets.items()):
        pkg, _, name = label[2:].partition(":")
        xml = os.path.join(testlogs, pkg, name, "test.xml")
        counts = None
        if status in ("PASSED", "FAILED", "FLAKY") and os.path.exists(xml):
            try:
                counts = count_xml(xml)
            except ET.ParseError as e:
                print(f"count-tests: {label}: bad XML: {e}", file=sys.stderr)
        if counts is None or sum(counts) == 0:
            # No per-case XML: the target as a whole is one case.
            counts = (1, 0, 0) if status == "PASSED" else (0, 1, 0)
        elif status not in ("PASSED", "FLAKY") and counts[1] == 0:
            # The binary failed (e.g. crashed after its cases, or leaked a
            # non-zero exit) although every case passed: count that too.
            counts = (counts[0], 1, counts[2])
        if status not in ("PASSED", "FLAKY"):
            print(f"count-tests: {label}: {status}", file=sys.stderr)
        passed += counts[0]
        failed += counts[1]
        skipped += counts[2]
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    if failed or passed + skipped == 0:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
