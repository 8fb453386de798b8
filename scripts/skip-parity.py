#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Skip parity of a kselftest program between two guest console logs.

Usage: skip-parity.py PROGRAM PATCHED_LOG BASE_LOG

A test of PROGRAM that skips on the patched kernel must skip on the base
kernel too, for the same reason (and the reverse): a skip that only one
kernel has would hide a behaviour change. Tests are matched by their TAP
number within the program's run; names come from the '# [RUN] ...' line
before each result. Prints each mismatch, then
'parity: N passed, N failed' with one check per test skipped on either
kernel.
"""
import re
import sys


def skips(path, program):
    """{tap_number: (name, reason)} of PROGRAM's skipped tests; None if it
    did not run."""
    out, inside, name, seen = {}, False, "", False
    for line in open(path, errors="replace").read().replace("\r", "").split("\n"):
        m = re.match(r"RUSTMM-PROGRAM (\S+) (\S+)", line)
        if m:
            inside = m.group(1) == program and m.group(2) == "start"
            seen |= inside
            continue
        if not inside:
            continue
        m = re.match(r"# \[RUN\] (.*)", line)
        if m:
            name = m.group(1)
            continue
        m = re.match(r"ok (\d+) # SKIP\s*(.*)", line)
        if m:
            out[int(m.group(1))] = (name, m.group(2).strip())
    return out if seen else None


def main():
    program, patched_log, base_log = sys.argv[1:4]
    patched, base = skips(patched_log, program), skips(base_log, program)
    if patched is None or base is None:
        print(f"parity: {program} did not run in "
              f"{patched_log if patched is None else base_log}")
        print("parity: 0 passed, 1 failed")
        return 1
    ok = bad = 0
    for n in sorted(set(patched) | set(base)):
        if n in patched and n in base and patched[n][1] == base[n][1]:
            ok += 1
            continue
        bad += 1
        where = "patched only" if n not in base else "base only" if n not in patched else "different reasons"
        name, why = patched.get(n) or base.get(n)
        print(f"  {program} test {n} ({name}): skip on {where}: {why}")
    reasons = {}
    for _, why in patched.values():
        reasons[why] = reasons.get(why, 0) + 1
    for why, count in sorted(reasons.items()):
        print(f"  {program}: {count} skipped on both kernels: {why}")
    print(f"parity: {ok} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
