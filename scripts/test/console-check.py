#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fail on what a kernel prints when something is wrong, whatever the tests
report: warnings, BUGs, oopses, lockdep and RCU reports, hung tasks.

Usage: console-check.py [--allow REGEX] CONSOLE_LOG [NAME]

--allow: lines matching REGEX are not reports (the KCSAN run's
'BUG: KCSAN:' lines, which scripts/test/run-kcsan.sh judges itself).

Prints each offending line (with the line before it) and then one line
'console: NAME clean: ok' or 'console: NAME: N kernel reports: FAILED';
exits 1 on any report. scripts/test/userspace-count.py uses the same pattern.
"""
import re
import sys

KERNEL_BAD = re.compile(
    r"(WARNING: |BUG: |Oops|kernel BUG at|general protection fault|"
    r"possible circular locking|possible recursive locking|inconsistent lock state|"
    r"suspicious RCU usage|UBSAN: |INFO: task .* blocked for more than|"
    r"INFO: rcu_.* self-detected stall|watchdog: BUG: soft lockup|"
    r"DEBUG_LOCKS_WARN_ON|Kernel panic)")


def reports(path, allow=None):
    lines = open(path, errors="replace").read().replace("\r", "").split("\n")
    return [(i, l) for i, l in enumerate(lines)
            if KERNEL_BAD.search(l) and not l.startswith("RUSTMM-")
            and not (allow and allow.search(l))]


def main():
    args = sys.argv[1:]
    allow = None
    if args[:1] == ["--allow"]:
        allow, args = re.compile(args[1]), args[2:]
    path = args[0]
    name = args[1] if len(args) > 1 else path
    bad = reports(path, allow)
    for i, line in bad[:20]:
        print(f"  {path}:{i + 1}: {line.strip()}")
    if bad:
        print(f"console: {name}: {len(bad)} kernel reports: FAILED")
        return 1
    print(f"console: {name} clean: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
