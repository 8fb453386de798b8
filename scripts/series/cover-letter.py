#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fill in a topic's cover letter, and check one against the benchmarks.

  cover-letter.py --topic T --topic-dir kernel-patches/T --cover 0000-...patch
                  --bench docs/benchmarks.json --tree build/linux-...
                  --test-result build/test-result.txt
      replaces `git format-patch --cover-letter`'s *** SUBJECT HERE *** with
      the topic's Title and *** BLURB HERE *** with kernel-patches/T/cover,
      in which @BENCHMARKS@ becomes the benchmark summary of
      the topic's benchmark report (its "Bench:" field, default
      docs/benchmarks.json; with its command) and @TESTS@ the test summary
      (KUnit cases counted in the tree, the last `make test` result if it
      was run on this very tree).

  cover-letter.py --check COVER... --bench docs/benchmarks.json
      reads the benchmark lines back out of exported cover letters and
      compares every number with that JSON report; prints one line per
      cover letter and exits 1 on any mismatch (or a cover letter whose
      benchmark section lost a case).
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from results import rust_kunit_declared  # noqa: E402  (a Rust suite's cases, as make test counts them)

BENCH_BEGIN = "Benchmarks ("
ROW = re.compile(r"^  (\S+)\s+([+-]\d+\.\d\d)%\s+\[([+-]\d+\.\d\d), ([+-]\d+\.\d\d)\]\s+(\S+)\s+(\S.*?)\s*$")


def field(topic_dir, key):
    for line in open(os.path.join(topic_dir, "topic")):
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def bench_rows(bench):
    """(case, change %, interval low %, high %, target text, verdict) per case."""
    rows = []
    for c in bench["cases"]:
        if "ci_pct" in c:
            lo, hi = c["ci_pct"] if c["ci_pct"] else (None, None)
            verdict = c.get("verdict") or "-"
        elif c.get("refused"):
            lo = hi = None
            verdict = "refused"
        else:  # the single-boot format: spread of min/max ratios
            lo, hi = (c["ratio_low"] - 1) * 100, (c["ratio_high"] - 1) * 100
            verdict = {True: "met", False: "missed", None: "-"}[c.get("target_met")]
        t = c.get("target_pct")
        if not t:
            target = "-"
        elif t[0] is None:
            target = f"<={t[1]:+.1f}%"
        else:
            target = f"{t[0]:+.1f}..{t[1]:+.1f}%"
        rows.append((c["case"], c.get("change_pct"), lo, hi, target, verdict))
    return rows


def shown(path):
    """A benchmark report's path as the repository names it (docs/...)."""
    return "docs/" + os.path.basename(path)


def bench_section(bench, path):
    """The cover letter's benchmark section for the JSON report at path."""
    m = bench["meta"]
    path = shown(path)
    report = os.path.splitext(path)[0] + ".md"
    what = m.get("statistic", "median of the runs of one boot per group; interval: spread of the ratios")
    base = re.match(r"linux-source-(\S+)", (m.get("base") or {}).get("source", ""))
    out = [f"{BENCH_BEGIN}instructions executed by each measured action under",
           f"QEMU TCG -icount, patched vs unpatched {base.group(1) if base else 'base'} built and booted alike;",
           f"{what}):", "",
           f"  $ {m['command']}", "",
           f"  {'case':<22}{'change':>9}   {'interval':<18} {'target':<13}verdict"]
    for case, ch, lo, hi, target, verdict in bench_rows(bench):
        if ch is None or lo is None:
            out.append(f"  {case:<22}{'-':>9}   {'-':<18} {target:<13}{verdict}")
            continue
        interval = f"[{lo:+.2f}, {hi:+.2f}]"
        out.append(f"  {case:<22}{ch:+8.2f}%   {interval:<18} {target:<13}{verdict}")
    ratios = bench.get("same_kernel_ratios", [])
    if ratios:
        out += ["", "Same kernel (patched), within each boot: measurement against measurement",
                "(ratio of medians of boot medians; 95 % bootstrap interval):", "",
                f"  {'measurements':<44}{'ratio':>8}   {'interval':<18} {'target':<8}verdict"]
        for r in ratios:
            if r.get("refused"):
                out.append(f"  {r['case']:<44}{'-':>8}   {'-':<18} {'-':<8}refused")
                continue
            t = f"<={r['target_ratio']:.1f}x" if r.get("target_ratio") else "-"
            interval = f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
            out.append(f"  {r['case']:<44}{r['ratio']:7.3f}x   {interval:<18} {t:<8}{r.get('verdict') or '-'}")
    out += ["", f"Full report, with the kernels' provenance: {report} of the",
            "rust-mm repository (the numbers above are generated from",
            f"{path} by `make series`)."]
    return "\n".join(out)


def kunit_dirs(tree):
    """Where the series' KUnit suites live: mm/, lib/ and each arch's mm/."""
    dirs = ["mm", "lib"]
    for arch in sorted(os.listdir(os.path.join(tree, "arch"))):
        if os.path.isdir(os.path.join(tree, "arch", arch, "mm")):
            dirs.append(os.path.join("arch", arch, "mm"))
    return dirs


