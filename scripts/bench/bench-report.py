#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the benchmark boots' console logs into docs/benchmarks.{md,json,png}.

Input: one console log per boot, LOGS/<kernel>-<case>-<boot>.log, with the
lines of tests/bench/rmap_bench.c:

  RUSTMM-BENCH <case> <run> <ns> expect=<kind> folios=<ok>/<want> mapped=<how> attempts=<n>
  RUSTMM-BENCH-REJECT <case> <run> <counters that moved>
  RUSTMM-BENCH-DISTURBED <case> <run> <counters>

Per case and kernel: the median of each boot's runs, then the median of
those boot medians. The change is patched/base - 1; its 95 % interval is a
hierarchical bootstrap (boots resampled, then runs within each boot, the
same statistic recomputed; fixed seed, so the report is reproducible). The
verdict compares the whole interval with the target: "met" if it lies
inside, "missed" if it lies wholly outside, "inconclusive" otherwise.

A case gets no number and no verdict ("refused: why") when any run's folio
check fell short (THP not allocated, not PTE-/PMD-mapped as the case
defines, compound pages in an order-0 case), when a run never got a quiet
window, or when its boots do not all have the same number of runs. The
report refuses to be written at all if a case has no logs.

What the measured system (--system) defines -- targets, the seed's figures,
measurements per boot case and same-kernel ratios, the slab boot, the
title and prose -- is read from tests/bench/systems/<system>.toml
(scripts/bench/system.py). meta.provenance is the run's record from before
its kernels were built (--provenance: scripts/bench/provenance.py record):
commit, clean, base version, the series' fingerprints; meta.date the day
its last boot ended.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cost_model  # noqa: E402
import system as systems  # noqa: E402

# What a system measures (its cases' targets, the seed's figures, its
# report's title and prose) is its file's, tests/bench/systems/<system>.toml
# (scripts/bench/system.py). TARGET and SEED are the measured system's
# (case_result() reads them; the default system's until main() loads
# BENCH_SYSTEM's): percent change, (low, high), None unbounded.
SYSTEM = systems.load(systems.DEFAULT)
TARGET = dict(SYSTEM.targets)
SEED = dict(SYSTEM.seed)


def use_system(name):
    """Load system @name and make its targets and seed figures TARGET and SEED."""
    s = systems.load(name)
    TARGET.clear()
    TARGET.update(s.targets)
    SEED.clear()
    SEED.update(s.seed)
    return s


MAPPED = {"thp-pte": "pte", "thp-pmd": "pmd", "small": "pte", "mthp-pte": "pte", "none": "-",
          "swap": "-", "devdax-pud": "pud", "devdax-pmd": "pmd",
          "devdax-pte": "pte"}
SLAB = re.compile(r"RUSTMM-SLAB (\S+) (.*)$")


def slab_result(path):
    """The RUSTMM-SLAB lines of a vma.slab boot: {cache: {key: value}}."""
    out = {}
    for line in open(path, errors="replace"):
        m = SLAB.match(line.strip())
        if not m:
            continue
        fields = {}
        for kv in m.group(2).split():
            if "=" in kv:
                k, v = kv.split("=", 1)
                fields[k] = float(v)
            else:
                fields[kv] = True
        out[m.group(1)] = fields
    if "total" not in out:
        raise SystemExit(f"bench-report: {path} has no RUSTMM-SLAB total line")
    return out
IMAGE = {"x86_64": "bzImage", "arm64": "Image.gz"}
RESULT = re.compile(r"RUSTMM-BENCH (\S+) (\d+) (\d+) expect=(\S+) folios=(\d+)/(\d+) mapped=(\S+) "
                    r"attempts=(\d+)(?: faults=(\d+))?$")
BOOTSTRAP = 10000


def parse_log(path, name=None):
    """The runs, rejected windows and disturbed runs of a boot's log; with
    @name only those of that measurement (a boot may measure several)."""
    runs, rejects, disturbed = [], [], []
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    for line in lines:
        line = line.strip()
        if name is not None and line.startswith("RUSTMM-BENCH") and \
                (line.split(" ") + ["", ""])[1] != name:
            continue
        m = RESULT.match(line)
        if m:
            runs.append({"run": int(m.group(2)), "ns": int(m.group(3)),
                         "expect": m.group(4), "folios_ok": int(m.group(5)),
                         "folios_want": int(m.group(6)), "mapped": m.group(7),
                         "attempts": int(m.group(8)),
                         "faults": int(m.group(9)) if m.group(9) is not None else None})
        elif line.startswith("RUSTMM-BENCH-REJECT "):
            rejects.append(line.split(" ", 3)[3] if line.count(" ") >= 3 else "")
        elif line.startswith("RUSTMM-BENCH-DISTURBED "):
            disturbed.append(line.split(" ", 2)[2])
    return runs, rejects, disturbed


def pct(r):
    return (r - 1.0) * 100.0


def stat(boots):
    """Median of the boots' medians."""
    return statistics.median(statistics.median(b) for b in boots)


def bootstrap(base, patched, rng):
    ratios = []
    for _ in range(BOOTSTRAP):
        s = []
        for boots in (base, patched):
            picked = [boots[rng.randrange(len(boots))] for _ in boots]
            s.append(statistics.median(
                statistics.median(b[rng.randrange(len(b))] for _ in b) for b in picked))
        ratios.append(s[1] / s[0])
    ratios.sort()
    return ratios[int(0.025 * BOOTSTRAP)], ratios[int(0.975 * BOOTSTRAP) - 1]


