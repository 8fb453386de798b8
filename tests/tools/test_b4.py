#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Controls of scripts/series/b4-check.py: it passes the topic as exported,
and fails, by name, each way a thread can go wrong on its way to a
maintainer:

- the Message-IDs stripped from the mbox: b4 gives nothing;
- a patch removed from the mbox: b4 reconstructs 15 of 16;
- a corrupted hunk: b4 does not notice, git am refuses it;
- a line of a commit message that starts with "From ": b4 0.16 gives it
  back as ">From " (mricon/b4 issue 38), so the commit is not the patch sent;
- b4's warning lines are not whitelisted lines.

Plus: the threaded export is reproducible (the same Message-IDs twice).

They export the first topic (rmap-id, 16 patches) from the prepared tree
and run the check on it and on edited copies. They need the prepared tree
(make prepare) and b4 (make setup): without the tree they are skipped, and
make test always has one; without b4 they fail.
Run: python3 -m unittest discover -s tests/tools -v
"""
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import unittest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("BUILD_DIR", os.path.join(TOP, "build"))
# The prepared tree of the base make test runs (BUILD_DIR/linux-<version>).
KSRC = os.path.dirname(next(iter(sorted(glob.glob(os.path.join(BUILD_DIR, "linux-*", ".rust-mm-applied")))),
                            "/nonexistent/x"))
SERIES = os.path.join(TOP, "scripts", "series", "series.sh")
CHECK = os.path.join(TOP, "scripts", "series", "b4-check.py")
TOPIC = "rmap-id"


def n_patches(topic):
    """The patches a topic's export has: its series, and the Rust patch
    of each rust-files group (the first, and one per '@ after' line)."""
    d = os.path.join(TOP, "kernel-patches", topic)
    with open(os.path.join(d, "series")) as f:
        n = sum(1 for line in f if line.strip() and not line.startswith("#"))
    if os.path.exists(os.path.join(d, "rust-files")):
        with open(os.path.join(d, "rust-files")) as f:
            n += 1 + sum(1 for line in f if line.startswith("@"))
    return n


N = n_patches(TOPIC)


def load_check():
    spec = importlib.util.spec_from_file_location("b4_check", CHECK)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def export(out):
    r = subprocess.run(["bash", SERIES, "export", out, TOPIC], capture_output=True, text=True,
                       env=dict(os.environ, BUILD_DIR=BUILD_DIR))
    if r.returncode != 0:
        raise AssertionError(f"series.sh export failed:\n{r.stdout}{r.stderr}")


def rd(path):
    with open(path) as f:
        return f.read()


def wr(path, text):
    with open(path, "w") as f:
        f.write(text)


def messages(mbox_text):
    """The mbox split at its separators (each chunk starts with one)."""
    return re.split(r"(?m)^(?=From 0{40} )", mbox_text)[1:]


@unittest.skipUnless(os.path.exists(os.path.join(KSRC, ".rust-mm-applied")),
                     "the tree is not prepared (make prepare)")
class B4Check(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test-b4-")
        cls.good = os.path.join(cls.tmp, "good")
        export(cls.good)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def copy(self):
        d = tempfile.mkdtemp(dir=self.tmp)
        shutil.rmtree(d)
        shutil.copytree(self.good, d)
        return d

    def check(self, d):
        out = os.path.join(self.tmp, "out")
        shutil.rmtree(out, ignore_errors=True)
        r = subprocess.run(["python3", CHECK, d, TOPIC], capture_output=True, text=True,
                           env=dict(os.environ, BUILD_DIR=BUILD_DIR, B4_CHECK_OUT=out))
        lines = r.stdout.split("\n")
        return r, {ln.split(": ")[2] if ln.count(": ") >= 3 else ln: ln for ln in lines
                   if ln.startswith(f"b4: {TOPIC}: ")}

    def line(self, got, start):
        for k, v in got.items():
            if k.startswith(start):
                return v
        self.fail(f"no line '{start}...' in {list(got.values())}")

    def test_the_export_passes(self):
        r, got = self.check(self.good)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("b4: 7 passed, 0 failed", r.stdout)
        self.assertEqual(len(got), 6, r.stdout)
        self.assertIn(f"b4 am reconstructs the cover letter and {N}/{N} patches with no warning: ok",
                      self.line(got, "b4 am"))
        self.assertIn(f"the tree is the prepared tree's rust-mm/{TOPIC}: ok", r.stdout)

    def test_stripped_message_ids_fail_b4_gives_nothing(self):
        d = self.copy()
        mbox = os.path.join(d, f"{TOPIC}.mbox")
        text = re.sub(r"(?mi)^(message-id|in-reply-to|references):.*\n", "", rd(mbox))
        wr(mbox, text)
        r, got = self.check(d)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("FAILED the cover letter has no Message-ID", self.line(got, "the mbox is one thread"))
        b4 = self.line(got, "b4 am")
        self.assertIn("FAILED", b4)
        self.assertIn("b4 wrote no mbox (it gave nothing)", b4)
        self.assertIn("FAILED not run: b4 am did not pass", self.line(got, "git am"))
        self.assertIn("b4: 1 passed, 6 failed", r.stdout)

    def test_a_patch_removed_from_the_mbox_fails(self):
        d = self.copy()
        mbox = os.path.join(d, f"{TOPIC}.mbox")
        msgs = messages(rd(mbox))
        self.assertEqual(len(msgs), N + 1)
        self.assertIn(f" 05/{N}] ", msgs[5])
        wr(mbox, "".join(msgs[:5] + msgs[6:]))
        r, got = self.check(d)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"FAILED {N} messages, not {N + 1}", self.line(got, "the mbox is one thread"))
        b4 = self.line(got, "b4 am")
        self.assertIn("FAILED", b4)
        self.assertIn(f"b4's total is {N - 1}, not {N}", b4)
        self.assertIn(f"    b4:   ERROR: missing [5/{N}]!", r.stdout)
        self.assertIn("    b4: WARNING: Thread incomplete!", r.stdout)

    def test_a_corrupted_hunk_fails_at_git_am(self):
        d = self.copy()
        mbox = os.path.join(d, f"{TOPIC}.mbox")
        msgs = messages(rd(mbox))
        # The first context line of a hunk (a file the patch modifies).
        for k, m in enumerate(msgs[1:], 1):
            at = re.search(r"(?m)^@@ [^\n]*\n((?:[-+][^\n]*\n)*) ([^\n]*)\n", m)
            if at:
                msgs[k] = m[:at.start(2)] + "rust-mm corrupted " + m[at.start(2):]
                break
        else:
            self.fail("no hunk with a context line")
        wr(mbox, "".join(msgs))
        r, got = self.check(d)
        self.assertNotEqual(r.returncode, 0)
        # b4 reconstructs it (a hunk is the patch's content, not its form) ...
        self.assertTrue(self.line(got, "b4 am").endswith(": ok"), r.stdout)
        # ... git am does not apply it.
        am = self.line(got, "git am")
        self.assertIn(f"FAILED Patch failed at {k:04d} ", am)
        self.assertIn("FAILED not run: b4's patches were not applied", self.line(got, "the tree is"))

    def test_a_message_line_starting_with_From_is_not_given_back(self):
        # As the sender wrote it (the patch file) and as the list serves it
        # (mboxrd: ">From "); b4 0.16 gives ">From " back in the commit.
        d = self.copy()
        mbox = os.path.join(d, f"{TOPIC}.mbox")
        series = rd(os.path.join(d, TOPIC, "series")).split()
        pfile = os.path.join(d, TOPIC, series[1])
        # The first line of the message, right after the mail's headers.
        wr(pfile, rd(pfile).replace("\n\n", "\n\nFrom here on, a test line.\n\n", 1))
        msgs = messages(rd(mbox))
        msgs[2] = msgs[2].replace("\n\n", "\n\n>From here on, a test line.\n\n", 1)
        wr(mbox, "".join(msgs))
        r, got = self.check(d)
        self.assertNotEqual(r.returncode, 0)
        self.assertTrue(self.line(got, "b4 am").endswith(": ok"), r.stdout)
        self.assertTrue(self.line(got, "git am").endswith(": ok"), r.stdout)
        each = self.line(got, "each commit")
        self.assertIn(f"FAILED patch 2/{N} ({series[1]}): the message is not the one sent", each)
        self.assertIn("sent 'From here on, a test line.', got '>From here on, a test line.'", each)

    def test_b4_warnings_are_not_whitelisted(self):
        mod = load_check()
        for warning in ("WARNING: Thread incomplete!", "  ERROR: missing [5/16]!",
                        "NOTE: some trailers ignored due to from/email mismatches:",
                        " Base: base-commit 0123456789ab not known, ignoring",
                        "       git checkout -b 20261121_x 582562511f4f",
                        "No patches found.", "  \u2717 [PATCH RFC 1/16] a subject",
                        "  \u2713 [PATCH RFC 1/16] a subject", "Will use the latest revision: v2"):
            self.assertIsNone(mod.classify(warning)[0], warning)
        for fine in ("Analyzing 17 messages in the thread", "  [PATCH RFC 1/16] a subject",
                     "Total patches: 16", " Base: applies clean to current tree"):
            self.assertIsNotNone(mod.classify(fine)[0], fine)

    def test_the_threaded_export_is_reproducible(self):
        again = os.path.join(self.tmp, "again")
        export(again)
        r = subprocess.run(["diff", "-r", self.good, again], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout[:2000])
        cover = rd(os.path.join(self.good, TOPIC + ".mbox"))
        ids = re.findall(r"(?m)^Message-Id: <([^>]+)>", cover)
        self.assertEqual(len(ids), N + 1)
        self.assertEqual(len(set(ids)), N + 1)
        self.assertEqual(len(re.findall(rf"(?m)^In-Reply-To: <{re.escape(ids[0])}>$", cover)), N)


if __name__ == "__main__":
    unittest.main()
