#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Count KUnit results in kunit.py's --json output.

Usage: kunit-count.py RESULTS.json SUITE [SUITE...]

Prints one line per test case of the named suites, then
'kunit: N passed, N failed, N skipped'.  Exits 1 if a named suite is
missing from the results (a crash or a suite that never ran is a failure,
not zero tests), 0 otherwise; the caller decides what failures mean.
"""
import json
import sys


def cases(group, path):
    for case in group.get("test_cases", []):
        yield path + [case["name"]], case.get("status", "FAIL")
    for sub in group.get("sub_groups", []):
        yield from cases(sub, path + [sub["name"]])


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        data = json.load(f)
    want = sys.argv[2:]
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    seen = set()
    for path, status in cases(data, []):
        suite = path[0] if len(path) > 1 else ""
        if suite not in want:
            continue
        seen.add(suite)
        status = status if status in counts else "FAIL"
        counts[status] += 1
        print(f"  {status:4} {'.'.join(path)}")
    missing = [s for s in want if s not in seen]
    for s in missing:
        print(f"  FAIL {s} (suite missing from the results: crash or not built)")
        counts["FAIL"] += 1
    print(f"kunit: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
