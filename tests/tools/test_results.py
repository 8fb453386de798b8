#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Self-tests of the one result parser and judge (scripts/lib/results.py)
and of the stage accounting (scripts/lib/stages.sh): each rule must be
able to fail. Synthetic consoles, KUnit results and trees; the KCSAN scope
also on the prepared tree (make test has one).

Run: python3 -m unittest discover -s tests/tools -v
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts", "lib"))
import results  # noqa: E402

SCRIPT = os.path.join(TOP, "scripts", "lib", "results.py")
# The prepared tree of the base make test runs (BUILD_DIR/linux-<version>).
KSRC = os.path.dirname(next(iter(sorted(glob.glob(os.path.join(
    os.environ.get("BUILD_DIR", os.path.join(TOP, "build")), "linux-*", ".rust-mm-applied")))), "/nonexistent/x"))


def wr(path, text):
    with open(path, "w") as f:
        f.write(text)


def ours(prog, cases, results_, plan=True, end="exit 0", may_skip=None):
    """A console fragment of one of our programs: start, plan, results, end."""
    may_skip = may_skip or {}
    short = prog[len("rustmm_"):]
    out = [f"RUSTMM-PROGRAM {prog} start"]
    if plan:
        out.append(f"RUSTMM-PLAN {short} {len(cases)}")
        for c in cases:
            m = f" may-skip {may_skip[c]}" if c in may_skip else ""
            out.append(f"RUSTMM-CASE {short}.{c}{m}")
    for c, st in results_:
        out.append(f"RUSTMM-TEST {short}.{c} {st} note")
    if end:
        out.append(f"RUSTMM-PROGRAM {prog} {end}")
    return "\n".join(out) + "\n"


