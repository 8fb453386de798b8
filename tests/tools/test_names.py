#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Self-tests of scripts/test/names-check.py: it passes on this tree and
on a synthetic tree with one good mechanism, and fails, naming the check,
on a synthetic bad edge: an export without its mechanism's prefix, an
edge without its `C header:` line, an export without its bindgen type
check, an export its header does not declare, an export declared by a
patch after the one that adds its option (the prefixes between do not
build), a core using `unsafe`, an edge mounted under another option, and
a stale table in the docs.

Run: python3 -m unittest discover -s tests/tools -v
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(TOP, "scripts", "test", "names-check.py")

TOPIC = """Title: mm: a demo mechanism
Prefix: RFC PATCH
Version: 1
Depends:
Kconfig: CONFIG_DEMO_RUST
KUnit:
Arch:
Bench:
Programs:
"""

PATCH = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: rust-mm developers <rust-mm@localhost>
Subject: [PATCH] mm: add demo.h

---
 include/linux/demo.h | 3 +++
 mm/Kconfig           | 2 ++
 2 files changed, 5 insertions(+)

diff --git a/include/linux/demo.h b/include/linux/demo.h
new file mode 100644
--- /dev/null
+++ b/include/linux/demo.h
@@ -0,0 +1,3 @@
+/* SPDX-License-Identifier: GPL-2.0 */
+int rust_demo_frob(int x);
+int rust_demo_twiddle(void);
diff --git a/mm/Kconfig b/mm/Kconfig
--- a/mm/Kconfig
+++ b/mm/Kconfig
@@ -1,0 +1,2 @@
+config DEMO_RUST
+	bool "demo"
"""

# A later patch of the topic: declares what the first one left out.
LATER = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: rust-mm developers <rust-mm@localhost>
Subject: [PATCH] mm: demo: declare twiddle

---
 include/linux/demo.h | 1 +
 1 file changed, 1 insertion(+)

diff --git a/include/linux/demo.h b/include/linux/demo.h
--- a/include/linux/demo.h
+++ b/include/linux/demo.h
@@ -2,0 +3 @@
+int rust_demo_twiddle(void);
"""

CRATE = """// SPDX-License-Identifier: GPL-2.0

//! The crate root.

#[cfg(CONFIG_DEMO_RUST)]
pub mod demo;
/// The cores.
#[forbid(unsafe_code)]
#[path = "."]
pub mod logic {
    #[cfg(CONFIG_DEMO_RUST)]
    #[path = "core/demo.rs"]
    pub mod demo;
    #[path = "core/sync.rs"]
    pub mod sync;
}
"""

LIB = """// SPDX-License-Identifier: GPL-2.0

//! The host crate.

#![no_std]
#![forbid(unsafe_code)]

pub mod demo;
pub mod sync;
"""

CORE = """// SPDX-License-Identifier: GPL-2.0

//! The demo's decisions. Not `unsafe` (a comment may say the word).

/// Twice `x`.
pub fn frob(x: i32) -> i32 {
    let s = "unsafe in a string is fine";
    x * 2 + (s.len() as i32) * 0
}
"""

EDGE = """// SPDX-License-Identifier: GPL-2.0

//! C header: [`include/linux/demo.h`](srctree/include/linux/demo.h)
//!
//! The demo's C API.

use kernel::bindings;
use kernel::ffi::c_int;

const _: () = {
    let _: [unsafe extern "C" fn(c_int) -> c_int; 2] = [bindings::rust_demo_frob, rust_demo_frob];
    let _: [unsafe extern "C" fn() -> c_int; 2] =
        [bindings::rust_demo_twiddle, rust_demo_twiddle];
};

/// Twice `x`.
#[no_mangle]
pub extern "C" fn rust_demo_frob(x: c_int) -> c_int {
    crate::logic::demo::frob(x)
}

/// Nothing.
#[no_mangle]
// A comment between the attributes.
#[inline(always)]
pub unsafe extern "C" fn rust_demo_twiddle() -> c_int {
    0
}
"""


