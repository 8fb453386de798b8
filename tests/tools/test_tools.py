#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Self-tests of rust-mm's own checkers: each must be able to fail.

- scripts/bench/bench-report.py: verdicts from intervals (met / missed /
  inconclusive), and refusals for short THP, wrongly mapped folios,
  disturbed windows and uneven boots, on synthetic console logs; the
  compound-pagemaps targets (10x on 2 MiB gup-fast, +-0.5 % controls);
  the counted boots (scripts/bench/cost_model.py): windows paired with the
  console's runs (rejected ones dropped, a count that does not pair
  refused), each metric's change and verdict, the cost model's cycles, and
  a metric that disagrees with the instruction verdict named;
- scripts/series/cover-letter.py --check: a cover letter whose benchmark numbers
  were edited, or which lost a case, fails;
- scripts/test/lto-check.py: a hot caller that calls an entry point or a Rust
  function, or an order-0 caller whose large-folio work was inlined back,
  fails; the control (--expect-calls) wants every call;
- scripts/series/series.sh export: refuses a topic without the topics it depends
  on (naming them), and refuses without a git identity (never invents one).
- scripts/series/series.sh check: a patch whose context changed fails git am,
  quilt and its topic's own check (the check copies only the files the
  series touches);
- scripts/series/rust-patches-check.sh: a patch of a series that changes the
  repository's Rust files and no longer applies to them fails, naming it;
  the repository's own series pass.