def verdict(ci, target):
    if not target:
        return None
    lo, hi = target
    lo = float("-inf") if lo is None else lo
    hi = float("inf") if hi is None else hi
    if lo <= ci[0] and ci[1] <= hi:
        return "met"
    if ci[1] < lo or ci[0] > hi:
        return "missed"
    return "inconclusive"


def boot_runs(logs, kernel, boot_case, name, boots_n, problems):
    """Per boot of @boot_case on @kernel: the ns of measurement @name's runs
    (a list per boot), with the runs' problems appended to @problems."""
    boots = []
    for b in range(1, boots_n + 1):
        path = os.path.join(logs, f"{kernel}-{boot_case}-{b}.log")
        if not os.path.exists(path):
            raise SystemExit(f"bench-report: {path} is missing: refusing a partial report")
        runs, _, disturbed = parse_log(path, name)
        problems += [f"{kernel} boot {b}: a run of {name} never got a quiet window ({d})"
                     for d in disturbed]
        boots.append([r["ns"] for r in runs])
    if sorted({len(b) for b in boots}) in ([0], []) or len({len(b) for b in boots}) != 1:
        problems.append(f"{kernel} {name}: runs per boot {[len(b) for b in boots]}")
    return boots


def ratio_result(boot_case, num, den, logs, boots_n, rng, target, kernel="patched"):
    """Measurement @num against @den, both of @boot_case's boots on one
    kernel: the ratio of their medians of boot medians, and a 95 % interval
    from boots resampled together (the two readers of a boot share its
    state), runs within each boot resampled; its verdict against @target
    (at most; None: no target, no verdict)."""
    problems = []
    a = boot_runs(logs, kernel, boot_case, num, boots_n, problems)
    b = boot_runs(logs, kernel, boot_case, den, boots_n, problems)
    row = {"case": f"{num} / {den}", "kernel": kernel, "target_ratio": target,
           "refused": "; ".join(problems) or None}
    if problems:
        if target is None:
            row["verdict"] = None
        return row
    row["num_ms"], row["den_ms"] = stat(a) / 1e6, stat(b) / 1e6
    row["ratio"] = stat(a) / stat(b)
    ratios = []
    for _ in range(BOOTSTRAP):
        picked = [rng.randrange(len(a)) for _ in a]
        s = [statistics.median(statistics.median(x[i][rng.randrange(len(x[i]))] for _ in x[i])
                               for i in picked) for x in (a, b)]
        ratios.append(s[0] / s[1])
    ratios.sort()
    row["ci"] = [ratios[int(0.025 * BOOTSTRAP)], ratios[int(0.975 * BOOTSTRAP) - 1]]
    row["verdict"] = None if target is None else "met" if row["ci"][1] <= target else \
        "missed" if row["ci"][0] > target else "inconclusive"
    return row


# What the counted boots report per case, beside the instruction ratio:
# the plugin's own instruction count, atomic RMWs, simulated L1d and LLC
# misses, and the cost model's cycles (scripts/bench/cost_model.py).
# The JSON keeps every one (loads and stores too: QEMU counts a locked RMW
# as one of each); the table shows SHOWN.
COUNTED = ("insns", "atomics", "loads", "stores", "l1d", "llc", "coherence", "cycles")
SHOWN = ("insns", "atomics", "l1d", "llc", "coherence", "cycles")
COUNTED_NAMES = {"insns": "instructions (plugin)", "atomics": "atomic RMWs", "loads": "loads",
                 "stores": "stores", "l1d": "L1d misses", "llc": "LLC misses",
                 "coherence": "coherence misses", "cycles": "model cycles"}


def counts_result(case, logs, counts_n, rng, arch, boot_case=None):
    """The counted boots of @case, base vs patched: per metric of COUNTED
    the median of boot medians per window, the change, its interval and
    verdict by the same rules as the instruction ratio (case_result), the
    same target. A metric whose base is 0 gets the absolute change and no
    ratio. {"refused": why} when a boot's windows do not pair with its
    console."""
    boot_case = boot_case or case
    per = {}
    for k in ("base", "patched"):
        boots = {m: [] for m in COUNTED}
        for b in range(1, counts_n + 1):
            console = os.path.join(logs, f"{k}-{boot_case}-c{b}.log")
            counts = os.path.join(logs, f"{k}-{boot_case}-c{b}.counts")
            if not (os.path.exists(console) and os.path.exists(counts)):
                raise SystemExit(f"bench-report: {console} or {counts} is missing: refusing a partial report")
            try:
                runs = cost_model.pair(console, counts).get(case, [])
            except ValueError as e:
                return {"refused": str(e)}
            if not runs:
                return {"refused": f"{k} counted boot {b}: no kept run of {case}"}
            for m in COUNTED:
                boots[m].append([cost_model.cycles(arch, w) if m == "cycles" else w[m] for w in runs])
        per[k] = boots
    out = {"refused": None}
    for m in COUNTED:
        b, p = per["base"][m], per["patched"][m]
        if any(x is None for bb in b + p for x in bb):
            # Counted by a plugin without this metric.
            out[m] = {"not_counted": True, "verdict": None}
            continue
        r = {"base": stat(b), "patched": stat(p), "base_boots": b, "patched_boots": p}
        if r["base"] == 0 or any(x == 0 for bb in b for x in bb):
            r["delta"] = r["patched"] - r["base"]
            r["verdict"] = None
        else:
            r["change_pct"] = pct(r["patched"] / r["base"])
            lo, hi = bootstrap(b, p, rng)
            r["ci_pct"] = [pct(lo), pct(hi)]
            r["verdict"] = verdict(r["ci_pct"], TARGET.get(case))
        out[m] = r
    return out