def kunit_cases(tree, suite):
    """Number of cases of the suite named @suite in the tree: the
    KUNIT_CASE entries of a C suite, the #[test] functions of a Rust one
    (#[kunit_tests] in rust/mm)."""
    rust = os.path.join(tree, "rust", "mm")
    for name in sorted(os.listdir(rust)) if os.path.isdir(rust) else []:
        if name.endswith(".rs"):
            cases = rust_kunit_declared(open(os.path.join(rust, name), errors="replace").read())
            if suite in cases:
                return len(cases[suite]), f"rust/mm/{name}"
    for root in kunit_dirs(tree):
        d = os.path.join(tree, root)
        for name in sorted(os.listdir(d)):
            if not name.endswith(".c"):
                continue
            src = open(os.path.join(d, name), errors="replace").read()
            m = re.search(r"struct kunit_suite \w+ = \{[^}]*\.name\s*=\s*\"%s\"[^}]*\.test_cases\s*=\s*(\w+)" % re.escape(suite), src)
            if not m:
                continue
            arr = re.search(r"struct kunit_case %s\[\]\s*=\s*\{(.*?)\n\};" % m.group(1), src, re.S)
            if arr:
                return len(re.findall(r"KUNIT_CASE\w*\(", arr.group(1))), f"{root}/{name}"
    return None, None


def tests_section(topic_dir, tree, test_result):
    out = []
    suites = field(topic_dir, "KUnit").split()
    if suites:
        out.append("KUnit suites of this topic (cases counted in the tree):")
        for s in suites:
            n, where = kunit_cases(tree, s)
            if n is None:
                raise SystemExit(f"cover-letter: KUnit suite {s} not found in {tree} "
                                 f"({', '.join(['rust/mm'] + kunit_dirs(tree))})")
            out.append(f"  {s:<18} {n:3d} cases  ({where})")
    tree_hash = subprocess.run(["git", "-C", tree, "rev-parse", "rust-mm^{tree}"],
                               capture_output=True, text=True).stdout.strip()
    res = {}
    if os.path.exists(test_result):
        for line in open(test_result):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                res[k] = v
    if res.get("tree") == tree_hash and res.get("result"):
        out.append(f"`make test` on this series (x86_64, {res.get('date', '?')}): {res['result']}.")
    else:
        out.append("`make test` has not been run on this exact series in this checkout:")
        out.append("run it before sending and quote its last line here.")
    return "\n".join(out)


def fill(args):
    topic_dir = args.topic_dir
    text = open(os.path.join(topic_dir, "cover")).read().rstrip("\n")
    if "@BENCHMARKS@" in text:
        if os.path.isfile(args.bench):
            section = bench_section(json.load(open(args.bench)), args.bench)
        else:
            # Not measured on this base yet: said so, with no numbers.
            section = (f"Benchmarks: {shown(args.bench)} has not been measured on this base yet\n"
                       "(`make bench` writes it).")
        text = text.replace("@BENCHMARKS@", section)
    if "@TESTS@" in text:
        text = text.replace("@TESTS@", tests_section(topic_dir, args.tree, args.test_result))
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        raise SystemExit(f"cover-letter: unknown placeholders in {topic_dir}/cover: {left}")
    cover = open(args.cover).read()
    title = field(topic_dir, "Title")
    if "*** SUBJECT HERE ***" not in cover or "*** BLURB HERE ***" not in cover:
        raise SystemExit(f"cover-letter: {args.cover} is not a format-patch cover letter template")
    cover = cover.replace("*** SUBJECT HERE ***", title).replace("*** BLURB HERE ***", text)
    open(args.cover, "w").write(cover)
    return 0


def check(args):
    with open(args.bench) as f:
        bench = json.load(f)
    want = {r[0]: r for r in bench_rows(bench)}
    bad = 0
    for path in args.check:
        with open(path) as f:
            lines = f.read().split("\n")
        if not any(l.startswith(BENCH_BEGIN) for l in lines):
            print(f"cover-check: {path}: no benchmark section")
            continue
        seen, wrong = set(), []
        cmd = [l.strip()[2:] for l in lines if l.startswith("  $ ")]
        if cmd != [bench["meta"]["command"]]:
            wrong.append(f"command {cmd} != {bench['meta']['command']!r}")
        for l in lines:
            m = ROW.match(l)
            if not m or m.group(1) not in want:
                continue
            case = m.group(1)
            seen.add(case)
            _, ch, lo, hi, target, verdict = want[case]
            got = (float(m.group(2)), float(m.group(3)), float(m.group(4)), m.group(5), m.group(6))
            exp = (round(ch, 2), round(lo, 2), round(hi, 2), target, verdict)
            if got != exp:
                wrong.append(f"{case}: cover says {got}, {shown(args.bench)} {exp}")
        missing = sorted(c for c, r in want.items() if r[1] is not None and c not in seen)
        if missing:
            wrong.append(f"cases missing from the cover letter: {missing}")
        if wrong:
            bad = 1
            print(f"cover-check: {path}: FAILED")
            for w in wrong:
                print(f"  {w}")
        else:
            print(f"cover-check: {path}: {len(seen)} benchmark cases match {shown(args.bench)}: ok")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--topic")
    ap.add_argument("--topic-dir")
    ap.add_argument("--cover")
    ap.add_argument("--bench", required=True)
    ap.add_argument("--tree")
    ap.add_argument("--test-result")
    ap.add_argument("--check", nargs="+")
    args = ap.parse_args()
    return check(args) if args.check else fill(args)


if __name__ == "__main__":
    sys.exit(main())