The series.sh tests need a prepared tree (make prepare); they are skipped
with a reason when it is missing, and make test always has one.
Run: python3 -m unittest discover -s tests/tools -v
"""
import contextlib
import glob
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))

import importlib.util  # noqa: E402


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(TOP, "scripts", file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


report = load("bench_report", "bench/bench-report.py")
cover = load("cover_letter", "series/cover-letter.py")


def rd(path):
    with open(path) as f:
        return f.read()


def wr(path, text):
    with open(path, "w") as f:
        f.write(text)


def write_logs(d, case, base, patched, expect="thp-pte", folios=(128, 128), mapped="pte",
               extra=None):
    """One log per boot: base/patched are lists (boots) of lists (runs) of ns."""
    for k, boots in (("base", base), ("patched", patched)):
        for b, runs in enumerate(boots, 1):
            with open(os.path.join(d, f"{k}-{case}-{b}.log"), "w") as f:
                f.write("booting...\n")
                for r, ns in enumerate(runs, 1):
                    f.write(f"RUSTMM-BENCH {case} {r} {ns} expect={expect} "
                            f"folios={folios[0]}/{folios[1]} mapped={mapped} attempts=1\n")
                if extra and (k, b) in extra:
                    f.write(extra[(k, b)] + "\n")
                f.write("RUSTMM-BENCH-DONE errors=0\n")


def noisy(center, rng, n=5, spread=0.001):
    return [int(center * (1 + rng.uniform(-spread, spread))) for _ in range(n)]


class BenchReport(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.rng = random.Random(1)

    def tearDown(self):
        shutil.rmtree(self.d)

    def result(self, case, base, patched, **kw):
        write_logs(self.d, case, base, patched, **kw)
        return report.case_result(case, self.d, len(base), random.Random(2))

    def test_a_clear_regression_beyond_the_target_is_missed(self):
        base = [noisy(1e8, self.rng) for _ in range(3)]
        patched = [noisy(1.05e8, self.rng) for _ in range(3)]
        r = self.result("thp.cow", base, patched)
        self.assertIsNone(r["refused"])
        self.assertAlmostEqual(r["change_pct"], 5.0, delta=0.3)
        self.assertEqual(r["verdict"], "missed")

    def test_an_interval_inside_the_target_is_met(self):
        base = [noisy(1e8, self.rng) for _ in range(3)]
        patched = [noisy(1.001e8, self.rng) for _ in range(3)]
        r = self.result("thp.cow", base, patched)
        self.assertEqual(r["verdict"], "met")
        self.assertTrue(r["ci_pct"][0] < 0.5 < 1.0)

    def test_an_interval_across_the_target_is_inconclusive(self):
        # Boots disagree: one patched boot at +0.2 %, two at +1.8 %.
        base = [noisy(1e8, self.rng, spread=0.0001) for _ in range(3)]
        patched = [noisy(1.002e8, self.rng, spread=0.0001), noisy(1.018e8, self.rng, spread=0.0001),
                   noisy(1.002e8, self.rng, spread=0.0001)]
        r = self.result("thp.cow", base, patched)
        self.assertEqual(r["verdict"], "inconclusive", r["ci_pct"])

    def test_no_change_reports_an_interval_including_zero(self):
        base = [noisy(5e7, self.rng) for _ in range(3)]
        patched = [noisy(5e7, self.rng) for _ in range(3)]
        r = self.result("small.cow", base, patched, expect="small", folios=(65536, 65536))
        self.assertTrue(r["includes_zero"])
        self.assertIn(r["verdict"], ("met", "inconclusive"))

    def test_a_run_with_short_thp_refuses_the_case(self):
        base = [noisy(1e8, self.rng) for _ in range(3)]
        r = self.result("thp.cow", base, base, folios=(120, 128))
        self.assertIn("folios 120/128", r["refused"])
        self.assertNotIn("verdict", r)

    def test_a_pmd_mapped_area_in_a_pte_case_refuses_the_case(self):
        base = [noisy(1e8, self.rng) for _ in range(3)]
        r = self.result("thp.cow", base, base, mapped="pmd")
        self.assertIn("mapped pmd (want pte)", r["refused"])

    def test_compound_pages_in_an_order0_case_refuse_it(self):
        base = [noisy(1e8, self.rng) for _ in range(3)]
        r = self.result("small.cow", base, base, expect="small", folios=(65024, 65536))
        self.assertIn("folios 65024/65536", r["refused"])

    def test_a_disturbed_window_refuses_the_case(self):
        base = [noisy(1e8, self.rng) for _ in range(3)]
        r = self.result("thp.cow", base, base,
                        extra={("patched", 2): "RUSTMM-BENCH-DISTURBED thp.cow 3 compact_stall+1"})
        self.assertIn("never got a quiet window", r["refused"])

    def test_rejected_windows_are_counted_but_not_refused(self):
        base = [noisy(1e8, self.rng) for _ in range(3)]
        r = self.result("thp.cow", base, base,
                        extra={("base", 1): "RUSTMM-BENCH-REJECT thp.cow 2 thp_split_page+1"})
        self.assertIsNone(r["refused"])
        self.assertEqual(r["rejected_windows"], 1)
        self.assertEqual(r["rejected_counters"], {"thp_split_page": 1})

    def test_boots_with_different_run_counts_refuse_the_case(self):
        base = [noisy(1e8, self.rng), noisy(1e8, self.rng, n=4), noisy(1e8, self.rng)]
        r = self.result("thp.cow", base, [noisy(1e8, self.rng) for _ in range(3)])
        self.assertIn("runs per boot", r["refused"])

    def test_fault_counts_are_medians_per_kernel_and_absent_in_old_logs(self):
        write_logs(self.d, "thp.cow-reuse", [[10, 10], [10, 10]], [[1, 1], [1, 1]])
        for name in os.listdir(self.d):
            path = os.path.join(self.d, name)
            n = 65536 if name.startswith("base-") else 128
            if "-2.log" in name and name.startswith("base-"):
                n = 65534
            wr(path, rd(path).replace("attempts=1\n", f"attempts=1 faults={n}\n"))
        r = report.case_result("thp.cow-reuse", self.d, 2, random.Random(2))
        self.assertIsNone(r["refused"])
        self.assertEqual(r["base"]["faults_median"], 65535)
        self.assertEqual(r["patched"]["faults_median"], 128)
        self.assertEqual(report.faults_cell(r["base"], r["patched"]), "65535 / 128")
        old = self.result("thp.cow", [[10], [10]], [[11], [11]])
        self.assertIsNone(old["base"]["faults_median"])
        self.assertEqual(report.faults_cell(old["base"], old["patched"]), "")

    def test_the_folios_a_window_checked_are_kept_unless_windows_differ(self):
        base = [noisy(1e8, self.rng) for _ in range(3)]
        self.assertEqual(self.result("thp.cow", base, base)["folios"], 128)
        self.assertEqual(self.result("small.cow", base, base, expect="small",
                                     folios=(65536, 65536))["folios"], 65536)
        for name in os.listdir(self.d):
            if name.startswith("patched-small.cow-"):
                path = os.path.join(self.d, name)
                wr(path, rd(path).replace("folios=65536/65536", "folios=65535/65535"))
        r = report.case_result("small.cow", self.d, 3, random.Random(2))
        self.assertIsNone(r["refused"])
        self.assertEqual(r["folios"], 0)

    def test_compound_pagemaps_2m_gup_fast_must_take_a_tenth_of_the_instructions(self):
        # The 6.12 series' target ([targets] of compound-pagemaps.toml:
        # its gup patch); on 7.3 [base_targets."7.3"] makes it +-0.5 %,
        # which the loaded system gives on main's base.
        s = report.systems.load("compound-pagemaps")
        if s.base == "7.3":
            self.assertEqual(s.targets["cp.gup-fast-2m"], (-0.5, 0.5))
        base = [noisy(6.5e6, self.rng) for _ in range(3)]
        on_612 = {"cp.gup-fast-2m": (None, -90.0), "cp.pin-fast-2m": (None, -90.0)}
        with mock.patch.dict(report.TARGET, on_612, clear=True):
            for case in ("cp.gup-fast-2m", "cp.pin-fast-2m"):
                r = self.result(case, base, [noisy(0.5e6, self.rng) for _ in range(3)],
                                expect="devdax-pmd", mapped="pmd")
                self.assertEqual(r["verdict"], "met", case)   # 13x
                r = self.result(case, base, [noisy(0.8e6, self.rng) for _ in range(3)],
                                expect="devdax-pmd", mapped="pmd")
                self.assertEqual(r["verdict"], "missed", case)   # 8x

    def test_compound_pagemaps_controls_stay_within_half_a_percent_both_ways(self):
        base = [noisy(7e6, self.rng, spread=0.0001) for _ in range(3)]
        with mock.patch.dict(report.TARGET, report.systems.load("compound-pagemaps").targets, clear=True):
            for case, expect, mapped, folios in (("cp.gup-fast-4k", "devdax-pte", "pte", (65536, 65536)),
                                                 ("cp.pin-fast-4k", "devdax-pte", "pte", (65536, 65536)),
                                                 ("cp.gup-slow-2m", "devdax-pmd", "pmd", (128, 128))):
                for factor, want in ((1.001, "met"), (1.01, "missed"), (0.99, "missed")):
                    r = self.result(case, base,
                                    [noisy(7e6 * factor, self.rng, spread=0.0001) for _ in range(3)],
                                    expect=expect, mapped=mapped, folios=folios)
                    self.assertEqual(r["verdict"], want, (case, factor))

    def test_a_pte_mapped_device_in_a_2m_case_refuses_it(self):
        base = [noisy(6.5e6, self.rng) for _ in range(3)]
        with mock.patch.dict(report.TARGET, report.systems.load("compound-pagemaps").targets, clear=True):
            r = self.result("cp.gup-fast-2m", base, base, expect="devdax-pmd", mapped="pte")
        self.assertIn("mapped pte (want pmd)", r["refused"])

    def test_a_missing_boot_log_stops_the_report(self):
        write_logs(self.d, "thp.cow", [[1], [1]], [[1], [1]])
        with self.assertRaises(SystemExit):
            report.case_result("thp.cow", self.d, 3, random.Random(2))


def write_counted(d, case, kernel, boot, windows, reject_first=False):
    """A counted boot: its console (kept runs, optionally a rejected
    attempt first) and the plugin's file, one window per attempt.
    @windows: per kept run (insns, atomics, loads, stores, l1d, llc)."""
    lines, counts = ["booting...", f"RUSTMM-BENCH-WARMUP {case} 0 5 expect=small folios=1/1 "
                     "mapped=pte attempts=1"], []
    if reject_first:
        lines.append(f"RUSTMM-BENCH-REJECT {case} 1 thp_fault_alloc+1")
        counts.append((999999, 99, 9, 9, 99, 99) + (9,) * (len(windows[0]) - 6))
    for r, w in enumerate(windows, 1):
        lines.append(f"RUSTMM-BENCH {case} {r} {w[0]} expect=small folios=1/1 mapped=pte attempts=1")
        counts.append(w)
    lines.append("RUSTMM-BENCH-DONE errors=0")
    wr(os.path.join(d, f"{kernel}-{case}-c{boot}.log"), "\n".join(lines) + "\n")
    wr(os.path.join(d, f"{kernel}-{case}-c{boot}.counts"),
       f"windows {len(counts)}\n# cache l1d=48KiB/12-way per vCPU\n"
       + "".join(f"# window {i} {' '.join(map(str, w))}\n" for i, w in enumerate(counts, 1))
       + "ffffffff81000000 10 5 1 2 3 0 0\n")


class CountedBoots(unittest.TestCase):
    """make bench's counted boots: what the memory model adds to a report."""

    def setUp(self):
        self.d = tempfile.mkdtemp()
        report.TARGET["small.fork"] = (None, 0.5)

    def tearDown(self):
        shutil.rmtree(self.d)

    def counted(self, base, patched, n=3, **kw):
        for b in range(1, n + 1):
            write_counted(self.d, "small.fork", "base", b, base, **kw)
            write_counted(self.d, "small.fork", "patched", b, patched, **kw)
        return report.counts_result("small.fork", self.d, n, random.Random(3), "x86_64")

    def test_more_atomics_and_misses_at_the_same_instructions_are_seen_and_disagree(self):
        base = [(100000, 10, 500, 200, 40, 2)] * 5
        patched = [(100100, 20, 510, 205, 100, 2)] * 5
        c = self.counted(base, patched, reject_first=True)
        self.assertIsNone(c["refused"])
        self.assertAlmostEqual(c["insns"]["change_pct"], 0.1, places=6)
        self.assertEqual(c["insns"]["verdict"], "met")
        self.assertAlmostEqual(c["atomics"]["change_pct"], 100.0, places=6)
        self.assertEqual(c["atomics"]["verdict"], "missed")
        self.assertAlmostEqual(c["l1d"]["change_pct"], 150.0, places=6)
        m = report.cost_model.MODELS["x86_64"]
        want = (100100 + 20 * m["atomic"] + 100 * m["l1d"] + 2 * m["llc"]) / \
            (100000 + 10 * m["atomic"] + 40 * m["l1d"] + 2 * m["llc"])
        self.assertAlmostEqual(c["cycles"]["change_pct"], (want - 1) * 100, places=6)
        self.assertEqual(c["cycles"]["verdict"], "missed")
        self.assertEqual(report.disagreements({"verdict": "met", "counts": c}),
                         ["atomics", "loads", "stores", "l1d", "cycles"])
        # LLC misses did not change: met, where the instructions missed.
        self.assertEqual(report.disagreements({"verdict": "missed", "counts": c}), ["llc"])

    def test_per_folio_and_per_page_divide_the_change_by_what_the_window_worked_on(self):
        # 128 folios of 512 pages: +128 atomics and +256 LLC misses per
        # window are +1 and +2 per folio, 1/512 and 1/256 per page.
        c = self.counted([(100000, 10, 500, 200, 40, 20)] * 3, [(99000, 138, 500, 200, 40, 276)] * 3)
        u = report.per_unit({"counts": c, "folios": 128}, 256)
        self.assertEqual((u["folios"], u["pages"]), (128, 65536))
        self.assertAlmostEqual(u["atomics"]["per_folio"], 1.0)
        self.assertAlmostEqual(u["atomics"]["per_page"], 1 / 512)
        self.assertAlmostEqual(u["llc"]["per_folio"], 2.0)
        self.assertAlmostEqual(u["insns"]["per_folio"], -1000 / 128)
        self.assertEqual(u["l1d"]["delta"], 0)
        # A case that checks no folios, or a refused count: none.
        self.assertIsNone(report.per_unit({"counts": c, "folios": 0}, 256))
        self.assertIsNone(report.per_unit({"counts": {"refused": "x"}, "folios": 128}, 256))
        self.assertEqual([report.fmt_unit(v) for v in (1234.4, -1.0, 0.0021, 0, None)],
                         ["+1,234", "-1.00", "+0.0021", "0", "-"])

    def test_the_area_is_what_the_guest_rounded_it_up_to(self):
        wr(os.path.join(self.d, "base-cp.gup-fast-1g-1.log"),
           "RUSTMM-BENCH-NOTE cp.gup-fast-1g: the area is 1024 MiB, RUSTMM_BENCH_MIB rounded up "
           "to whole folios of the device\n")
        self.assertEqual(report.area_mib(self.d, "cp.gup-fast-1g", 256), 1024)
        self.assertEqual(report.area_mib(self.d, "cp.gup-fast-2m", 256), 256)

    def test_a_count_without_coherence_says_not_counted_and_one_with_it_counts(self):
        # A plugin of before coherence wrote five memory columns.
        c = self.counted([(1000, 1, 5, 5, 1, 1)] * 3, [(1000, 1, 5, 5, 1, 1)] * 3)
        self.assertTrue(c["coherence"]["not_counted"])
        self.assertIsNone(c["coherence"]["verdict"])
        c = self.counted([(1000, 1, 5, 5, 1, 1, 4)] * 3, [(1000, 1, 5, 5, 1, 1, 6)] * 3)
        self.assertAlmostEqual(c["coherence"]["change_pct"], 50.0)

    def test_the_rejected_window_is_dropped(self):
        # The rejected attempt's window has 99 atomics; only kept runs count.
        c = self.counted([(1000, 1, 5, 5, 0, 0)] * 3, [(1000, 1, 5, 5, 0, 0)] * 3, reject_first=True)
        self.assertEqual(c["atomics"]["base"], 1)
        self.assertEqual(c["llc"]["delta"], 0)
        self.assertIsNone(c["llc"]["verdict"], "a metric that is 0 in the base has no ratio")

    def test_windows_that_do_not_pair_with_the_console_are_refused(self):
        self.counted([(1000, 1, 5, 5, 1, 1)] * 3, [(1000, 1, 5, 5, 1, 1)] * 3)
        path = os.path.join(self.d, "patched-small.fork-c2.counts")
        text = rd(path).replace("windows 3", "windows 2")
        wr(path, "\n".join(l for l in text.splitlines() if not l.startswith("# window 3")) + "\n")
        c = report.counts_result("small.fork", self.d, 3, random.Random(3), "x86_64")
        self.assertIn("2 windows, but", c["refused"])

    def test_a_window_that_never_closed_or_a_file_without_the_model_is_refused(self):
        self.counted([(1000, 1, 5, 5, 1, 1)] * 3, [(1000, 1, 5, 5, 1, 1)] * 3)
        path = os.path.join(self.d, "base-small.fork-c1.counts")
        wr(path, rd(path).replace("windows 3", "windows 3 open"))
        self.assertIn("never closed", report.counts_result("small.fork", self.d, 3, random.Random(3),
                                                           "x86_64")["refused"])
        wr(path, "windows 1\n# window 1 1000\n")
        self.assertIn("no memory-model columns", report.counts_result(
            "small.fork", self.d, 3, random.Random(3), "x86_64")["refused"])