# The metrics given per folio and per page (per_unit), in this order.
PER_UNIT = ("insns", "atomics", "l1d", "llc", "cycles")
AREA_NOTE = re.compile(r"RUSTMM-BENCH-NOTE (\S+): the area is (\d+) MiB")


def area_mib(logs, boot_case, mib):
    """The MiB a window of @boot_case works on: RUSTMM_BENCH_MIB (@mib),
    or what the guest rounded it up to (a device of 1 GiB folios), as its
    first base boot's console says."""
    path = os.path.join(logs, f"base-{boot_case}-1.log")
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            for line in f:
                m = AREA_NOTE.match(line.strip())
                if m and m.group(1) == boot_case:
                    return int(m.group(2))
    return mib


def per_unit(row, mib):
    """What the patched kernel does more (or less) than the base per folio
    the case checked and per 4 KiB page of its area of @mib MiB, for each
    metric of PER_UNIT: the change in the counted boots' medians per
    window, divided. None without counted figures, or for a case that
    checks no folios (vma.mmap-churn: its windows are not about an
    area's pages)."""
    c = row.get("counts")
    folios = row.get("folios") or 0
    if not c or c.get("refused") or not folios:
        return None
    pages = mib * 1024 * 1024 // 4096
    out = {"folios": folios, "pages": pages}
    for m in PER_UNIT:
        x = c[m]
        if x.get("not_counted"):
            out[m] = None
            continue
        d = x["patched"] - x["base"]
        out[m] = {"delta": d, "per_folio": d / folios, "per_page": d / pages}
    return out


def fmt_unit(v):
    """A per-folio or per-page change: whole numbers from 100, two
    decimals from 0.1, two significant digits below; "-" for none."""
    if v is None:
        return "-"
    a = abs(v)
    if a >= 100:
        return f"{v:+,.0f}"
    if a >= 0.1:
        return f"{v:+.2f}"
    if a == 0:
        return "0"
    return f"{v:+.2g}"


def disagreements(row):
    """The counted metrics of @row (case_result with counts_result in
    "counts") whose verdict is not the instruction verdict; none without
    either."""
    c = row.get("counts") or {}
    if not c or c.get("refused") or not row.get("verdict"):
        return []
    return [m for m in COUNTED if m != "insns" and c[m]["verdict"] and c[m]["verdict"] != row["verdict"]]


def case_result(case, logs, boots_n, rng, boot_case=None):
    """@case base vs patched; its runs are in @boot_case's logs (default:
    a boot per case of the same name)."""
    boot_case = boot_case or case
    name = None if boot_case == case else case
    row = {"case": case, "seed_pct": SEED.get(case), "target_pct": TARGET.get(case),
           "refused": None, "rejected_windows": 0, "rejected_counters": {}}
    problems = []
    per = {}
    folios = set()
    for k in ("base", "patched"):
        boots, checks, faults = [], [], []
        for b in range(1, boots_n + 1):
            path = os.path.join(logs, f"{k}-{boot_case}-{b}.log")
            if not os.path.exists(path):
                raise SystemExit(f"bench-report: {path} is missing: refusing a partial report")
            runs, rejects, disturbed = parse_log(path, name)
            row["rejected_windows"] += len(rejects)
            for r in rejects:
                for c in r.split(","):
                    # Not "name": that is the measurement parse_log() filters by.
                    counter = c.split("+")[0]
                    row["rejected_counters"][counter] = row["rejected_counters"].get(counter, 0) + 1
            for d in disturbed:
                problems.append(f"{k} boot {b}: a run never got a quiet window ({d})")
            for r in runs:
                want_map = MAPPED.get(r["expect"])
                if r["folios_ok"] < r["folios_want"] or r["mapped"] != want_map:
                    problems.append(f"{k} boot {b} run {r['run']}: folios {r['folios_ok']}/{r['folios_want']} "
                                    f"{r['expect']}, mapped {r['mapped']} (want {want_map})")
                checks.append(f"{r['folios_ok']}/{r['folios_want']}")
            boots.append([r["ns"] for r in runs])
            folios.update(r["folios_want"] for r in runs)
            faults.extend(r["faults"] for r in runs if r["faults"] is not None)
        counts = sorted({len(b) for b in boots})
        if counts == [0] or len(counts) != 1:
            problems.append(f"{k}: runs per boot {[len(b) for b in boots]} (want the same, > 0, in every boot)")
        # Minor faults of the measuring process per window (older logs: none).
        per[k] = {"boots_ns": boots, "checks": sorted(set(checks)),
                  "faults_median": statistics.median(faults) if faults else None}
    row["base"], row["patched"] = per["base"], per["patched"]
    # The folios every window checked, which the per-folio figures of the
    # counted boots divide by; 0 for a case of no folios (vma.mmap-churn)
    # or one whose windows check different numbers: no per-folio figures.
    row["folios"] = folios.pop() if len(folios) == 1 else 0
    if problems:
        row["refused"] = "; ".join(problems[:4]) + (f" (+{len(problems) - 4} more)" if len(problems) > 4 else "")
        return row
    for k in ("base", "patched"):
        b = per[k]["boots_ns"]
        per[k]["boot_medians"] = [statistics.median(x) for x in b]
        per[k]["median"] = stat(b)
        per[k]["runs_per_boot"] = len(b[0])
    ratio = per["patched"]["median"] / per["base"]["median"]
    lo, hi = bootstrap(per["base"]["boots_ns"], per["patched"]["boots_ns"], rng)
    row["change_pct"] = pct(ratio)
    row["ci_pct"] = [pct(lo), pct(hi)]
    row["verdict"] = verdict(row["ci_pct"], row["target_pct"])
    row["includes_zero"] = row["ci_pct"][0] <= 0 <= row["ci_pct"][1]
    return row


