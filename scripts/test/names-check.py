#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""One name per mechanism: derive the table from the tree and check it.

  names-check.py [--top DIR] [--table]

A mechanism of rust/mm is an FFI edge: a file rust/mm/<name>.rs with
#[no_mangle] exports (the crate root rust_mm.rs and the shared helper
atomic.rs export nothing). Everything else about it is derived from the
tree, never from a list kept here:

  topic    the topic of kernel-patches/ whose rust-files lists the edge
  Kconfig  that topic's Kconfig (kernel-patches/<topic>/topic)
  core     rust/mm/core/<name>.rs, mounted in rust_mm.rs's `logic`
  edge     rust/mm/<name>.rs, mounted at the crate root
  header   the path on the edge's first line, `//! C header: [`PATH`](srctree/PATH)`
  exports  rust_<name>_*

and it checks, one line each (`names: <mechanism>: <check>: ok|FAILED (why)`):

  - the edge opens with its `C header:` line, and the header is named
    <name>.h and is added by a patch of the topic or of one it depends on;
  - every export is named rust_<name>_*, is declared in that header (a
    line the topic's patches add to it) and has its type checked against
    bindgen's declaration at compile time (`[bindings::f, f]` in the edge);
  - every export is declared by the patch that adds the option the Rust
    compiles under (the module's, or a cfg-gated inner module's), or an
    earlier one, counting Rust that rust-files puts after a patch as
    there from that patch on: the type check names bindgen's declaration,
    so the prefixes between would not build (a cheap guard of make
    test-all's bisect for this one cause);
  - the core exists, is listed in the same topic's rust-files, is mounted
    in `logic` under the topic's option and in core/lib.rs, and (like every
    file under core/) has no `unsafe`;
  - the edge is mounted at the crate root under the topic's option;

and for the tree as a whole: every file under core/ belongs to a
mechanism (core/<name>.rs, core/<name>_*.rs, core/<name>/...) or is
core/lib.rs or core/sync.rs; core/lib.rs has #![forbid(unsafe_code)] and
rust_mm.rs's `logic` has #[forbid(unsafe_code)]; every file of rust/mm the
kernel builds is in some topic's rust-files; and the table in
docs/building.md ("One name per mechanism") is the one derived here.
The last line is `names: N passed, N failed`; the exit status is 1 if any
check failed. --table prints the derived table (markdown) and exits.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import topics as topics_lib  # noqa: E402  (scripts/lib/topics.py)

SHARED_EDGE_FILES = ("rust_mm.rs",)
SHARED_CORE_FILES = ("lib.rs", "sync.rs")
HEADER_RE = re.compile(r"^//! C header: \[`([^`]+)`\]\(srctree/([^)]+)\)$")
EXPORT_RE = re.compile(
    r'#\[no_mangle\](?:\s*(?://[^\n]*|#\[[^\]]*\]))*\s*pub\s+(?:unsafe\s+)?extern\s+"C"\s+fn\s+(\w+)')
DOC_HEADING = "## One name per mechanism"


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def strip_rust(text):
    """Rust source without comments and string literals (for token checks)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif text.startswith("'\"'", i) or text.startswith("'\\''", i):
            i += 3 if text[i + 1] == '"' else 4
        elif text[i] == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def topic_path(t, *rest):
    """A file of topic T's directory (in its series: kernel-patches/, or
    kernel-patches-6.12/ for a topic not yet ported)."""
    return os.path.join(t["dir"], t["name"], *rest)


def rust_files(t):
    """The files of topic T's rust-files (every group)."""
    path = topic_path(t, "rust-files")
    if not os.path.isfile(path):
        return []
    files = []
    for line in read(path).split("\n"):
        line = line.strip()
        if line and not line.startswith(("#", "@")):
            files.append(line.split()[0])
    return files


def rust_group_after(t, path):
    """The patch of TOPIC's series after which rust-files puts PATH (its
    '@ after PATCH' group), or None for the topic's first patch."""
    after = None
    for line in read(topic_path(t, "rust-files")).split("\n"):
        line = line.strip()
        if line.startswith("@"):
            after = line.split()[2] if len(line.split()) > 2 else None
        elif line and not line.startswith("#") and line.split()[0] == path:
            return after
    return None


def patch_files(t):
    """The patch files of topic T's series, in order."""
    d = topic_path(t)
    out = []
    for line in read(os.path.join(d, "series")).split("\n"):
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(os.path.join(d, line))
    return out