class Console(unittest.TestCase):
    """results.py console: plans, order, skips, the console scan."""

    def setUp(self):
        self.d = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.d)

    def run_console(self, text, order=None, parity=""):
        log = os.path.join(self.d, "c.log")
        wr(log, text)
        args = [sys.executable, SCRIPT, "console", log, "--parity", parity]
        if order is not None:
            o = os.path.join(self.d, "order")
            wr(o, "\n".join(order) + "\n")
            args += ["--order", o]
        r = subprocess.run(args, capture_output=True, text=True)
        m = re.search(r"^userspace: (\d+) passed, (\d+) failed, (\d+) skipped", r.stdout, re.M)
        self.assertTrue(m, r.stdout + r.stderr)
        return int(m.group(1)), int(m.group(2)), int(m.group(3)), r.stdout

    def boot(self, *parts):
        return "".join(parts) + f"RUSTMM-DONE {len(parts)} programs\n"

    def test_a_complete_boot_passes_every_planned_case_and_the_console(self):
        p, f, s, out = self.run_console(self.boot(ours("rustmm_a", ["x", "y"], [("x", "PASS"), ("y", "PASS")])),
                                        order=["rustmm_a"])
        self.assertEqual((p, f, s), (3, 0, 0), out)

    def test_one_result_line_fewer_fails_naming_the_case(self):
        p, f, s, out = self.run_console(self.boot(ours("rustmm_a", ["x", "y"], [("x", "PASS")])),
                                        order=["rustmm_a"])
        self.assertEqual(f, 1, out)
        self.assertIn("a.y FAIL planned, but no result line", out)

    def test_a_program_that_crashes_before_printing_anything_fails(self):
        text = self.boot("RUSTMM-PROGRAM rustmm_a start\nRUSTMM-PROGRAM rustmm_a killed by signal 11\n")
        p, f, s, out = self.run_console(text, order=["rustmm_a"])
        self.assertGreaterEqual(f, 1, out)
        self.assertIn("printed no plan", out)

    def test_a_result_printed_twice_fails(self):
        text = self.boot(ours("rustmm_a", ["x"], [("x", "PASS"), ("x", "PASS")]))
        p, f, s, out = self.run_console(text, order=["rustmm_a"])
        self.assertEqual(f, 1, out)
        self.assertIn("2 result lines", out)

    def test_a_case_nobody_planned_fails(self):
        text = self.boot(ours("rustmm_a", ["x"], [("x", "PASS"), ("z", "PASS")]))
        p, f, s, out = self.run_console(text, order=["rustmm_a"])
        self.assertEqual(f, 1, out)
        self.assertIn("a.z FAIL PASS but not in the plan", out)

    def test_a_plan_whose_count_is_not_its_cases_fails(self):
        text = self.boot(ours("rustmm_a", ["x"], [("x", "PASS")]).replace("RUSTMM-PLAN a 1", "RUSTMM-PLAN a 2"))
        p, f, s, out = self.run_console(text, order=["rustmm_a"])
        self.assertEqual(f, 1, out)

    def test_an_undeclared_skip_fails_and_a_declared_one_is_reported_not_counted(self):
        text = self.boot(ours("rustmm_a", ["x", "y"], [("x", "SKIP"), ("y", "SKIP")],
                              may_skip={"y": "no soft-dirty on arm64"}))
        p, f, s, out = self.run_console(text, order=["rustmm_a"])
        self.assertEqual((p, f, s), (1, 1, 1), out)
        self.assertIn("skipped without declaring it may", out)
        self.assertIn("may skip here: no soft-dirty on arm64", out)

    def test_a_program_of_the_order_that_never_ran_fails(self):
        text = self.boot(ours("rustmm_a", ["x"], [("x", "PASS")]))
        p, f, s, out = self.run_console(text, order=["rustmm_a", "rustmm_b"])
        self.assertIn("rustmm_b: program FAIL did not run", out)
        self.assertGreaterEqual(f, 1)

    def test_a_guest_that_stops_early_fails(self):
        text = ours("rustmm_a", ["x"], [("x", "PASS")], end=None)
        p, f, s, out = self.run_console(text, order=["rustmm_a"])
        self.assertIn("never ended", out)
        self.assertIn("before RUSTMM-DONE", out)

    def test_a_warning_inside_a_result_line_fails_the_stage(self):
        text = self.boot(ours("rustmm_a", ["x"], [("x", "PASS")]).replace(
            "RUSTMM-TEST a.x PASS note", "RUSTMM-TEST a.x PASS noWARNING: CPU: 1 PID: 5 at mm/rmap.c:9 te"))
        p, f, s, out = self.run_console(text, order=["rustmm_a"])
        self.assertGreaterEqual(f, 1, out)
        self.assertIn("kernel FAIL reported", out)

    def test_a_kernel_record_that_cuts_a_result_line_is_cut_out_and_scanned(self):
        # The record lands inside our line; our line's rest follows it.
        benign = self.boot(ours("rustmm_a", ["x"], [("x", "PASS")]).replace(
            "RUSTMM-TEST a.x PASS note",
            "RUSTMM-TEST a.x PA[   12.345678] page: refcount:3 mapcount:1\n"
            "[   12.345679] flags: 0x4000(head)\nSS note"))
        p, f, s, out = self.run_console(benign, order=["rustmm_a"])
        self.assertEqual((p, f), (2, 0), out)
        self.assertIn("rejoined line", out)
        bad = benign.replace("page: refcount:3", "WARNING: CPU: 0 PID: 1 at mm/gup.c:1")
        p, f, s, out = self.run_console(bad, order=["rustmm_a"])
        self.assertEqual((p, f), (1, 1), out)

    def test_a_silent_nonzero_exit_fails_but_ksft_skip_is_reported(self):
        text = self.boot(ours("rustmm_a", ["x"], [("x", "PASS")], end="exit 1"),
                         "RUSTMM-PROGRAM ksft_mm_b start\nRUSTMM-PROGRAM ksft_mm_b exit 4\n")
        p, f, s, out = self.run_console(text, order=["rustmm_a", "ksft_mm_b"])
        self.assertIn("exit 1 without reporting a failure", out)
        self.assertEqual((f, s), (1, 1), out)

    def test_an_oom_kill_fails_even_after_passes(self):
        text = self.boot("RUSTMM-PROGRAM ksft_mm_cow start\n1..1\nok 1 a\n"
                         "Out of memory: Killed process 42 (ksft_mm_cow) total-vm:1kB\n"
                         "RUSTMM-PROGRAM ksft_mm_cow killed by signal 9\n")
        p, f, s, out = self.run_console(text, order=["ksft_mm_cow"])
        self.assertGreaterEqual(f, 1, out)

    def test_a_failed_setup_step_and_a_lockdep_report_fail(self):
        text = self.boot("RUSTMM-SETUP swap FAIL swapon /dev/zram0: EINVAL\n",
                         "RUSTMM-PROGRAM ksft_mm_x start\n1..1\nok 1 a\n"
                         "WARNING: possible circular locking dependency detected\n"
                         "RUSTMM-PROGRAM ksft_mm_x exit 0\n")
        p, f, s, out = self.run_console(text.replace("RUSTMM-DONE 2", "RUSTMM-DONE 1"), order=["ksft_mm_x"])
        self.assertEqual(f, 2, out)

    def test_a_selftest_short_of_its_tap_plan_or_totals_fails(self):
        text = self.boot("RUSTMM-PROGRAM ksft_mm_x start\nTAP version 13\n1..3\nok 1 a\nok 2 b\n"
                         "# Totals: pass:3 fail:0 xfail:0 xpass:0 skip:0 error:0\n"
                         "RUSTMM-PROGRAM ksft_mm_x exit 0\n")
        p, f, s, out = self.run_console(text, order=["ksft_mm_x"])
        self.assertIn("TAP plan is 1..3, 2 results", out)
        self.assertIn("its own totals", out)
        self.assertEqual(f, 2, out)

    def test_a_selftest_that_skips_the_rest_after_its_plan_is_a_skip_not_a_pass(self):
        text = self.boot("RUSTMM-PROGRAM ksft_mm_x start\nTAP version 13\n1..4\nok 1 a\n"
                         "ok 2 # SKIP no uffd\n# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:1 error:0\n"
                         "RUSTMM-PROGRAM ksft_mm_x exit 4\n")
        p, f, s, out = self.run_console(text, order=["ksft_mm_x"])
        self.assertEqual((p, f, s), (2, 0, 2), out)
        self.assertIn("exited KSFT_SKIP after 2 of 4 planned results", out)
        # The same short count with exit 0 is a lost result: a failure.
        p, f, s, out = self.run_console(text.replace("ksft_mm_x exit 4", "ksft_mm_x exit 0"),
                                        order=["ksft_mm_x"])
        self.assertEqual(f, 1, out)

    def test_selftest_skips_are_named_with_their_reason_and_parity_sets_left_out(self):
        text = self.boot("RUSTMM-PROGRAM ksft_mm_x start\n1..2\nok 1 a\nok 2 b # SKIP no swap\n"
                         "RUSTMM-PROGRAM ksft_mm_x exit 0\n",
                         "RUSTMM-PROGRAM ksft_mm_cow start\n1..1\nok 1 a\nRUSTMM-PROGRAM ksft_mm_cow exit 0\n")
        p, f, s, out = self.run_console(text, order=["ksft_mm_x", "ksft_mm_cow"], parity="ksft_mm_cow")
        self.assertEqual((p, f, s), (2, 0, 1), out)
        self.assertIn("ksft_mm_x: 1 SKIP (no swap): 2 b", out)
        self.assertIn("1 selftest results left to the parity check", out)

    def test_khugepaged_of_7x_counts_its_tap_lines_not_its_steps(self):
        text = ("RUSTMM-PROGRAM ksft_mm_khugepaged start\n"
                "# Save THP and khugepaged settings... \x1b[32mOK\x1b[0m\n1..2\n"
                "# Run test: collapse_full (khugepaged:anon)\n"
                "# Collapse multiple fully populated PTE table.... \x1b[32mOK\x1b[0m\n"
                "ok 1 collapse_full\n# Run test: collapse_empty (khugepaged:anon)\n"
                "# Do not collapse empty PTE table.... \x1b[31mFail\x1b[0m\n"
                "not ok 2 collapse_empty\n"
                "RUSTMM-PROGRAM ksft_mm_khugepaged exit 1\nRUSTMM-DONE 1 programs\n")
        p, f, s, out = self.run_console(text, order=["ksft_mm_khugepaged"])
        # The two TAP results, one failed; no step line counted, so the
        # plan (1..2) matches.
        self.assertEqual(f, 1, out)
        self.assertIn("ksft_mm_khugepaged: 2 collapse_empty FAIL", out)
        self.assertNotIn("TAP plan", out)
        self.assertNotIn("Collapse multiple", out)

    def test_khugepaged_and_uffd_formats_are_read(self):
        text = ("RUSTMM-PROGRAM ksft_mm_khugepaged start\nRun test: collapse (anon)\n"
                "Collapse fully populated PTE table.... \x1b[0;32mOK\x1b[0m\n"
                "Swapout one page... \x1b[0;31mFail\x1b[0m\n"
                "RUSTMM-PROGRAM ksft_mm_khugepaged exit 1\n"
                "RUSTMM-PROGRAM ksft_mm_uffd-unit-tests start\n"
                "Testing register-ioctls on anon... done\n"
                "Testing minor on hugetlb... skipped [reason: feature missing]\n"
                "Userfaults unit tests: pass=1, skip=1, fail=0 (total=2)\n"
                "RUSTMM-PROGRAM ksft_mm_uffd-unit-tests exit 0\n")
        path = os.path.join(self.d, "k.log")
        wr(path, text)
        boot = results.Boot(path)
        self.assertEqual([s for _, s, _, _ in boot.programs["ksft_mm_khugepaged"].results], ["PASS", "FAIL"])
        self.assertEqual([s for _, s, _, _ in boot.programs["ksft_mm_uffd-unit-tests"].results], ["PASS", "SKIP"])
        checks = results.judge(boot)
        self.assertFalse([c for c in checks if c[1] == "totals"])


