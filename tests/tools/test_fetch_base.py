#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Self-tests of scripts/setup/fetch-base.sh, the download of a base that
is not installed (RUST_MM_BASE=7.3), against a local apt repository built
here: a good package is fetched, verified and unpacked, and a re-run
needs no network; a version the archive does not offer, an index whose
sum is not the pin, a download whose bytes are not the index's, and an
unreachable mirror each stop with a message naming the cause and the way
out, and leave nothing behind.

Run: python3 -m unittest discover -s tests/tools -v
"""
import gzip
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FETCH = os.path.join(TOP, "scripts", "setup", "fetch-base.sh")
PKG = "linux-source-7.3"


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def tarball_bytes(sublevel):
    """A small linux-source-7.3.tar.xz: a Makefile naming 7.3.SUBLEVEL."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as t:
        data = f"VERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = {sublevel}\n".encode()
        info = tarfile.TarInfo(f"{PKG}/Makefile")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class FetchBase(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.repo = os.path.join(self.d, "repo")
        self.build = os.path.join(self.d, "build")
        os.makedirs(self.repo)
        self.entries = []

    def tearDown(self):
        shutil.rmtree(self.d)

    def add_deb(self, version, sublevel=4, lie_sha=False):
        """Build the package into the repository; with lie_sha the index
        gives another sum than the file's."""
        root = os.path.join(self.d, "pkg-" + version)
        os.makedirs(os.path.join(root, "DEBIAN"))
        os.makedirs(os.path.join(root, "usr", "src"))
        with open(os.path.join(root, "usr", "src", PKG + ".tar.xz"), "wb") as f:
            f.write(tarball_bytes(sublevel))
        with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
            f.write(f"Package: {PKG}\nVersion: {version}\nArchitecture: all\n"
                    "Maintainer: test <t@localhost>\nDescription: test\n")
        name = f"{PKG}_{version}_all.deb"
        deb = os.path.join(self.repo, name)
        subprocess.run(["dpkg-deb", "-Zgzip", "--build", "--root-owner-group", root, deb],
                       check=True, capture_output=True)
        s = sha(deb)
        if lie_sha:
            s = hashlib.sha256(b"not this").hexdigest()
        self.entries.append(f"Package: {PKG}\nVersion: {version}\nArchitecture: all\n"
                            f"Filename: ./{name}\nSize: {os.path.getsize(deb)}\nSHA256: {s}\n"
                            "Description: test\n")
        return sha(deb)

    def write_index(self):
        packages = "\n".join(self.entries).encode()
        with open(os.path.join(self.repo, "Packages"), "wb") as f:
            f.write(packages)
        with gzip.open(os.path.join(self.repo, "Packages.gz"), "wb") as f:
            f.write(packages)
        lines = ["Origin: test", "Label: test", "Suite: test", "Codename: test", "SHA256:"]
        for n in ("Packages", "Packages.gz"):
            p = os.path.join(self.repo, n)
            lines.append(f" {sha(p)} {os.path.getsize(p)} {n}")
        with open(os.path.join(self.repo, "Release"), "w") as f:
            f.write("\n".join(lines) + "\n")

    def fetch(self, version, pin_sha=None, source=None):
        env = dict(os.environ, RUST_MM_BASE="7.3", BUILD_DIR=self.build,
                   LINUX_DEB_VERSION=version,
                   RUST_MM_DEB_SOURCE=source or f"deb [trusted=yes] file:{self.repo} ./")
        env.pop("LINUX_DEB_SHA256", None)
        if pin_sha:
            env["LINUX_DEB_SHA256"] = pin_sha
        return subprocess.run(["bash", FETCH], env=env, capture_output=True, text=True)

    def left(self):
        dl = os.path.join(self.build, "dl")
        return sorted(n for n in os.listdir(dl) if n != "apt") if os.path.isdir(dl) else []

    def test_a_good_package_is_fetched_verified_and_unpacked_and_reused_offline(self):
        s = self.add_deb("7.3.4-9")
        self.write_index()
        r = self.fetch("7.3.4-9", pin_sha=s)
        self.assertEqual(r.returncode, 0, r.stderr)
        tarball = r.stdout.strip()
        self.assertTrue(tarball.endswith(f"{PKG}-7.3.4-9.tar.xz"), tarball)
        with open(tarball, "rb") as f:
            self.assertEqual(f.read(), tarball_bytes(4))
        # Again, with the mirror gone: the verified files are used as they are.
        r = self.fetch("7.3.4-9", pin_sha=s, source="deb http://127.0.0.1:9/debian none main")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), tarball)

    def test_a_version_the_archive_does_not_offer_names_the_offered_ones_and_the_override(self):
        self.add_deb("7.3.4-9")
        self.write_index()
        r = self.fetch("7.3.5-1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("7.3.5-1 is not (or no longer) offered", r.stderr)
        self.assertIn("  7.3.4-9", r.stderr)
        self.assertIn("LINUX_DEB_VERSION=<version>", r.stderr)
        self.assertEqual(self.left(), [])

    def test_an_index_sum_other_than_the_pin_is_refused_before_downloading(self):
        self.add_deb("7.3.4-9")
        self.write_index()
        r = self.fetch("7.3.4-9", pin_sha="0" * 64)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("the archive changed the package under the same version", r.stderr)
        self.assertIn("LINUX_DEB_SHA256", r.stderr)
        self.assertEqual(self.left(), [])

    def test_a_download_whose_bytes_are_not_the_index_sum_is_deleted(self):
        lie = hashlib.sha256(b"not this").hexdigest()
        self.add_deb("7.3.4-9", lie_sha=True)
        self.write_index()
        r = self.fetch("7.3.4-9", pin_sha=lie)
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, "(has sha256|failed)")
        self.assertEqual(self.left(), [])

    def test_an_unreachable_mirror_says_so_and_keeps_nothing(self):
        r = self.fetch("7.3.4-9", pin_sha="1" * 64, source="deb http://127.0.0.1:9/debian none main")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cannot read the trixie-backports index", r.stderr)
        self.assertIn("no network to the mirror?", r.stderr)
        self.assertEqual(self.left(), [])


if __name__ == "__main__":
    unittest.main()
