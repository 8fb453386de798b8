#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Self-tests of the one reader of the topics' metadata
(scripts/lib/topics.py): a topic file that lacks a field, has an unknown
one or depends on a later topic is refused by name; the optional Counters
are listed; the real topics read.

Run: python3 -m unittest discover -s tests/tools -v
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts", "lib"))
import topics  # noqa: E402

GOOD = ("Title: mm: a topic\nPrefix: RFC PATCH\nVersion: 1\nDepends: {dep}\n"
        "Kconfig: CONFIG_X\nKUnit: x_suite\nArch: {arch}\nBench: benchmarks-x.json\nPrograms:\n")


class Topics(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.d)

    def make(self, names, files):
        with open(os.path.join(self.d, "topics"), "w") as f:
            f.write("# comment\n" + "\n".join(names) + "\n")
        for name, text in files.items():
            os.makedirs(os.path.join(self.d, name), exist_ok=True)
            with open(os.path.join(self.d, name, "topic"), "w") as f:
                f.write(text)

    def test_a_good_pair_reads(self):
        self.make(["a", "b"], {"a": GOOD.format(dep="", arch=""), "b": GOOD.format(dep="a", arch="arm64")})
        ts = topics.all_topics(self.d)
        self.assertEqual([t["name"] for t in ts], ["a", "b"])
        self.assertEqual(topics.suites("x86_64", self.d), ["x_suite"])
        self.assertEqual(topics.suites("arm64", self.d), ["x_suite", "x_suite"])

    def test_counters_are_optional_listed_and_must_be_options(self):
        with_counters = GOOD.format(dep="", arch="").replace(
            "Kconfig: CONFIG_X\n", "Kconfig: CONFIG_X\nCounters: CONFIG_X_STATS CONFIG_X_MORE\n")
        self.make(["a", "b"], {"a": with_counters, "b": GOOD.format(dep="a", arch="")})
        self.assertEqual(topics.counters(self.d), ["CONFIG_X_STATS", "CONFIG_X_MORE"])
        self.assertEqual([t["Counters"] for t in topics.all_topics(self.d)],
                         [["CONFIG_X_STATS", "CONFIG_X_MORE"], []])
        self.make(["a"], {"a": with_counters.replace("CONFIG_X_MORE", "X_MORE")})
        with self.assertRaisesRegex(topics.TopicError, "a/topic: Counters option 'X_MORE'"):
            topics.all_topics(self.d)

    def test_a_missing_field_is_refused_by_name(self):
        self.make(["a"], {"a": GOOD.format(dep="", arch="").replace("KUnit: x_suite\n", "")})
        with self.assertRaisesRegex(topics.TopicError, r"a/topic: missing key\(s\) KUnit"):
            topics.all_topics(self.d)

    def test_an_unknown_field_is_refused_by_name(self):
        self.make(["a"], {"a": GOOD.format(dep="", arch="") + "Suite: y\n"})
        with self.assertRaisesRegex(topics.TopicError, r"a/topic:10: unknown key 'Suite'"):
            topics.all_topics(self.d)

    def test_a_dependency_listed_later_or_unknown_is_refused(self):
        self.make(["a", "b"], {"a": GOOD.format(dep="b", arch=""), "b": GOOD.format(dep="", arch="")})
        with self.assertRaisesRegex(topics.TopicError, "depends on b, which comes after it"):
            topics.all_topics(self.d)
        self.make(["a"], {"a": GOOD.format(dep="zz", arch="")})
        with self.assertRaisesRegex(topics.TopicError, "depends on zz, which is not a topic"):
            topics.all_topics(self.d)

    def test_an_unknown_arch_is_refused(self):
        self.make(["a"], {"a": GOOD.format(dep="", arch="riscv")})
        with self.assertRaisesRegex(topics.TopicError, "Arch 'riscv'"):
            topics.all_topics(self.d)

    def test_a_program_without_a_topic_or_a_source_is_refused(self):
        self.make(["a"], {"a": GOOD.format(dep="", arch="").replace("Programs:", "Programs: p q:arm64")})
        progs = os.path.join(self.d, "progs")
        os.makedirs(progs)
        for f in ("p.c", "q.c", "init.c"):
            open(os.path.join(progs, f), "w").close()
        self.assertEqual(topics.programs("x86_64", self.d, progs), ["p"])
        self.assertEqual(topics.programs("arm64", self.d, progs), ["p", "q"])
        open(os.path.join(progs, "stray.c"), "w").close()
        with self.assertRaisesRegex(topics.TopicError, "stray.c belongs to no topic"):
            topics.programs("x86_64", self.d, progs)
        os.remove(os.path.join(progs, "q.c"))
        with self.assertRaisesRegex(topics.TopicError, "program q: no tests/userspace/q.c"):
            topics.programs("x86_64", self.d, progs)

    def test_the_real_topics_read_and_name_every_suite(self):
        r = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "lib", "topics.py"), "check"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(topics.suites("x86_64"))
        self.assertTrue(topics.options())


if __name__ == "__main__":
    unittest.main()
