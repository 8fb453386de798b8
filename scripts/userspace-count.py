#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Count the results in the rust-mm test guest's console log.

Usage: userspace-count.py CONSOLE_LOG

init prints 'RUSTMM-PROGRAM <prog> start' and '... exit N' around each
program. Our programs print 'RUSTMM-TEST <name> PASS|FAIL|SKIP <why>';
kselftest programs print TAP ('ok N desc', 'not ok N desc', '# SKIP').
Prints one line per result as '<prog>: <name> <STATUS>' (skips with their
reason), then 'userspace: N passed, N failed, N skipped'. A program that
exits non-zero or dies counts as one more failure unless it already
reported a failure.
"""
import re
import sys


def main():
    lines = open(sys.argv[1], errors="replace").read().replace("\r", "").split("\n")
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    skips = {}  # (program, reason) -> count, for TAP programs
    prog, failed_in_prog = None, 0
    for line in lines:
        m = re.match(r"RUSTMM-PROGRAM (\S+) (start|exit (-?\d+)|killed by signal (\d+))", line)
        if m:
            if m.group(2) == "start":
                prog, failed_in_prog = m.group(1), 0
            elif m.group(2) != "exit 0" and not failed_in_prog:
                print(f"  {m.group(1)}: program {m.group(2)} FAIL")
                counts["FAIL"] += 1
            continue
        if prog is None:
            continue
        m = re.match(r"RUSTMM-TEST (\S+) (PASS|FAIL|SKIP)\s*(.*)", line)
        if m:
            status, name, why = m.group(2), m.group(1), m.group(3)
        else:
            m = re.match(r"(not ok|ok) \d+ (.*)", line)
            if not m:
                continue
            desc = m.group(2)
            if "# SKIP" in desc:
                status, (name, _, why) = "SKIP", desc.partition("# SKIP")
            else:
                status, name, why = ("PASS" if m.group(1) == "ok" else "FAIL"), desc, ""
        counts[status] += 1
        failed_in_prog += status == "FAIL"
        if status == "SKIP" and not prog.startswith("rustmm_"):
            key = (prog, why.strip())
            skips[key] = skips.get(key, 0) + 1
        elif status != "PASS" or prog.startswith("rustmm_"):
            print(f"  {prog}: {name.strip()} {status} {why.strip()}".rstrip())
    for (p, why), n in sorted(skips.items()):
        print(f"  {p}: {n} SKIP: {why}")
    print(f"userspace: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")


if __name__ == "__main__":
    main()
