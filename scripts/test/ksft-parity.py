#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The tree's mm selftests must have the same outcome on two kernels.

Usage: ksft-parity.py PATCHED_LOG BASE_LOG [PROGRAM...]

For every kselftest program (ksft_mm_*; or the ones named) that ran in
both console logs, each case -- named by its TAP number and the test's own
name, or by khugepaged's and uffd-unit-tests' step names -- must pass,
fail or skip alike on both, and a skip for the same reason: a skip or a
failure only one kernel has would hide a behaviour change. A program that
ran in only one log is one failed check. Prints each mismatch, then
'parity: N passed, N failed' with one check per case.
"""
import importlib.util
import os
import re
import sys

spec = importlib.util.spec_from_file_location(
    "userspace_count", os.path.join(os.path.dirname(os.path.abspath(__file__)), "userspace-count.py"))
counter = importlib.util.module_from_spec(spec)
spec.loader.exec_module(counter)


def case_key(name):
    """A TAP case's name without the numbers it measures.

    Some cases print what they measured in their name (pagemap_ioctl's
    "100 transact_test Extra pages 86 (0.2%), ..."), which differs from run
    to run; the TAP number in front keeps the case unique. Names without a
    TAP number (khugepaged's and uffd's steps) are kept as they are.
    """
    num, _, rest = name.partition(" ")
    if not num.isdigit():
        # khugepaged's collapse_compound_extreme prints a progress step per
        # folio ("... pages   1/512...... pages   2/512..."), all on one
        # console line whose start a run may lose: the key is the step
        # with its counters dropped and its repeats folded.
        # khugepaged also prints a dot per wait for a scan ("pages....",
        # "pages...."), and the console wraps a long line where it likes,
        # so a step may start mid-word ("f different PTE-mapped ..."): the
        # key folds every run of dots, drops empty parts and a first part
        # that is the tail of a later one, and keeps each step once.
        if "..." not in name:
            return name
        test, sep, name = name.rpartition("): ")
        name = re.sub(r"\.{3,}", "...", name)
        parts = [re.sub(r"\s*[0-9]+/[0-9]+$", "", p.strip()) for p in name.split("...")]
        parts = [p for p in parts if p]
        if len(parts) > 1 and any(q != parts[0] and q.endswith(parts[0]) for q in parts[1:]):
            parts = parts[1:]
        folded = []
        for p in parts:
            if p not in folded:
                folded.append(p)
        return test + sep + "...".join(folded)
    return num + " " + re.sub(r"[0-9]+(\.[0-9]+)?", "#", rest)


def outcomes(path, programs):
    out = {}
    for prog, name, status, why in counter.parse(path):
        if not prog.startswith("ksft_mm_") or (programs and prog not in programs):
            continue
        key = (prog, case_key(name))
        n = 2
        while key in out:  # the same name twice in one program
            key, n = (prog, f"{name} #{n}"), n + 1
        out[key] = (status, why if status == "SKIP" else "")
    return out


def main():
    patched_log, base_log = sys.argv[1:3]
    programs = set(sys.argv[3:])
    patched, base = outcomes(patched_log, programs), outcomes(base_log, programs)
    ok = bad = 0
    ran_p = {p for p, _ in patched}
    ran_b = {p for p, _ in base}
    for prog in sorted(ran_p ^ ran_b | (programs - ran_p - ran_b)):
        print(f"  {prog}: ran only in {patched_log if prog in ran_p else base_log if prog in ran_b else 'neither log'}")
        bad += 1
    for key in sorted(set(patched) | set(base)):
        if key[0] not in ran_p or key[0] not in ran_b:
            continue
        p, b = patched.get(key), base.get(key)
        if p == b:
            ok += 1
        else:
            print(f"  {key[0]}: {key[1]}: patched {p or 'absent'}, base {b or 'absent'}")
            bad += 1
    print(f"parity: {ok} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