class NamesCheck(unittest.TestCase):
    def run_check(self, top, *args):
        return subprocess.run([sys.executable, SCRIPT, "--top", top, *args],
                              capture_output=True, text=True)

    def setUp(self):
        self.top = tempfile.mkdtemp(prefix="names-check-")
        files = {
            "kernel-patches/topics": "demo\n",
            "kernel-patches/demo/topic": TOPIC,
            "kernel-patches/demo/series": "0001-mm-add-demo.h.patch\n",
            "kernel-patches/demo/0001-mm-add-demo.h.patch": PATCH,
            "kernel-patches/demo/rust-files":
                "rust/mm/rust_mm.rs\nrust/mm/demo.rs\nrust/mm/core/demo.rs\nrust/mm/core/sync.rs\n",
            "rust/mm/rust_mm.rs": CRATE,
            "rust/mm/core/lib.rs": LIB,
            "rust/mm/core/sync.rs": "// SPDX-License-Identifier: GPL-2.0\n\n//! Atomics.\n",
            "rust/mm/core/demo.rs": CORE,
            "rust/mm/demo.rs": EDGE,
        }
        for rel, text in files.items():
            self.write(rel, text)
        table = self.run_check(self.top, "--table")
        self.assertEqual(table.returncode, 0, table.stdout + table.stderr)
        self.write("docs/building.md",
                   "# Building\n\n## One name per mechanism\n\n" + table.stdout + "\nThe rule.\n")

    def tearDown(self):
        shutil.rmtree(self.top)

    def write(self, rel, text):
        path = os.path.join(self.top, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def edit(self, rel, old, new):
        with open(os.path.join(self.top, rel)) as f:
            text = f.read()
        self.assertIn(old, text)
        self.write(rel, text.replace(old, new))

    def assertFails(self, r, line):
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn(line, r.stdout)
        last = r.stdout.strip().split("\n")[-1]
        self.assertRegex(last, r"^names: \d+ passed, [1-9]\d* failed$")

    def test_this_tree_passes(self):
        r = self.run_check(TOP)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertRegex(r.stdout.strip().split("\n")[-1], r"^names: \d+ passed, 0 failed$")

    def test_good_synthetic_tree_passes(self):
        r = self.run_check(self.top)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("names: demo: export rust_demo_twiddle has its type checked "
                      "against bindgen's: ok", r.stdout)
        self.assertRegex(r.stdout.strip().split("\n")[-1], r"^names: \d+ passed, 0 failed$")
        # One line per check, each ok or FAILED, the count last.
        lines = r.stdout.strip().split("\n")
        self.assertTrue(all(re.match(r"^names: .*: ok$", l) for l in lines[:-1]), lines)

    def test_table_is_derived_from_the_tree(self):
        r = self.run_check(self.top, "--table")
        self.assertIn("| demo | `demo` | `CONFIG_DEMO_RUST` | `core/demo.rs` | `demo.rs` | "
                      "`include/linux/demo.h` | `rust_demo_*` |", r.stdout)

    def test_export_without_its_prefix_fails(self):
        self.edit("rust/mm/demo.rs", "fn rust_demo_twiddle()", "fn demo_twiddle()")
        r = self.run_check(self.top)
        self.assertFails(r, "names: demo: export demo_twiddle is rust_demo_*: FAILED")

    def test_edge_without_its_c_header_line_fails(self):
        self.edit("rust/mm/demo.rs",
                  "//! C header: [`include/linux/demo.h`](srctree/include/linux/demo.h)\n//!\n", "")
        r = self.run_check(self.top)
        self.assertFails(r, "names: demo: edge opens with its C header line: FAILED")

    def test_c_header_of_another_name_fails(self):
        self.edit("rust/mm/demo.rs", "`include/linux/demo.h`](srctree/include/linux/demo.h)",
                  "`include/linux/demo_api.h`](srctree/include/linux/demo_api.h)")
        r = self.run_check(self.top)
        self.assertFails(r, "names: demo: header is named demo.h: FAILED")

    def test_export_without_its_type_check_fails(self):
        self.edit("rust/mm/demo.rs", """    let _: [unsafe extern "C" fn() -> c_int; 2] =
        [bindings::rust_demo_twiddle, rust_demo_twiddle];
""", "")
        r = self.run_check(self.top)
        self.assertFails(r, "names: demo: export rust_demo_twiddle has its type checked "
                            "against bindgen's: FAILED")

    def test_export_its_header_does_not_declare_fails(self):
        self.edit("kernel-patches/demo/0001-mm-add-demo.h.patch",
                  "+int rust_demo_twiddle(void);\n", "+int rust_demo_twiddle_other(void);\n")
        r = self.run_check(self.top)
        self.assertFails(r, "names: demo: export rust_demo_twiddle is declared in "
                            "include/linux/demo.h: FAILED")

    def test_export_declared_after_its_option_fails(self):
        self.edit("kernel-patches/demo/0001-mm-add-demo.h.patch", "+int rust_demo_twiddle(void);\n", "")
        self.write("kernel-patches/demo/0002-mm-demo-declare-twiddle.patch", LATER)
        self.write("kernel-patches/demo/series",
                   "0001-mm-add-demo.h.patch\n0002-mm-demo-declare-twiddle.patch\n")
        r = self.run_check(self.top)
        self.assertFails(r, "names: demo: export rust_demo_twiddle is declared by the patch "
                            "adding CONFIG_DEMO_RUST or earlier: FAILED")
        self.assertIn("the prefixes between do not build", r.stdout)
        # The same declaration in the patch that adds the option passes.
        self.write("kernel-patches/demo/series", "0001-mm-add-demo.h.patch\n")
        self.edit("kernel-patches/demo/0001-mm-add-demo.h.patch", "+int rust_demo_frob(int x);\n",
                  "+int rust_demo_frob(int x);\n+int rust_demo_twiddle(void);\n")
        self.assertEqual(self.run_check(self.top).returncode, 0)

    def test_core_using_unsafe_fails(self):
        self.edit("rust/mm/core/demo.rs", "    x * 2 + (s.len() as i32) * 0\n",
                  "    unsafe { core::hint::unreachable_unchecked() }\n")
        r = self.run_check(self.top)
        self.assertFails(r, "names: core/demo.rs: no unsafe: FAILED")

    def test_edge_under_another_option_fails(self):
        self.edit("rust/mm/rust_mm.rs", "#[cfg(CONFIG_DEMO_RUST)]\npub mod demo;",
                  "#[cfg(CONFIG_OTHER)]\npub mod demo;")
        r = self.run_check(self.top)
        self.assertFails(r, "names: demo: edge mounted at the crate root under "
                            "CONFIG_DEMO_RUST: FAILED")

    def test_core_file_of_no_mechanism_fails(self):
        self.write("rust/mm/core/stray.rs", "// SPDX-License-Identifier: GPL-2.0\n")
        r = self.run_check(self.top)
        self.assertFails(r, "names: core/stray.rs: belongs to a mechanism: FAILED")

    def test_stale_docs_table_fails(self):
        self.edit("docs/building.md", "`rust_demo_*`", "`rust_dem_*`")
        r = self.run_check(self.top)
        self.assertFails(r, "names: docs/building.md: its table is the tree's: FAILED")


if __name__ == "__main__":
    unittest.main()
