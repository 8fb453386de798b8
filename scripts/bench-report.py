#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn two benchmark console logs (base, patched) into docs/benchmarks.*.

Each log has lines 'RUSTMM-BENCH <case> <run> <ns>' (tests/bench/
rmap_bench.c). For every case: min/median/max per kernel, the ratio of
medians patched/base, and its spread (patched min / base max .. patched
max / base min). Writes <out>.json (raw numbers and stats), <out>.png
(ratios with spread) and <out>.md (table, command, kernels and configs,
targets; then the hand-written discussion in <out>-notes.md, if any).
Refuses incomplete input: every case needs the same number of runs on
both kernels.
"""
import argparse
import json
import os
import re
import statistics
import sys

ORDER = [f"{k}.{a}" for k in ("thp", "small") for a in (
    "remap", "munmap", "fork", "cow", "cow-byte", "cow-reuse",
    "cow-reuse-byte", "pte-dontneed")] + ["anon-cow-seq", "anon-cow-rand"]

# The seed's figures (Intel Xeon, "all" stage vs v6.7-rc1, PTE-mapped THP).
SEED = {"thp.remap": -34.8, "thp.munmap": 1.0, "thp.fork": 27.8,
        "thp.cow": 0.7, "thp.cow-byte": 0.4, "thp.cow-reuse": -30.0,
        "thp.cow-reuse-byte": -63.9, "thp.pte-dontneed": -0.5}

# The targets, in percent change of the median: (low, high).
TARGET = {"thp.fork": (None, 5.0), "thp.munmap": (None, 2.0),
          "thp.pte-dontneed": (None, 2.0), "thp.cow": (None, 1.0),
          "thp.cow-byte": (None, 1.0), "thp.cow-reuse": (None, -30.0),
          "thp.cow-reuse-byte": (None, -60.0)}
for _a in ("remap", "munmap", "fork", "cow", "cow-byte", "cow-reuse",
           "cow-reuse-byte", "pte-dontneed"):
    TARGET[f"small.{_a}"] = (-0.5, 0.5)


def parse(path):
    runs = {}
    for line in open(path, errors="replace"):
        m = re.match(r"RUSTMM-BENCH (\S+) (\d+) (\d+)$", line.strip())
        if m:
            runs.setdefault(m.group(1), {})[int(m.group(2))] = int(m.group(3))
    return {case: [v for _, v in sorted(r.items())] for case, r in runs.items()}


def config_lines(path, keys):
    out = []
    for line in open(path):
        line = line.strip()
        for k in keys:
            if line.startswith(k + "=") or line == f"# {k} is not set":
                out.append(line)
    return out


def pct(r):
    return (r - 1.0) * 100.0


def main():
    ap = argparse.ArgumentParser()
    for a in ("base", "patched", "base-config", "patched-config", "tree",
              "series", "command", "out"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--mib", type=int, required=True)
    args = ap.parse_args()

    base, patched = parse(args.base), parse(args.patched)
    rows = []
    for case in ORDER:
        b, p = base.get(case, []), patched.get(case, [])
        if len(b) != args.runs or len(p) != args.runs:
            print(f"bench-report: {case}: {len(b)} base and {len(p)} patched "
                  f"runs, want {args.runs} each: refusing a partial report")
            return 1
        bm, pm = statistics.median(b), statistics.median(p)
        ratio = pm / bm
        lo, hi = min(p) / max(b), max(p) / min(b)
        tgt = TARGET.get(case)
        met = None
        if tgt:
            c = pct(ratio)
            met = (tgt[0] is None or c >= tgt[0]) and (tgt[1] is None or c <= tgt[1])
        rows.append({
            "case": case, "base_ns": b, "patched_ns": p,
            "base": {"min": min(b), "median": bm, "max": max(b)},
            "patched": {"min": min(p), "median": pm, "max": max(p)},
            "ratio": ratio, "ratio_low": lo, "ratio_high": hi,
            "change_pct": pct(ratio),
            "base_spread_pct": (max(b) - min(b)) / bm * 100,
            "patched_spread_pct": (max(p) - min(p)) / pm * 100,
            "seed_pct": SEED.get(case), "target_pct": tgt, "target_met": met,
        })

    keys = ["CONFIG_MM_RMAP_ID", "CONFIG_RUST", "CONFIG_TRANSPARENT_HUGEPAGE",
            "CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS", "CONFIG_TRANSPARENT_HUGEPAGE_MADVISE",
            "CONFIG_SMP", "CONFIG_NR_CPUS", "CONFIG_DEBUG_VM", "CONFIG_KASAN",
            "CONFIG_PREEMPT_NONE", "CONFIG_PREEMPT_VOLUNTARY", "CONFIG_PREEMPT"]
    meta = {
        "command": args.command, "tree": args.tree, "series": args.series,
        "runs": args.runs, "mib_per_case": args.mib,
        "qemu": "qemu-system-x86_64 -icount shift=0 -m 2048 -smp 2 (TCG), one guest at a time, a fresh boot per group of cases (thp, small, anon-cow)",
        "base_config": config_lines(args.base_config, keys),
        "patched_config": config_lines(args.patched_config, keys),
    }
    with open(args.out + ".json", "w") as f:
        json.dump({"meta": meta, "cases": rows}, f, indent=1)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench-report: matplotlib missing (python3-matplotlib)")
        return 1
    fig, ax = plt.subplots(figsize=(10, 6))
    ys = list(range(len(rows)))[::-1]
    vals = [r["change_pct"] for r in rows]
    err = [[r["change_pct"] - pct(r["ratio_low"]) for r in rows],
           [pct(r["ratio_high"]) - r["change_pct"] for r in rows]]
    colors = ["tab:green" if v < 0 else "tab:red" for v in vals]
    ax.barh(ys, vals, xerr=err, color=colors, capsize=3)
    ax.set_yticks(ys)
    ax.set_yticklabels([r["case"] for r in rows])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("patched vs base, % change of the median time (bars: spread over runs)")
    ax.set_title(f"rmap IDs on Linux {args.tree}: {args.runs} runs, {args.mib} MiB, QEMU -icount shift=0")
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=100)

    def ns(v):
        return f"{v / 1e6:.3f}"

    md = ["# Benchmarks: base 6.12 vs patched (rmap IDs, COW reuse)", "",
          "Generated by `scripts/bench-report.py` from the runs of:", "",
          "```sh", args.command, "```", "",
          f"- tree: Linux {args.tree}; base = the pristine tree, patched = "
          f"the series ({args.series}) applied",
          f"- configs: `tests/bench/bench.kunitconfig` for both; patched adds "
          f"`CONFIG_MM_RMAP_ID=y`. Base: {', '.join(meta['base_config'])}. "
          f"Patched: {', '.join(meta['patched_config'])}",
          f"- guest: {meta['qemu']}; guest time counts executed instructions "
          "(1 ns per instruction), so the numbers are instruction counts of "
          "each measured action, deterministic up to scheduling and timer "
          "effects, and independent of the host's load",
          f"- {args.runs} runs per case and kernel, runs interleaved case by "
          f"case within a group's boot; {args.mib} MiB per case; `thp.*` = PTE-mapped 2 MiB THP, "
          "`small.*` = order-0 pages (MADV_NOHUGEPAGE); raw numbers in "
          "[benchmarks.json](benchmarks.json)", "",
          "![ratios](benchmarks.png)", "",
          "| case | base median ms (min–max) | patched median ms (min–max) | "
          "change | spread of the ratio | seed (Intel) | target | met |",
          "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b, p, t = r["base"], r["patched"], r["target_pct"]
        target = "" if not t else (f"{t[0]:+.1f}%..{t[1]:+.1f}%" if t[0] is not None
                                   else f"≤ {t[1]:+.1f}%")
        met = "" if r["target_met"] is None else ("yes" if r["target_met"] else "**no**")
        seed = "" if r["seed_pct"] is None else f"{r['seed_pct']:+.1f}%"
        md.append(f"| {r['case']} | {ns(b['median'])} ({ns(b['min'])}–{ns(b['max'])}) "
                  f"| {ns(p['median'])} ({ns(p['min'])}–{ns(p['max'])}) "
                  f"| {r['change_pct']:+.2f}% | {pct(r['ratio_low']):+.2f}% .. "
                  f"{pct(r['ratio_high']):+.2f}% | {seed} | {target} | {met} |")
    notes = args.out + "-notes.md"
    if os.path.exists(notes):
        md += ["", open(notes).read().rstrip()]
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    for r in rows:
        print(f"  {r['case']:22} {r['change_pct']:+7.2f}%  "
              f"[{pct(r['ratio_low']):+.2f}% .. {pct(r['ratio_high']):+.2f}%]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
