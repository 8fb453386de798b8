#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The one parser of what rust-mm's test guests print, and the judge of it.

Every stage that boots a guest reads its console here; every count of a
booted stage is made here, by one set of rules:

  results.py console LOG [--order FILE] [--parity PROG,...] [--tag TAG]
      a userspace boot (scripts/test/run-userspace.sh)
  results.py parity PATCHED_LOG BASE_LOG [PROG...]
      the tree's mm selftests case by case on two kernels
  results.py kunit RESULTS.json --tree KSRC SUITE...
      our KUnit suites against the cases their sources declare
  results.py scan LOG [--allow REGEX] [--name NAME]
      only the kernel-report scan of a console (KUnit's guest)
  results.py kcsan LOG --tree KSRC
      KCSAN reports, and which of them involve the series' code
  results.py warnings LOG --tree KSRC
      compiler warnings of a kernel build in the series' code

Our programs (tests/userspace/result.h) print a plan -- "RUSTMM-PLAN
<program> <n>" and one "RUSTMM-CASE <program>.<case> [may-skip <why>]" per
case -- and then "RUSTMM-TEST <program>.<case> PASS|FAIL|SKIP <why>"; init
prints "RUSTMM-PROGRAM <program> start|exit N|killed by signal N|timeout
after N s", "RUSTMM-SETUP <what> ok|FAIL ..." and "RUSTMM-DONE <n>
programs". The tree's selftests print kselftest TAP (with a "1..N" plan and
"# Totals:" where they use kselftest.h), khugepaged its "Run test:" steps,
uffd-unit-tests its "Testing ...  done|skipped|failed" lines and a total.