def beside_result(sys_, rows, docs, name):
    """The system's `beside` report's figures next to @rows' (None: it has
    none, or it is this report @name itself); the report, under @docs,
    must exist; a case it lacks is listed as missing."""
    if not sys_.beside or sys_.beside["report"] == name:
        return None
    path = os.path.join(docs, sys_.beside["report"] + ".json")
    try:
        with open(path) as f:
            other = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"bench-report: {sys_.where}: beside.report: cannot read {path}: {e}")
    there = {r["case"]: r for r in other.get("cases", []) if not r.get("refused")}
    cases, missing = [], []
    for r in rows:
        t = there.get(r["case"])
        if r["refused"]:
            continue
        if not t:
            missing.append(r["case"])
            continue
        cases.append({"case": r["case"], "there_base": t["base"]["median"],
                      "there_patched": t["patched"]["median"], "there_change_pct": t["change_pct"],
                      "here_base": r["base"]["median"], "here_patched": r["patched"]["median"]})
    return dict(sys_.beside, command=other.get("meta", {}).get("command", "?"),
                cases=cases, missing=missing)


def manifest(path):
    out = {}
    for line in open(path):
        if "=" in line:
            k, v = line.rstrip("\n").split("=", 1)
            out[k] = v
    return out


def diffconfig(script, a, b):
    r = subprocess.run([sys.executable, script, a, b], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"bench-report: diffconfig failed: {r.stderr}")
    return [l for l in r.stdout.split("\n") if l.strip()]


def ms(v):
    return f"{v / 1e6:.3f}"


def faults_cell(b, p):
    """Median minor faults per window, base / patched (blank for old logs)."""
    def one(k):
        v = k.get("faults_median")
        return "?" if v is None else f"{v:.0f}"
    return "" if b.get("faults_median") is None and p.get("faults_median") is None \
        else f"{one(b)} / {one(p)}"


def fmt_target(t):
    if not t:
        return ""
    return f"≤ {t[1]:+.1f}%" if t[0] is None else f"{t[0]:+.1f}%..{t[1]:+.1f}%"


def run_date(logs):
    """The day (UTC) the run's last boot ended: its newest log's mtime, so
    that a report rewritten from the same logs keeps its date."""
    import datetime
    times = [os.path.getmtime(os.path.join(logs, f)) for f in os.listdir(logs) if f.endswith(".log")]
    if not times:
        return None
    return datetime.datetime.fromtimestamp(max(times), datetime.timezone.utc).strftime("%Y-%m-%d")


def provenance_md(prov):
    """The report's line on where its kernels came from."""
    if not prov:
        return "repository: **provenance not recorded**"
    state = "clean" if prov.get("clean") else (
        f"**dirty**: {prov.get('dirty_count', 0)} changed, "
        + ", ".join(f"`{p}`" for p in prov.get("dirty", [])[:5]))
    fps = ", ".join(f"{t} `{prov['fingerprints'][t][:12]}`" for t in prov.get("chain", []))
    return (f"repository commit `{(prov.get('commit') or '?')[:12]}` ({state}); series "
            f"fingerprints (`scripts/bench/provenance.py`): {fps}")