class Parity(unittest.TestCase):
    """results.py parity: passed only on both kernels; equal skips reported,
    equal failures counted failed; a skip only the patched kernel has fails."""

    def setUp(self):
        self.d = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.d)

    def parity(self, a, b):
        pa, pb = os.path.join(self.d, "a.log"), os.path.join(self.d, "b.log")
        wr(pa, a)
        wr(pb, b)
        r = subprocess.run([sys.executable, SCRIPT, "parity", pa, pb], capture_output=True, text=True)
        m = re.search(r"^parity: (\d+) passed, (\d+) failed", r.stdout, re.M)
        self.assertTrue(m, r.stdout + r.stderr)
        return int(m.group(1)), int(m.group(2)), r.stdout

    @staticmethod
    def cow(*lines):
        return "RUSTMM-PROGRAM ksft_mm_cow start\n" + "".join(l + "\n" for l in lines) + \
            "RUSTMM-PROGRAM ksft_mm_cow exit 0\n"

    def test_equal_skips_are_not_passes(self):
        p, f, out = self.parity(self.cow("ok 1 a", "ok 2 b # SKIP no swap"),
                                self.cow("ok 1 a", "ok 2 b # SKIP no swap"))
        self.assertEqual((p, f), (1, 0), out)
        self.assertIn("1 skip on both", out)

    def test_equal_failures_are_failures(self):
        p, f, out = self.parity(self.cow("ok 1 a", "not ok 2 b"), self.cow("ok 1 a", "not ok 2 b"))
        self.assertEqual((p, f), (1, 1), out)
        self.assertIn("FAIL on both kernels", out)

    def test_a_skip_only_the_patched_kernel_has_fails(self):
        p, f, out = self.parity(self.cow("ok 1 a", "ok 2 b # SKIP x"), self.cow("ok 1 a", "ok 2 b"))
        self.assertEqual((p, f), (1, 1), out)
        self.assertIn("a skip only the patched kernel has", out)

    def test_measured_numbers_in_a_name_do_not_count_but_the_outcome_does(self):
        a = "RUSTMM-PROGRAM ksft_mm_p start\nok 1 transact Extra pages 86 (0.2%)\nok 2 o 5\nRUSTMM-PROGRAM ksft_mm_p exit 0\n"
        b = "RUSTMM-PROGRAM ksft_mm_p start\nok 1 transact Extra pages 97 (0.2%)\nnot ok 2 o 5\nRUSTMM-PROGRAM ksft_mm_p exit 1\n"
        p, f, out = self.parity(a, b)
        self.assertEqual((p, f), (1, 1), out)

    def test_khugepaged_progress_steps_fold_but_not_their_outcome(self):
        prog = "RUSTMM-PROGRAM ksft_mm_khugepaged "
        step = "Construct PTE page table full of different PTE-mapped compound pages "

        def run(rng, ok):
            return (prog + "start\nRun test: collapse_compound_extreme (anon)\n"
                    + "".join(f"{step}{i:3d}/512..." for i in rng)
                    + (" \x1b[0;32mOK\x1b[0m\n" if ok else " \x1b[0;31mFail\x1b[0m\n")
                    + prog + ("exit 0\n" if ok else "exit 1\n"))
        p, f, out = self.parity(run(range(1, 6), True), run(range(3, 6), True))
        self.assertEqual((p, f), (1, 0), out)
        p, f, out = self.parity(run(range(1, 6), True), run(range(2, 6), False))
        self.assertEqual((p, f), (0, 1), out)

    def test_a_program_that_ran_on_one_kernel_only_fails(self):
        p, f, out = self.parity(self.cow("ok 1 a"), "RUSTMM-DONE 0 programs\n")
        self.assertEqual(f, 1, out)