The rules (each is a named failure, never a silent pass or miss):
  - a program of the boot's order that did not start or did not end;
  - one of ours that printed no plan, or a plan whose count is not its
    case lines; a planned case with no result or with two; a result no
    plan announced; a SKIP of a case that did not declare it may skip;
  - a selftest whose results do not add up to its own TAP plan or
    "# Totals:" line, or uffd's total (khugepaged prints neither: its
    steps are counted as printed, and the report says so);
  - a program that exits non-zero without having reported a failure, is
    killed, or is chosen by the OOM killer; a failed set-up step; a guest
    that stopped before "RUSTMM-DONE";
  - any kernel warning, BUG, oops, lockdep, RCU or hung-task report,
    wherever it is in a line: every console line is scanned, result lines
    included. A kernel record that lands inside one of our lines (the
    console's record framing: "[  seconds.micros] " timestamps) is cut out
    and scanned, and our line is rejoined with its rest.
A SKIP a case declared is reported with its reason and counted neither
passed nor failed; a selftest's SKIP is reported by name with its reason.
One more check per boot passes: the console held no kernel report.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# What the kernel prints when something is wrong.
KERNEL_BAD = re.compile(
    r"(WARNING: |BUG: |Oops|kernel BUG at|general protection fault|"
    r"possible circular locking|possible recursive locking|inconsistent lock state|"
    r"suspicious RCU usage|UBSAN: |INFO: task .* blocked for more than|"
    r"INFO: rcu_.* self-detected stall|watchdog: BUG: soft lockup|"
    r"DEBUG_LOCKS_WARN_ON|Kernel panic)")
OOM = re.compile(r"Out of memory: Killed process \d+ \((\S+)\)|oom-kill:.*task=(\S+?),")
# The start of a kernel console record (CONFIG_PRINTK_TIME).
PRINTK_TS = re.compile(r"\[\s*\d+\.\d{6}\]")
KSFT_SKIP_EXIT = "4"

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
# Outcomes of a check: counted passed/failed, or reported only.
DECLARED_SKIP = "SKIP (declared)"
REPORTED_SKIP = "SKIP"
COMPARED = "compared in parity"


def read_lines(path):
    with open(path, errors="replace") as f:
        return [ANSI.sub("", l) for l in f.read().replace("\r", "").split("\n")]


def kernel_reports(lines, allow=None):
    """(index, line) of every line with a kernel report, anywhere in it."""
    return [(i, l) for i, l in enumerate(lines)
            if KERNEL_BAD.search(l) and not (allow and allow.search(l))]


def rejoin(lines):
    """The console's lines with kernel records cut out of the user lines they
    landed in, and those lines rejoined: [(index, text, note)], where note is
    "" or says what was rejoined. Kernel records stay lines of their own."""
    out, used = [], set()
    for i, line in enumerate(lines):
        if i in used:
            continue
        m = PRINTK_TS.search(line)
        if not m or m.start() == 0:
            out.append((i, line, ""))
            continue
        head, kernel = line[:m.start()], line[m.start():]
        out.append((i, kernel, ""))
        # The rest of the user line follows the kernel record(s): the next
        # line that is not a record of its own.
        for j in range(i + 1, min(i + 400, len(lines))):
            if j in used:
                continue
            if PRINTK_TS.match(lines[j]):
                continue
            used.add(j)
            out.append((i, head + lines[j], f"rejoined line {i + 1} with line {j + 1} "
                        "(a kernel record had cut it)"))
            break
        else:
            out.append((i, head, f"line {i + 1} cut by a kernel record, its rest never came"))
    return out


class Program:
    def __init__(self, name):
        self.name = name
        self.started = False
        self.end = None          # "exit N", "killed by signal N", "timeout after N s"
        self.plan_n = None       # RUSTMM-PLAN's count
        self.plan = {}           # case -> may-skip reason (None: may not skip)
        self.plan_dups = []
        self.results = []        # (case, status, why, note)
        self.tap_plan = None
        self.steps = []          # indices in results of khugepaged's step lines
        self.totals = None       # kselftest "# Totals:" as a dict
        self.uffd_total = None
        self.kernel = []         # kernel reports while it ran
        self.oom = []
        self.time = None
        self.garbled = []        # our lines that do not parse

    @property
    def ours(self):
        return self.name.startswith("rustmm_")


class Boot:
    """Everything one guest console says."""

    def __init__(self, path):
        self.path = path
        self.programs = {}       # name -> Program, in start order
        self.setup_fail = []     # (what, why)
        self.kernel_boot = []    # kernel reports outside any program
        self.oom_boot = []
        self.done = None         # RUSTMM-DONE's program count
        self.notes = []          # lines rejoined
        self.parse()

    def program(self, name):
        if name not in self.programs:
            self.programs[name] = Program(name)
        return self.programs[name]

    def parse(self):
        lines = read_lines(self.path)
        prog = None
        ktest, run = "", ""
        for _, line, note in rejoin(lines):
            if note:
                self.notes.append(note)
            # Every line is scanned, ours included; a report is the running
            # program's.
            if KERNEL_BAD.search(line):
                (prog.kernel if prog else self.kernel_boot).append(line.strip()[:200])
                continue
            m = OOM.search(line)
            if m:
                victim = m.group(1) or m.group(2)
                (prog.oom if prog else self.oom_boot).append(victim)
                continue
            m = re.match(r"RUSTMM-SETUP (\S+) (ok|FAIL)\s*(.*)", line)
            if m:
                if m.group(2) == "FAIL":
                    self.setup_fail.append((m.group(1), m.group(3)))
                continue
            m = re.match(r"RUSTMM-PROGRAM (\S+) (start|exit (-?\d+)|killed by signal (\d+)|"
                         r"timeout after (\d+) s)\s*$", line)
            if m:
                p = self.program(m.group(1))
                if m.group(2) == "start":
                    p.started, prog, ktest, run = True, p, "", ""
                else:
                    p.end = m.group(2)
                continue
            m = re.match(r"RUSTMM-PROGRAM-TIME (\S+) (\d+) s", line)
            if m:
                self.program(m.group(1)).time = int(m.group(2))
                continue
            m = re.match(r"RUSTMM-DONE (\d+) programs", line)
            if m:
                self.done = int(m.group(1))
                continue
            if prog is None:
                continue
            m = re.match(r"RUSTMM-PLAN (\S+) (\d+)\s*$", line)
            if m:
                prog.plan_n = int(m.group(2))
                continue
            m = re.match(r"RUSTMM-CASE (\S+?)\.(\S+)(?: may-skip (.*))?\s*$", line)
            if m:
                case = f"{m.group(1)}.{m.group(2)}"
                if case in prog.plan:
                    prog.plan_dups.append(case)
                prog.plan[case] = m.group(3)
                continue
            m = re.match(r"RUSTMM-TEST (\S+) (PASS|FAIL|SKIP)(?: (.*))?$", line)
            if m:
                prog.results.append((m.group(1), m.group(2), (m.group(3) or "").strip(), note))
                continue
            if line.startswith("RUSTMM-"):
                prog.garbled.append(line.strip()[:160])
                continue
            # The tree's selftests.
            m = re.match(r"# \[RUN\] (.*)|#\s+RUN\s+(\S+)", line)
            if m:
                run = (m.group(1) or m.group(2)).strip()
                continue
            m = re.match(r"1\.\.(\d+)\s*$", line)
            if m:
                prog.tap_plan = int(m.group(1))
                continue
            m = re.match(r"# Totals: pass:(\d+) fail:(\d+) xfail:(\d+) xpass:(\d+) skip:(\d+) error:(\d+)", line)
            if m:
                prog.totals = dict(zip(("pass", "fail", "xfail", "xpass", "skip", "error"),
                                       map(int, m.groups())))
                continue
            m = re.match(r"Userfaults unit tests: pass=(\d+), skip=(\d+), fail=(\d+) \(total=(\d+)\)", line)
            if m:
                prog.uffd_total = int(m.group(4))
                continue
            m = re.match(r"Run test: (.*)", line)
            if m:
                ktest = m.group(1).strip()
                continue
            m = re.match(r"(.*\S)\s+(OK|Fail|Skip)\s*$", line)
            if m and prog.name.startswith("ksft_mm_khugepaged"):
                status = {"OK": PASS, "Fail": FAIL, "Skip": SKIP}[m.group(2)]
                prog.steps.append(len(prog.results))
                prog.results.append((f"{ktest}: {m.group(1)}", status,
                                     "khugepaged step" if status == SKIP else "", note))
                continue
            m = re.match(r"Testing (.*?)\.\.\. (done|skipped \[reason: (.*)\]|failed \[reason: (.*)\])", line)
            if m and prog.name.startswith("ksft_mm_uffd"):
                if m.group(2) == "done":
                    prog.results.append((m.group(1), PASS, "", note))
                elif m.group(3) is not None:
                    prog.results.append((m.group(1), SKIP, m.group(3), note))
                else:
                    prog.results.append((m.group(1), FAIL, m.group(4), note))
                continue
            m = re.match(r"(not ok|ok) (\d+) (.*)", line)
            if not m:
                continue
            desc = m.group(3)
            name = f"{m.group(2)} {run or desc.partition('#')[0].strip()}"
            run = ""
            if "# SKIP" in desc:
                prog.results.append((name, SKIP, desc.partition("# SKIP")[2].strip(), note))
            else:
                prog.results.append((name, PASS if m.group(1) == "ok" else FAIL, "", note))


def judge(boot, order=None, parity=()):
    """The checks of one boot: [(program, case, outcome, why)], outcome one
    of PASS, FAIL, DECLARED_SKIP, REPORTED_SKIP, COMPARED."""
    checks = []

    def add(prog, case, outcome, why=""):
        checks.append((prog, case, outcome, why))

    for what, why in boot.setup_fail:
        add("boot", f"setup {what}", FAIL, why)
    for line in boot.kernel_boot:
        add("boot", "kernel", FAIL, f"reported '{line}'")
    for victim in boot.oom_boot:
        add("boot", "oom", FAIL, f"the OOM killer killed {victim}")
    expected = list(order or [])
    for name in expected:
        if name not in boot.programs or not boot.programs[name].started:
            add(name, "program", FAIL, "did not run (in the boot's order, never started)")
    for name, p in boot.programs.items():
        if not p.started:
            continue
        if order is not None and name not in expected:
            add(name, "program", FAIL, "ran, but is not in the boot's order")
        for line in p.kernel:
            add(name, "kernel", FAIL, f"reported '{line}'")
        for victim in p.oom:
            add(name, "oom", FAIL, f"the OOM killer killed {victim}: this run is not complete")
        for line in p.garbled:
            add(name, "output", FAIL, f"a line of ours that does not parse: '{line}'")
        mine = len(checks)
        if p.ours:
            judge_ours(p, add)
        else:
            judge_ksft(p, add, name in parity)
        reported_fail = any(s == FAIL for _, s, _, _ in p.results) or \
            any(c[2] == FAIL for c in checks[mine:]) or p.kernel or p.oom
        if p.end is None:
            add(name, "program", FAIL, "never ended (the guest stopped while it ran)")
        elif p.end.startswith("timeout"):
            add(name, "program", FAIL, f"killed after {p.end.split()[-2]} s (time limit)")
        elif p.end.startswith("killed"):
            if not reported_fail:
                add(name, "program", FAIL, p.end)
        elif p.end != "exit 0":
            if p.end == f"exit {KSFT_SKIP_EXIT}" and not p.ours:
                # kselftest's "skipped": with no result at all, the whole
                # program; after some, the rest (judge_ksft reports it).
                if not p.results:
                    add(name, "program", REPORTED_SKIP, "exited KSFT_SKIP without results")
            elif not reported_fail:
                add(name, "program", FAIL, f"{p.end} without reporting a failure")
    if boot.done is None:
        add("boot", "done", FAIL, "the guest stopped before RUSTMM-DONE")
    elif order is not None and boot.done != len(expected):
        add("boot", "done", FAIL, f"init ran {boot.done} programs, the order has {len(expected)}")
    bad = [c for c in checks if c[1] == "kernel"]
    if not bad:
        add("boot", "console", PASS, "no kernel report in the console")
    return checks


def judge_ours(p, add):
    name = p.name
    if p.plan_n is None:
        add(name, "plan", FAIL, "printed no plan (RUSTMM-PLAN): its expected cases are unknown")
    elif p.plan_n != len(p.plan) + len(p.plan_dups):
        add(name, "plan", FAIL, f"the plan says {p.plan_n} cases, it listed {len(p.plan) + len(p.plan_dups)}")
    for case in p.plan_dups:
        add(name, case, FAIL, "planned twice")
    got = {}
    for case, status, why, note in p.results:
        got.setdefault(case, []).append((status, why, note))
    for case, may_skip in p.plan.items():
        rs = got.get(case)
        if not rs:
            add(name, case, FAIL, "planned, but no result line")
            continue
        if len(rs) > 1:
            add(name, case, FAIL, f"{len(rs)} result lines: {', '.join(s for s, _, _ in rs)}")
            continue
        status, why, note = rs[0]
        why = f"{why} [{note}]" if note else why
        if status == SKIP and may_skip:
            add(name, case, DECLARED_SKIP, f"may skip here: {may_skip}; said: {why}")
        elif status == SKIP:
            add(name, case, FAIL, f"skipped without declaring it may: {why}")
        else:
            add(name, case, status, why)
    for case, rs in got.items():
        if case not in p.plan:
            for status, why, note in rs:
                add(name, case, FAIL, f"{status} but not in the plan: {why}")


def judge_ksft(p, add, compared):
    name = p.name
    seen = {}
    # khugepaged of 7.x is TAP (a plan, an "ok" line per test) and still
    # prints its step lines: with a plan, the TAP lines are its results
    # (a failed step makes its test "not ok"); without (6.12), the steps.
    if p.tap_plan is not None and p.steps:
        steps = set(p.steps)
        p.results = [r for i, r in enumerate(p.results) if i not in steps]
        p.steps = []
    for case, status, why, note in p.results:
        n = seen.get(case, 0) + 1
        seen[case] = n
        key = case if n == 1 else f"{case} #{n}"
        if compared:
            add(name, key, COMPARED, f"{status} {why}".strip())
        elif status == SKIP:
            add(name, key, REPORTED_SKIP, why)
        else:
            add(name, key, status, why)
    n = len(p.results)
    if p.tap_plan is not None and p.tap_plan != n and name not in KSFT_NO_TAP_COUNT:
        if p.end == f"exit {KSFT_SKIP_EXIT}" and n < p.tap_plan and p.results and p.results[-1][1] == SKIP:
            # ksft_exit_skip() after the plan: "ok N # SKIP why", exit 4 --
            # the program skipped the rest (kselftest.h calls it a misuse,
            # but a skip it is, reported by name, never a pass).
            add(name, "rest", REPORTED_SKIP,
                f"exited KSFT_SKIP after {n} of {p.tap_plan} planned results: {p.results[-1][2]}")
        else:
            add(name, "plan", FAIL, f"its TAP plan is 1..{p.tap_plan}, {n} results were read")
    if p.totals is not None:
        t = p.totals
        want = (t["pass"] + t["xfail"], t["fail"] + t["xpass"] + t["error"], t["skip"])
        have = (sum(1 for _, s, _, _ in p.results if s == PASS),
                sum(1 for _, s, _, _ in p.results if s == FAIL),
                sum(1 for _, s, _, _ in p.results if s == SKIP))
        if want != have:
            add(name, "totals", FAIL, f"its own totals pass/fail/skip {want}, read {have}")
    if p.uffd_total is not None and p.uffd_total != n:
        add(name, "totals", FAIL, f"its own total is {p.uffd_total}, {n} results were read")


# Selftests whose TAP plan is not their result count (none known today).
KSFT_NO_TAP_COUNT = ()


def count(checks):
    c = {PASS: 0, FAIL: 0, DECLARED_SKIP: 0, REPORTED_SKIP: 0, COMPARED: 0}
    for _, _, outcome, _ in checks:
        c[outcome] += 1
    return c


def times(boot):
    return [(p.name, p.time) for p in boot.programs.values() if p.time is not None]


def cmd_console(args):
    boot = Boot(args.log)
    order = None
    if args.order:
        with open(args.order) as f:
            order = [l.strip() for l in f if l.strip()]
    parity = set(filter(None, (args.parity or "").split(",")))
    checks = judge(boot, order, parity)
    skips = {}
    for prog, case, outcome, why in checks:
        if outcome == COMPARED:
            continue
        if outcome == REPORTED_SKIP:
            skips.setdefault((prog, why), []).append(case)
        elif outcome != PASS or prog.startswith("rustmm_"):
            print(f"  {prog}: {case} {outcome} {why}".rstrip())
    for (prog, why), cases in sorted(skips.items()):
        print(f"  {prog}: {len(cases)} SKIP ({why or 'no reason given'}): " + "; ".join(cases))
    for note in boot.notes:
        print(f"  console: {note}")
    c = count(checks)
    t = times(boot)
    if t:
        print("  time (guest s): " + ", ".join(f"{p} {s}" for p, s in t) +
              f"; total {sum(s for _, s in t)}")
    if c[COMPARED]:
        print(f"  {c[COMPARED]} selftest results left to the parity check ({', '.join(sorted(parity))})")
    print(f"{args.tag}: {c[PASS]} passed, {c[FAIL]} failed, "
          f"{c[DECLARED_SKIP] + c[REPORTED_SKIP]} skipped "
          f"({c[DECLARED_SKIP]} declared by our cases, {c[REPORTED_SKIP]} of selftests)")
    return 1 if c[FAIL] else 0


def case_key(name):
    """A selftest case's name without the numbers it measures.

    Some cases print what they measured in their name (pagemap_ioctl's
    "100 transact_test Extra pages 86 (0.2%), ..."), which differs from run
    to run; the TAP number in front keeps the case unique. khugepaged's
    steps print progress counters and dots (and the console may wrap a
    long line where it likes): those are folded so that a step has one
    key on every run.
    """
    num, _, rest = name.partition(" ")
    if not num.isdigit():
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


def ksft_outcomes(boot, programs):
    out = {}
    for p in boot.programs.values():
        if not p.name.startswith("ksft_mm_") or (programs and p.name not in programs):
            continue
        for case, status, why, _ in p.results:
            key = (p.name, case_key(case))
            n = 2
            while key in out:
                key, n = (p.name, f"{case} #{n}"), n + 1
            out[key] = (status, why if status == SKIP else "")
        if not p.results and p.end == f"exit {KSFT_SKIP_EXIT}":
            out[(p.name, "program")] = (SKIP, "exited KSFT_SKIP without results")
    return out


def cmd_parity(args):
    programs = set(args.programs)
    pb, bb = Boot(args.patched), Boot(args.base)
    patched, base = ksft_outcomes(pb, programs), ksft_outcomes(bb, programs)
    ok = bad = 0
    equal_skip, equal_fail = [], []
    ran_p = {p for p, _ in patched}
    ran_b = {p for p, _ in base}
    for prog in sorted(ran_p ^ ran_b | (programs - ran_p - ran_b)):
        where = args.patched if prog in ran_p else args.base if prog in ran_b else "neither log"
        print(f"  {prog}: ran only in {where}")
        bad += 1
    for key in sorted(set(patched) | set(base)):
        if key[0] not in ran_p or key[0] not in ran_b:
            continue
        p, b = patched.get(key), base.get(key)
        if p and b and p[0] == PASS and b[0] == PASS:
            ok += 1
        elif p == b and p[0] == SKIP:
            equal_skip.append((key, p[1]))
        elif p == b and p[0] == FAIL:
            equal_fail.append(key)
            bad += 1
        else:
            what = "a skip only the patched kernel has" if p and p[0] == SKIP and b and b[0] == PASS else "differs"
            print(f"  {key[0]}: {key[1]}: patched {p or 'absent'}, base {b or 'absent'} ({what})")
            bad += 1
    for key in equal_fail:
        print(f"  {key[0]}: {key[1]}: FAIL on both kernels (counted failed)")
    reasons = {}
    for key, why in equal_skip:
        reasons.setdefault((key[0], why), []).append(key[1])
    for (prog, why), cases in sorted(reasons.items()):
        print(f"  {prog}: {len(cases)} skip on both kernels ({why or 'no reason given'}): " + "; ".join(cases))
    print(f"parity: {ok} passed, {bad} failed (passed: on both kernels; {len(equal_skip)} skip on both, "
          f"not counted; {len(equal_fail)} fail on both, counted failed)")
    return 1 if bad else 0


# ---- KUnit ----------------------------------------------------------------

# A Rust KUnit suite (#[kunit_tests(NAME)] on a module) and its cases (its
# #[test] functions, other attributes allowed between).
RUST_SUITE = re.compile(r"#\[(?:[\w:]*::)?kunit_tests\((\w+)\)\]")
RUST_CASE = re.compile(r"#\[test\]\s*(?:#\[[^\]]*\]\s*)*fn\s+(\w+)")


def rust_kunit_declared(src):
    """suite -> [case] of the #[kunit_tests] modules in Rust source SRC: a
    suite's cases are the #[test] functions up to the next suite."""
    marks = list(RUST_SUITE.finditer(src))
    out = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(src)
        out[m.group(1)] = RUST_CASE.findall(src, m.end(), end)
    return out


def kunit_declared(tree, suites):
    """suite -> [case] from the KUnit sources the series adds to TREE (its
    git history: pristine..rust-mm): each `struct kunit_suite` of a wanted
    name and the KUNIT_CASE*() entries of its test_cases array, and each
    Rust #[kunit_tests] module of a wanted name and its #[test] functions."""
    files = subprocess.run(["git", "-C", tree, "diff", "--name-only", "--diff-filter=AM",
                            "pristine", "rust-mm", "--", "*.c", "*.rs"],
                           capture_output=True, text=True, check=True).stdout.split()
    out = {}
    for f in files:
        with open(os.path.join(tree, f), errors="replace") as fh:
            src = fh.read()
        if f.endswith(".rs"):
            out.update({n: c for n, c in rust_kunit_declared(src).items() if n in suites})
            continue
        arrays = {}
        for m in re.finditer(r"struct\s+kunit_case\s+(\w+)\s*\[\]\s*=\s*\{(.*?)\n\};", src, re.S):
            arrays[m.group(1)] = re.findall(r"KUNIT_CASE\w*\(\s*(\w+)", m.group(2))
        for m in re.finditer(r"struct\s+kunit_suite\s+\w+\s*=\s*\{(.*?)\n\};", src, re.S):
            body = m.group(1)
            n = re.search(r'\.name\s*=\s*"([^"]+)"', body)
            c = re.search(r"\.test_cases\s*=\s*(\w+)", body)
            if n and c and n.group(1) in suites:
                if c.group(1) not in arrays:
                    raise SystemExit(f"{f}: suite {n.group(1)}: no case array {c.group(1)}")
                out[n.group(1)] = arrays[c.group(1)]
    return out


def kunit_cases(group, path):
    for case in group.get("test_cases", []):
        yield path + [case["name"]], case.get("status", FAIL)
    for sub in group.get("sub_groups", []):
        yield from kunit_cases(sub, path + [sub["name"]])


def cmd_kunit(args):
    with open(args.results) as f:
        data = json.load(f)
    declared = kunit_declared(args.tree, set(args.suites))
    got = {}
    for path, status in kunit_cases(data, []):
        if len(path) < 2 or path[0] not in args.suites:
            continue
        got.setdefault((path[0], path[1]), []).append(status)
    counts = {PASS: 0, FAIL: 0, SKIP: 0}

    def out(status, what, why=""):
        counts[status] += 1
        print(f"  {status:4} {what}{('  ' + why) if why else ''}")

    for suite in args.suites:
        if suite not in declared:
            out(FAIL, suite, "(no source in the series declares this suite)")
            continue
        for case in declared[suite]:
            st = got.get((suite, case))
            if not st:
                out(FAIL, f"{suite}.{case}", "(declared in the source, no result: crash or not run)")
            elif len(st) > 1:
                out(FAIL, f"{suite}.{case}", f"({len(st)} results)")
            else:
                s = st[0] if st[0] in counts else FAIL
                out(s, f"{suite}.{case}")
        for (s, case) in sorted(got):
            if s == suite and case not in declared[suite]:
                out(FAIL, f"{suite}.{case}", "(a result no source declares)")
    print(f"kunit: {counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped")
    return 0


def cmd_scan(args):
    allow = re.compile(args.allow) if args.allow else None
    lines = read_lines(args.log)
    bad = kernel_reports(lines, allow)
    name = args.name or args.log
    for i, line in bad[:20]:
        print(f"  {args.log}:{i + 1}: {line.strip()}")
    if bad:
        print(f"console: {name}: {len(bad)} kernel reports: FAILED")
        return 1
    print(f"console: {name} clean: ok")
    return 0


# ---- KCSAN ------------------------------------------------------------------

FRAME = re.compile(r"\b([A-Za-z_][A-Za-z0-9_.$]*)\+0x[0-9a-f]+/0x[0-9a-f]+")
C_FUNC = re.compile(r"^[A-Za-z_][^;{}()=]*?\b([A-Za-z_]\w*)\s*\(", re.M)


def c_functions(src):
    """(name, first line, last line) of every function defined in a C file,
    by its layout (kernel style: the body's braces in column 0)."""
    lines = src.split("\n")
    funcs, i = [], 0
    while i < len(lines):
        if lines[i] == "{":
            # The name is on the nearest line above that opens an argument list.
            j = i - 1
            while j >= 0 and "(" not in lines[j]:
                j -= 1
            m = re.search(r"\b([A-Za-z_]\w*)\s*\(", lines[j]) if j >= 0 else None
            k = i + 1
            while k < len(lines) and lines[k] != "}":
                k += 1
            if m:
                funcs.append((m.group(1), j + 1, k + 1))
            i = k
        i += 1
    return funcs


def tree_git(tree, *a):
    return subprocess.run(["git", "-C", tree, *a], capture_output=True, text=True,
                          check=True).stdout


def series_files(tree):
    """The files the series adds and the files it changes (branch rust-mm
    of a prepared tree against its tag pristine)."""
    return (tree_git(tree, "diff", "--name-only", "--diff-filter=A", "pristine", "rust-mm").split(),
            tree_git(tree, "diff", "--name-only", "--diff-filter=M", "pristine", "rust-mm").split())


def touched_lines(tree, f):
    """The lines of file f (in the series' version) its diff adds or changes."""
    touched = set()
    diff = tree_git(tree, "diff", "-U0", "pristine", "rust-mm", "--", f)
    for m in re.finditer(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", diff, re.M):
        start, n = int(m.group(1)), int(m.group(2) or 1)
        touched.update(range(start, start + max(n, 1)))
    return touched


def series_symbols(tree, rust_dir):
    """The functions of the series: every function of a file it adds, every
    function whose body its diff touches in a file it changes, every
    export of rust/mm (and the crate's own symbols, by the crate name in
    their mangled names)."""
    names = set()
    added, changed = series_files(tree)
    for f in added + changed:
        if not f.endswith((".c", ".h")):
            continue
        with open(os.path.join(tree, f), errors="replace") as fh:
            funcs = c_functions(fh.read())
        if f in added:
            names.update(n for n, _, _ in funcs)
            continue
        touched = touched_lines(tree, f)
        for n, a, b in funcs:
            if any(a <= t <= b for t in touched):
                names.add(n)
    for f in sorted(os.listdir(rust_dir)) if os.path.isdir(rust_dir) else []:
        if f.endswith(".rs"):
            with open(os.path.join(rust_dir, f)) as fh:
                names.update(re.findall(r'extern "C" fn\s+(\w+)', fh.read()))
    return names


def kcsan_reports(text):
    blocks = re.split(r"\n(?=.*BUG: KCSAN:)", text)
    return [b.split("\n=====")[0] for b in blocks if "BUG: KCSAN:" in b]


def is_ours(report, names, crate="rust_mm"):
    for m in FRAME.finditer(report):
        sym = m.group(1)
        if sym in names or f"{len(crate)}{crate}" in sym or sym.startswith(f"{crate}::"):
            return sym
    m = re.search(r"BUG: KCSAN: \S+ in (\S+) / (\S+)", report)
    if m:
        for sym in m.groups():
            if sym in names:
                return sym
    return None


def cmd_kcsan(args):
    with open(args.log, errors="replace") as f:
        text = f.read().replace("\r", "")
    names = series_symbols(args.tree, os.path.join(args.tree, "rust", "mm"))
    reports = kcsan_reports(text)
    ours = []
    for r in reports:
        sym = is_ours(r, names)
        if sym:
            ours.append((sym, r))
    for sym, r in ours:
        print(f"  ours (names {sym}):")
        print("\n".join("    " + l for l in r[:3000].split("\n")))
    print(f"kcsan: {len(reports)} reports ({len(ours)} from rust-mm code; "
          f"the series' code: {len(names)} functions)")
    return 1 if ours else 0


# A compiler's warning: clang and gcc print "PATH:LINE:COL: warning: ...",
# rustc "warning: ..." and then " --> PATH:LINE:COL".
C_WARNING = re.compile(r"^(\S+?):(\d+):\d+: warning: (.*)$", re.M)
RUST_WARNING = re.compile(r"^warning: (.*)\n\s*--> (\S+?):(\d+):\d+$", re.M)


def build_warnings(text, tree, added, touched):
    """The warnings of a build log in the series' code: anywhere in a file
    the series adds, on a line it changes in another (touched(f) gives
    those lines). Paths may be absolute or relative to the tree."""
    found = []
    hits = [(m.group(1), int(m.group(2)), m.group(3)) for m in C_WARNING.finditer(text)]
    hits += [(m.group(2), int(m.group(3)), m.group(1)) for m in RUST_WARNING.finditer(text)]
    root = os.path.abspath(tree) + os.sep
    for path, line, what in hits:
        rel = path[len(root):] if path.startswith(root) else path
        if rel in added or line in touched(rel):
            found.append(f"{rel}:{line}: {what}")
    return sorted(set(found))


def cmd_warnings(args):
    with open(args.log, errors="replace") as f:
        text = f.read().replace("\r", "")
    added, changed = series_files(args.tree)
    changed = set(changed)
    cache = {}

    def touched(rel):
        if rel not in changed:
            return set()
        if rel not in cache:
            cache[rel] = touched_lines(args.tree, rel)
        return cache[rel]
    found = build_warnings(text, args.tree, set(added), touched)
    for w in found:
        print(f"  warning in the series' code: {w}")
    print(f"build: {len(found)} compiler warnings in the series' code")
    return 1 if found else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("console")
    c.add_argument("log")
    c.add_argument("--order")
    c.add_argument("--parity", default="")
    c.add_argument("--tag", default="userspace")
    p = sub.add_parser("parity")
    p.add_argument("patched")
    p.add_argument("base")
    p.add_argument("programs", nargs="*")
    k = sub.add_parser("kunit")
    k.add_argument("results")
    k.add_argument("--tree", required=True)
    k.add_argument("suites", nargs="+")
    s = sub.add_parser("scan")
    s.add_argument("log")
    s.add_argument("--allow")
    s.add_argument("--name")
    q = sub.add_parser("kcsan")
    q.add_argument("log")
    q.add_argument("--tree", required=True)
    w = sub.add_parser("warnings")
    w.add_argument("log")
    w.add_argument("--tree", required=True)
    args = ap.parse_args(argv)
    return {"console": cmd_console, "parity": cmd_parity, "kunit": cmd_kunit,
            "scan": cmd_scan, "kcsan": cmd_kcsan,
            "warnings": cmd_warnings}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