def added_by_patches(paths):
    """{file: (created, added lines)} over the patches PATHS."""
    files = {}
    for p in paths:
        if not os.path.isfile(p):
            continue
        cur, old = None, None
        for line in read(p).split("\n"):
            if line.startswith("--- "):
                old = line[4:]
                cur = None
            elif line.startswith("+++ b/"):
                cur = line[6:]
                created, lines = files.get(cur, (False, []))
                files[cur] = (created or old == "/dev/null", lines)
            elif cur and line.startswith("+") and not line.startswith("+++"):
                files[cur][1].append(line[1:])
            elif line.startswith("diff --git"):
                cur = None
    return files


def first_patch_adding(paths, path, pattern):
    """Index in PATHS of the first patch that adds a line matching PATTERN
    to the file PATH (any Kconfig file for PATH None), or None."""
    for i, p in enumerate(paths):
        added = added_by_patches([p])
        for f, (_, lines) in added.items():
            if (f == path if path else os.path.basename(f).startswith("Kconfig")) and \
               any(re.search(pattern, ln) for ln in lines):
                return i
    return None


def cfg_gate(text, fn, default):
    """The Kconfig option (without CONFIG_) under which the edge TEXT
    compiles its function FN: that of a `#[cfg(CONFIG_X)] mod m { ... }`
    around it, else DEFAULT."""
    at = text.find(f"fn {fn}(")
    for mo in re.finditer(r"#\[cfg\(CONFIG_(\w+)\)\]\s*(?:pub\s+)?mod\s+\w+\s*\{", text):
        depth, i = 1, mo.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if mo.end() <= at < i:
            return mo.group(1)
    return default


def crate_mounts(text):
    """Modules of rust_mm.rs: ({name: (cfgs, path)} at the root, the same
    inside `logic`, the attributes of `logic`)."""
    root, logic, logic_attrs, held, inside = {}, {}, [], [], False
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("#["):
            held.append(s)
            continue
        m = re.match(r"pub\s+mod\s+(\w+)\s*(;|\{)", s)
        if m:
            cfgs = [re.match(r"#\[cfg\((\w+)\)\]", a).group(1) for a in held
                    if re.match(r"#\[cfg\((\w+)\)\]", a)]
            path = next((re.match(r'#\[path\s*=\s*"([^"]+)"\]', a).group(1) for a in held
                         if re.match(r'#\[path\s*=\s*"([^"]+)"\]', a)), None)
            if m.group(2) == "{":
                if m.group(1) == "logic":
                    logic_attrs, inside = list(held), True
            elif inside:
                logic[m.group(1)] = (cfgs, path)
            else:
                root[m.group(1)] = (cfgs, path)
        elif inside and s == "}" and not line.startswith(" "):
            inside = False
        held = []
    return root, logic, logic_attrs


class Checker:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, what, ok, why=""):
        if ok:
            self.passed += 1
            print(f"names: {what}: ok")
        else:
            self.failed += 1
            print(f"names: {what}: FAILED" + (f" ({why})" if why else ""))


def derive(top):
    """The mechanisms, as dicts, in the order of rust/mm's edge files."""
    mm = os.path.join(top, "rust", "mm")
    # Main's topics, and the 6.12 topics not yet ported (each checked in
    # its own series, kernel-patches/unported).
    main_dir = os.path.join(top, "kernel-patches")
    all_topics = topics_lib.all_topics(main_dir) + topics_lib.unported_topics(main_dir)
    owner = {}
    for t in all_topics:
        for f in rust_files(t):
            owner.setdefault(f, []).append(t)
    mechs = []
    for f in sorted(os.listdir(mm)):
        if not f.endswith(".rs") or f in SHARED_EDGE_FILES:
            continue
        text = read(os.path.join(mm, f))
        exports = EXPORT_RE.findall(text)
        if not exports:
            continue
        name = f[:-3]
        first_doc = next((l for l in text.split("\n") if l.startswith("//!")), "")
        m = HEADER_RE.match(first_doc)
        ts = owner.get(f"rust/mm/{f}", [])
        t = ts[0] if len(ts) == 1 else None
        mechs.append({
            "name": name, "edge": f"rust/mm/{f}", "text": text, "exports": exports,
            "header_line": first_doc, "header": m.group(1) if m else None,
            "header_link_ok": bool(m) and m.group(1) == m.group(2),
            "topics": [x["name"] for x in ts], "topic": t,
            "kconfig": t["Kconfig"] if t else None,
            "core": f"rust/mm/core/{name}.rs",
        })
    return mechs, all_topics, owner


