#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Self-tests of the benchmark systems, provenance and README table.

- scripts/bench/system.py: every tests/bench/systems/*.toml reads; a file
  with an unknown key, a missing required key or a wrongly typed value is
  refused naming the file and the key; what it gives for every system and
  arch is what the scripts had written by hand before the files (the
  values are kept below as they were: case lists, command-line words,
  config lines, targets, seed figures);
- scripts/bench/bench.sh and profile.sh with BENCH_PRINT=1 (nothing built
  or booted): every boot's QEMU command line and each kernel's kunitconfig
  are the ones the scripts composed before (qemu_run's QEMU_PRINT=1 with the
  old words); qemu_run still gives the command lines recorded in the
  committed reports;
- scripts/bench/provenance.py: a topic's fingerprint follows its inputs;
  a report is stale, naming why, when a topic of its chain changed, when it
  was made with another clang major, from a dirty repository, or without
  provenance (every report committed before it was recorded);
- scripts/docs/readme-table.py: --write then --check passes, a hand-edited
  table fails --check with a diff, a README without the markers is refused
  by name, a stale report is marked so in the table.

Run: python3 -m unittest discover -s tests/tools -v
"""
import contextlib
import copy
import glob
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts", "bench"))
sys.path.insert(0, os.path.join(TOP, "scripts", "lib"))
import provenance  # noqa: E402
import system as systems  # noqa: E402
import topics  # noqa: E402


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(TOP, "scripts", file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


report = load("bench_report_systems", "bench/bench-report.py")
readme = load("readme_table", "docs/readme-table.py")

# These tests were written against the five systems of the 6.12 series
# (kernel-patches-6.12/), where every system is a topic; they run as
# RUST_MM_BASE=6.12 (in this process and the scripts it starts) but for
# the tests that name 7.3.
PINNED = {"RUST_MM_BASE": "6.12", "PATCHES_DIR": os.path.join(TOP, "kernel-patches-6.12")}
_saved = {}


def setUpModule():
    for k, v in PINNED.items():
        _saved[k] = os.environ.get(k)
        os.environ[k] = v
    _saved["BASE"], _saved["TOPICS_DIR"] = topics.BASE, topics.TOPICS_DIR
    topics.BASE, topics.TOPICS_DIR = PINNED["RUST_MM_BASE"], PINNED["PATCHES_DIR"]


def tearDownModule():
    for k in PINNED:
        if _saved[k] is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = _saved[k]
    topics.BASE, topics.TOPICS_DIR = _saved["BASE"], _saved["TOPICS_DIR"]

# ---------------------------------------------------------------------------
# What the scripts said per system before tests/bench/systems/ (bench.sh,
# profile.sh, bench/lib.sh, bench-report.py as of commit 244ea5e), kept here
# as it was written there.
RM = ("thp.remap thp.munmap thp.fork thp.cow thp.cow-byte thp.cow-reuse thp.cow-reuse-byte thp.pte-dontneed "
      "small.remap small.munmap small.fork small.cow small.cow-byte small.cow-reuse small.cow-reuse-byte "
      "small.pte-dontneed anon-cow-seq anon-cow-rand").split()
MTHP = "mthp.munmap mthp.fork mthp.cow mthp.cow-byte mthp.cow-reuse mthp.cow-reuse-byte mthp.pte-dontneed".split()
# Since then (issue 42): the double fork, after each kind's pte-dontneed.
RM.insert(RM.index("thp.pte-dontneed") + 1, "thp.cow-reuse-grandchild")
MTHP.append("mthp.cow-reuse-grandchild")

OLD_SEED = {"thp.remap": -34.8, "thp.munmap": 1.0, "thp.fork": 27.8,
            "thp.cow": 0.7, "thp.cow-byte": 0.4, "thp.cow-reuse": -30.0,
            "thp.cow-reuse-byte": -63.9, "thp.pte-dontneed": -0.5}
OLD_TARGET = {"thp.fork": (None, 5.0), "thp.munmap": (None, 2.0),
              "thp.pte-dontneed": (None, 2.0), "thp.cow": (None, 1.0),
              "thp.cow-byte": (None, 1.0),
              "thp.cow-reuse": (None, -90.0), "thp.cow-reuse-byte": (None, -90.0),
              "anon-cow-seq": (None, 2.0), "anon-cow-rand": (None, 2.0),
              "thp.cow-reuse-grandchild": (None, -80.0)}
for _a in ("remap", "munmap", "fork", "cow", "cow-byte", "cow-reuse",
           "cow-reuse-byte", "pte-dontneed", "cow-reuse-grandchild"):
    if _a != "cow-reuse-grandchild":
        OLD_TARGET[f"small.{_a}"] = (-0.5, 0.5)
    if f"thp.{_a}" in OLD_TARGET:
        OLD_TARGET[f"mthp.{_a}"] = OLD_TARGET[f"thp.{_a}"]
# Since then (issue 44): the whole-area mprotect that 7.x batches.
OLD_CONTPTE_TARGET = {f"{k}.{a}": ((-0.5, 0.5) if k == "small" else (None, 0.5))
                      for k in ("thp", "mthp", "small")
                      for a in ("fork", "munmap", "pte-dontneed", "mprotect")}
OLD_VMA_TARGET = {c: (None, 1.0) for c in ("vma.pft-1t", "vma.pft-2t", "vma.mmap-churn",
                                           "vma.fork-vmas")}
OLD_CP_TARGET = {"cp.gup-fast-2m": (None, -90.0), "cp.pin-fast-2m": (None, -90.0),
                 "cp.gup-fast-4k": (-0.5, 0.5), "cp.pin-fast-4k": (-0.5, 0.5),
                 "cp.gup-slow-2m": (-0.5, 0.5)}
OLD_TITLE = {"rmap-id": "rmap IDs, COW reuse", "contpte": "contpte decisions in Rust",
             "vma-lock": "the per-VMA lock",
             "pagemap-swap": "swapped-out shared memory in pagemap",
             "compound-pagemaps": "compound pagemaps, gup over device-dax"}
OLD_CP_CONFIG = ["CONFIG_PCI=y", "CONFIG_MEMORY_HOTPLUG=y", "CONFIG_MEMORY_HOTREMOVE=y",
                 "CONFIG_ZONE_DEVICE=y", "CONFIG_X86_PMEM_LEGACY=y", "CONFIG_LIBNVDIMM=y",
                 "CONFIG_BLK_DEV_PMEM=y", "CONFIG_NVDIMM_PFN=y", "CONFIG_NVDIMM_DAX=y", "CONFIG_DAX=y",
                 "CONFIG_DEV_DAX=y", "CONFIG_DEV_DAX_PMEM=y", "# CONFIG_DEV_DAX_KMEM is not set",
                 "CONFIG_FS_DAX=y", "CONFIG_DEVTMPFS=y", "CONFIG_DEBUG_FS=y", "CONFIG_GUP_TEST=y"]
# system: arches bench.sh let it run on, its cases per arch, bench.sh's
# BENCH_APPEND, profile.sh's boot_append, bench_system_config, bench_option,
# SYS_SUFFIX, bench-report's targets and seed, BENCH_MMS allowed, profile.sh
# supported.
OLD = {
    "rmap-id": dict(cases={"x86_64": RM, "arm64": RM + MTHP}, append="", profile_append="",
                    kconfig=[], option="CONFIG_MM_RMAP_ID", suffix="", targets=OLD_TARGET,
                    seed=OLD_SEED, mms=True, profile=True),
    "contpte": dict(cases={"arm64": ["thp.fork", "thp.munmap", "thp.pte-dontneed", "thp.mprotect",
                                     "mthp.fork", "mthp.munmap", "mthp.pte-dontneed",
                                     "mthp.mprotect", "small.fork", "small.munmap",
                                     "small.pte-dontneed", "small.mprotect"]},
                    append="", profile_append="", kconfig=[], option="CONFIG_ARM64_CONTPTE_RUST",
                    suffix="-contpte", targets=OLD_CONTPTE_TARGET, seed={}, mms=False, profile=True),
    "vma-lock": dict(cases={a: ["vma.pft-1t", "vma.pft-2t", "vma.mmap-churn", "vma.fork-vmas"]
                            for a in ("x86_64", "arm64")},
                     append="", profile_append="", kconfig=[], option="CONFIG_PER_VMA_LOCK_RUST",
                     suffix="-vma-lock", targets=OLD_VMA_TARGET, seed={}, mms=False, profile=True),
    "pagemap-swap": dict(cases={a: ["pm.d0", "pm.d50", "pm.d100", "pm.d50rev"] for a in ("x86_64", "arm64")},
                         append="RUSTMM_SWAP_MIB=512 norandmaps",
                         profile_append=" RUSTMM_SWAP_MIB=512 norandmaps",
                         kconfig=["CONFIG_SWAP=y", "CONFIG_ZRAM=y", "CONFIG_DEVTMPFS=y"],
                         option="CONFIG_PAGEMAP_SHARED_SWAP", suffix="-pagemap-swap", targets={},
                         seed={}, mms=False, profile=True),
    # Since then (issue 45): the 1 GiB cases, in a 6 GiB guest with PUD
    # leaves (guest below) and 2 GiB of legacy pmem at 4 GiB.
    "compound-pagemaps": dict(cases={"x86_64": ["cp.gup-fast-2m", "cp.pin-fast-2m", "cp.gup-fast-4k",
                                                "cp.pin-fast-4k", "cp.gup-slow-2m", "cp.gup-fast-1g",
                                                "cp.pin-fast-1g"]},
                              append="memmap=2G!4G nokaslr norandmaps",
                              profile_append=" memmap=2G!4G norandmaps", kconfig=OLD_CP_CONFIG,
                              guest=("6144", "qemu64,+pdpe1gb"),
                              option="CONFIG_COMPOUND_PAGEMAPS_RUST", suffix="-compound-pagemaps",
                              targets=OLD_CP_TARGET, seed={}, mms=False, profile=True),
}
# bench-report.py's pagemap-swap measurements, and the ratio target.
OLD_PM_BATCHES, OLD_PM_READERS, OLD_PM_RATIO_TARGET = (1, 64, 512, 1024), ("anon", "shared"), 1.5
# bench/lib.sh's regex of our options, and profile.sh's rules.
OLD_OPTIONS = "MM_RMAP_ID|ARM64_CONTPTE_RUST|PER_VMA_LOCK_RUST|PAGEMAP_SHARED_SWAP|COMPOUND_PAGEMAPS_RUST"


def old_boot_case(c):
    return c.split(".b", 1)[0] if c.startswith("pm.") else c


def old_patched_only(c):
    return c.endswith("-optin")


def rd(path):
    with open(path) as f:
        return f.read()


def wr(path, text):
    with open(path, "w") as f:
        f.write(text)


class SystemFiles(unittest.TestCase):
    """What the reader gives is what the scripts had by hand."""

    def test_every_system_file_is_valid_and_there_is_one_per_old_system(self):
        self.assertEqual(systems.names(), sorted(OLD))
        r = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "bench", "system.py"), "check"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_each_system_gives_the_old_values_for_every_arch(self):
        for name, old in OLD.items():
            s = systems.load(name)
            with self.subTest(system=name):
                self.assertEqual(s.arches, list(old["cases"]))
                self.assertEqual(s.cases, old["cases"])
                self.assertEqual(s.append, old["append"])
                self.assertEqual(" " + s.profile_append() if s.profile_append() else "", old["profile_append"])
                self.assertEqual(s.kconfig, old["kconfig"])
                self.assertEqual(s.option, old["option"])
                self.assertEqual(s.suffix, old["suffix"])
                self.assertEqual(s.targets, old["targets"])
                self.assertEqual(s.seed, old["seed"])
                self.assertEqual(s.mms, old["mms"])
                self.assertEqual(s.profile, old["profile"])
                self.assertEqual(s.title, OLD_TITLE[name])

    def test_the_old_target_values_keep_their_types(self):
        # JSON writes 5.0, not 5: the reports' target_pct must not change.
        for name in OLD:
            for t in systems.load(name).targets.values():
                for v in t:
                    self.assertTrue(v is None or isinstance(v, float), (name, t))

    def test_pagemap_swap_measurements_ratios_and_patched_only(self):
        s = systems.load("pagemap-swap")
        self.assertEqual(s.sub_measurements("pm.d50"),
                         [f"pm.d50.b{b}.{r}" for b in OLD_PM_BATCHES for r in OLD_PM_READERS])
        self.assertEqual(s.measurements["target"], (-0.5, 0.5))
        self.assertEqual(s.ratio_pairs("pm.d0"),
                         [p for b in OLD_PM_BATCHES
                          for p in ((f"pm.d0.b{b}.shared-optin", f"pm.d0.b{b}.anon", OLD_PM_RATIO_TARGET),
                                    (f"pm.d0.b{b}.shared-optin", f"pm.d0.b{b}.shared", None))])
        for c in ("pm.d50.b512.shared-optin", "pm.d50rev.b1.anon", "pm.d100.b1024.shared", "pm.d0"):
            self.assertEqual(s.boot_case(c), old_boot_case(c), c)
            self.assertEqual(s.is_patched_only(c), old_patched_only(c), c)
        for name in ("rmap-id", "vma-lock", "compound-pagemaps"):
            for c in OLD[name]["cases"]["x86_64"]:
                self.assertEqual(systems.load(name).boot_case(c), c)
                self.assertFalse(systems.load(name).is_patched_only(c))

    def test_vma_lock_slab_boot(self):
        self.assertEqual(systems.load("vma-lock").slab,
                         {"case": "vma.slab", "boot": "slab_nomerge", "saving": None,
                          "max_pages_per_1000": 40.0})
        for name in OLD:
            if name != "vma-lock":
                self.assertIsNone(systems.load(name).slab, name)

    def test_report_names_match_the_topics_bench_field(self):
        for name in OLD:
            s = systems.load(name)
            self.assertIn(s.topic_fields["Bench"], [s.report_name(a) + ".json" for a in s.arches], name)
        self.assertEqual(systems.load("contpte").report_name("arm64"), "benchmarks-contpte-arm64")
        self.assertEqual(systems.load("rmap-id").report_name("arm64"), "benchmarks-arm64")

    def test_our_options_are_the_topics_options(self):
        r = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "lib", "topics.py"), "options"],
                           capture_output=True, text=True, check=True)
        self.assertEqual(r.stdout.split(), ["CONFIG_" + o for o in OLD_OPTIONS.split("|")])

    def test_the_arm64_bench_config_has_no_option_of_ours_ported_or_not(self):
        # tests/kunit/arm64.kunitconfig names the contpte topic's options;
        # a bench kernel of another system built with them measures more
        # than its system (and, while contpte was not ported, stopped at
        # kunit.py's "Missing: ...").
        script = ('. scripts/lib/env.sh; . scripts/lib/kbuild.sh; . scripts/bench/lib.sh; '
                  'bench_kunitconfig ""')
        # On 7.3 (this module pins 6.12 otherwise).
        env = {k: v for k, v in os.environ.items() if k not in PINNED}
        r = subprocess.run(["bash", "-c", script], cwd=TOP, capture_output=True, text=True,
                           env=dict(env, RUST_MM_BASE="7.3", ARCH="arm64", BENCH_SYSTEM="rmap-id"))
        self.assertEqual(r.returncode, 0, r.stderr)
        arm64 = rd(os.path.join(TOP, "tests", "kunit", "arm64.kunitconfig"))
        self.assertIn("CONFIG_ARM64_CONTPTE_RUST=y", arm64)
        self.assertIn("CONFIG_ARM64_VA_BITS_48=y", r.stdout)
        for opt in ("CONFIG_ARM64_CONTPTE_RUST", "CONFIG_PER_VMA_LOCK_RUST",
                    "CONFIG_PAGEMAP_SHARED_SWAP", "CONFIG_COMPOUND_PAGEMAPS_RUST"):
            self.assertNotIn(opt, r.stdout)

    def test_bench_report_takes_targets_and_seed_from_the_file(self):
        try:
            for name, old in OLD.items():
                s = report.use_system(name)
                self.assertEqual(report.TARGET, old["targets"], name)
                self.assertEqual(report.SEED, old["seed"], name)
                self.assertEqual(s.name, name)
        finally:
            report.use_system(systems.DEFAULT)
        self.assertEqual(report.TARGET, OLD_TARGET)

    def test_base_targets_replace_or_drop_the_targets_on_their_base(self):
        try:
            systems.topics.BASE = "7.3"
            t = systems.load("rmap-id").targets
        finally:
            systems.topics.BASE = PINNED["RUST_MM_BASE"]
        # Issue 42 against 7.3's mm_id: +1 % for the THP per-page cases,
        # fork, munmap and remap; no target where 7.3 already reuses.
        for c in ("thp.remap", "thp.munmap", "thp.fork", "thp.cow", "thp.cow-byte",
                  "thp.pte-dontneed", "anon-cow-seq", "anon-cow-rand"):
            self.assertEqual(t[c], (None, 1.0), c)
        for c in ("thp.cow-reuse", "thp.cow-reuse-byte", "mthp.cow-reuse"):
            self.assertNotIn(c, t)
        self.assertEqual(t["thp.cow-reuse-grandchild"], (None, -80.0))
        self.assertEqual(t["small.fork"], (-0.5, 0.5))
        self.assertEqual(systems.load("rmap-id").targets, OLD_TARGET)

    def test_a_guest_and_the_buys_of_a_base_come_from_the_file(self):
        cp = systems.load("compound-pagemaps")
        self.assertEqual((cp.guest_mib, cp.guest_cpu), (6144, {"x86_64": "qemu64,+pdpe1gb"}))
        self.assertEqual((cp.buys, cp.headline), ("gup-fast on 2 MiB device-dax folios",
                                                  ["cp.gup-fast-2m", "cp.pin-fast-2m"]))
        self.assertEqual(cp.beside["report"], "benchmarks-compound-pagemaps-6.12")
        vl = systems.load("vma-lock")
        self.assertEqual((vl.guest_mib, vl.guest_cpu, vl.beside), (2048, {}, None))
        try:
            systems.topics.BASE = "7.3"
            cp = systems.load("compound-pagemaps")
        finally:
            systems.topics.BASE = PINNED["RUST_MM_BASE"]
        self.assertEqual(cp.headline, ["cp.gup-fast-2m", "cp.gup-fast-1g"])
        self.assertIn("gup-fast unchanged", cp.buys)
        self.assertEqual(cp.targets["cp.gup-fast-1g"], (-0.5, 0.5))
        self.assertEqual(cp.targets["cp.gup-fast-2m"], (-0.5, 0.5))

    def test_the_shell_face_gives_the_old_values(self):
        script = os.path.join(TOP, "scripts", "bench", "system.py")
        for name, old in OLD.items():
            for arch in ("x86_64", "arm64"):
                r = subprocess.run(
                    ["bash", "-c", f'v="$(python3 {script} shell "$1" "$2")" || exit 3; eval "$v"; '
                     'printf "%s\\n" "$SYSTEM" "$SYS_OPTION" "$SYS_CASES" "$SYS_APPEND" "$SYS_SUFFIX" '
                     '"$SYS_MMS" "$SYS_PROFILE" "$SYS_DEFAULT"; printf "K:%s\\n" "${SYS_KCONFIG[@]}"',
                     "sh", name, arch], capture_output=True, text=True)
                with self.subTest(system=name, arch=arch):
                    if arch not in old["cases"]:
                        self.assertEqual(r.returncode, 3)
                        self.assertIn(f"BENCH_SYSTEM={name} runs on", r.stderr)
                        self.assertIn(f"tests/bench/systems/{name}.toml", r.stderr)
                        continue
                    self.assertEqual(r.returncode, 0, r.stderr)
                    out = r.stdout.split("\n")
                    self.assertEqual(out[:8], [name, old["option"], " ".join(old["cases"][arch]),
                                               old["append"], old["suffix"], str(int(old["mms"])),
                                               str(int(old["profile"])), str(int(name == "rmap-id"))])
                    self.assertEqual([l[2:] for l in out[8:] if l.startswith("K:") and l != "K:"],
                                     old["kconfig"])
        r = subprocess.run([sys.executable, script, "shell", ""], capture_output=True, text=True)
        self.assertIn("SYSTEM=rmap-id", r.stdout)


class BadSystemFile(unittest.TestCase):
    """A system file with an unknown key, a missing one or a wrong type is
    refused, naming the file and the key."""

    def setUp(self):
        self.d = tempfile.mkdtemp()
        # vma-lock's file without its per-base tables, which the cases
        # below add in their own (bad) forms.
        self.base = re.sub(r'^\[base_(?:buys|targets)\."7\.3"\]\n(?:[^\[\n].*\n|\n)*', "",
                           rd(os.path.join(systems.SYSTEMS_DIR, "vma-lock.toml")), flags=re.M)

    def tearDown(self):
        shutil.rmtree(self.d)

    def refused(self, text, name="vma-lock"):
        wr(os.path.join(self.d, f"{name}.toml"), text)
        with self.assertRaises(systems.SystemFileError) as e:
            systems.load(name, self.d)
        msg = str(e.exception)
        self.assertIn(os.path.join(self.d, f"{name}.toml"), msg)
        return msg

    def test_the_copy_itself_reads(self):
        wr(os.path.join(self.d, "vma-lock.toml"), self.base)
        self.assertEqual(systems.load("vma-lock", self.d).cases, OLD["vma-lock"]["cases"])

    def test_an_unknown_key_is_refused_by_name(self):
        msg = self.refused('bogus_key = 1\n' + self.base)
        self.assertIn("unknown key 'bogus_key'", msg)

    def test_an_unknown_nested_key_is_refused_by_name(self):
        msg = self.refused(self.base.replace('"vma.pft-1t" = { max = 1.0 }',
                                             '"vma.pft-1t" = { max = 1.0, maximum = 2.0 }'))
        self.assertIn("unknown key 'targets.vma.pft-1t.maximum'", msg)
        msg = self.refused(self.base.replace('max_pages_per_1000 = 40.0',
                                             'max_pages_per_1000 = 40.0\nsavings = 1.0'))
        self.assertIn("unknown key 'slab.savings'", msg)

    def test_a_case_list_for_an_arch_it_does_not_run_on_is_refused(self):
        msg = self.refused(self.base.replace('arches = ["x86_64", "arm64"]', 'arches = ["x86_64"]'))
        self.assertIn("unknown key 'cases.arm64'", msg)

    def test_a_missing_key_is_refused_by_name(self):
        for key, line in (("topic", 'topic = "vma-lock"\n'), ("report", 'report = "benchmarks-vma-lock"\n'),
                          ("headline", 'headline = ["slab"]\n')):
            msg = self.refused(self.base.replace(line, ""))
            self.assertIn(f"missing key '{key}'", msg)
        msg = self.refused(self.base.replace('arm64 = ["vma.pft-1t"', 'x = 1\narm64_ = ["vma.pft-1t"'))
        self.assertIn("'cases.", msg)
        msg = self.refused(self.base.replace('case = "vma.slab"\n', ""))
        self.assertIn("missing key 'slab.case'", msg)

    def test_a_wrong_type_is_refused_by_name(self):
        msg = self.refused(self.base.replace('arches = ["x86_64", "arm64"]', 'arches = "x86_64"'))
        self.assertIn("key 'arches' must be a list of strings, not str", msg)
        msg = self.refused(self.base.replace('"vma.pft-2t" = { max = 1.0 }', '"vma.pft-2t" = { max = "1 %" }'))
        self.assertIn("key 'targets.vma.pft-2t.max' must be a number, not str", msg)
        msg = self.refused(self.base.replace('max_pages_per_1000 = 40.0', 'max_pages_per_1000 = "forty"'))
        self.assertIn("key 'slab.max_pages_per_1000' must be a number", msg)
        msg = self.refused(self.base.replace('max_pages_per_1000 = 40.0', ''))
        self.assertIn("[slab] has no target", msg)
        msg = self.refused(self.base.replace('title = "the per-VMA lock"', 'title = 3'))
        self.assertIn("key 'title' must be a string, not int", msg)
        msg = self.refused('mms = "yes"\n' + self.base)
        self.assertIn("key 'mms' must be true or false", msg)

    def test_wrong_values_are_refused_by_name(self):
        msg = self.refused(self.base.replace('"vma.fork-vmas" = { max = 1.0 }', '"vma.fork" = { max = 1.0 }'))
        self.assertIn("key 'targets.vma.fork'", msg)
        msg = self.refused(self.base.replace('topic = "vma-lock"', 'topic = "no-such-topic"'))
        self.assertIn("key 'topic'", msg)
        msg = self.refused(self.base.replace('topic = "vma-lock"', 'topic = "rmap-id-users"'))
        self.assertIn("has no Kconfig option", msg)
        msg = self.refused(self.base.replace('headline = ["slab"]', 'headline = ["vma.nothing"]'))
        self.assertIn("key 'headline'", msg)
        cp = rd(os.path.join(systems.SYSTEMS_DIR, "compound-pagemaps.toml"))
        msg = self.refused(cp.replace('arches = ["x86_64"]', 'arches = ["x86_64", "arm64"]'),
                           "compound-pagemaps")
        self.assertIn("builds only on x86_64, not arm64", msg)

    def test_a_base_target_of_an_unknown_case_or_wrong_type_is_refused(self):
        msg = self.refused(self.base + '\n[base_targets."7.3"]\n"vma.fork" = { max = 1.0 }\n')
        self.assertIn("key 'base_targets.7.3.vma.fork'", msg)
        msg = self.refused(self.base + '\n[base_targets."7.3"]\n"vma.pft-1t" = { max = "x" }\n')
        self.assertIn("key 'base_targets.7.3.vma.pft-1t.max' must be a number", msg)
        msg = self.refused(self.base + '\n[base_targets]\n"7.3" = 1\n')
        self.assertIn("key 'base_targets.7.3' must be a table", msg)

    def test_a_bad_guest_base_buys_or_beside_is_refused_by_name(self):
        msg = self.refused(self.base + '\n[guest]\nmemory_mib = "6G"\n')
        self.assertIn("key 'guest.memory_mib' must be an integer of at least 256", msg)
        msg = self.refused(self.base + '\n[guest]\nmemory_mib = 64\n')
        self.assertIn("key 'guest.memory_mib' must be an integer of at least 256", msg)
        msg = self.refused(self.base + '\n[guest]\nram = 4096\n')
        self.assertIn("unknown key 'guest.ram'", msg)
        msg = self.refused(self.base + '\n[guest]\ncpu = { riscv64 = "max" }\n')
        self.assertIn("unknown key 'guest.cpu.riscv64'", msg)
        msg = self.refused(self.base + '\n[guest]\ncpu = { x86_64 = "qemu64 -smp 4" }\n')
        self.assertIn("key 'guest.cpu.x86_64' must be one QEMU -cpu word", msg)
        msg = self.refused(self.base + '\n[base_buys."7.3"]\nbuys = "x"\n')
        self.assertIn("missing key 'base_buys.7.3.headline'", msg)
        msg = self.refused(self.base + '\n[base_buys."7.3"]\nbuys = "x"\nheadline = ["vma.nothing"]\n')
        self.assertIn("key 'base_buys.7.3.headline': 'vma.nothing' is none of its cases", msg)
        msg = self.refused(self.base + '\n[beside]\nreport = "benchmarks-x"\n')
        self.assertIn("missing key 'beside.title'", msg)
        msg = self.refused(self.base + '\n[beside]\nreport = "x"\ntitle = "t"\n')
        self.assertIn("key 'beside.report': 'x' does not start with 'benchmarks'", msg)

    def test_not_toml_is_refused_by_name(self):
        msg = self.refused("title = \n")
        self.assertIn("not TOML", msg)

    def test_an_unknown_system_names_the_known_ones(self):
        with self.assertRaises(systems.SystemFileError) as e:
            systems.load("nope")
        self.assertIn("BENCH_SYSTEM=nope: no tests/bench/systems/nope.toml", str(e.exception))
        self.assertIn("rmap-id", str(e.exception))


def bash(script, env=None):
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))


class CommandLines(unittest.TestCase):
    """BENCH_PRINT=1 bench.sh / profile.sh: the same command lines and
    kunitconfigs as the scripts composed before the system files."""

    def setUp(self):
        self.build = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.build)

    def printed(self, script, **env):
        env = dict(BUILD_DIR=self.build, BENCH_PRINT="1", **env)
        r = subprocess.run(["bash", os.path.join(TOP, "scripts", "bench", script)], capture_output=True,
                           text=True, env=dict(os.environ, **env))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.listdir(self.build), [], "BENCH_PRINT=1 must not build anything")
        return r.stdout

    def qemu_lines(self, arch, jobs, guest=None):
        """QEMU_PRINT=1 qemu_run of lib.sh (KERNEL OUT INITRD ENV [ARGS...]) per job;
        @guest: (SYS_GUEST_MIB, SYS_GUEST_CPU) of a system with its own guest."""
        lines = [". scripts/lib/env.sh; . scripts/bench/lib.sh"]
        if guest:
            lines.append(f"SYS_GUEST_MIB='{guest[0]}' SYS_GUEST_CPU='{guest[1]}'")
        for k, out, initrd, env, *args in jobs:
            q = " ".join("'" + a.replace("'", "'\\''") + "'" for a in (k, initrd, env, *args))
            lines.append(f"OUT='{out}' QEMU_PRINT=1 qemu_run {q}")
        r = bash(f"cd {TOP} && " + "\n".join(lines), {"ARCH": arch, "BUILD_DIR": self.build})
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.splitlines()

    def old_kunitconfig(self, arch, name, kernel, lto=False):
        text = rd(os.path.join(TOP, "tests", "bench", "bench.kunitconfig"))
        if arch == "arm64":
            # Without the test kernel's LTO since arm64's is LTO (BENCH_LTO says).
            text += "".join(l for l in rd(os.path.join(TOP, "tests", "kunit", "arm64.kunitconfig"))
                            .splitlines(keepends=True) if "ARM64_CONTPTE_RUST" not in l and
                            not l.startswith(("CONFIG_LTO_CLANG_THIN=", "CONFIG_RUST_MM_LTO=")))
        text += "".join(l + "\n" for l in OLD[name]["kconfig"])
        lto_cfg = ("CONFIG_LTO_CLANG_THIN=y\n" + ("CONFIG_RUST_MM_LTO=y\n" if kernel == "patched" else "")) \
            if lto else ""
        extra = lto_cfg.rstrip("\n") if kernel == "base" else \
            OLD[name]["option"] + "=y\n" + lto_cfg.rstrip("\n")
        if extra:
            text += extra + "\n"
        return text

    def parse(self, out):
        kcfg, boots, cur = {}, {}, None
        for line in out.splitlines():
            if line.startswith("counted boot "):
                head, cmd = line.split(": ", 1)
                _, _, k, c = head.split()
                boots[("counted", k, c)] = cmd
                cur = None
            elif line.startswith("kunitconfig "):
                cur = line.split()[1].rstrip(":")
                kcfg[cur] = ""
            elif line.startswith("boot "):
                head, cmd = line.split(": ", 1)
                _, k, c = head.split()
                boots[(k, c)] = cmd
                cur = None
            elif cur is not None and line.startswith("  ") or line == "  ":
                kcfg[cur] += line[2:] + "\n"
            elif cur is not None and line == "":
                kcfg[cur] += "\n"
        return kcfg, boots

    def check_bench(self, name, arch, runs="5", mib="256", mms=0, lto=False):
        env = {"ARCH": arch, "BENCH_RUNS": runs, "BENCH_MIB": mib}
        if name != "rmap-id":
            env["BENCH_SYSTEM"] = name
        if mms:
            env["BENCH_MMS"] = str(mms)
        if lto:
            env["BENCH_LTO"] = "1"
        out = self.printed("bench.sh", **env)
        kcfg, boots = self.parse(out)
        tsuffix = "" if arch == "x86_64" else "-arm64"
        outdir = os.path.join(self.build, f"bench{tsuffix}{OLD[name]['suffix']}"
                              + ("-lto" if lto else "") + (f"-mms{mms}" if mms else ""))
        append = f"RUSTMM_BENCH_MMS={mms}" if mms else OLD[name]["append"]
        jobs, keys = [], []
        for k in ("base", "patched"):
            self.assertEqual(kcfg[k], self.old_kunitconfig(arch, name, k, lto), (name, arch, k))
            for c in OLD[name]["cases"][arch]:
                env_words = f"RUSTMM_BENCH_RUNS={runs} RUSTMM_BENCH_MIB={mib} RUSTMM_BENCH_CASE={c}" + \
                    (f" {append}" if append else "")
                jobs.append((k, outdir, f"{outdir}/initramfs.cpio", env_words))
                keys.append((k, c))
                # The counted boot: the same, every run a window, under the
                # plugin with its memory model (BENCH_COUNTS, default 3).
                jobs.append((k, outdir, f"{outdir}/initramfs.cpio", env_words + " RUSTMM_BENCH_PROFILE=*",
                             "-plugin", f"{outdir}/insn_profile.so,arg=out={outdir}/logs/{k}-{c}-c1.counts"
                             ",arg=cache=1"))
                keys.append(("counted", k, c))
            if name == "vma-lock":
                jobs.append((k, outdir, f"{outdir}/initramfs.cpio",
                             f"slab_nomerge RUSTMM_BENCH_RUNS=1 RUSTMM_BENCH_MIB={mib} RUSTMM_BENCH_CASE=vma.slab"))
                keys.append((k, "vma.slab"))
        want = dict(zip(keys, self.qemu_lines(arch, jobs, OLD[name].get("guest"))))
        self.assertEqual(boots, want)
        self.assertIn(f"report: docs/benchmarks{OLD[name]['suffix']}{tsuffix}"
                      + ("-lto" if lto else "") + (f"-mms{mms}" if mms else ""), out)

    def test_bench_command_lines_and_configs_of_every_system_and_arch(self):
        for name, old in OLD.items():
            for arch in old["cases"]:
                with self.subTest(system=name, arch=arch):
                    self.check_bench(name, arch)

    def test_bench_variants_lto_and_mms_and_other_settings(self):
        self.check_bench("rmap-id", "x86_64", runs="7", mib="64", mms=4000, lto=True)
        self.check_bench("pagemap-swap", "x86_64", lto=True)
        self.check_bench("compound-pagemaps", "x86_64", runs="3")

    def test_bench_refuses_an_arch_or_option_a_system_does_not_have(self):
        for env, want in (({"BENCH_SYSTEM": "contpte"}, "BENCH_SYSTEM=contpte runs on arm64, not x86_64"),
                          ({"BENCH_SYSTEM": "compound-pagemaps", "ARCH": "arm64"}, "runs on x86_64, not arm64"),
                          ({"BENCH_SYSTEM": "vma-lock", "BENCH_MMS": "10"}, "BENCH_MMS is not for BENCH_SYSTEM=vma-lock"),
                          ({"BENCH_SYSTEM": "nope"}, "no tests/bench/systems/nope.toml"),
                          ({"BENCH_COUNTS": "2"}, "BENCH_COUNTS=2: 0, or at least 3 counted boots"),
                          ({"BENCH_COUNTS": "x"}, "BENCH_COUNTS=x: 0, or at least 3 counted boots")):
            r = subprocess.run(["bash", os.path.join(TOP, "scripts", "bench", "bench.sh")], capture_output=True,
                               text=True, env=dict(os.environ, BUILD_DIR=self.build, BENCH_PRINT="1", **env))
            self.assertNotEqual(r.returncode, 0, env)
            self.assertIn(want, r.stderr, env)

    def test_profile_command_lines(self):
        for name, arch, cases in (("rmap-id", "x86_64", ["small.fork", "thp.pte-dontneed"]),
                                  ("rmap-id", "arm64", ["mthp.fork"]),
                                  ("vma-lock", "x86_64", ["vma.pft-2t"]),
                                  ("pagemap-swap", "x86_64", ["pm.d50.b512.shared-optin", "pm.d50rev.b1.anon"]),
                                  ("compound-pagemaps", "x86_64", ["cp.gup-fast-2m", "cp.gup-slow-2m"])):
            env = {"ARCH": arch, "PROFILE_CASES": " ".join(cases), "PROFILE_RUNS": "3", "BENCH_MIB": "256"}
            if name != "rmap-id":
                env["BENCH_SYSTEM"] = name
            with self.subTest(system=name, arch=arch):
                out = self.printed("profile.sh", **env)
                got = {tuple(l.split(": ", 1)[0].split()[1:]): l.split(": ", 1)[1] for l in out.splitlines()}
                tsuffix = "" if arch == "x86_64" else "-arm64"
                outdir = os.path.join(self.build, f"bench{tsuffix}{OLD[name]['suffix']}")
                jobs, keys = [], []
                for k in ("base", "patched"):
                    for c in cases:
                        if k == "base" and old_patched_only(c):
                            continue
                        jobs.append((k, outdir, f"{outdir}/profile/initramfs.cpio",
                                     f"nokaslr RUSTMM_BENCH_RUNS=3 RUSTMM_BENCH_MIB=256 RUSTMM_BENCH_CASE="
                                     f"{old_boot_case(c)} RUSTMM_BENCH_PROFILE={c}{OLD[name]['profile_append']}",
                                     "-plugin", f"{outdir}/profile/insn_profile.so,arg=out={outdir}/profile/{k}-{c}.blocks"
                                     ",arg=cache=1"))
                        keys.append((k, c))
                self.assertEqual(got, dict(zip(keys, self.qemu_lines(arch, jobs, OLD[name].get("guest")))))

    def test_profile_refuses_a_system_without_profile(self):
        # Every system supports it now (contpte since issue 44): a copy of
        # the scripts whose contpte.toml says otherwise.
        top = fake_top()
        self.addCleanup(shutil.rmtree, top)
        shutil.rmtree(os.path.join(top, "scripts"))
        shutil.copytree(os.path.join(TOP, "scripts"), os.path.join(top, "scripts"))
        toml = os.path.join(top, "tests", "bench", "systems", "contpte.toml")
        wr(toml, "profile = false\n" + rd(toml))
        r = subprocess.run(["bash", os.path.join(top, "scripts", "bench", "profile.sh")], capture_output=True,
                           text=True, env=dict(os.environ, BUILD_DIR=self.build, BENCH_PRINT="1",
                                               ARCH="arm64", BENCH_SYSTEM="contpte"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("contpte.toml: profile = false", r.stderr)

    def test_qemu_run_still_gives_the_recorded_command_lines(self):
        # The committed reports recorded qemu_run's line (manifest_write's
        # placeholders) as the runs made it, under /work/dev/build.
        for path in sorted(glob.glob(os.path.join(TOP, "docs", "benchmarks*.json"))):
            meta = json.loads(rd(path))["meta"]
            want = meta["base"]["qemu_cmdline"]
            outdir = want.split(" -kernel ", 1)[1].split("/kernel-base/", 1)[0]
            arch = "arm64" if want.startswith("qemu-system-aarch64") else "x86_64"
            # A run of a system with a guest of its own ([guest]) made it
            # with that guest; the runs before the key, with the harness's.
            s = systems.load(meta["system"])
            guest = None
            if s.guest_mib != systems.DEFAULT_GUEST_MIB and f"append={s.append}" in meta["base"]["settings"]:
                guest = (str(s.guest_mib), s.guest_cpu.get(arch, ""))
            got = self.qemu_lines(arch, [("base", outdir, f"{outdir}/initramfs.cpio",
                                          "RUSTMM_BENCH_RUNS=... RUSTMM_BENCH_MIB=... RUSTMM_BENCH_CASE=...")],
                                  guest)
            self.assertEqual(got, [want], path)


class BenchReportMain(unittest.TestCase):
    """bench-report.py end to end on synthetic logs: pagemap-swap's
    measurements and ratios, vma-lock's slab boot, the run's provenance."""

    def setUp(self):
        self.d = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.d)

    def line(self, name, r, ns, expect, folios, mapped):
        return (f"RUSTMM-BENCH {name} {r} {ns} expect={expect} folios={folios} mapped={mapped} "
                f"attempts=1\n")

    def run_report(self, system, cases, write_boot, extra=()):
        logs = os.path.join(self.d, "logs")
        os.makedirs(logs)
        for k in ("base", "patched"):
            for c in cases:
                for b in (1, 2, 3):
                    with open(os.path.join(logs, f"{k}-{c}-{b}.log"), "w") as f:
                        f.write(write_boot(k, c, b) + "RUSTMM-BENCH-DONE errors=0\n")
            wr(os.path.join(self.d, f"manifest-{k}.txt"),
               "clang=Debian clang version 22.1.8\nsettings=boots=3 runs=3 mib=8 cases=x\n")
            wr(os.path.join(self.d, f"{k}.config"), "")
        wr(os.path.join(self.d, "diffconfig"), "print('+X y')\n")
        prov = provenance.record(system, False, None, TOP)
        wr(os.path.join(self.d, "prov.json"), json.dumps(prov))
        out = os.path.join(self.d, "report")
        r = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "bench", "bench-report.py"),
                            "--logs", logs, "--cases", " ".join(cases), "--boots", "3", "--runs", "3",
                            "--mib", "8", "--base-manifest", os.path.join(self.d, "manifest-base.txt"),
                            "--patched-manifest", os.path.join(self.d, "manifest-patched.txt"),
                            "--base-config", os.path.join(self.d, "base.config"),
                            "--patched-config", os.path.join(self.d, "patched.config"),
                            "--diffconfig", os.path.join(self.d, "diffconfig"), "--system", system,
                            "--provenance", os.path.join(self.d, "prov.json"),
                            "--command", "make bench", "--out", out, *extra],
                           capture_output=True, text=True)
        # Without matplotlib it stops after the JSON (exit 1, said so).
        self.assertIn(r.returncode, (0, 1), r.stderr)
        j = json.loads(rd(out + ".json"))
        self.assertEqual(j["meta"]["provenance"], prov)
        self.assertRegex(j["meta"]["date"], r"^\d{4}-\d\d-\d\d$")
        return j

    def test_pagemap_swap_measurements_and_ratios_as_before(self):
        cases = ["pm.d0", "pm.d50rev"]

        def boot(k, c, b):
            out = ""
            for bs in OLD_PM_BATCHES:
                for rd_ in ("anon", "shared", "shared-optin"):
                    if k == "base" and rd_ == "shared-optin":
                        continue
                    for r in (1, 2, 3):
                        ns = 1000000 * (2 if rd_ == "shared-optin" and bs == 64 else 1) + r
                        out += self.line(f"{c}.b{bs}.{rd_}", r, ns, "swap", "0/0", "-")
            return out
        j = self.run_report("pagemap-swap", cases, boot)
        self.assertEqual([c["case"] for c in j["cases"]],
                         [f"{c}.b{b}.{r}" for c in cases for b in OLD_PM_BATCHES for r in OLD_PM_READERS])
        self.assertEqual({tuple(c["target_pct"]) for c in j["cases"]}, {(-0.5, 0.5)})
        ratios = j["same_kernel_ratios"]
        self.assertEqual([(r["case"], r["target_ratio"]) for r in ratios],
                         [(f"{c}.b{b}.shared-optin / {c}.b{b}.{d}", t) for c in cases for b in OLD_PM_BATCHES
                          for d, t in (("anon", OLD_PM_RATIO_TARGET), ("shared", None))])
        self.assertEqual({r["verdict"] for r in ratios if r["target_ratio"] is None}, {None})
        self.assertEqual([r["verdict"] for r in ratios if r["target_ratio"]],
                         ["met", "missed", "met", "met"] * 2)

    def test_the_figures_of_another_report_beside_its_own(self):
        # compound-pagemaps shows the 6.12 release's figures beside (its
        # [beside]): the cases both have, the ones the other lacks named.
        cases = ["cp.gup-fast-2m", "cp.gup-fast-1g"]

        def boot(k, c, b):
            ns = {"base": 500000, "patched": 501000}[k] * (4 if c.endswith("1g") else 1)
            return "".join(self.line(c, r, ns, "devdax-pud" if c.endswith("1g") else "devdax-pmd",
                                     "1/1", "pud" if c.endswith("1g") else "pmd") for r in (1, 2, 3))
        wr(os.path.join(self.d, "benchmarks-compound-pagemaps-6.12.json"), json.dumps(
            {"meta": {"command": "make bench BENCH_SYSTEM=compound-pagemaps"},
             "cases": [{"case": "cp.gup-fast-2m", "refused": None, "change_pct": -92.2,
                        "base": {"median": 6560000.0}, "patched": {"median": 510000.0}}]}))
        j = self.run_report("compound-pagemaps", cases, boot, ("--docs", self.d))
        b = j["meta"]["beside"]
        self.assertEqual(b["report"], "benchmarks-compound-pagemaps-6.12")
        self.assertEqual(b["command"], "make bench BENCH_SYSTEM=compound-pagemaps")
        self.assertEqual(b["cases"], [{"case": "cp.gup-fast-2m", "there_base": 6560000.0,
                                       "there_patched": 510000.0, "there_change_pct": -92.2,
                                       "here_base": 500000, "here_patched": 501000}])
        self.assertEqual(b["missing"], ["cp.gup-fast-1g"])
        # On 6.12 (these tests run as 6.12): 2m against -90 %, no 1g target.
        self.assertEqual([r["verdict"] for r in j["cases"]], ["missed", None])
        # Without the other report: refused, naming the file.
        empty = os.path.join(self.d, "empty")
        os.makedirs(empty)
        with self.assertRaises(SystemExit) as e:
            report.beside_result(systems.load("compound-pagemaps"), j["cases"], empty, "benchmarks-x")
        self.assertIn(os.path.join(empty, "benchmarks-compound-pagemaps-6.12.json"), str(e.exception))
        self.assertIn("beside.report", str(e.exception))
        # The other report is this one (a run on 6.12): nothing beside.
        self.assertIsNone(report.beside_result(systems.load("compound-pagemaps"), j["cases"], empty,
                                               "benchmarks-compound-pagemaps-6.12"))

    def test_vma_lock_slab_boot_as_before(self):
        cases = ["vma.pft-1t"]

        def boot(k, c, b):
            return "".join(self.line(c, r, 1000000 + r, "none", "0/0", "-") for r in (1, 2, 3))
        logs = os.path.join(self.d, "logs")
        j = None
        for patched_pages, want in ((39.9, "met"), (40.1, "missed")):
            for k, total, pages in (("base", 196.6, 48.0), ("patched", 163.4, patched_pages)):
                os.makedirs(logs, exist_ok=True)
                wr(os.path.join(logs, f"{k}-vma.slab.log"),
                   f"RUSTMM-SLAB total bytes_per_vma={total} pages_per_1000={pages}\n"
                   "RUSTMM-BENCH-DONE errors=0\n")
            shutil.rmtree(logs + ".slab", ignore_errors=True)
            os.rename(logs, logs + ".slab")
            j = self.run_report("vma-lock", cases, boot, ("--slab-logs", logs + ".slab"))
            self.assertIsNone(j["slab"]["target_saving"])
            self.assertEqual(j["slab"]["target_max_pages_per_1000"], 40.0)
            self.assertAlmostEqual(j["slab"]["saving_bytes_per_vma"], 33.2)
            self.assertEqual(j["slab"]["verdict"], want, f"patched {patched_pages} pages per 1000 vmas")
        self.assertEqual(j["cases"][0]["target_pct"], [None, 1.0])


def fake_top():
    """A copy of what provenance and the table read: topics, rust/mm, the
    system files, env.sh."""
    d = tempfile.mkdtemp()
    shutil.copytree(os.path.join(TOP, "kernel-patches"), os.path.join(d, "kernel-patches"))
    shutil.copytree(os.path.join(TOP, "kernel-patches-6.12"), os.path.join(d, "kernel-patches-6.12"))
    shutil.copytree(os.path.join(TOP, "rust", "mm"), os.path.join(d, "rust", "mm"),
                    ignore=shutil.ignore_patterns("target"))
    shutil.copy(os.path.join(TOP, "Kbuild"), os.path.join(d, "Kbuild"))
    shutil.copytree(os.path.join(TOP, "tests", "bench", "systems"), os.path.join(d, "tests", "bench", "systems"))
    os.makedirs(os.path.join(d, "scripts", "lib"))
    shutil.copy(os.path.join(TOP, "scripts", "lib", "env.sh"), os.path.join(d, "scripts", "lib", "env.sh"))
    os.makedirs(os.path.join(d, "docs"))
    return d


NOW = {"llvm_major": 22, "bindgen": "0.73.2", "base_version": "6.12.117-1~deb12u1", "rustc": "1.96.0"}


def a_report(top, system="rmap-id", clang="Debian clang version 22.1.8 (1~deb12u1)", lto=False, date="2026-12-01",
             base="6.12"):
    """A report on BASE as bench-report.py writes it now, its provenance taken from @top."""
    version = provenance.env_pins(top)["pins"][base]
    prov = provenance.record(system, lto, version, top, base)
    prov.update(commit="0" * 40, clean=True, dirty=[], dirty_count=0)
    kernel = {"clang": clang, "rustc": "rustc 1.96.0 (ac68faa20 2026-05-25)", "bindgen": "bindgen 0.73.2",
              "source": f"linux-source-{base} {version}, unpatched (tree x)"}
    s = systems.load(system, os.path.join(top, "tests", "bench", "systems"), provenance._topics_dir(top, base))
    cases = []
    for c in s.cases[s.arches[0]]:
        t = s.targets.get(c)
        ch = -95.0 if c in s.headline or (t and t[1] is not None and t[1] < 0) else 0.3
        cases.append({"case": c, "target_pct": list(t) if t else None, "refused": None, "change_pct": ch,
                      "ci_pct": [ch - 0.1, ch + 0.1], "verdict": report.verdict([ch - 0.1, ch + 0.1], t)})
    return {"meta": {"system": system, "lto": lto, "date": date, "provenance": prov,
                     "base": dict(kernel), "patched": dict(kernel, source="x + the rust-mm series")},
            "cases": cases}


class Provenance(unittest.TestCase):
    def setUp(self):
        self.top = fake_top()

    def tearDown(self):
        shutil.rmtree(self.top)

    def test_the_fingerprint_follows_the_topics_inputs_and_nothing_else(self):
        fp = provenance.fingerprint("vma-lock", self.top)
        self.assertEqual(fp, provenance.fingerprint("vma-lock", TOP))
        self.assertIn("rust/mm/core/vma_lock.rs", provenance.topic_inputs("vma-lock", self.top))
        self.assertIn("kernel-patches-6.12/vma-lock/series", provenance.topic_inputs("vma-lock", self.top))
        with open(os.path.join(self.top, "rust", "mm", "core", "pagemap_swap.rs"), "a") as f:
            f.write("// another topic's file\n")
        self.assertEqual(provenance.fingerprint("vma-lock", self.top), fp)
        with open(os.path.join(self.top, "rust", "mm", "core", "vma_lock.rs"), "a") as f:
            f.write("// changed\n")
        fp2 = provenance.fingerprint("vma-lock", self.top)
        self.assertNotEqual(fp2, fp)
        p = sorted(glob.glob(os.path.join(self.top, "kernel-patches-6.12", "vma-lock", "0*.patch")))[0]
        with open(p, "a") as f:
            f.write("\n")
        self.assertNotEqual(provenance.fingerprint("vma-lock", self.top), fp2)

    def test_the_chain_is_the_topic_its_companions_and_dependencies(self):
        self.assertEqual(provenance.chain("rmap-id", False, self.top), ["rmap-id", "rmap-id-users"])
        self.assertEqual(provenance.chain("rmap-id", True, self.top), ["rmap-id", "rmap-id-users", "rust-lto"])
        self.assertEqual(provenance.chain("vma-lock", False, self.top), ["rmap-id", "vma-lock"])
        self.assertEqual(provenance.chain("vma-lock", True, self.top), ["rmap-id", "vma-lock", "rust-lto"])

    def test_a_fresh_report_is_fresh(self):
        fresh, why = provenance.status(a_report(self.top), self.top, NOW)
        self.assertTrue(fresh, why)

    def test_a_changed_topic_of_the_chain_makes_it_stale_naming_the_topic(self):
        r = a_report(self.top, "vma-lock")
        with open(os.path.join(self.top, "rust", "mm", "core", "vma_lock.rs"), "a") as f:
            f.write("// changed\n")
        fresh, why = provenance.status(r, self.top, NOW)
        self.assertFalse(fresh)
        self.assertIn("series changed: vma-lock", why)
        # A topic outside its chain does not.
        r = a_report(self.top, "pagemap-swap")
        self.assertTrue(provenance.status(r, self.top, NOW)[0])

    def test_another_clang_major_makes_it_stale_naming_it(self):
        r = a_report(self.top, clang="Debian clang version 19.1.7 (3~deb12u1)")
        fresh, why = provenance.status(r, self.top, NOW)
        self.assertFalse(fresh)
        self.assertEqual(why, ["toolchain changed: clang 19.1.7 (scripts/lib/env.sh pins LLVM_MAJOR=22)"])
        # The pin is read from env.sh.
        env = os.path.join(self.top, "scripts", "lib", "env.sh")
        wr(env, rd(env).replace("LLVM_MAJOR=22", "LLVM_MAJOR=19"))
        self.assertEqual(provenance.env_pins(self.top)["llvm_major"], 19)
        self.assertTrue(provenance.status(r, self.top, dict(NOW, llvm_major=19))[0])

    def test_other_rustc_bindgen_and_base_make_it_stale(self):
        r = a_report(self.top)
        _, why = provenance.status(r, self.top, dict(NOW, rustc="1.97.0", bindgen="0.74.0",
                                                     base_version="6.12.120-1~deb12u1"))
        self.assertIn("toolchain changed: rustc 1.96.0 (/usr/bin/rustc is 1.97.0)", why)
        self.assertIn("toolchain changed: bindgen 0.73.2 (scripts/lib/env.sh pins 0.74.0)", why)
        self.assertIn("base changed: 6.12.117-1~deb12u1 (scripts/lib/env.sh pins 6.12.120-1~deb12u1)", why)

    def test_a_dirty_repository_makes_it_stale(self):
        r = a_report(self.top)
        r["meta"]["provenance"].update(clean=False, dirty=["rust/mm/core/folio.rs"], dirty_count=1)
        fresh, why = provenance.status(r, self.top, NOW)
        self.assertFalse(fresh)
        self.assertEqual(why, ["repository was dirty (1 changed: rust/mm/core/folio.rs)"])

    def test_record_writes_commit_clean_base_chain_and_fingerprints(self):
        p = provenance.record("pagemap-swap", False, None, TOP)
        self.assertEqual(len(p["commit"]), 40)
        self.assertIsInstance(p["clean"], bool)
        self.assertEqual(p["base_version"], provenance.env_pins(TOP)["base_version"])
        self.assertEqual(p["chain"], ["rmap-id", "pagemap-swap"])
        self.assertEqual(p["fingerprints"]["pagemap-swap"], provenance.fingerprint("pagemap-swap", TOP))

    def test_every_committed_report_says_whether_it_holds_and_why_not(self):
        pins = provenance.env_pins(TOP)["pins"]
        for path in sorted(glob.glob(os.path.join(TOP, "docs", "benchmarks*.json"))):
            r = json.loads(rd(path))
            fresh, why = provenance.status(r, TOP, NOW)
            self.assertEqual(fresh, not why, (path, why))
            prov = r["meta"].get("provenance")
            if prov:
                # A report with provenance (7.3's): judged against its own
                # base's series; a topic whose files changed since makes it
                # stale, by name.
                base = provenance.base_of(prov["base_version"], pins)
                changed = [t for t in prov["chain"]
                           if prov["fingerprints"].get(t) != provenance.fingerprint(t, TOP, base)]
                if changed:
                    self.assertIn(f"series changed: {', '.join(changed)}", why, path)
                continue
            # Every report from before provenance was recorded is stale.
            self.assertFalse(fresh, path)
            self.assertEqual(why[0], "provenance not recorded", path)
            clang = r["meta"]["patched"]["clang"]
            if "clang version 19" in clang:
                self.assertIn("toolchain changed: clang 19.1.7 (scripts/lib/env.sh pins LLVM_MAJOR=22)", why)
            if r["meta"]["repository"].endswith("-dirty"):
                self.assertIn(f"repository was dirty ({r['meta']['repository']})", why)

    def test_bench_report_records_the_runs_provenance(self):
        # bench-report.py keeps what bench.sh recorded before the build.
        p = provenance.record("vma-lock", False, None, TOP)
        self.assertIn("repository commit", report.provenance_md(p))
        self.assertIn("vma-lock `" + p["fingerprints"]["vma-lock"][:12], report.provenance_md(p))
        self.assertIn("provenance not recorded", report.provenance_md(None))


README = """# rust-mm

Some text.

<!-- results-table:begin -->
<!-- results-table:end -->

More text.
"""


class ReadmeTable(unittest.TestCase):
    def setUp(self):
        self.top = fake_top()
        self.docs = os.path.join(self.top, "docs")
        self.readme = os.path.join(self.top, "README.md")
        wr(self.readme, README)
        # A system not ported yet, as contpte was until issue 44: its
        # topic out of main's series and in kernel-patches/unported.
        kp = os.path.join(self.top, "kernel-patches")
        wr(os.path.join(kp, "topics"),
           "".join(l + "\n" for l in rd(os.path.join(kp, "topics")).splitlines() if l != "contpte"))
        shutil.rmtree(os.path.join(kp, "contpte"), ignore_errors=True)
        wr(os.path.join(kp, "unported"), rd(os.path.join(kp, "unported")) + "contpte 44\n")
        # rmap-id's report of 7.3 (main's base); the 6.12 report of the
        # system not yet ported, which the table shows as such.
        wr(os.path.join(self.docs, "benchmarks.json"), json.dumps(a_report(self.top, "rmap-id", base="7.3")))
        for name, arch in (("contpte", "arm64"),):
            s = systems.load(name)
            wr(os.path.join(self.docs, s.report_name(arch) + "-6.12.json"), json.dumps(a_report(self.top, name)))

    def tearDown(self):
        shutil.rmtree(self.top)

    def run_table(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                mock.patch.object(readme, "TOP", self.top), \
                mock.patch.object(readme.provenance, "toolchain_now", lambda top=None: dict(NOW)):
            rc = readme.main([*args, "--docs", self.docs])
        return rc, out.getvalue(), err.getvalue()

    def test_write_then_check_passes_and_keeps_the_rest(self):
        rc, out, _ = self.run_table("--write", self.readme)
        self.assertEqual(rc, 0)
        text = rd(self.readme)
        self.assertTrue(text.startswith("# rust-mm\n\nSome text.\n\n<!-- results-table:begin -->\n"))
        self.assertTrue(text.endswith("<!-- results-table:end -->\n\nMore text.\n"))
        self.assertIn("| rmap-id (x86_64) | COW reuse of PTE-mapped THP after fork: `thp.cow-reuse-byte` "
                      "-95.0 %, `thp.cow-reuse` -95.0 % |", text)
        self.assertIn("| fresh |", text)
        self.assertIn("| contpte (arm64, 6.12) | contpte fold/unfold decisions", text)
        # A ported system not measured on 7.3 yet says so.
        self.assertIn("| vma-lock + rust-lto (x86_64) | no report (benchmarks-vma-lock-lto.json)", text)
        self.assertIn("| pagemap-swap (x86_64) | no report (benchmarks-pagemap-swap.json)", text)
        self.assertIn("| compound-pagemaps (x86_64) | no report (benchmarks-compound-pagemaps.json)",
                      text)
        rc, out, _ = self.run_table("--check", self.readme)
        self.assertEqual((rc, out), (0, "readme: results table: ok\n"))

    def test_a_hand_edited_table_fails_the_check_with_a_diff(self):
        self.run_table("--write", self.readme)
        wr(self.readme, rd(self.readme).replace("-95.0 %", "-99.0 %", 1))
        rc, out, _ = self.run_table("--check", self.readme)
        self.assertEqual(rc, 1)
        self.assertTrue(out.startswith("readme: results table: FAILED (differs from the reports: run make readme)\n"))
        self.assertIn("--- " + self.readme + " (now)", out)
        self.assertIn("-99.0 %", out)

    def test_a_readme_without_the_markers_is_refused_by_name(self):
        wr(self.readme, "# rust-mm\n\nNo table here.\n")
        for mode in ("--check", "--write"):
            rc, out, err = self.run_table(mode, self.readme)
            self.assertEqual(rc, 1)
            self.assertIn(f"{self.readme} has no line '<!-- results-table:begin -->'", err)
        self.assertEqual(rd(self.readme), "# rust-mm\n\nNo table here.\n")

    def test_a_report_whose_fingerprint_no_longer_matches_is_marked_stale(self):
        self.run_table("--write", self.readme)
        with open(os.path.join(self.top, "kernel-patches-6.12", "contpte", "cover"), "a") as f:
            f.write("\nOne more line.\n")
        rc, out, _ = self.run_table("--check", self.readme)
        self.assertEqual(rc, 1)
        self.assertIn("**stale**: series changed: contpte |", out)
        _, table, _ = self.run_table()
        rows = {l.split(" | ")[0]: l for l in table.splitlines() if l.startswith("| ")}
        self.assertTrue(rows["| contpte (arm64, 6.12)"].endswith(
            "| **stale**: series changed: contpte |"))
        self.assertTrue(rows["| rmap-id (x86_64)"].endswith("| fresh |"))

    def test_a_report_made_with_another_clang_major_is_stale_naming_it(self):
        wr(os.path.join(self.docs, "benchmarks-contpte-arm64-6.12.json"),
           json.dumps(a_report(self.top, "contpte", clang="Debian clang version 19.1.7 (3~deb12u1)")))
        _, table, _ = self.run_table()
        row = [l for l in table.splitlines() if l.startswith("| contpte (arm64, 6.12)")][0]
        self.assertIn("clang 19.1.7", row)
        self.assertTrue(row.endswith("| **stale**: toolchain changed: clang 19.1.7 "
                                     "(scripts/lib/env.sh pins LLVM_MAJOR=22) |"), row)

    def test_costs_are_the_worst_case_and_verdicts_are_counted(self):
        r = a_report(self.top, "rmap-id")
        for c in r["cases"]:
            if c["case"] == "thp.cow":
                c.update(change_pct=1.5, ci_pct=[1.4, 1.6], verdict="missed")
            if c["case"] == "small.fork":
                c.update(change_pct=3.0, ci_pct=[-0.1, 6.0], verdict="inconclusive")
        s = systems.load("rmap-id")
        self.assertEqual(readme.costs(s, r), ("`thp.cow` +1.5 % (missed)", "≤ +1.0 %"))
        self.assertEqual(readme.verdicts(r), {"met": 16, "missed": 1, "inconclusive": 1})

    def test_the_real_reports_give_a_row_each_and_those_without_provenance_are_stale(self):
        r = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "docs", "readme-table.py")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [l for l in r.stdout.splitlines() if l.startswith("| ") and not l.startswith("| system")]
        # A row per report of a system on an arch, and per LTO report
        # (the mms variants are not rows): main's base's reports (no base
        # in their names) of the systems on 7.3, the 6.12 reports of those
        # not yet ported; and a row for a missing report of a topic's Bench.
        unported = {s.report for s in systems.load_all(topics_dir=os.path.join(TOP, "kernel-patches"))
                    if not s.ported}
        reports = [f for f in os.listdir(os.path.join(TOP, "docs"))
                   if f.startswith("benchmarks") and f.endswith(".json") and "-mms" not in f
                   and (not re.search(r"-\d+\.\d+\.json$", f)
                        or (f.endswith("-6.12.json") and re.sub(r"(-lto)?(-arm64)?-6\.12\.json$", "", f)
                            in unported))]
        missing = [l for l in rows if "| no report (" in l]
        self.assertEqual(len(rows), len(reports) + len(missing), "\n".join(rows))
        for f in reports:
            with open(os.path.join(TOP, "docs", f)) as fh:
                meta = json.load(fh)["meta"]
            row = [l for l in rows if f"[{f[:-5]}.md]" in l]
            self.assertEqual(len(row), 1, f)
            if "provenance" not in meta:
                self.assertIn("| **stale**: provenance not recorded", row[0])


if __name__ == "__main__":
    unittest.main()