def git(tree, *args):
    return subprocess.run(["git", "-C", tree, "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout


class SyntheticTree(unittest.TestCase):
    """A git tree with tags pristine and rust-mm, as prepare-tree.sh makes."""

    def setUp(self):
        self.t = tempfile.mkdtemp()
        git(self.t, "init", "-q")
        os.makedirs(os.path.join(self.t, "mm"))
        wr(os.path.join(self.t, "mm", "memory.c"),
           "int untouched(void)\n{\n\treturn 0;\n}\n\nint touched(int a)\n{\n\treturn a;\n}\n")
        git(self.t, "add", "-A")
        git(self.t, "commit", "-qm", "pristine")
        git(self.t, "tag", "pristine")
        wr(os.path.join(self.t, "mm", "memory.c"),
           "int untouched(void)\n{\n\treturn 0;\n}\n\nint touched(int a)\n{\n\treturn a + 1;\n}\n")
        wr(os.path.join(self.t, "mm", "vma_word_kunit.c"),
           "static void vma_word_case_a(struct kunit *t)\n{\n}\n\n"
           "static void vma_word_case_b(struct kunit *t)\n{\n}\n\n"
           "static struct kunit_case vma_word_cases[] = {\n\tKUNIT_CASE(vma_word_case_a),\n"
           "\tKUNIT_CASE_SLOW(vma_word_case_b),\n\t{}\n};\n\n"
           "static struct kunit_suite vma_word_suite = {\n\t.name = \"vma_word\",\n"
           "\t.test_cases = vma_word_cases,\n};\n")
        git(self.t, "add", "-A")
        git(self.t, "commit", "-qm", "series")
        git(self.t, "branch", "rust-mm")

    def tearDown(self):
        shutil.rmtree(self.t)


class KUnit(SyntheticTree):
    """results.py kunit: the cases the sources declare, no more, no fewer."""

    def kunit(self, cases, suites=("vma_word",)):
        res = os.path.join(self.t, "r.json")
        data = {"name": "main", "sub_groups": [
            {"name": "vma_word", "test_cases": [{"name": c, "status": s} for c, s in cases]}]}
        wr(res, json.dumps(data))
        r = subprocess.run([sys.executable, SCRIPT, "kunit", res, "--tree", self.t, *suites],
                           capture_output=True, text=True)
        m = re.search(r"^kunit: (\d+) passed, (\d+) failed, (\d+) skipped", r.stdout, re.M)
        self.assertTrue(m, r.stdout + r.stderr)
        return tuple(map(int, m.groups())), r.stdout

    def test_every_declared_case_passing_passes(self):
        c, out = self.kunit([("vma_word_case_a", "PASS"), ("vma_word_case_b", "PASS")])
        self.assertEqual(c, (2, 0, 0), out)

    def test_a_declared_case_without_a_result_fails(self):
        c, out = self.kunit([("vma_word_case_a", "PASS")])
        self.assertEqual(c, (1, 1, 0), out)
        self.assertIn("declared in the source, no result", out)

    def test_a_result_no_source_declares_fails(self):
        c, out = self.kunit([("vma_word_case_a", "PASS"), ("vma_word_case_b", "PASS"), ("z", "PASS")])
        self.assertEqual(c, (2, 1, 0), out)

    def test_a_suite_no_source_declares_fails(self):
        c, out = self.kunit([("vma_word_case_a", "PASS"), ("vma_word_case_b", "PASS")],
                            suites=("vma_word", "ghost"))
        self.assertEqual(c, (2, 1, 0), out)


class KUnitRust(SyntheticTree):
    """results.py kunit: a Rust suite's cases are its #[test] functions."""

    def setUp(self):
        super().setUp()
        os.makedirs(os.path.join(self.t, "rust", "mm"))
        wr(os.path.join(self.t, "rust", "mm", "atomic.rs"),
           "pub fn f() {}\n\n#[cfg(CONFIG_X)]\n#[kernel::macros::kunit_tests(rust_mm_atomic)]\n"
           "mod tests {\n    #[test]\n    fn loads_what_it_stored() {}\n\n"
           "    fn helper() {}\n\n    #[test]\n    #[cfg(CONFIG_Y)]\n    fn wraps() {}\n}\n")
        git(self.t, "add", "-A")
        git(self.t, "commit", "-qm", "rust")
        git(self.t, "branch", "-f", "rust-mm")

    def kunit(self, cases):
        res = os.path.join(self.t, "r.json")
        data = {"name": "main", "sub_groups": [
            {"name": "rust_mm_atomic", "test_cases": [{"name": c, "status": "PASS"} for c in cases]}]}
        wr(res, json.dumps(data))
        r = subprocess.run([sys.executable, SCRIPT, "kunit", res, "--tree", self.t, "rust_mm_atomic"],
                           capture_output=True, text=True)
        m = re.search(r"^kunit: (\d+) passed, (\d+) failed, (\d+) skipped", r.stdout, re.M)
        self.assertTrue(m, r.stdout + r.stderr)
        return tuple(map(int, m.groups())), r.stdout

    def test_every_test_function_passing_passes(self):
        c, out = self.kunit(["loads_what_it_stored", "wraps"])
        self.assertEqual(c, (2, 0, 0), out)

    def test_a_test_function_without_a_result_fails(self):
        c, out = self.kunit(["loads_what_it_stored"])
        self.assertEqual(c, (1, 1, 0), out)
        self.assertIn("rust_mm_atomic.wraps  (declared in the source, no result", out)

    def test_a_helper_is_not_a_case(self):
        c, out = self.kunit(["loads_what_it_stored", "wraps", "helper"])
        self.assertEqual(c, (2, 1, 0), out)
        self.assertIn("a result no source declares", out)


class Kcsan(SyntheticTree):
    """results.py kcsan: "ours" from the series, not from a list."""

    REPORT = ("[  5.1] ==================================================================\n"
              "[  5.1] BUG: KCSAN: data-race in {a} / {b}\n\n"
              "[  5.1] write to 0xffff888 of 8 bytes by task 93 on cpu 1:\n"
              "[  5.1]  {a}+0x1c/0x60\n[  5.1]  kthread+0x10/0x20\n\n"
              "[  5.1] read to 0xffff888 of 8 bytes by task 94 on cpu 0:\n"
              "[  5.1]  {b}+0x3c/0x80\n[  5.1]  kthread+0x10/0x20\n"
              "[  5.1] ==================================================================\n")

    def kcsan(self, a, b, tree=None):
        log = os.path.join(self.t, "k.log")
        wr(log, "boot\n" + self.REPORT.format(a=a, b=b))
        r = subprocess.run([sys.executable, SCRIPT, "kcsan", log, "--tree", tree or self.t],
                           capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr

    def test_a_function_the_series_adds_or_changes_is_ours(self):
        rc, out = self.kcsan("vma_word_case_a", "schedule")
        self.assertEqual(rc, 1, out)
        self.assertIn("1 from rust-mm code", out)
        rc, out = self.kcsan("touched", "schedule")
        self.assertEqual(rc, 1, out)

    def test_a_function_the_series_leaves_alone_is_not(self):
        rc, out = self.kcsan("untouched", "schedule")
        self.assertEqual(rc, 0, out)
        self.assertIn("0 from rust-mm code", out)

    def test_a_rust_mm_crate_symbol_is_ours(self):
        rc, out = self.kcsan("_RNvNtCs1a2b_7rust_mm8vma_lock9read_lock", "schedule")
        self.assertEqual(rc, 1, out)

    @unittest.skipUnless(os.path.exists(os.path.join(KSRC, ".rust-mm-applied")),
                         "needs the prepared tree (make prepare)")
    def test_c_functions_of_the_real_series_are_ours(self):
        # A C function each topic's own patches add, read from the patches
        # (so that the check follows renames): a report naming it is ours.
        for topic in ("rmap-id",):
            names = []
            for p in sorted(glob.glob(os.path.join(TOP, "kernel-patches", topic, "*.patch"))):
                with open(p, errors="replace") as f:
                    text = f.read()
                names += re.findall(r"^\+(?:static )?(?:inline )?(?:bool|int|void|long|unsigned long|"
                                    r"ssize_t) \**(\w+)\(", text, re.M)
            self.assertTrue(names, topic)
            rc, out = self.kcsan(names[0], "schedule", tree=KSRC)
            self.assertEqual(rc, 1, f"{topic}: {names[0]}: {out}")


class Scan(unittest.TestCase):
    """results.py scan: KUnit's guest console, every line."""

    def test_a_warning_anywhere_in_a_line_fails_unless_allowed(self):
        d = tempfile.mkdtemp()
        try:
            log = os.path.join(d, "t.log")
            wr(log, "    ok 1 x\nRUSTMM-foo WARNING: CPU: 0 PID: 1\nBUG: KCSAN: data-race in a / b\n")
            r = subprocess.run([sys.executable, SCRIPT, "scan", log], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("2 kernel reports", r.stdout)
            r = subprocess.run([sys.executable, SCRIPT, "scan", "--allow", "BUG: KCSAN: ", log],
                               capture_output=True, text=True)
            self.assertIn("1 kernel reports", r.stdout)
        finally:
            shutil.rmtree(d)


class BuildWarnings(unittest.TestCase):
    """results.py warnings: a compiler warning in the series' code fails the
    build's check (an unregistered KUnit case is an unused function)."""

    LOG = ("/k/mm/vma_lock_kunit.c:261:13: warning: unused function 'case_x' [-Wunused-function]\n"
           "  261 | static void case_x(struct kunit *test)\n"
           "mm/mmap_lock.c:40:5: warning: something upstream's [-Wfoo]\n"
           "mm/mmap_lock.c:300:5: warning: on a line the series changed [-Wbar]\n"
           "drivers/x.c:1:1: warning: not ours [-Wbaz]\n"
           "warning: unused variable: `v`\n"
           "  --> rust/mm/vma_lock.rs:12:9\n"
           "warning: 1 warning emitted\n")

    def test_warnings_in_added_files_and_changed_lines_only(self):
        found = results.build_warnings(
            self.LOG, "/k", {"mm/vma_lock_kunit.c", "rust/mm/vma_lock.rs"},
            lambda f: {300} if f == "mm/mmap_lock.c" else set())
        self.assertEqual(found, [
            "mm/mmap_lock.c:300: on a line the series changed [-Wbar]",
            "mm/vma_lock_kunit.c:261: unused function 'case_x' [-Wunused-function]",
            "rust/mm/vma_lock.rs:12: unused variable: `v`",
        ])

    def test_a_clean_log_has_none(self):
        self.assertEqual(results.build_warnings("CC mm/x.o\nLD vmlinux\n", "/k", {"mm/x.c"},
                                                lambda f: set()), [])


class Stages(unittest.TestCase):
    """scripts/lib/stages.sh: a stage without its result line is a failure;
    the table and the last line add up."""

    def test_counts_table_and_missing_result_line(self):
        d = tempfile.mkdtemp()
        try:
            script = (f"BUILD_DIR={d}; say() {{ echo \"rust-mm: $*\"; }}\n"
                      f". {TOP}/scripts/lib/stages.sh\n"
                      "a() { echo 'x: 3 passed, 1 failed'; }\n"
                      "b() { echo 'no result line'; }\n"
                      "stage one x a\nstage two x b\nstage_add three 2 0\nstages_end\n")
            r = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertTrue(r.stdout.rstrip().endswith("5 passed, 2 failed"), r.stdout)
            self.assertIn("two: did not report results", r.stdout)
            self.assertRegex(r.stdout, r"one\s+3\s+1")
        finally:
            shutil.rmtree(d)

    def test_resume_reuses_only_a_passed_stage_of_the_same_inputs(self):
        """A resumed run (make test-all TEST_ALL_RESUME=1) takes a stage's
        counts from its stamp only if that run had the same fingerprint and
        no failure; a failed stage and another fingerprint run again."""
        d = tempfile.mkdtemp()
        try:
            def run(fp, resume, fail_b=False):
                script = (f"BUILD_DIR={d}; STAGES_FP={fp}; STAGES_RESUME={resume}\n"
                          "say() { echo \"rust-mm: $*\"; }\n"
                          f". {TOP}/scripts/lib/stages.sh\n"
                          f"a() {{ echo ran-a >> {d}/log; echo 'x: 3 passed, 0 failed'; }}\n"
                          f"b() {{ echo ran-b >> {d}/log; echo 'x: 2 passed, {int(fail_b)} failed'; }}\n"
                          "stage one x a\nstage two x b\nstages_end\n")
                if os.path.exists(f"{d}/log"):
                    os.unlink(f"{d}/log")
                r = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
                with open(f"{d}/log") as f:
                    return r, f.read().split() if os.path.exists(f"{d}/log") else []

            r, ran = run("fp1", 0, fail_b=True)
            self.assertEqual(ran, ["ran-a", "ran-b"])
            self.assertTrue(r.stdout.rstrip().endswith("5 passed, 1 failed"), r.stdout)
            r, ran = run("fp1", 1)
            self.assertEqual(ran, ["ran-b"], "a passed stage of the same inputs is reused, a failed one is not")
            self.assertIn("one: not run again: 3 passed, 0 failed on ", r.stdout)
            self.assertTrue(r.stdout.rstrip().endswith("5 passed, 0 failed"), r.stdout)
            self.assertRegex(r.stdout, r"one\s+3\s+0\s+\d+\s+20\d\d-\d\d-\d\dT")
            self.assertRegex(r.stdout, r"two\s+2\s+0\s+\d+\s+now")
            r, ran = run("fp2", 1)
            self.assertEqual(ran, ["ran-a", "ran-b"], "nothing of other inputs is reused")
            r, ran = run("fp2", 0)
            self.assertEqual(ran, ["ran-a", "ran-b"], "without STAGES_RESUME=1 every stage runs")
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main()