def table(mechs):
    rows = ["| mechanism | topic | Kconfig | core | edge | C header | exports |",
            "|---|---|---|---|---|---|---|"]
    for m in mechs:
        rows.append(f"| {m['name']} | `{m['topic']['name'] if m['topic'] else '?'}` | "
                    f"`{m['kconfig'] or '?'}` | `{m['core'][len('rust/mm/'):]}` | "
                    f"`{m['edge'][len('rust/mm/'):]}` | `{m['header'] or '?'}` | "
                    f"`rust_{m['name']}_*` |")
    return rows


def doc_table(top):
    path = os.path.join(top, "docs", "building.md")
    if not os.path.isfile(path):
        return None
    lines = read(path).split("\n")
    if DOC_HEADING not in lines:
        return None
    rows, started = [], False
    for line in lines[lines.index(DOC_HEADING) + 1:]:
        if line.startswith("|"):
            rows.append(line)
            started = True
        elif started or line.startswith("## "):
            break
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", default=os.path.abspath(os.path.join(HERE, "..", "..")),
                    help="the repository (default: this one)")
    ap.add_argument("--table", action="store_true", help="print the derived table and exit")
    args = ap.parse_args(argv)
    top = args.top
    mm = os.path.join(top, "rust", "mm")
    try:
        mechs, all_topics, owner = derive(top)
    except (topics_lib.TopicError, OSError) as e:
        print(f"names: reading the tree: FAILED ({e})")
        print("names: 0 passed, 1 failed")
        return 1
    if args.table:
        print("\n".join(table(mechs)))
        return 0

    c = Checker()
    crate = read(os.path.join(mm, "rust_mm.rs"))
    root, logic, logic_attrs = crate_mounts(crate)
    lib = read(os.path.join(mm, "core", "lib.rs"))
    lib_mods = set(re.findall(r"^pub\s+mod\s+(\w+)\s*;", lib, re.M))
    deps = {topic_key(t): topics_lib_closure(topics_lib.all_topics(t["dir"]), t["name"]) for t in all_topics}

    c.check("core/lib.rs: #![forbid(unsafe_code)]", "#![forbid(unsafe_code)]" in lib)
    c.check("rust_mm.rs: logic has #[forbid(unsafe_code)]",
            "#[forbid(unsafe_code)]" in logic_attrs,
            "no `pub mod logic` with that attribute" if not logic_attrs else "")
    for m in mechs:
        n, what = m["name"], m["name"]
        t = m["topic"]
        c.check(f"{what}: in one topic's rust-files", t is not None,
                f"{m['edge']} is listed by {m['topics'] or 'no topic'}")
        # The C header line and the header.
        hdr = m["header"]
        c.check(f"{what}: edge opens with its C header line",
                hdr is not None and m["header_link_ok"],
                f"first doc line of {m['edge']} is {m['header_line']!r}, want "
                f"'//! C header: [`PATH`](srctree/PATH)'")
        added = {}
        if t:
            paths = []
            for d in deps[topic_key(t)] + [t]:
                paths += patch_files(d)
            added = added_by_patches(paths)
        if hdr:
            c.check(f"{what}: header is named {n}.h", os.path.basename(hdr) == f"{n}.h",
                    f"{hdr}")
            c.check(f"{what}: header {hdr} is added by the series",
                    hdr in added and added[hdr][0],
                    f"no patch of {t['name'] if t else '?'} or its dependencies creates {hdr}")
        decl = "\n".join(added.get(hdr, (False, []))[1]) if hdr else ""
        ordered = []
        if t:
            for d in deps[topic_key(t)] + [t]:
                ordered += patch_files(d)
        # Exports.
        for e in m["exports"]:
            c.check(f"{what}: export {e} is rust_{n}_*", e.startswith(f"rust_{n}_"),
                    f"{m['edge']} exports {e}")
            c.check(f"{what}: export {e} is declared in {hdr or 'its header'}",
                    bool(re.search(rf"\b{re.escape(e)}\s*\(", decl)),
                    f"no line the series adds to {hdr} declares it")
            # Every prefix builds: the Rust compiles from the patch that
            # adds its option (the module's, or that of a cfg-gated module
            # around the export), and its type check names bindgen's
            # declaration, so the header must declare it by then.
            gate = cfg_gate(m["text"], e, (m["kconfig"] or "").removeprefix("CONFIG_"))
            if hdr and gate:
                at_decl = first_patch_adding(ordered, hdr, rf"\b{re.escape(e)}\s*\(")
                at_opt = first_patch_adding(ordered, None, rf"^(menu)?config\s+{re.escape(gate)}\s*$")
                # Rust that rust-files puts after a patch exists from there.
                after = rust_group_after(t, m["edge"])
                names_ = [os.path.basename(x) for x in ordered]
                if at_opt is not None and after in names_:
                    at_opt = max(at_opt, names_.index(after))
                c.check(f"{what}: export {e} is declared by the patch adding CONFIG_{gate} or earlier",
                        at_decl is not None and at_opt is not None and at_decl <= at_opt,
                        f"declared in {os.path.basename(ordered[at_decl]) if at_decl is not None else 'no patch'}, "
                        f"CONFIG_{gate} added in {os.path.basename(ordered[at_opt]) if at_opt is not None else 'no patch'}: "
                        "the prefixes between do not build")
            c.check(f"{what}: export {e} has its type checked against bindgen's",
                    bool(re.search(rf"\[\s*bindings::{re.escape(e)}\s*,\s*{re.escape(e)}\s*,?\s*\]",
                                   m["text"])),
                    f"no `[bindings::{e}, {e}]` in {m['edge']}")
        # The core.
        core = os.path.join(top, m["core"])
        c.check(f"{what}: core {m['core'][len('rust/mm/'):]} exists", os.path.isfile(core))
        c.check(f"{what}: core is in the topic's rust-files",
                t is not None and m["core"] in rust_files(t))
        want = [m["kconfig"]] if m["kconfig"] else []
        c.check(f"{what}: core mounted in logic under {m['kconfig']}",
                n in logic and logic[n][0] == want and logic[n][1] == f"core/{n}.rs",
                f"logic has {logic.get(n)}")
        c.check(f"{what}: core mounted in core/lib.rs", n in lib_mods)
        c.check(f"{what}: edge mounted at the crate root under {m['kconfig']}",
                n in root and root[n][0] == want and root[n][1] is None,
                f"crate root has {root.get(n)}")

    # Every file under core/ belongs to a mechanism and has no unsafe.
    names = [m["name"] for m in mechs]
    core_dir = os.path.join(mm, "core")
    for dirpath, _, files in sorted(os.walk(core_dir)):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), core_dir)
            stem = rel.split(os.sep)[0]
            stem = stem[:-3] if stem.endswith(".rs") else stem
            belongs = rel in SHARED_CORE_FILES or any(
                stem == x or stem.startswith(x + "_") for x in names)
            c.check(f"core/{rel}: belongs to a mechanism", belongs,
                    f"no edge rust/mm/{stem}.rs (mechanisms: {', '.join(names)})")
            code = strip_rust(read(os.path.join(dirpath, f)))
            c.check(f"core/{rel}: no unsafe", not re.search(r"\bunsafe\b", code))
    # Every file the kernel builds is in some topic's rust-files.
    for dirpath, _, files in sorted(os.walk(mm)):
        rel_dir = os.path.relpath(dirpath, mm)
        if rel_dir.split(os.sep)[0] in ("tests", "tools", "target"):
            continue
        for f in sorted(files):
            if not f.endswith(".rs") or (rel_dir == "core" and f == "lib.rs"):
                continue
            rel = os.path.normpath(os.path.join("rust/mm", rel_dir, f))
            c.check(f"{rel[len('rust/mm/'):]}: in a topic's rust-files", rel in owner)
    # The documented table.
    got = doc_table(top)
    want = table(mechs)
    c.check("docs/building.md: its table is the tree's", got == want,
            "section missing" if got is None else
            "differs; regenerate it with scripts/test/names-check.py --table")
    print(f"names: {c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


def topics_lib_closure(all_topics, name):
    """The topics NAME depends on, transitively, in apply order."""
    by = {t["name"]: t for t in all_topics}
    want, todo = set(), list(by[name]["Depends"])
    while todo:
        d = todo.pop()
        if d not in want and d in by:
            want.add(d)
            todo += by[d]["Depends"]
    return [t for t in all_topics if t["name"] in want]


def topic_key(t):
    """A topic's identity across the two series (rmap-id is in both)."""
    return (os.path.realpath(t["dir"]), t["name"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
