#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Prove from a built vmlinux that rust/mm's entry points are inlined.

  lto-check.py [--objdump OBJDUMP] [--expect-calls] [--disassembly]
               [--arch ARCH] [--system SYSTEM]... VMLINUX
  lto-check.py [--objdump OBJDUMP] --replay BUILD [--scratch DIR]
               [--system SYSTEM]...

With CONFIG_RUST_MM_LTO the rmap-ID entry points of rust/mm
(rust_folio_rmap_add(), rust_folio_rmap_set_new(), the COW reuse check
rust_folio_rmap_may_reuse() and its window rust_folio_rmap_reuse_window(),
the reader rust_folio_rmap_sharing()) are LLVM bitcode in the kernel's LTO
link and #[inline(always)], so no C function should call them any more. This
disassembles VMLINUX and checks, one line each:

  - every C caller of the hot paths (folio_remove_rmap_ptes()/_pmd(),
    folio_add_{anon,file}_rmap_ptes()/_pmd() -- the bodies of the
    always-inline __folio_add_rmap() --, fork's folio_dup_tracked_mapcount(),
    folio_set_tracked_mapcount() of folio_add_new_anon_rmap(), the COW
    fault's wp_folio_rmap_may_reuse() and wp_reuse_folio_ptes(),
    folio_mapped_shared()) calls none of the entry points, nor any other
    Rust function (a v0-mangled _R symbol: an out-of-line piece of the
    Rust logic that LLVM left behind, a panic path included);
  - folio_add_new_anon_rmap() and do_wp_page(), which every order-0 COW
    fault runs, hold no rust/mm code at all: no such call, and their
    large-folio work is a call to the noinline C function that holds it
    (folio_set_tracked_mapcount(), wp_folio_rmap_may_reuse()); also in
    the control;
  - no function anywhere in VMLINUX calls an entry point;
  - and none of the callers above calls a helper of the kernel crate
    (rust_helper_*: on 7.3 the edges' atomics are kernel::sync::atomic's,
    whose operations are such helpers; LTO must inline them too).