def main():
    ap = argparse.ArgumentParser()
    for a in ("logs", "cases", "base-manifest", "patched-manifest", "base-config",
              "patched-config", "diffconfig", "command", "out"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--reused", default="")
    ap.add_argument("--docs", default=os.path.join(systems.TOP, "docs"),
                    help="where the system's [beside] report is (default: the repository's docs/)")
    ap.add_argument("--target", default="x86_64", choices=sorted(IMAGE))
    ap.add_argument("--system", default=systems.DEFAULT, choices=systems.names())
    ap.add_argument("--boots", type=int, required=True)
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--mib", type=int, required=True)
    ap.add_argument("--lto", action="store_true",
                    help="both kernels are Clang ThinLTO builds, the patched one with rust/mm in the LTO link")
    ap.add_argument("--slab-logs", default="", help="directory of the vma.slab boots' logs")
    ap.add_argument("--provenance", default="",
                    help="the run's provenance (scripts/bench/provenance.py record)")
    ap.add_argument("--counts", type=int, default=0,
                    help="counted boots per case and kernel (BENCH_COUNTS; LOGS/<kernel>-<case>-c<n>.*)")
    ap.add_argument("--mms", type=int, default=0,
                    help="the cases ran in a process forked after this many idle ones (BENCH_MMS)")
    args = ap.parse_args()

    sys_ = use_system(args.system)
    slab = None
    if args.slab_logs:
        if not sys_.slab:
            raise SystemExit(f"bench-report: --slab-logs, but {sys_.where} has no [slab]")
        slab = {k: slab_result(os.path.join(args.slab_logs, f"{k}-{sys_.slab['case']}.log"))
                for k in ("base", "patched")}
        saving = slab["base"]["total"]["bytes_per_vma"] - slab["patched"]["total"]["bytes_per_vma"]
        slab["saving_bytes_per_vma"] = saving
        slab["target_saving"] = sys_.slab["saving"]
        slab["target_max_pages_per_1000"] = sys_.slab["max_pages_per_1000"]
        ok = (sys_.slab["saving"] is None or saving >= sys_.slab["saving"]) and \
            (sys_.slab["max_pages_per_1000"] is None or
             slab["patched"]["total"]["pages_per_1000"] <= sys_.slab["max_pages_per_1000"])
        slab["verdict"] = "met" if ok else "missed"
    rng = random.Random(20261123)
    ratios = []
    m = sys_.measurements
    if m:
        # Each boot case measures C.b<batch>.<reader>, base vs patched, and
        # per batch the same-kernel ratios (in this order: the bootstrap's
        # random stream is shared).
        rows = []
        for c in args.cases.split():
            for bsz in m["batches"]:
                for rd in m["readers"]:
                    sub = f"{c}.b{bsz}.{rd}"
                    TARGET[sub] = m["target"]
                    rows.append(case_result(sub, args.logs, args.boots, rng, boot_case=c))
                for r in m["ratios"]:
                    ratios.append(ratio_result(c, f"{c}.b{bsz}.{r['num']}", f"{c}.b{bsz}.{r['den']}",
                                               args.logs, args.boots, rng, r["max"]))
    else:
        rows = [case_result(c, args.logs, args.boots, rng) for c in args.cases.split()]
    if args.counts:
        # Its own random stream: the instruction intervals stay those of a
        # run without counted boots.
        crng = random.Random(20261129)
        for r in rows:
            boot_case = next((c for c in args.cases.split() if r["case"] == c or r["case"].startswith(c + ".")),
                             r["case"])
            r["counts"] = counts_result(r["case"], args.logs, args.counts, crng, args.target, boot_case)
            r["counts"]["disagree"] = disagreements(r)
            r["per_unit"] = per_unit(r, area_mib(args.logs, boot_case, args.mib))
    beside = beside_result(sys_, rows, args.docs, os.path.basename(args.out))
    mb, mp = manifest(args.base_manifest), manifest(args.patched_manifest)
    # Where the kernels came from (scripts/bench/provenance.py record, made
    # by bench.sh before it built them); none: the report says so, and
    # provenance.py status calls it stale.
    prov = None
    if args.provenance and os.path.exists(args.provenance):
        with open(args.provenance) as f:
            prov = json.load(f)
    meta = {
        "command": args.command,
        "target": args.target,
        "system": args.system,
        "lto": args.lto,
        "idle_mms": args.mms,
        "statistic": f"median of {args.boots} boot medians per kernel; interval: 95 % "
                     f"hierarchical bootstrap of the ratio",
        "boots": args.boots, "runs_per_boot": args.runs, "mib_per_case": args.mib,
        "date": run_date(args.logs),
        "provenance": prov,
        "counted_boots": args.counts,
        **({"cost_model": {k: v for k, v in cost_model.MODELS[args.target].items()},
            "cost_model_formula": "cycles = instructions + atomic*atomics + l1d*L1d misses + llc*LLC misses"}
           if args.counts else {}),
        "reused": args.reused.split(),
        "base": mb, "patched": mp,
        "config_difference": diffconfig(args.diffconfig, args.base_config, args.patched_config),
        **({"beside": beside} if beside else {}),
    }
    with open(args.out + ".json", "w") as f:
        json.dump({"meta": meta, "cases": rows, **({"slab": slab} if slab else {}),
                   **({"same_kernel_ratios": ratios} if ratios else {})}, f, indent=1)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench-report: matplotlib missing (python3-matplotlib)")
        return 1
    shown = [r for r in rows if not r["refused"]]
    fig, ax = plt.subplots(figsize=(10, 6.5))
    ys = list(range(len(shown)))[::-1]
    vals = [r["change_pct"] for r in shown]
    err = [[r["change_pct"] - r["ci_pct"][0] for r in shown],
           [r["ci_pct"][1] - r["change_pct"] for r in shown]]
    colors = {"met": "tab:green", "missed": "tab:red", "inconclusive": "tab:orange", None: "tab:gray"}
    ax.barh(ys, vals, xerr=err, color=[colors[r["verdict"]] for r in shown], capsize=3)
    ax.set_yticks(ys)
    ax.set_yticklabels([r["case"] for r in shown])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("patched vs base, % change in instructions (bars: 95 % bootstrap interval; "
                  "green met, red missed, orange inconclusive, grey no target)", fontsize=8)
    ax.set_title(f"{sys_.title} on {args.target}: {args.boots} boots x {args.runs} runs per case "
                 f"and kernel, {args.mib} MiB, QEMU -icount shift=0,sleep=off")
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=100)

    name = os.path.basename(args.out)
    kinds = ("`thp.*` = PTE-mapped 2 MiB THP (`thp.remap` and `anon-cow-*` start PMD-mapped), "
             + ("`mthp.*` = 64 KiB mTHP (one contiguous-PTE block, the only anon THP size "
                "enabled), " if any(c.startswith("mthp.") for c in args.cases.split()) else "")
             + "`small.*` = order-0 pages; folios verified before every window")
    numbers = []
    # The system's own prose for its cases (its file's report_text).
    kinds = sys_.report_text.get("kinds", kinds)
    if sys_.report_text.get("numbers"):
        append = mb.get("settings", "").partition(" append=")[2]
        numbers = [sys_.report_text["numbers"].replace("{append}", append or sys_.append), ""]
    lto = "; Clang ThinLTO" if args.lto else ""
    if args.mms:
        lto += f"; after {args.mms} idle processes"
        numbers = [f"- rmap IDs: the cases ran in a process forked after {args.mms} idle "
                   "processes (`RUSTMM_BENCH_MMS`, `busy_mms()` in `tests/bench/rmap_bench.c`), "
                   f"so its rmap ID and its children's are above {args.mms}, as on a machine "
                   f"with that many processes (without it the guest's processes get IDs below "
                   "64)", *numbers]
    base_kver = ".".join(str((prov or {}).get("base_version", "?")).split("-")[0].split(".")[:2])
    md = [f"# Benchmarks: base {base_kver} vs patched ({sys_.title}{lto})"
          + ("" if args.target == "x86_64" else f", {args.target}"), "",
          "Generated by `scripts/bench/bench-report.py` from the boots of:", "",
          "```sh", args.command, "```", "",
          "What the numbers are: guest time under QEMU TCG with `-icount "
          "shift=0,sleep=off`, i.e. **instructions executed** in the measured window "
          "(1 ns per instruction, plus idle time skipped to the next timer). An atomic "
          "read-modify-write counts as one instruction like any other, so an "
          "instruction delta is a lower bound of the cycles it costs on hardware. "
          "`anon-cow-*` is the total work of two children on two vCPUs, not "
          "throughput under contention.", "", *numbers,
          f"- kernels: base = {mb.get('source')}; patched = {mp.get('source')}; both "
          f"built from `tests/bench/bench.kunitconfig`"
          + (" plus `CONFIG_LTO_CLANG_THIN=y` (the patched one also `CONFIG_RUST_MM_LTO=y`: "
             "rust/mm as bitcode in the LTO link, its entry points inlined into C, checked by "
             "`scripts/test/lto-check.py` before the boots)" if args.lto else "")
          + f" with {mb.get('clang')}, "
          f"{mb.get('rustc')}, {mb.get('bindgen')}. Config difference "
          f"(`scripts/diffconfig`): {', '.join('`' + l.strip() + '`' for l in meta['config_difference'])}",
          f"- images: base {IMAGE[args.target]} sha256 `{mb.get('image_sha256')}`, patched "
          f"`{mp.get('image_sha256')}`; initramfs sha256 `{mb.get('initramfs_sha256')}`; "
          f"{provenance_md(prov)}" + (f"; **reused from an earlier run (same hashes): "
                                     f"{', '.join(meta['reused'])}**" if meta["reused"] else ""),
          f"- guest ({mb.get('qemu_version')}): `{mb.get('qemu_cmdline')}`",
          f"- {args.boots} fresh boots per case and kernel, in alternating order (base, "
          f"patched, base, ...); {args.runs} runs per boot ({4 * args.runs} for the "
          f"cases below 10 ms); {args.mib} MiB per case; {kinds}; raw numbers "
          f"and provenance in [{name}.json]({name}.json)",
          f"- change: median of boot medians, patched / base − 1; interval: 95 % "
          f"hierarchical bootstrap ({BOOTSTRAP} resamples of boots, then runs); verdict: "
          "*met* when the whole interval is inside the target, *missed* when it is wholly "
          "outside, *inconclusive* otherwise; \"no measurable change\" when it includes 0", "",
          f"![ratios]({name}.png)", "",
          "| case | base ms (boot medians) | patched ms (boot medians) | change | 95 % interval "
          "| target | verdict | seed (Intel) | minor faults per window, base / patched "
          "| rejected windows | folios checked |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        seed = "" if r["seed_pct"] is None else f"{r['seed_pct']:+.1f}%"
        rej = str(r["rejected_windows"]) + (
            " (" + ", ".join(f"{k} ×{v}" for k, v in sorted(r["rejected_counters"].items())) + ")"
            if r["rejected_counters"] else "")
        if r["refused"]:
            md.append(f"| {r['case']} | | | | | {fmt_target(r['target_pct'])} | **refused**: "
                      f"{r['refused']} | {seed} | | {rej} | |")
            continue
        b, p = r["base"], r["patched"]
        change = f"{r['change_pct']:+.2f}%" + (" (no measurable change)" if r["includes_zero"] else "")
        checks = ", ".join(sorted(set(b["checks"]) | set(p["checks"])))
        md.append(f"| {r['case']} | {ms(b['median'])} ({', '.join(ms(x) for x in b['boot_medians'])}) "
                  f"| {ms(p['median'])} ({', '.join(ms(x) for x in p['boot_medians'])}) "
                  f"| {change} | {r['ci_pct'][0]:+.2f}% .. {r['ci_pct'][1]:+.2f}% "
                  f"| {fmt_target(r['target_pct'])} | {r['verdict'] or ''} | {seed} "
                  f"| {faults_cell(b, p)} | {rej} | {checks} |")
    if args.counts:
        model = cost_model.MODELS[args.target]
        md += ["", "## What instructions hide: atomics, simulated cache misses, a cost model", "",
               f"{args.counts} more boots per case and kernel ran the same cases under the profiling "
               "plugin with its memory model (`tests/bench/insn_profile.c cache=1`: a private L1d "
               "of 48 KiB 12-way per vCPU, a shared LLC of 4 MiB 16-way, 64-byte lines, LRU, "
               "physical addresses; a store invalidates the line in the other vCPUs' L1d, and the "
               "next access there is a coherence miss, also counted as an L1d miss), every measured "
               "run a window; the plugin's windows are paired "
               "with the console's runs and rejected windows dropped. Per window: median of boot "
               "medians; change, 95 % interval and verdict by the rules above, against the "
               "case's instruction target. The cost model (`scripts/bench/cost_model.py`, "
               f"{model['core']}): cycles ≈ instructions + {model['atomic']}·atomics + "
               f"{model['l1d']}·L1d misses + {model['llc']}·LLC misses (weights: latencies "
               "published for that core, cited in [benchmarking.md](benchmarking.md#what-instructions-hide)). "
               "*disagrees*: the metrics whose verdict is not the instruction verdict.", "",
               "What the model can see: every load, store and atomic RMW of the measured window, "
               "kernel and user, and which of them miss a private L1d or the shared LLC when each "
               "vCPU's accesses are replayed in order through LRU caches, and the lines one vCPU's "
               "store takes from another (coherence misses, true or false sharing). What it cannot "
               "see: how often that happens on hardware (under `-icount` the vCPUs take turns in "
               "slices, so coherence misses are a lower bound), contention, "
               "prefetching, the TLB and page walks, branch prediction and instruction fetch; and "
               "it adds latencies serially, where a real core overlaps misses. A hardware run "
               "would add cycles and wall time under real caches, PMU counts of misses and locked "
               "operations, and contention on many cores (will-it-scale's fault and fork tests), "
               "and could fit these weights to measured cycles.", "",
               "| case | " + " | ".join(COUNTED_NAMES[m] + " base / patched, change [95 %]"
                                       for m in SHOWN) + " | disagrees |",
               "|---|" + "---|" * len(SHOWN) + "---|"]
        for r in rows:
            c = r.get("counts")
            if not c:
                continue
            if c["refused"]:
                md.append(f"| {r['case']} | **refused**: {c['refused']} |" + " |" * len(SHOWN))
                continue
            cells = []
            for m in SHOWN:
                x = c[m]
                if x.get("not_counted"):
                    cells.append("not counted (a plugin of before this metric)")
                    continue
                v = f"{x['base']:,.0f} / {x['patched']:,.0f}, "
                if "change_pct" in x:
                    v += f"{x['change_pct']:+.2f}% [{x['ci_pct'][0]:+.2f} .. {x['ci_pct'][1]:+.2f}]"
                    v += f" {x['verdict']}" if x["verdict"] else ""
                else:
                    v += f"{x['delta']:+,.0f} (base 0: no ratio)"
                cells.append(v)
            dis = ", ".join(COUNTED_NAMES[m] for m in c.get("disagree", [])) or "-"
            md.append(f"| {r['case']} | " + " | ".join(cells) + f" | {dis} |")
        units = [r for r in rows if r.get("per_unit")]
        if units:
            md += ["", "### Per folio and per page", "",
                   "What the patched kernel does more (+) or less (-) than the base per folio the "
                   "case's windows checked and per 4 KiB page of the area they worked on: the "
                   "change in the medians per window above, divided by the folios and by the "
                   "pages (the cases that check folios). A per-page case faults each page once "
                   "per writer; fork and munmap take a folio per batch.", "",
                   "| case | folios / pages | " + " | ".join(COUNTED_NAMES[m] + ": per folio / per page"
                                                          for m in PER_UNIT) + " |",
                   "|---|---|" + "---|" * len(PER_UNIT)]
            for r in units:
                u = r["per_unit"]
                cells = []
                for m in PER_UNIT:
                    x = u[m]
                    if x is None:
                        cells.append("not counted")
                        continue
                    cells.append(f"{fmt_unit(x['per_folio'])} / {fmt_unit(x['per_page'])}")
                md.append(f"| {r['case']} | {u['folios']:,} / {u['pages']:,} | " + " | ".join(cells) + " |")
    if slab:
        md += ["", "## Slab memory per vma", "",
               f"`{sys_.slab['case']}`: one more boot per kernel (same image, `{sys_.slab['boot']}` added so "
               "every cache is its own) makes 40,000 one-page vmas and reads `/proc/slabinfo` "
               "before and after: bytes per vma = new slabs × pages per slab × 4096 / 40,000.", "",
               "| kernel | cache | object size | objects per slab | pages per slab | "
               "bytes per vma |", "|---|---|---|---|---|---|"]
        for k in ("base", "patched"):
            for cache, f in slab[k].items():
                if cache == "total":
                    continue
                if f.get("absent"):
                    md.append(f"| {k} | {cache} | (no such cache) | | | 0 |")
                    continue
                md.append(f"| {k} | {cache} | {f['objsize']:.0f} | {f['perslab']:.0f} | "
                          f"{f['pages']:.0f} | {f['bytes_per_vma']:.1f} |")
            t = slab[k]["total"]
            md.append(f"| {k} | **total** | | | | **{t['bytes_per_vma']:.1f}** "
                      f"({t['pages_per_1000']:.1f} pages per 1000 vmas) |")
        targets = ([f"at least {sys_.slab['saving']:.0f} bytes per vma less"]
                   if sys_.slab["saving"] is not None else []) + \
            ([f"at most {sys_.slab['max_pages_per_1000']:.0f} pages per 1000 vmas patched"]
             if sys_.slab["max_pages_per_1000"] is not None else [])
        md += ["", f"Saving: **{slab['saving_bytes_per_vma']:.1f} bytes per vma**; patched "
                   f"**{slab['patched']['total']['pages_per_1000']:.1f} pages per 1000 vmas** "
                   f"(base {slab['base']['total']['pages_per_1000']:.1f}); target: "
                   f"{' and '.join(targets)}: {slab['verdict']}."]
        print(f"  slab: base {slab['base']['total']['bytes_per_vma']:.1f} B/vma, patched "
              f"{slab['patched']['total']['bytes_per_vma']:.1f} B/vma, saving "
              f"{slab['saving_bytes_per_vma']:.1f} ({slab['verdict']})")
    if ratios:
        # The system's words for its ratios ({max}: their target).
        most = max((r["max"] for r in sys_.measurements["ratios"] if r["max"]), default=None)
        md += ["", "## " + sys_.report_text.get("ratios_title", "Same kernel: measurement against measurement"),
               "",
               sys_.report_text.get("ratios", "On the patched kernel, within each boot: one measurement "
                                    "against another of the same state (target: at most {max}x where "
                                    "there is one).").replace("{max}", str(most)) +
               " Ratio of medians of boot medians; interval: 95 % bootstrap, "
               "boots resampled together, runs within each.", "",
               "| measurements | ms | ratio | 95 % interval | target | verdict |",
               "|---|---|---|---|---|---|"]
        for r in ratios:
            if r["refused"]:
                md.append(f"| {r['case']} | | | | | **refused**: {r['refused']} |")
                continue
            tgt = f"≤ {r['target_ratio']:.1f}x" if r["target_ratio"] else ""
            md.append(f"| {r['case']} | {r['num_ms']:.3f} / {r['den_ms']:.3f} | {r['ratio']:.3f}x "
                      f"| {r['ci'][0]:.3f}x .. {r['ci'][1]:.3f}x | {tgt} | {r['verdict'] or ''} |")
    if beside:
        md += ["", "## " + beside["title"], ""]
        if beside.get("text"):
            md += [beside["text"], ""]
        md += [f"Beside: [{beside['report']}.md]({beside['report']}.md) ({beside['command']}). "
               "ms = instructions / 10⁶ under `-icount shift=0`, median of boot medians.", "",
               "| case | there: base ms | there: patched ms | there: change | here: base ms "
               "| here: patched ms | here base / there base | here patched / there patched |",
               "|---|---|---|---|---|---|---|---|"]
        for c in beside["cases"]:
            md.append(f"| {c['case']} | {ms(c['there_base'])} | {ms(c['there_patched'])} "
                      f"| {c['there_change_pct']:+.2f}% | {ms(c['here_base'])} | {ms(c['here_patched'])} "
                      f"| {c['here_base'] / c['there_base']:.3f}x "
                      f"| {c['here_patched'] / c['there_patched']:.3f}x |")
        if beside["missing"]:
            md += ["", "Not in the other report (no figure there): "
                   + ", ".join(f"`{c}`" for c in beside["missing"]) + "."]
    notes = args.out + "-notes.md"
    if os.path.exists(notes):
        md += ["", open(notes).read().rstrip()]
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    for r in ratios:
        if r["refused"]:
            print(f"  {r['case']:44} refused: {r['refused']}")
        else:
            print(f"  {r['case']:44} {r['ratio']:.3f}x [{r['ci'][0]:.3f}x .. {r['ci'][1]:.3f}x]  "
                  f"{r['verdict'] or '-'}")
    for r in rows:
        if r["refused"]:
            print(f"  {r['case']:22} refused: {r['refused']}")
        else:
            print(f"  {r['case']:22} {r['change_pct']:+7.2f}%  [{r['ci_pct'][0]:+.2f}% .. "
                  f"{r['ci_pct'][1]:+.2f}%]  {r['verdict'] or '-'}")
        c = r.get("counts")
        if c and c["refused"]:
            print(f"  {'':22} counted: refused: {c['refused']}")
        elif c:
            print(f"  {'':22} counted: " + "; ".join(
                f"{m} {c[m]['change_pct']:+.2f}%" if "change_pct" in c[m] else
                f"{m} not counted" if c[m].get("not_counted") else f"{m} {c[m]['delta']:+,.0f}"
                for m in SHOWN) + (f"  (disagree: {', '.join(c['disagree'])})" if c.get("disagree") else ""))
        u = r.get("per_unit")
        if u:
            print(f"  {'':22} per folio / per page: " + "; ".join(
                f"{m} {fmt_unit(u[m]['per_folio'])} / {fmt_unit(u[m]['per_page'])}"
                for m in PER_UNIT if u[m] is not None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