class CoverCheck(unittest.TestCase):
    BENCH = {"meta": {"command": "make bench BENCH_BOOTS=3", "statistic": "median of boot medians"},
             "cases": [{"case": "thp.cow", "change_pct": 2.01, "ci_pct": [1.9, 2.1],
                        "target_pct": [None, 1.0], "verdict": "missed"},
                       {"case": "small.fork", "change_pct": -0.12, "ci_pct": [-0.4, 0.2],
                        "target_pct": [-0.5, 0.5], "verdict": "met"}]}

    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.bench = os.path.join(self.d, "b.json")
        wr(self.bench, json.dumps(self.BENCH))
        self.cover = os.path.join(self.d, "0000-cover-letter.patch")
        wr(self.cover, "Subject: x\n\n" + cover.bench_section(self.BENCH, self.bench) + "\n")

    def tearDown(self):
        shutil.rmtree(self.d)

    def check(self):
        class A:
            bench = self.bench
            check = [self.cover]
        with contextlib.redirect_stdout(io.StringIO()):
            return cover.check(A)

    def test_a_generated_cover_letter_matches(self):
        self.assertEqual(self.check(), 0)

    def test_an_edited_number_fails(self):
        text = rd(self.cover).replace("+2.01%", "+1.01%")
        wr(self.cover, text)
        self.assertEqual(self.check(), 1)

    def test_a_lost_case_fails(self):
        text = "\n".join(l for l in rd(self.cover).split("\n") if "small.fork" not in l)
        wr(self.cover, text)
        self.assertEqual(self.check(), 1)

    def test_the_section_names_its_own_report(self):
        text = rd(self.cover)
        self.assertIn("docs/b.md", text)
        self.assertIn("docs/b.json", text)

    def test_an_edited_verdict_fails(self):
        text = rd(self.cover).replace("missed", "met")
        wr(self.cover, text)
        self.assertEqual(self.check(), 1)