--system picks the systems whose entry points are checked: each system's
lines, then the last check over all of their entry points. Without it,
every system with tables for the base whose topic builds on the arch of
VMLINUX (its ELF header, or --arch): on 7.3 rmap-id and vma-lock (whose
per-transition decisions are #[inline(always)] the same way), and on
arm64 also contpte (the decisions of arch/arm64/mm/contpte.c). A listing
(--disassembly) without --arch or --system checks rmap-id.

--expect-calls inverts the verdict for a control run on code built
without CONFIG_RUST_MM_LTO: there every named caller of an entry point
must call it, which shows the check can fail.

--replay BUILD is that control without another kernel: it compiles the C
objects that hold the named callers again from the LTO build BUILD's own
commands (.X.o.cmd), into --scratch (default: a temporary directory),
with the LTO flags taken out, so native code of the same tree, config,
compiler and flags, then checks their llvm-objdump -dr listings (a call
in an unlinked object is a relocation) with --expect-calls. BUILD is
left as it was. The last line is 'lto-check: N passed, N failed'.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# The tables of each base's series (RUST_MM_BASE, else the default base of
# scripts/lib/env.sh): first 6.12's (kernel-patches-6.12/), then 7.3's.
ENTRY_POINTS_6_12 = [
    "rust_folio_rmap_add",
    "rust_folio_rmap_set_new",
    "rust_folio_rmap_may_reuse",
    "rust_folio_rmap_reuse_window",
    "rust_folio_rmap_sharing",
]

# C functions of the hot paths and the entry points each reaches (with the
# option off: calls).
CALLERS_6_12 = {
    "folio_remove_rmap_ptes": ["rust_folio_rmap_add"],
    "folio_remove_rmap_pmd": ["rust_folio_rmap_add"],
    "folio_add_anon_rmap_ptes": ["rust_folio_rmap_add"],
    "folio_add_anon_rmap_pmd": ["rust_folio_rmap_add"],
    "folio_add_file_rmap_ptes": ["rust_folio_rmap_add"],
    "folio_add_file_rmap_pmd": ["rust_folio_rmap_add"],
    "folio_dup_tracked_mapcount": ["rust_folio_rmap_add"],
    "folio_set_tracked_mapcount": ["rust_folio_rmap_set_new"],
    # The COW fault: the seqcount check of wp_can_reuse_anon_large_folio()
    # and wp_reuse_folio_ptes() (both noinline).
    "wp_folio_rmap_may_reuse": ["rust_folio_rmap_may_reuse"],
    "wp_reuse_folio_ptes": ["rust_folio_rmap_reuse_window"],
    "folio_mapped_shared": ["rust_folio_rmap_sharing"],
    # Callers that run for every order-0 folio too hold no Rust at all:
    # their large-folio work is in the out-of-line functions above (with
    # the option off or on: the control checks the same).
    "folio_add_new_anon_rmap": [],
    "do_wp_page": [],
}
# ... and their large-folio work is a call to its out-of-line C function
# (noinline), which holds the Rust: with the function inlined back, the
# Rust would be in the order-0 path again and no call would show it.
OUT_OF_LINE_6_12 = {
    "folio_add_new_anon_rmap": "folio_set_tracked_mapcount",
    "do_wp_page": "wp_folio_rmap_may_reuse",
}
# Static functions an LTO build may inline away entirely.
MAY_VANISH_6_12 = {"wp_reuse_folio_ptes", "folio_mapped_shared"}

# Linux 7.3 (main's series): the rmap values replace mm_id, whose
# updates 7.3 inlines into every rmap function, folio_add_new_anon_rmap()
# and fork's dup helpers included; ours are inlined in the same places
# (7.3's own large-folio code is inline there), except fork's, whose
# order-0 loop the inline update slowed down. The reader is
# folio_maybe_mapped_shared(), inline in its 15 callers (two named here).
ENTRY_POINTS_7_3 = [
    "rust_folio_rmap_add",
    "rust_folio_rmap_set_new",
    "rust_folio_rmap_may_reuse",
    "rust_folio_rmap_reuse_window",
    "rust_folio_rmap_sole_mapper",
]
CALLERS_7_3 = {
    "folio_remove_rmap_ptes": ["rust_folio_rmap_add"],
    "folio_remove_rmap_pmd": ["rust_folio_rmap_add"],
    "folio_add_anon_rmap_ptes": ["rust_folio_rmap_add"],
    "folio_add_anon_rmap_pmd": ["rust_folio_rmap_add"],
    "folio_add_file_rmap_ptes": ["rust_folio_rmap_add"],
    "folio_add_file_rmap_pmd": ["rust_folio_rmap_add"],
    "folio_add_new_anon_rmap": ["rust_folio_rmap_set_new"],
    # The COW fault: __wp_can_reuse_large_anon_folio() (static, one caller)
    # inlined into do_wp_page(); wp_reuse_folio_ptes() is noinline.
    "do_wp_page": ["rust_folio_rmap_may_reuse"],
    "wp_reuse_folio_ptes": ["rust_folio_rmap_reuse_window"],
    "madvise_cold_or_pageout_pte_range": ["rust_folio_rmap_sole_mapper"],
    "folio_referenced_one": ["rust_folio_rmap_sole_mapper"],
    # fork: the update is out of line (__preserve_most), and so is the
    # large-folio batch of copy_present_ptes() (noinline
    # copy_present_ptes_batch()), so that the order-0 PTE loop of
    # copy_page_range() keeps its registers.
    "folio_dup_tracked_mapcount": ["rust_folio_rmap_add"],
    "copy_present_ptes_batch": [],
    "copy_page_range": [],
}
OUT_OF_LINE_7_3 = {
    "copy_page_range": "copy_present_ptes_batch",
    "copy_present_ptes_batch": "folio_dup_tracked_mapcount",
}
# Linux 7.3's per-VMA lock (topic vma-lock): every transition of
# vm_refcnt is a decision of rust/mm, asked from mmap_lock.h's inline
# functions (in every fault handler, vm_flags_*() user and the vma tree's
# writers) and from mm/mmap_lock.c. The readers' decisions are in
# vma_start_read() (static: LTO may inline it into lock_vma_under_rcu()
# and lock_next_vma()), the writers' in __vma_start_exclude_readers(); the
# last check below (no function calls an entry point) covers the others.
ENTRY_POINTS_VMA_LOCK_7_3 = [
    "rust_vma_lock_read_admit",
    "rust_vma_lock_read_validate",
    "rust_vma_lock_read_release",
    "rust_vma_lock_exclude_begin",
    "rust_vma_lock_exclusion_reached",
    "rust_vma_lock_exclude_end",
    "rust_vma_lock_detach",
    "rust_vma_lock_attach",
    "rust_vma_lock_is_write_locked",
]
CALLERS_VMA_LOCK_7_3 = {
    "vma_start_read": ["rust_vma_lock_read_admit", "rust_vma_lock_read_validate"],
    "__vma_start_exclude_readers": ["rust_vma_lock_exclude_begin",
                                    "rust_vma_lock_exclusion_reached"],
}
MAY_VANISH_VMA_LOCK_7_3 = {"vma_start_read", "__vma_start_exclude_readers"}
# Linux 7.3's arm64 contpte (topic contpte): every decision of
# arch/arm64/mm/contpte.c is a rust/mm entry point, asked by the function
# that used to make it. pgtable.h's inline wrappers call the exported
# contpte_*() functions, not Rust; contpte_align_addr_ptep() and
# contpte_try_unfold_partial() are inline in their callers, which so call
# Rust themselves.
ENTRY_POINTS_CONTPTE_7_3 = [
    "rust_contpte_try_fold",
    "rust_contpte_convert",
    "rust_contpte_gather",
    "rust_contpte_gather_lockless",
    "rust_contpte_set_ptes_runs",
    "rust_contpte_partial_ends",
    "rust_contpte_align_addr_ptep",
    "rust_contpte_access_plan",
]
CALLERS_CONTPTE_7_3 = {
    "__contpte_try_fold": ["rust_contpte_try_fold"],
    "contpte_convert": ["rust_contpte_convert"],
    "contpte_ptep_get": ["rust_contpte_gather"],
    "contpte_ptep_get_lockless": ["rust_contpte_gather_lockless"],
    "contpte_set_ptes": ["rust_contpte_set_ptes_runs"],
    "contpte_clear_full_ptes": ["rust_contpte_partial_ends"],
    "contpte_get_and_clear_full_ptes": ["rust_contpte_partial_ends"],
    "contpte_wrprotect_ptes": ["rust_contpte_partial_ends"],
    "contpte_test_and_clear_young_ptes": ["rust_contpte_align_addr_ptep"],
    "contpte_clear_flush_young_ptes": ["rust_contpte_align_addr_ptep"],
    "contpte_clear_young_dirty_ptes": ["rust_contpte_align_addr_ptep"],
    "contpte_ptep_set_access_flags": ["rust_contpte_access_plan"],
}
# contpte_convert() is static (its callers: __contpte_try_fold() and
# __contpte_try_unfold()).
MAY_VANISH_CONTPTE_7_3 = {"contpte_convert"}
# (base, system) -> the system's tables: entry points, callers, their
# out-of-line large-folio work, the callers that may be inlined away, and
# the objects (of the build directory) that define the callers, for
# --replay (None: not replayable). --system picks them (the rmap-id
# tables are also ENTRY_POINTS, CALLERS, ... below).
TABLES = {
    ("6.12", "rmap-id"): (ENTRY_POINTS_6_12, CALLERS_6_12, OUT_OF_LINE_6_12, MAY_VANISH_6_12,
                          None),
    ("7.3", "rmap-id"): (ENTRY_POINTS_7_3, CALLERS_7_3, OUT_OF_LINE_7_3, set(),
                         ["mm/rmap.o", "mm/memory.o", "mm/madvise.o"]),
    ("7.3", "vma-lock"): (ENTRY_POINTS_VMA_LOCK_7_3, CALLERS_VMA_LOCK_7_3, {},
                          MAY_VANISH_VMA_LOCK_7_3, ["mm/mmap_lock.o"]),
    ("7.3", "contpte"): (ENTRY_POINTS_CONTPTE_7_3, CALLERS_CONTPTE_7_3, {},
                         MAY_VANISH_CONTPTE_7_3, ["arch/arm64/mm/contpte.o"]),
}
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import topics  # noqa: E402  (scripts/lib/topics.py: the default base)

BASE = os.environ.get("RUST_MM_BASE") or topics.default_base()
if (BASE, "rmap-id") not in TABLES:
    sys.exit(f"lto-check: no tables for RUST_MM_BASE={BASE} "
             f"(known: {' '.join(sorted({b for b, _ in TABLES}))})")
ENTRY_POINTS, CALLERS, OUT_OF_LINE, MAY_VANISH, _ = TABLES[(BASE, "rmap-id")]
# ELF e_machine -> the arch names of the topics' Arch field.
MACHINES = {62: "x86_64", 183: "arm64"}

FUNC = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
# x86: call/jmp (a tail call); arm64: bl/b. Direct branches name their
# target as <symbol> or <symbol+0x...>.
CALL = re.compile(r"\s(?:call|callq|jmp|jmpq|bl|b)\s+(?:0x)?[0-9a-f]+\s+<([^>+]+)(?:\+0x[0-9a-f]+)?>")
# In an unlinked object (llvm-objdump -dr) a call to another object's
# function is a placeholder branch followed by its relocation, which
# names the target.
RELOC = re.compile(r"^\s+[0-9a-f]+:\s+R_(?:AARCH64_(?:CALL26|JUMP26)|X86_64_(?:PLT32|PC32))"
                   r"\s+([^\s+-]+)")


def disassemble(objdump, vmlinux):
    """{function: [called symbols]} of every function in VMLINUX's text."""
    out = subprocess.run([objdump, "-d", "--no-show-raw-insn", vmlinux],
                         check=True, capture_output=True, text=True).stdout
    return parse(out)


def parse(out):
    """{function: [called symbols]} of an llvm-objdump -d (or -dr) listing."""
    funcs, cur, branch = {}, None, None
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            cur, branch = m.group(2), None
            funcs.setdefault(cur, [])
            continue
        if cur is None:
            continue
        m = RELOC.match(line)
        if m:
            # The branch just before: its relocation is its real target.
            if branch == "appended":
                funcs[cur][-1] = m.group(1)
            elif branch == "self":
                funcs[cur].append(m.group(1))
            branch = None
            continue
        branch = None
        m = CALL.search(line)
        if m and m.group(1) != cur:
            funcs[cur].append(m.group(1))
            branch = "appended"
        elif m:
            branch = "self"
    return funcs


def elf_arch(path):
    """The arch (topics' names) of the ELF file PATH, or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if head[:4] != b"\x7fELF":
        return None
    return MACHINES.get(int.from_bytes(head[18:20], "little"))


def default_systems(arch):
    """Every system with tables for BASE whose topic builds on ARCH."""
    names = topics.topic_names()
    return [sy for b, sy in TABLES if b == BASE and
            (sy not in names or topics.builds_on(topics.read_topic(sy), arch))]


# The flags the top Makefile adds for Clang LTO (CC_FLAGS_LTO and the
# visibility LTO comes with); -fno-lto before them stays.
LTO_FLAGS = ("-flto=thin", "-flto", "-fsplit-lto-unit", "-fvisibility=hidden")


def replay(build, objects, scratch, objdump):
    """The llvm-objdump -dr listing of OBJECTS compiled again, natively,
    from BUILD's own commands into SCRATCH (BUILD untouched). Exits with
    a reason when a command is not what it expects."""
    listing = []
    for obj in objects:
        d, b = os.path.split(obj)
        cmdfile = os.path.join(build, d, f".{b}.cmd")
        try:
            with open(cmdfile) as f:
                first = f.readline()
        except OSError as e:
            sys.exit(f"lto-check: --replay: cannot read {cmdfile} ({e.strerror}): "
                     f"is {build} a built kernel?")
        prefix = f"savedcmd_{obj} := "
        if not first.startswith(prefix):
            sys.exit(f"lto-check: --replay: {cmdfile} does not start with '{prefix}'")
        words = first[len(prefix):].split(" ")
        out = os.path.join(scratch, obj.replace("/", "_"))
        if words.count("-o") != 1 or words[words.index("-o") + 1] != obj:
            sys.exit(f"lto-check: --replay: {cmdfile}: not one '-o {obj}'")
        words[words.index("-o") + 1] = out
        deps = [i for i, w in enumerate(words) if w.startswith("-Wp,-MMD,")]
        if len(deps) != 1 or ";" in words:
            sys.exit(f"lto-check: --replay: {cmdfile}: not one compiler command")
        words[deps[0]] = f"-Wp,-MMD,{out}.d"
        if not any(w in LTO_FLAGS for w in words):
            sys.exit(f"lto-check: --replay: {cmdfile} has no LTO flag ({' '.join(LTO_FLAGS)}): "
                     "BUILD is not an LTO build")
        cmd = " ".join(w for w in words if w not in LTO_FLAGS)
        r = subprocess.run(["sh", "-c", cmd], cwd=build, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"lto-check: --replay: compiling {obj} natively failed:\n{r.stderr}")
        listing.append(subprocess.run([objdump, "-dr", "--no-show-raw-insn", out], check=True,
                                      capture_output=True, text=True).stdout)
    return "\n".join(listing)


def base_name(sym):
    """A ThinLTO-promoted local keeps its name before '.llvm.'."""
    return sym.split(".llvm.", 1)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objdump", default="llvm-objdump")
    ap.add_argument("--expect-calls", action="store_true")
    ap.add_argument("--disassembly", action="store_true",
                    help="the argument is an llvm-objdump -d listing, not a vmlinux "
                    "(tests/tools/test_tools.py)")
    ap.add_argument("--arch", choices=sorted(set(MACHINES.values())),
                    help="the arch whose systems to check (default: VMLINUX's)")
    ap.add_argument("--system", action="append",
                    help="a system whose entry points to check (repeatable; default: every "
                    "system with tables that builds on the arch)")
    ap.add_argument("--replay", metavar="BUILD",
                    help="the control: compile BUILD's callers again natively and want the calls")
    ap.add_argument("--scratch", help="where --replay compiles (default: a temporary directory)")
    ap.add_argument("vmlinux", nargs="?")
    a = ap.parse_args()
    if (a.replay is None) == (a.vmlinux is None):
        ap.error("give either VMLINUX or --replay BUILD")
    if a.replay:
        a.expect_calls = True
        a.vmlinux = os.path.join(a.replay, "vmlinux")
    arch = a.arch or (None if a.disassembly else elf_arch(a.vmlinux))
    if not a.system and not a.disassembly and arch is None:
        print(f"lto-check: {a.vmlinux} is not an ELF file of a known arch "
              f"({' '.join(sorted(set(MACHINES.values())))}); name it with --arch")
        return 2
    systems = a.system or (default_systems(arch) if arch else ["rmap-id"])
    for system in systems:
        if (BASE, system) not in TABLES:
            known = " ".join(sorted(sy for b, sy in TABLES if b == BASE))
            print(f"lto-check: no tables for system {system} on {BASE} (known: {known})")
            return 2
        if a.replay and TABLES[(BASE, system)][4] is None:
            print(f"lto-check: --replay: system {system} on {BASE} names no objects")
            return 2
    if a.disassembly:
        with open(a.vmlinux) as f:
            funcs = parse(f.read())
    elif a.replay:
        objects = list(dict.fromkeys(o for sy in systems for o in TABLES[(BASE, sy)][4]))
        if a.scratch:
            os.makedirs(a.scratch, exist_ok=True)
            funcs = parse(replay(a.replay, objects, a.scratch, a.objdump))
        else:
            with tempfile.TemporaryDirectory(prefix="lto-replay.") as scratch:
                funcs = parse(replay(a.replay, objects, scratch, a.objdump))
        print(f"lto-check: {arch or a.replay}: {' '.join(objects)} compiled again without LTO")
    else:
        funcs = disassemble(a.objdump, a.vmlinux)
    print(f"lto-check: systems {' '.join(systems)}" + (f" ({arch})" if arch else ""))
    passed = failed = 0

    def verdict(ok, text):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
        print(f"lto-check: {text}: {'ok' if ok else 'FAILED'}")

    every_entry = set()
    for system in systems:
        entry_points, callers, out_of_line, may_vanish, _ = TABLES[(BASE, system)]
        entry = set(entry_points)
        every_entry |= entry
        # Every system's lines but the default's name it.
        tag = "" if system == "rmap-id" else f"{system}: "
        check_system(funcs, a, verdict, tag, entry_points, callers, out_of_line, may_vanish)

    entry = every_entry
    callers = sorted({base_name(f) for f, cs in funcs.items() if any(c in entry for c in cs)})
    if a.expect_calls:
        verdict(bool(callers), f"control: {len(callers)} function(s) call an entry point" +
                (" in the native objects" if a.replay else ""))
    else:
        verdict(not callers, "no function in vmlinux calls an entry point" +
                (f" (callers: {' '.join(callers)})" if callers else ""))
    print(f"lto-check: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def check_system(funcs, a, verdict, tag, entry_points, callers_table, out_of_line, may_vanish):
    """One system's lines: its entry points are in vmlinux, and each of its
    named callers calls none of them (--expect-calls: each of them)."""
    entry = set(entry_points)
    # The exports stay out of line (KUnit and debug code take their
    # address or call them from C that is not hot); only calls vanish.
    # The replayed objects are C's alone.
    if not a.replay:
        missing = [e for e in entry_points if e not in funcs]
        verdict(not missing, f"{tag}the entry points are in vmlinux" +
                (f" (missing: {' '.join(missing)})" if missing else ""))
    where = "the objects" if a.replay else "vmlinux"
    how = "compiled natively" if a.replay else "no RUST_MM_LTO"

    for caller, wants in callers_table.items():
        bodies = [f for f in funcs if base_name(f) == caller]
        if not bodies:
            # Gone only where the compiler may inline a static function
            # into its callers (whose bodies the last check covers).
            ok = caller in may_vanish
            verdict(ok, f"{tag}{caller}: " + ("inlined into its callers (no body left)" if ok
                                              else f"not in {where}"))
            continue
        calls = [c for f in bodies for c in funcs[f]]
        to_entry = sorted({c for c in calls if c in entry})
        to_rust = sorted({c for c in calls if c.startswith("_R")})
        if not a.expect_calls:
            # A helper left out of line is a call per atomic operation.
            to_rust += sorted({c for c in calls if base_name(c).startswith("rust_helper_")})
        if not wants:
            ool = out_of_line[caller]
            calls_ool = any(base_name(c) == ool for c in calls)
            text = (f"{tag}{caller} holds no rust/mm code (calls no entry point, no Rust "
                    f"function; its large-folio work is the call to {ool})")
            if to_entry or to_rust:
                text += f" (calls {' '.join(to_entry + to_rust)})"
            if not calls_ool:
                text += f" (no call to {ool}: inlined back?)"
            verdict(not to_entry and not to_rust and calls_ool, text)
            continue
        if a.expect_calls:
            ok = all(w in to_entry for w in wants)
            verdict(ok, f"{tag}{caller} (control, {how}) calls "
                    f"{' '.join(wants)}: {'yes' if ok else 'no: ' + (' '.join(to_entry) or 'none')}")
            continue
        text = f"{tag}{caller} calls no rust/mm entry point, no Rust function and no Rust helper"
        if to_entry or to_rust:
            text += f" (calls {' '.join(to_entry + to_rust)})"
        verdict(not to_entry and not to_rust, text)


if __name__ == "__main__":
    sys.exit(main())
