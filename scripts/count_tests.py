#!/usr/bin/env python3
"""Counts test cases from meson test logs and prints `N passed, N failed`.

Each Catch2 binary prints a summary ("All tests passed (A assertions in N test cases)" or
"test cases: N | P passed | F failed"); a binary that crashed, hung or printed no summary counts
as one failed case, and a skipped binary (exit 77) counts as neither. Exits non-zero when any
case failed or when no test case ran at all.
"""
import json
import re
import sys

ALL_PASSED = re.compile(r"All tests passed \((\d+) assertions? in (\d+) test cases?\)")
MIXED = re.compile(r"test cases:\s*(\d+)\s*\|\s*(\d+)\s*passed\s*\|\s*(\d+)\s*failed")
ONLY_FAILED = re.compile(r"test cases:\s*(\d+)\s*\|\s*(\d+)\s*failed")


def failure_excerpt(out, max_lines=14):
    """The first Catch2 failure of a test's output (its location, expression and expansion), or
    the output's last lines when there is none: enough to see in a CI log why it failed."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if "FAILED:" in line:
            start = max(0, i - 2)
            return [l[:240] for l in lines[start:start + max_lines]]
    return [l[:240] for l in lines[-max_lines:]]


def count_log(path, name_the_log):
    """Cases passed and failed, binaries skipped, and the broken binaries of one meson test log."""
    passed = failed = skipped = 0
    broken = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            entry = json.loads(line)
            name, result, out = entry.get("name", "?"), entry.get("result", "?"), entry.get("stdout", "") or ""
            if result == "SKIP":
                skipped += 1
                continue
            p = fl = None
            m = ALL_PASSED.search(out)
            if m:
                p, fl = int(m.group(2)), 0
            else:
                m = MIXED.search(out)
                if m:
                    p, fl = int(m.group(2)), int(m.group(3))
                else:
                    m = ONLY_FAILED.search(out)
                    if m:
                        p, fl = 0, int(m.group(2))
            if p is None:
                # No Catch2 summary: a crash, a timeout, or a non-Catch2 test; judge by the result.
                p, fl = (1, 0) if result == "OK" else (0, 1)
            if result != "OK" and fl == 0:
                fl = 1  # the binary failed although its cases passed (e.g. a crash at exit)
            passed += p
            failed += fl
            if result != "OK":
                label = f"{path}: {name} ({result})" if name_the_log else f"{name} ({result})"
                broken.append((label, failure_excerpt(out)))
    return passed, failed, skipped, broken


def main() -> int:
    # One or more test logs (the unit suite, the same tests under the sanitizers), then the extras.
    paths = []
    args = sys.argv[1:]
    while args and args[0] != "--extra":
        paths.append(args.pop(0))
    passed = failed = skipped = 0
    broken = []
    # --extra passed|failed (repeatable): one more case decided outside meson each (the firmware
    # cross build, the package install check).
    while len(args) >= 2 and args[0] == "--extra":
        if args[1] == "passed":
            passed += 1
        else:
            failed += 1
            broken.append(("a check outside meson (see the lines above)", []))
        args = args[2:]
    for path in paths:
        p, fl, s, b = count_log(path, len(paths) > 1)
        passed, failed, skipped = passed + p, failed + fl, skipped + s
        broken += b
    for label, excerpt in broken:
        print(f"failed: {label}")
        for line in excerpt:
            print(f"    | {line}")
    if skipped:
        print(f"skipped binaries: {skipped}")
    print(f"{passed} passed, {failed} failed")
    if passed + failed == 0:
        print("no test case ran", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