class LtoCheck(unittest.TestCase):
    """scripts/test/lto-check.py on synthetic llvm-objdump listings."""

    SCRIPT = os.path.join(TOP, "scripts", "test", "lto-check.py")

    def listing(self, calls):
        """A listing with every function lto-check.py names; CALLS maps a
        function to the symbols it calls (the others call nothing)."""
        mod = load("lto_check", "test/lto-check.py")
        names = list(mod.ENTRY_POINTS) + list(mod.CALLERS) + list(mod.OUT_OF_LINE.values())
        out, addr = ["", "vmlinux:\tfile format elf64-x86-64", ""], 0xffffffff81000000
        for n in dict.fromkeys(names + list(calls)):
            out.append(f"{addr:016x} <{n}>:")
            addr += 0x10
            out.append(f"{addr:x}:      \tendbr64")
            for c in calls.get(n, []):
                addr += 0x10
                out.append(f"{addr:x}:      \tcallq\t0x{0xffffffff82000000:x} <{c}>")
            addr += 0x10
            out.append(f"{addr:x}:      \tretq")
            out.append("")
        path = os.path.join(self.tmp, "vmlinux.dis")
        wr(path, "\n".join(out) + "\n")
        return path

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        # These listings are of 7.3's tables, whatever base the caller runs.
        old = os.environ.get("RUST_MM_BASE")
        os.environ["RUST_MM_BASE"] = "7.3"
        self.addCleanup(lambda: os.environ.__setitem__("RUST_MM_BASE", old) if old is not None
                        else os.environ.pop("RUST_MM_BASE", None))

    def run_check(self, calls, *args):
        return subprocess.run([sys.executable, self.SCRIPT, "--disassembly", *args,
                               self.listing(calls)], capture_output=True, text=True)

    # The tables of main's series (7.3): copy_page_range()'s large-folio
    # work is its call to copy_present_ptes_batch(), whose is its call to
    # folio_dup_tracked_mapcount().
    GOOD = {"copy_page_range": ["copy_present_ptes_batch"],
            "copy_present_ptes_batch": ["folio_dup_tracked_mapcount"]}

    def test_inlined_entry_points_pass(self):
        r = self.run_check(self.GOOD)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("lto-check: 16 passed, 0 failed", r.stdout)

    def test_a_call_to_an_entry_point_or_a_rust_function_fails(self):
        for caller, callee in [("folio_remove_rmap_ptes", "rust_folio_rmap_add"),
                               ("do_wp_page", "_RNvNtCs1_7rust_mm10folio_rmap8may_reuse")]:
            r = self.run_check(dict(self.GOOD, **{caller: [callee]}))
            self.assertNotEqual(r.returncode, 0, r.stdout)
            self.assertIn(f"{caller} calls no rust/mm entry point, no Rust function and no "
                          f"Rust helper (calls {callee}): FAILED", r.stdout)

    def test_a_kernel_crate_helper_left_out_of_line_fails(self):
        # kernel::sync::atomic's operations are C helpers; LTO must inline
        # them into the callers with the rest of the edge.
        callee = "rust_helper_atomic64_fetch_add_relaxed"
        r = self.run_check(dict(self.GOOD, folio_add_anon_rmap_ptes=[callee]))
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn(f"folio_add_anon_rmap_ptes calls no rust/mm entry point, no Rust "
                      f"function and no Rust helper (calls {callee}): FAILED", r.stdout)

    def test_order0_caller_with_its_large_folio_work_inlined_back_fails(self):
        r = self.run_check({"copy_present_ptes_batch": ["folio_dup_tracked_mapcount"]})
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("copy_page_range holds no rust/mm code", r.stdout)
        self.assertIn("(no call to copy_present_ptes_batch: inlined back?): FAILED", r.stdout)
        self.assertIn("lto-check: 15 passed, 1 failed", r.stdout)

    def test_control_without_lto_wants_every_call(self):
        calls = dict(self.GOOD)
        for caller, wants in load("lto_check", "test/lto-check.py").CALLERS.items():
            calls.setdefault(caller, []).extend(wants)
        r = self.run_check(calls, "--expect-calls")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("lto-check: 16 passed, 0 failed", r.stdout)
        # ... and the LTO verdict on the same listing fails every caller.
        r = self.run_check(calls)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no function in vmlinux calls an entry point (callers:", r.stdout)


    def test_vma_lock_decisions_left_out_of_line_fail_and_inlined_pass(self):
        # The 7.3 bench kernel of 2026-11-29 before the vma-lock exports
        # were #[inline(always)]: vma_start_read() and a fault handler
        # still called them.
        mod = load("lto_check", "test/lto-check.py")
        entries = mod.ENTRY_POINTS_VMA_LOCK_7_3
        good = dict(self.GOOD, vma_start_read=[], __vma_start_exclude_readers=[],
                    **{e: [] for e in entries})
        r = self.run_check(good, "--system", "rmap-id", "--system", "vma-lock")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("lto-check: vma-lock: the entry points are in vmlinux: ok", r.stdout)
        self.assertIn("lto-check: 19 passed, 0 failed", r.stdout)
        bad = dict(good, vma_start_read=["rust_vma_lock_read_admit"],
                   do_user_addr_fault=["rust_vma_lock_read_release"])
        r = self.run_check(bad, "--system", "vma-lock")
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("vma-lock: vma_start_read calls no rust/mm entry point, no Rust function "
                      "and no Rust helper (calls rust_vma_lock_read_admit): FAILED", r.stdout)
        self.assertIn("(callers: do_user_addr_fault vma_start_read): FAILED", r.stdout)
        # The control wants the calls.
        r = self.run_check(dict(good, vma_start_read=["rust_vma_lock_read_admit",
                                                      "rust_vma_lock_read_validate"],
                                __vma_start_exclude_readers=["rust_vma_lock_exclude_begin",
                                                             "rust_vma_lock_exclusion_reached"]),
                           "--system", "vma-lock", "--expect-calls")
        self.assertEqual(r.returncode, 0, r.stdout)

    def arm64_listing(self, calls, relocs=False):
        """An arm64 listing of contpte's table (and rmap-id's and
        vma-lock's functions, calling nothing): CALLS maps a function to the
        symbols it calls, as a linked vmlinux shows them, or (RELOCS) as an
        unlinked object does: a branch to itself and the relocation."""
        mod = load("lto_check", "test/lto-check.py")
        names = (list(mod.ENTRY_POINTS) + list(mod.CALLERS) + list(mod.ENTRY_POINTS_VMA_LOCK_7_3) +
                 list(mod.CALLERS_VMA_LOCK_7_3) + list(mod.ENTRY_POINTS_CONTPTE_7_3) +
                 list(mod.CALLERS_CONTPTE_7_3))
        out, addr = ["", "vmlinux:\tfile format elf64-littleaarch64", ""], 0xffff800080010000
        calls = dict(self.GOOD, **calls)
        for n in dict.fromkeys(names + list(calls)):
            start = addr
            out.append(f"{addr:016x} <{n}>:")
            out.append(f"{addr:x}:      \tpaciasp")
            for c in calls.get(n, []):
                addr += 4
                if relocs:
                    out.append(f"{addr:x}:      \tbl\t0x{addr - start:x} <{n}+0x{addr - start:x}>")
                    out.append(f"\t\t{addr:016x}:  R_AARCH64_CALL26\t{c}")
                else:
                    out.append(f"{addr:x}:      \tbl\t0x{0xffff800081000000:x} <{c}>")
            addr += 4
            out.append(f"{addr:x}:      \tret")
            out.append("")
            addr += 4
        path = os.path.join(self.tmp, "vmlinux-arm64.dis")
        wr(path, "\n".join(out) + "\n")
        return path

    def test_arm64_checks_contpte_too_and_fails_a_call_left(self):
        r = subprocess.run([sys.executable, self.SCRIPT, "--disassembly", "--arch", "arm64",
                            self.arm64_listing({})], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("lto-check: systems rmap-id vma-lock contpte (arm64)", r.stdout)
        self.assertIn("contpte: the entry points are in vmlinux: ok", r.stdout)
        self.assertIn("lto-check: 32 passed, 0 failed", r.stdout)
        # contpte_ptep_get() still calling the gather, as without LTO.
        r = subprocess.run([sys.executable, self.SCRIPT, "--disassembly", "--arch", "arm64",
                            self.arm64_listing({"contpte_ptep_get": ["rust_contpte_gather"]})],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("contpte: contpte_ptep_get calls no rust/mm entry point, no Rust function "
                      "and no Rust helper (calls rust_contpte_gather): FAILED", r.stdout)
        # x86_64 has no contpte.
        r = subprocess.run([sys.executable, self.SCRIPT, "--disassembly", "--arch", "x86_64",
                            self.arm64_listing({})], capture_output=True, text=True)
        self.assertIn("lto-check: systems rmap-id vma-lock (x86_64)", r.stdout)

    def test_an_unlinked_objects_calls_are_its_relocations(self):
        mod = load("lto_check", "test/lto-check.py")
        wants = dict(mod.CALLERS_CONTPTE_7_3)
        for relocs in (False, True):
            r = subprocess.run([sys.executable, self.SCRIPT, "--disassembly", "--expect-calls",
                                "--system", "contpte", self.arm64_listing(wants, relocs)],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout)
            self.assertIn("contpte: contpte_set_ptes (control, no RUST_MM_LTO) calls "
                          "rust_contpte_set_ptes_runs: yes: ok", r.stdout)
            self.assertIn("lto-check: 14 passed, 0 failed", r.stdout)
        # x86_64's form: call to itself, then R_X86_64_PLT32 sym-0x4.
        listing = ("0000000000000000 <folio_remove_rmap_ptes>:\n"
                   "       0:      \tendbr64\n"
                   "       4:      \tcallq\t0x9 <folio_remove_rmap_ptes+0x9>\n"
                   "\t\t0000000000000005:  R_X86_64_PLT32\trust_folio_rmap_add-0x4\n"
                   "       9:      \tretq\n")
        self.assertEqual(mod.parse(listing), {"folio_remove_rmap_ptes": ["rust_folio_rmap_add"]})

    def replay_build(self, source, lto=True):
        """A build directory whose mm/.mmap_lock.o.cmd compiles SOURCE as
        Kbuild does (with -flto=thin ... when LTO)."""
        build = os.path.join(self.tmp, "build")
        os.makedirs(os.path.join(build, "mm"), exist_ok=True)
        src = os.path.join(self.tmp, "mmap_lock.c")
        wr(src, source)
        lto_flags = "-fno-lto -flto=thin -fsplit-lto-unit -fvisibility=hidden " if lto else ""
        wr(os.path.join(build, "mm", ".mmap_lock.o.cmd"),
           f"savedcmd_mm/mmap_lock.o := clang -Wp,-MMD,mm/.mmap_lock.o.d -O2 {lto_flags}"
           f"-DKBUILD_MODNAME='\"mmap_lock\"' -c -o mm/mmap_lock.o {src}\n\n"
           f"source_mm/mmap_lock.o := {src}\n")
        return build

    CALLS_VMA_LOCK = """
int rust_vma_lock_read_admit(int);
int rust_vma_lock_read_validate(int);
int rust_vma_lock_exclude_begin(int);
int rust_vma_lock_exclusion_reached(int);
int vma_start_read(int x) { return rust_vma_lock_read_admit(x) + rust_vma_lock_read_validate(x); }
int __vma_start_exclude_readers(int x)
{ return rust_vma_lock_exclude_begin(x) + rust_vma_lock_exclusion_reached(x); }
"""

    def test_replay_compiles_the_callers_natively_and_leaves_the_build_alone(self):
        if shutil.which("clang") is None:
            self.fail("clang is not in PATH (make test's environment has it)")
        build = self.replay_build(self.CALLS_VMA_LOCK)
        r = subprocess.run([sys.executable, self.SCRIPT, "--replay", build, "--system", "vma-lock"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("vma-lock: vma_start_read (control, compiled natively) calls "
                      "rust_vma_lock_read_admit rust_vma_lock_read_validate: yes: ok", r.stdout)
        self.assertIn("lto-check: 3 passed, 0 failed", r.stdout)
        self.assertEqual(sorted(os.listdir(os.path.join(build, "mm"))), [".mmap_lock.o.cmd"])
        # A caller that does not call fails the control.
        build = self.replay_build(self.CALLS_VMA_LOCK.replace(
            "rust_vma_lock_read_admit(x) + ", ""))
        r = subprocess.run([sys.executable, self.SCRIPT, "--replay", build, "--system", "vma-lock"],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("calls rust_vma_lock_read_admit rust_vma_lock_read_validate: no: "
                      "rust_vma_lock_read_validate: FAILED", r.stdout)
        # A build without LTO flags is not what the control is for.
        build = self.replay_build(self.CALLS_VMA_LOCK, lto=False)
        r = subprocess.run([sys.executable, self.SCRIPT, "--replay", build, "--system", "vma-lock"],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("is not an LTO build", r.stderr)

    def test_arm64_lto_refuses_werror_and_w_e(self):
        """rust/mm/Kbuild's refusals, parsed by make on their own: on arm64
        CONFIG_WERROR or W=e would make ld.lld's target-triple warning
        fatal at the end of the link. (A kernel make with CONFIG_WERROR=y
        on its command line rebuilds the vDSO and asm-offsets first.)"""
        kbuild = os.path.join(KSRC, "rust", "mm", "Kbuild")
        if not os.path.exists(kbuild):
            self.fail(f"{kbuild}: no prepared tree (make test prepares it first)")
        ok = ["CONFIG_RUST_MM=y", "CONFIG_RUST_MM_LTO=y", "CONFIG_LTO_CLANG=y",
              "CONFIG_LTO_CLANG_THIN=y", "CONFIG_RUSTC_CLANG_LLVM_COMPATIBLE=y"]

        def parse(*words):
            return subprocess.run(["make", "-s", "-f", kbuild, "--eval", "all: ; @:", "all",
                                   *ok, *words], capture_output=True, text=True)
        for words in (["CONFIG_ARM64=y", "CONFIG_WERROR=y"],
                      ["CONFIG_ARM64=y", "KBUILD_EXTRA_WARN=1e"]):
            r = parse(*words)
            self.assertNotEqual(r.returncode, 0, words)
            self.assertIn("CONFIG_RUST_MM_LTO=y on arm64 does not link with CONFIG_WERROR=y or "
                          "W=e", r.stderr)
        for words in (["CONFIG_ARM64=y"], ["CONFIG_X86_64=y", "CONFIG_WERROR=y"]):
            r = parse(*words)
            self.assertEqual(r.returncode, 0, (words, r.stderr))
        # ... and the others still refuse (LTO off).
        r = parse("CONFIG_ARM64=y", "CONFIG_LTO_CLANG=")
        self.assertIn("needs CONFIG_LTO_CLANG_THIN=y or CONFIG_LTO_CLANG_FULL=y", r.stderr)

    def test_a_system_without_tables_is_refused(self):
        r = self.run_check(self.GOOD, "--system", "pagemap-swap")
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn("no tables for system pagemap-swap", r.stdout)

# The prepared tree of the base make test runs (BUILD_DIR/linux-<version>).
KSRC = next(iter(sorted(glob.glob(os.path.join(os.environ.get("BUILD_DIR", os.path.join(TOP, "build")),
                                                "linux-*", ".rust-mm-applied")))), "/nonexistent/x")
KSRC = os.path.dirname(KSRC)


class RustPatchesCheck(unittest.TestCase):
    SCRIPT = os.path.join(TOP, "scripts", "series", "rust-patches-check.sh")

    def run_check(self, *dirs):
        env = dict(os.environ)
        if dirs:
            env["RUST_PATCHES_DIRS"] = " ".join(dirs)
        return subprocess.run(["bash", self.SCRIPT], capture_output=True, text=True, env=env)

    def test_the_repository_series_apply_to_its_rust_files(self):
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count(": ok\n"), 2, r.stdout)
        # The 6.12 series has such patches (contpte, rmap-id, vma-lock):
        # the check is not vacuous.
        self.assertRegex(r.stdout, r"kernel-patches-6\.12: [1-9][0-9]* patches apply")

    def test_a_restore_patch_that_no_longer_applies_fails_naming_it(self):
        tmp = tempfile.mkdtemp()
        try:
            dst = os.path.join(tmp, "kernel-patches-6.12")
            shutil.copytree(os.path.join(TOP, "kernel-patches-6.12"), dst)
            patch = glob.glob(os.path.join(dst, "vma-lock", "0002-*.patch"))[0]
            text = rd(patch)
            # The first context line of the first hunk, as if the
            # repository's file had changed under the patch.
            i = text.index("\n@@ ")
            j = text.index("\n", i + 1) + 1
            self.assertEqual(text[j], " ")
            wr(patch, text[:j] + " // edited:" + text[j + 1:])
            r = self.run_check(dst)
        finally:
            shutil.rmtree(tmp)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("vma-lock/" + os.path.basename(patch), r.stdout)
        self.assertIn("FAILED", r.stdout)


@unittest.skipUnless(os.path.exists(os.path.join(KSRC, ".rust-mm-applied")),
                     "the tree is not prepared (make prepare)")
class SeriesExport(unittest.TestCase):
    def run_export(self, *topics, env=None):
        out = tempfile.mkdtemp()
        try:
            return subprocess.run(["bash", os.path.join(TOP, "scripts", "series", "series.sh"), "export", out, *topics],
                                  capture_output=True, text=True, env=env)
        finally:
            shutil.rmtree(out)

    def test_a_topic_without_its_dependencies_is_refused_naming_them(self):
        r = self.run_export("rust-lto")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("rust-lto depends on rmap-id", r.stderr)
        self.assertIn("TOPICS='rmap-id rust-lto'", r.stderr)

    def test_an_unknown_topic_is_refused(self):
        r = self.run_export("no-such-topic")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("'no-such-topic' is not a topic", r.stderr)

    def test_no_git_identity_is_refused_not_invented(self):
        home = tempfile.mkdtemp()
        env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=home, GIT_CONFIG_NOSYSTEM="1",
                   GIT_CONFIG_GLOBAL=os.path.join(home, "none"))
        for k in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
            env.pop(k, None)
        try:
            # The repository's own config must not carry an identity either.
            own = subprocess.run(["git", "-C", TOP, "config", "--local", "user.email"],
                                 capture_output=True, text=True).stdout.strip()
            if own:
                self.skipTest("this checkout has a local user.email")
            r = self.run_export("rmap-id", env=env)
        finally:
            shutil.rmtree(home)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no git identity", r.stderr)
        self.assertIn("git config --global user.name", r.stderr)



SERIES_DIR = os.path.join(os.environ.get("BUILD_DIR", os.path.join(TOP, "build")), "series")


@unittest.skipUnless(os.path.exists(os.path.join(KSRC, ".rust-mm-applied"))
                     and os.path.exists(os.path.join(SERIES_DIR, "series")),
                     "no prepared tree and exported series (make prepare; make series)")
class SeriesCheck(unittest.TestCase):
    """series.sh check applies the exported series to copies of only the
    files it touches: a patch whose context no longer matches must still
    fail git am, quilt and its topic's own check."""

    def test_a_patch_whose_context_changed_fails_git_am_quilt_and_its_topic(self):
        tmp = tempfile.mkdtemp()
        try:
            dst = os.path.join(tmp, "series")
            shutil.copytree(SERIES_DIR, dst)
            with open(os.path.join(dst, "series")) as f:
                last = [x.strip() for x in f if x.strip() and not x.startswith("#")][-1]
            topic = last.split("/")[0]
            path = os.path.join(dst, last)
            lines = rd(path).split("\n")
            hunk = next(i for i, x in enumerate(lines) if x.startswith("@@ "))
            ctx = next(i for i in range(hunk + 1, len(lines)) if lines[i].startswith(" ") and lines[i].strip())
            lines[ctx] += " /* changed */"
            with open(path, "w") as f:
                f.write("\n".join(lines))
            r = subprocess.run(["bash", os.path.join(TOP, "scripts", "series", "series.sh"), "check", dst],
                               capture_output=True, text=True)
        finally:
            shutil.rmtree(tmp)
        self.assertIn("git am: FAILED", r.stdout)
        self.assertIn("quilt: FAILED", r.stdout)
        self.assertIn(f"topic {topic} does not apply", r.stdout)
        self.assertIn("topic rmap-id applies on the pristine tree + nothing else: ok", r.stdout)
        self.assertNotIn("series-check: git am applies every topic's patches in order: ok", r.stdout)


if __name__ == "__main__":
    unittest.main()
