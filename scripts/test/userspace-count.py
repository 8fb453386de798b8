#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Count the results in the rust-mm test guest's console log.

Usage: userspace-count.py CONSOLE_LOG

init prints 'RUSTMM-PROGRAM <prog> start' and '... exit N' (or 'killed by
signal N', 'timeout after N s') around each program, and 'RUSTMM-SETUP
<what> ok|FAIL ...' for the machine's set-up (swap, hugetlb pages,
per-program sysctls). Results:

- ours: 'RUSTMM-TEST <name> PASS|FAIL|SKIP <why>';
- kselftest TAP: 'ok N desc', 'not ok N desc', '# SKIP' (an XFAIL is an
  expected failure the test itself accepts: ok);
- selftests/mm/khugepaged: steps ending in OK / Fail / Skip under
  'Run test: <name>' headings (ANSI colours stripped);
- selftests/mm/uffd-unit-tests: 'Testing <case>... done|skipped [reason:
  ...]|failed [reason: ...]'.

Besides the programs' own results, these count as failures, each named:
a program that exits non-zero or dies without having reported a failure, a
program killed by init's time limit, a program the OOM killer chose (even
if it reported passes: its run is not complete), a failed set-up step, and
any kernel warning, BUG, oops, lockdep report or hung task in the console
(attributed to the program that was running). Prints one line per
non-pass result (skips of kselftests grouped by reason), then 'userspace:
N passed, N failed, N skipped'.
"""
import importlib.util
import os
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# What the kernel prints when something is wrong (one pattern, shared).
_spec = importlib.util.spec_from_file_location(
    "console_check", os.path.join(os.path.dirname(os.path.abspath(__file__)), "console-check.py"))
_console = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_console)
KERNEL_BAD = _console.KERNEL_BAD
OOM = re.compile(r"Out of memory: Killed process \d+ \((\S+)\)|oom-kill:.*task=(\S+?),")


def parse(path):
    """Every result in the console log, in order: (program, case, status,
    why); a case is named by its TAP number and the test's own name."""
    lines = open(path, errors="replace").read().replace("\r", "").split("\n")
    records = []
    prog, ktest, run = None, "", ""
    mine = {"PASS": 0, "FAIL": 0, "SKIP": 0}  # the running program's results

    def result(status, name, why=""):
        mine[status] += 1
        records.append((prog or "boot", name.strip(), status, why.strip()))

    for raw in lines:
        line = ANSI.sub("", raw)
        m = KERNEL_BAD.search(line)
        if m and not line.startswith("RUSTMM-"):
            result("FAIL", "kernel", f"reported '{line.strip()[:160]}'")
            continue
        m = OOM.search(line)
        if m:
            victim = m.group(1) or m.group(2)
            result("FAIL", "oom", f"the OOM killer killed {victim}: this run is not complete")
            continue
        m = re.match(r"RUSTMM-SETUP (\S+) (ok|FAIL)\s*(.*)", line)
        if m:
            if m.group(2) == "FAIL":
                result("FAIL", f"setup {m.group(1)}", m.group(3))
            continue
        m = re.match(r"RUSTMM-PROGRAM (\S+) (start|exit (-?\d+)|killed by signal (\d+)|timeout after (\d+) s)", line)
        if m:
            if m.group(2) == "start":
                prog, ktest = m.group(1), ""
                mine.update(PASS=0, FAIL=0, SKIP=0)
            elif m.group(5):
                result("FAIL", "program", f"killed after {m.group(5)} s (time limit)")
            elif m.group(3) == "4" and not mine["FAIL"] and not mine["PASS"]:
                # kselftest's "the whole program skips" (KSFT_SKIP).
                if not mine["SKIP"]:
                    result("SKIP", "program", "exited KSFT_SKIP without results")
            elif m.group(2) != "exit 0" and not mine["FAIL"]:
                result("FAIL", "program", m.group(2))
            continue
        if prog is None:
            continue
        m = re.match(r"# \[RUN\] (.*)|#\s+RUN\s+(\S+)", line)
        if m:
            run = (m.group(1) or m.group(2)).strip()
            continue
        m = re.match(r"RUSTMM-TEST (\S+) (PASS|FAIL|SKIP)\s*(.*)", line)
        if m:
            result(m.group(2), m.group(1), m.group(3))
            continue
        m = re.match(r"Run test: (.*)", line)
        if m:
            ktest = m.group(1).strip()
            continue
        m = re.match(r"(.*\S)\s+(OK|Fail|Skip)\s*$", line)
        if m and prog.startswith("ksft_mm_khugepaged"):
            status = {"OK": "PASS", "Fail": "FAIL", "Skip": "SKIP"}[m.group(2)]
            result(status, f"{ktest}: {m.group(1)}", "khugepaged step" if status == "SKIP" else "")
            continue
        m = re.match(r"Testing (.*?)\.\.\. (done|skipped \[reason: (.*)\]|failed \[reason: (.*)\])", line)
        if m and prog.startswith("ksft_mm_uffd"):
            if m.group(2) == "done":
                result("PASS", m.group(1))
            elif m.group(3) is not None:
                result("SKIP", m.group(1), m.group(3))
            else:
                result("FAIL", m.group(1), m.group(4))
            continue
        m = re.match(r"(not ok|ok) (\d+) (.*)", line)
        if not m:
            continue
        desc = m.group(3)
        name = f"{m.group(2)} {run or desc.partition('#')[0].strip()}"
        run = ""
        if "# SKIP" in desc:
            result("SKIP", name, desc.partition("# SKIP")[2])
        else:
            result("PASS" if m.group(1) == "ok" else "FAIL", name)
    return records


def times(path):
    """(program, seconds) from init's RUSTMM-PROGRAM-TIME lines."""
    out = []
    for line in open(path, errors="replace").read().replace("\r", "").split("\n"):
        m = re.match(r"RUSTMM-PROGRAM-TIME (\S+) (\d+) s", line)
        if m:
            out.append((m.group(1), int(m.group(2))))
    return out


def main():
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    skips = {}  # (program, reason) -> count, for kselftests
    for where, name, status, why in parse(sys.argv[1]):
        counts[status] += 1
        if status == "SKIP" and not where.startswith("rustmm_"):
            skips[(where, why)] = skips.get((where, why), 0) + 1
        elif status != "PASS" or where.startswith("rustmm_"):
            print(f"  {where}: {name} {status} {why}".rstrip())
    for (p, why), n in sorted(skips.items()):
        print(f"  {p}: {n} SKIP: {why}")
    t = times(sys.argv[1])
    if t:
        print("  time (guest s): " + ", ".join(f"{p} {s}" for p, s in t) +
              f"; total {sum(s for _, s in t)}")
    print(f"userspace: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")


if __name__ == "__main__":
    main()
