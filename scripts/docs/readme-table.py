#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""README.md's results table, generated from the benchmark reports.

One row per benchmark system (tests/bench/systems/*.toml; in the topics'
apply order) and arch it has a report for: the report its topic's `Bench:` names (kernel-patches/<topic>/
topic; a row saying so when it is missing) and the system's report on its
other arches where one exists (docs/<report>-<arch>.json), then its Clang
LTO report (docs/<report>-lto.json; `Bench:` may name it, as vma-lock's
does: its measurement on 7.3 is the LTO one). A system whose topic is not on 7.3
yet (kernel-patches/unported) shows its reports of the 6.12 release
(docs/<report>-6.12.json). Other variants (BENCH_MMS=N) are not rows.
Each row says:

  what it buys     the system's `buys`, with the change of its `headline`
                   cases (or its same-kernel ratios, or its slab saving)
  what it costs    the worst of its other cases with a target: missed before
                   inconclusive before met, then the largest change
  target           the headline's target; the cost case's
  verdict          met / missed / inconclusive (/ refused) counts, over every
                   case, ratio and slab figure with a target
  report           the report, its date (meta.date; for a report from before
                   it was recorded, the date of the commit it names) and its
                   compilers
  provenance       fresh, or "stale: why" (scripts/bench/provenance.py status)

README.md holds the table between the lines
  <!-- results-table:begin -->
  <!-- results-table:end -->

  readme-table.py                  print the table
  readme-table.py --write [README] rewrite the block (default README.md)
  readme-table.py --check [README] compare: "readme: results table: ok", or
                                   FAILED with a diff (exit 1)
  --docs DIR                       the reports' directory (default docs/)
"""
import argparse
import difflib
import json
import os
import re
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts", "bench"))
sys.path.insert(0, os.path.join(TOP, "scripts", "lib"))
import provenance  # noqa: E402
import system as systems  # noqa: E402
import topics  # noqa: E402

BEGIN = "<!-- results-table:begin -->"
END = "<!-- results-table:end -->"
SEVERITY = {"missed": 3, "inconclusive": 2, "met": 1}


class ReadmeError(Exception):
    """A README the table cannot be put into."""


def fmt_pct(v):
    return f"{v:+.1f} %"


def fmt_target(t):
    if not t:
        return "none"
    lo, hi = t
    if lo is None:
        return f"≤ {hi:+.1f} %"
    if hi is None:
        return f"≥ {lo:+.1f} %"
    return f"{lo:+.1f} .. {hi:+.1f} %"


def case_cell(r):
    if r.get("refused"):
        return f"`{r['case']}` refused"
    return f"`{r['case']}` {fmt_pct(r['change_pct'])}"


def verdicts(report):
    """{verdict: count} over every figure with a target."""
    n = {}
    for r in report.get("cases", []):
        v = "refused" if r.get("refused") and r.get("target_pct") else r.get("verdict")
        if v:
            n[v] = n.get(v, 0) + 1
    for r in report.get("same_kernel_ratios", []):
        v = "refused" if r.get("refused") and r.get("target_ratio") else r.get("verdict")
        if v and r.get("target_ratio"):
            n[v] = n.get(v, 0) + 1
    slab = report.get("slab")
    if slab and slab.get("verdict"):
        n[slab["verdict"]] = n.get(slab["verdict"], 0) + 1
    return n


def buys(s, report):
    """The headline cell and the headline's target."""
    cases = {r["case"]: r for r in report.get("cases", [])}
    parts, target = [], None
    for h in s.headline:
        if h == "ratios":
            rs = [r for r in report.get("same_kernel_ratios", []) if r.get("target_ratio")]
            ok = [r["ratio"] for r in rs if not r.get("refused")]
            pairs = sorted({tuple(x.strip().rsplit(".", 1)[-1] for x in r["case"].split(" / ")) for r in rs})
            what = ", ".join(f"`{a}` / `{b}`" for a, b in pairs)
            parts.append(f"{what} {min(ok):.2f}x .. {max(ok):.2f}x" if ok else f"{what}: no ratio")
            target = target or (f"≤ {max(r['target_ratio'] for r in rs):.1f}x" if rs else "none")
        elif h == "slab":
            slab = report.get("slab")
            if slab:
                parts.append(f"{slab['saving_bytes_per_vma']:.1f} B less slab per vma")
                if slab.get("target_max_pages_per_1000") is not None:
                    parts[-1] += f" ({slab['patched']['total']['pages_per_1000']:.1f} pages per 1000 vmas)"
                    target = target or f"≤ {slab['target_max_pages_per_1000']:.0f} pages per 1000 vmas"
                if slab.get("target_saving") is not None:
                    target = target or f"≥ {slab['target_saving']:.0f} B"
            else:
                parts.append("no slab figure")
        elif h in cases:
            parts.append(case_cell(cases[h]))
            target = target or fmt_target(cases[h].get("target_pct"))
        else:
            parts.append(f"`{h}` not measured")
    return f"{s.buys}: {', '.join(parts)}", target or "none"


def costs(s, report):
    """The worst cost case's cell and its target."""
    cands = [r for r in report.get("cases", []) if r["case"] not in s.headline
             and r.get("target_pct") and not r.get("refused") and r.get("verdict")]
    if not cands:
        return "-", "none"
    w = max(cands, key=lambda r: (SEVERITY[r["verdict"]], r["change_pct"]))
    return f"{case_cell(w)} ({w['verdict']})", fmt_target(w["target_pct"])


def _git_date(rev):
    r = subprocess.run(["git", "-C", TOP, "show", "-s", "--format=%cs", f"{rev}^{{commit}}"],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None


def report_cell(name, report):
    meta = report.get("meta", {})
    date = meta.get("date")
    if not date:
        commit = str(meta.get("repository", "")).removesuffix("-dirty")
        date = (_git_date(commit) if commit else None) or "date unknown"
    p = meta.get("patched") or {}
    tools = []
    for tool, key in (("clang", "clang"), ("rustc", "rustc")):
        m = re.search(r"(?:version )?(\d+\.\d+(?:\.\d+)?)", p.get(key) or "")
        if m:
            tools.append(f"{tool} {m.group(1)}")
    return f"[{name}.md](docs/{name}.md), {date}, {', '.join(tools) or 'compilers not recorded'}"


def rows(docs, top=None, now=None):
    """The cells of each row."""
    top = top or TOP
    now = now or provenance.toolchain_now(top)
    out = []
    main_dir = os.path.join(top, "kernel-patches")
    order = topics.topic_names(main_dir)
    old_order = topics.topic_names(topics.series_6_12(main_dir))

    def key(s):
        return (0, order.index(s.topic), s.name) if s.ported else (1, old_order.index(s.topic), s.name)
    for s in sorted(systems.load_all(os.path.join(top, "tests", "bench", "systems"), main_dir), key=key):
        # A system whose topic is not on 7.3 yet (kernel-patches/unported):
        # its reports of the 6.12 release, judged against the 6.12 series.
        sfx, where = ("", "") if s.ported else ("-6.12", ", 6.12")
        bench = s.topic_fields["Bench"]
        names = [s.report_name(a) for a in s.arches]
        lto_names = [s.report + "-lto" + ("" if a == "x86_64" else f"-{a}") for a in s.arches]
        if bench and bench.removesuffix(".json") not in names + lto_names:
            raise ReadmeError(f"kernel-patches/{s.topic}/topic: Bench: {bench} is none of the reports "
                              f"of {s.where} ({', '.join(n + '.json' for n in names + lto_names)})")
        bench = bench and bench.removesuffix(".json") + sfx + ".json"
        # Each arch's report, then the same system's Clang LTO report
        # (BENCH_LTO=1: the rust-lto topic measured on it), if there is one.
        runs = []
        # The one the topic's Bench: names (its measurement, LTO or not)
        # gets a row saying so when it is missing.
        for a, name, lto in zip(s.arches, names, lto_names):
            runs.append((a, name + sfx, f"{s.name} ({a}{where})"))
            runs.append((a, lto + sfx, f"{s.name} + rust-lto ({a}{where})"))
        for a, name, label in runs:
            path = os.path.join(docs, name + ".json")
            if not os.path.exists(path):
                if name + ".json" == bench:
                    out.append([label, f"no report ({name}.json)", "", "", "", "", "-"])
                continue
            with open(path) as f:
                report = json.load(f)
            b, bt = buys(s, report)
            c, ct = costs(s, report)
            n = verdicts(report)
            v = ", ".join(f"{n[k]} {k}" for k in ("met", "missed", "inconclusive", "refused") if n.get(k))
            fresh, why = provenance.status(report, top, now)
            out.append([label, b, c, f"{bt}; costs {ct}", v or "no target",
                        report_cell(name, report), "fresh" if fresh else "**stale**: " + "; ".join(why)])
    return out


def table(docs, top=None, now=None):
    lines = ["| system | what it buys | what it costs (worst case) | target | verdict | report "
             "| provenance |", "|---|---|---|---|---|---|---|"]
    for r in rows(docs, top, now):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    lines += ["", "Generated from the reports by `make readme` (`scripts/docs/readme-table.py`); "
              "a report is stale when its series, toolchain or base no longer match the "
              "repository's ([docs/benchmarking.md](docs/benchmarking.md#system-files-and-provenance)); "
              "the systems not yet on Linux 7.3 show their reports of 6.12 (`kernel-patches/unported`)."]
    return "\n".join(lines) + "\n"


def split(readme):
    """(head, block, tail) of the README's text around the table's markers."""
    with open(readme) as f:
        text = f.read()
    lines = text.splitlines(keepends=True)
    name = os.path.relpath(readme) if not os.path.isabs(readme) else readme
    idx = {}
    for m in (BEGIN, END):
        at = [i for i, l in enumerate(lines) if l.strip() == m]
        if not at:
            raise ReadmeError(f"{name} has no line '{m}' (the results table goes between "
                              f"'{BEGIN}' and '{END}')")
        if len(at) > 1:
            raise ReadmeError(f"{name} has the line '{m}' {len(at)} times")
        idx[m] = at[0]
    if idx[END] < idx[BEGIN]:
        raise ReadmeError(f"{name}: '{END}' comes before '{BEGIN}'")
    return ("".join(lines[:idx[BEGIN] + 1]), "".join(lines[idx[BEGIN] + 1:idx[END]]),
            "".join(lines[idx[END]:]))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", nargs="?", const=os.path.join(TOP, "README.md"), metavar="README")
    g.add_argument("--check", nargs="?", const=os.path.join(TOP, "README.md"), metavar="README")
    ap.add_argument("--docs", default=os.path.join(TOP, "docs"))
    args = ap.parse_args(argv)
    try:
        readme = args.write or args.check
        head = tail = None
        if readme:
            head, block, tail = split(readme)
        want = "\n" + table(args.docs) + "\n"
        if args.write:
            with open(args.write, "w") as f:
                f.write(head + want + tail)
            print(f"readme: results table written to {args.write}")
        elif args.check:
            if block == want:
                print("readme: results table: ok")
                return 0
            print("readme: results table: FAILED (differs from the reports: run make readme)")
            sys.stdout.writelines(difflib.unified_diff(
                block.splitlines(keepends=True), want.splitlines(keepends=True),
                f"{args.check} (now)", "from the reports"))
            return 1
        else:
            sys.stdout.write(want.lstrip("\n"))
    except (ReadmeError, systems.SystemFileError, topics.TopicError, OSError) as e:
        print(f"readme: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
