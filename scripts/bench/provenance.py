#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where a benchmark report comes from, and whether it still holds.

A report (docs/benchmarks*.json) records in meta.provenance, at the start of
the `make bench` run that made it (scripts/bench/bench.sh):

  commit         the repository's HEAD (git rev-parse HEAD)
  clean          whether the work tree had no change (git status
                 --porcelain: tracked or untracked, .gitignore'd aside);
                 dirty: the first changed paths
  base_version   the Debian version of the linux-source package the kernels are
                 built from (LINUX_DEB_VERSION)
  lto            BENCH_LTO=1
  chain          the topics the measured kernel is made of, in apply
                 order: the system's topic, the topics measured with it
                 (no option of their own, same Bench: report, e.g.
                 rmap-id-users), with BENCH_LTO=1 rust-lto, and every
                 topic these depend on, transitively
  fingerprints   per topic of the chain: its fingerprint (below)

The compilers are in meta.base / meta.patched (clang, rustc, bindgen: the
kernels' manifests).

A topic's fingerprint: sha256 over one line "PATH\\0SHA256-OF-CONTENT\\n"
(or "PATH\\0missing\\n") per input, sorted by path, where the inputs are
every file under kernel-patches/<topic>/ and every file its rust-files
lists (rust/mm/..., Kbuild); read from the repository's work tree (or, for
a report from before provenance was recorded, from git at its commit), not
from a prepared kernel tree.

status() says whether a report is fresh against the repository and the
toolchain of today, and why not: provenance not recorded (every report
made before it was), a dirty repository, another base version, a topic of
its chain whose fingerprint changed (for an old report: since its commit),
another clang major than scripts/lib/env.sh's LLVM_MAJOR, another rustc
than /usr/bin/rustc's, another bindgen than env.sh's BINDGEN_VERSION.

Command line:
  provenance.py record --system S [--lto 0|1] [--base-version V]
                                   the JSON bench.sh stores for the report
  provenance.py fingerprint TOPIC  one topic's fingerprint
  provenance.py status [REPORT...] fresh or stale (why), per report (default:
                                   docs/benchmarks*.json)
"""
import argparse
import glob
import hashlib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOP, "scripts", "lib"))
import system as systems  # noqa: E402
import topics  # noqa: E402

LTO_TOPIC = "rust-lto"
VERSION = 1
DIRTY_SHOWN = 20


def _topics_dir(top, base=None):
    """The series of BASE (default: the base this process runs for,
    RUST_MM_BASE, else the default base): kernel-patches/ for the default
    base, kernel-patches-<base>/ for another (scripts/lib/env.sh)."""
    base = base or topics.BASE or topics.default_base(top)
    if base == topics.default_base(top):
        return os.path.join(top, "kernel-patches")
    return os.path.join(top, f"kernel-patches-{base}")


def _systems_dir(top):
    return os.path.join(top, "tests", "bench", "systems")


def rust_files(text):
    """The paths a rust-files text lists (comments and '@' lines aside)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or line.startswith("@"):
            continue
        out.append(line.split()[0])
    return out


def _digest(entries):
    """entries: {path: bytes or None (missing)} -> the fingerprint. A
    series' directory counts as kernel-patches/ whatever base it is of, so
    a series renamed when main changed base keeps its fingerprints."""
    h = hashlib.sha256()
    for path in sorted(entries, key=_series_path):
        data = entries[path]
        h.update(f"{_series_path(path)}\0{'missing' if data is None else hashlib.sha256(data).hexdigest()}\n".encode())
    return h.hexdigest()


def _series_path(path):
    return re.sub(r"^kernel-patches-[0-9.]+/", "kernel-patches/", path)


def topic_inputs(topic, top=TOP, base=None):
    """The repository paths topic @topic is made of (see the module doc)."""
    d = os.path.join(_topics_dir(top, base), topic)
    paths = set()
    for root, _, files in os.walk(d):
        for f in files:
            paths.add(os.path.relpath(os.path.join(root, f), top))
    rf = os.path.join(d, "rust-files")
    if os.path.isfile(rf):
        with open(rf) as f:
            paths.update(rust_files(f.read()))
    return sorted(paths)


def fingerprint(topic, top=TOP, base=None):
    entries = {}
    for p in topic_inputs(topic, top, base):
        path = os.path.join(top, p)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                entries[p] = f.read()
        else:
            entries[p] = None
    return _digest(entries)


def _git(top, *args, **kw):
    return subprocess.run(["git", "-C", top, *args], capture_output=True, **kw)


def _blobs(top, commit, paths):
    """{path: bytes or None} of @paths at @commit (git cat-file --batch)."""
    r = _git(top, "cat-file", "--batch", input="".join(f"{commit}:{p}\n" for p in paths).encode())
    out, data, i = {}, r.stdout, 0
    for p in paths:
        nl = data.index(b"\n", i)
        head = data[i:nl].split()
        i = nl + 1
        if len(head) == 3 and head[1] == b"blob":
            n = int(head[2])
            out[p] = data[i:i + n]
            i += n + 1
        else:
            out[p] = None
    return out


def fingerprint_at(commit, topic, top=TOP):
    """The fingerprint of @topic as the repository had it at @commit, or
    None when git does not know the commit."""
    if _git(top, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        return None
    ls = _git(top, "ls-tree", "-r", "--name-only", commit, "--", f"kernel-patches/{topic}/", text=True)
    paths = set(l for l in ls.stdout.splitlines() if l)
    rf = f"kernel-patches/{topic}/rust-files"
    if rf in paths:
        paths.update(rust_files(_blobs(top, commit, [rf])[rf].decode(errors="replace")))
    return _digest(_blobs(top, commit, sorted(paths)))


def _closure(names, top, base=None):
    """@names and every topic they depend on, transitively, in apply order."""
    all_t = {t["name"]: t for t in topics.all_topics(_topics_dir(top, base))}
    want, todo = set(), list(names)
    while todo:
        n = todo.pop()
        if n in want:
            continue
        if n not in all_t:
            raise topics.TopicError(f"'{n}' is not a topic (kernel-patches/topics)")
        want.add(n)
        todo.extend(all_t[n]["Depends"])
    return [n for n in all_t if n in want]


def chain(system_name, lto=False, top=TOP, base=None):
    s = systems.load(system_name, _systems_dir(top), _topics_dir(top, base))
    if not s.ported:
        raise topics.TopicError(f"topic {s.topic} is not in the series of Linux {base or s.base}")
    names = [s.topic, *s.companions(_topics_dir(top, base))]
    if lto:
        names.append(LTO_TOPIC)
    return _closure(names, top, base)


def repository_state(top=TOP):
    """(commit, clean, dirty paths) of the repository at @top."""
    head = _git(top, "rev-parse", "HEAD", text=True)
    if head.returncode != 0:
        return None, None, []
    st = _git(top, "status", "--porcelain", text=True).stdout.splitlines()
    return head.stdout.strip(), not st, [l[3:] for l in st]


def record(system_name, lto=False, base_version=None, top=TOP, base=None):
    """The provenance of a run on BASE (default: the base this process
    runs for) of the Debian BASE_VERSION (default: the default base's pin)."""
    commit, clean, dirty = repository_state(top)
    c = chain(system_name, lto, top, base)
    return {"version": VERSION, "commit": commit, "clean": clean, "dirty": dirty[:DIRTY_SHOWN],
            "dirty_count": len(dirty), "base_version": base_version or env_pins(top)["base_version"],
            "lto": bool(lto), "chain": c, "fingerprints": {t: fingerprint(t, top, base) for t in c}}


def base_of(version, pins):
    """The base (6.12, 7.3) of the Debian VERSION (its major.minor), or
    None when no base has that major.minor."""
    return next((b for b in pins if version.startswith(b + ".")), None)


def env_pins(top=TOP):
    """What scripts/lib/env.sh pins: LLVM_MAJOR, BINDGEN_VERSION, the base."""
    with open(os.path.join(top, "scripts", "lib", "env.sh")) as f:
        text = f.read()

    def one(name):
        m = re.search(rf'^{name}="?([^"\s]+)"?\s*$', text, re.M)
        if not m:
            raise SystemExit(f"provenance: scripts/lib/env.sh sets no {name}")
        return m.group(1)
    # Every base's pin; base_version: the base `make bench` builds unless
    # RUST_MM_BASE says otherwise.
    pins = {m.group(1).replace("_", "."): m.group(2) for m in
            re.finditer(r'^RUST_MM_PIN_DEB_([0-9_]+)="([^"\s]+)"\s*$', text, re.M)}
    base = topics.default_base(top).replace(".", "_")
    return {"llvm_major": int(one("LLVM_MAJOR")), "bindgen": one("BINDGEN_VERSION"),
            "base_version": one(f"RUST_MM_PIN_DEB_{base}"), "pins": pins}


def rustc_now(rustc="/usr/bin/rustc"):
    """The version of Debian's rustc-web, or None where it is missing."""
    try:
        out = subprocess.run([rustc, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    m = re.match(r"rustc (\S+)", out)
    return m.group(1) if m else None


def toolchain_now(top=TOP):
    t = env_pins(top)
    t["rustc"] = rustc_now()
    return t


def _version(text, tool):
    m = re.search(rf"{tool} version (\d+(?:\.\d+)*)" if tool == "clang" else rf"{tool} (\d+(?:\.\d+)*)",
                  text or "")
    return m.group(1) if m else None


def status(report, top=TOP, now=None):
    """(fresh, reasons) of a report's JSON (a dict) against the repository
    at @top and the toolchain @now (default: toolchain_now(top))."""
    now = now or toolchain_now(top)
    meta = report.get("meta", {})
    prov = meta.get("provenance")
    reasons = []
    if not prov:
        reasons.append("provenance not recorded")
    # The repository.
    if prov:
        if not prov.get("clean"):
            shown = ", ".join(prov.get("dirty", [])[:3])
            n = prov.get("dirty_count", len(prov.get("dirty", [])))
            reasons.append(f"repository was dirty ({n} changed: {shown}{', ...' if n > 3 else ''})")
    elif str(meta.get("repository", "")).endswith("-dirty"):
        reasons.append(f"repository was dirty ({meta['repository']})")
    # The base.
    if prov:
        base = prov.get("base_version")
    else:
        m = re.search(r"linux-source-\S+ (\S+?),? ", (meta.get("base") or {}).get("source", "") + " ")
        base = m.group(1) if m else None
    # A report is judged against its own base's pin and series (a 6.12
    # report against kernel-patches-6.12/ and the 6.12 pin); a version of
    # no base's major.minor is judged against the default base's series.
    # Every base's pin (env.sh), the default base's as @now says.
    pins = dict(now.get("pins") or env_pins(top)["pins"])
    pins[base_of(now["base_version"], pins) or topics.default_base(top)] = now["base_version"]
    rbase = base_of(base, pins) if base else None
    if base and (rbase is None or pins[rbase] != base):
        reasons.append(f"base changed: {base} (scripts/lib/env.sh pins "
                       f"{pins[rbase] if rbase else ', '.join(pins.values())})")
    # The series.
    system_name = meta.get("system") or systems.DEFAULT
    try:
        cur = chain(system_name, meta.get("lto", False), top, rbase)
    except (systems.SystemFileError, topics.TopicError) as e:
        cur = None
        reasons.append(f"system {system_name} unknown today ({e})")
    if cur is not None:
        if prov:
            was = prov.get("fingerprints", {})
            changed = [t for t in cur if was.get(t) != fingerprint(t, top, rbase)]
            if changed:
                reasons.append(f"series changed: {', '.join(changed)}")
            gone = [t for t in prov.get("chain", []) if t not in cur]
            if gone:
                reasons.append(f"series changed: {', '.join(gone)} no longer in its chain")
        else:
            commit = str(meta.get("repository", "")).removesuffix("-dirty")
            if commit:
                then = {t: fingerprint_at(commit, t, top) for t in cur}
                if all(v is not None for v in then.values()):
                    changed = [t for t in cur if then[t] != fingerprint(t, top, rbase)]
                    if changed:
                        reasons.append(f"series changed since {commit}: {', '.join(changed)}")
    # The toolchain: both kernels' manifests.
    seen = set()
    for k in ("base", "patched"):
        m = meta.get(k) or {}
        clang, rustc, bindgen = (_version(m.get("clang"), "clang"), _version(m.get("rustc"), "rustc"),
                                 _version(m.get("bindgen"), "bindgen"))
        if clang and int(clang.split(".")[0]) != now["llvm_major"]:
            seen.add(f"clang {clang} (scripts/lib/env.sh pins LLVM_MAJOR={now['llvm_major']})")
        if rustc and now.get("rustc") and rustc != now["rustc"]:
            seen.add(f"rustc {rustc} (/usr/bin/rustc is {now['rustc']})")
        if bindgen and bindgen != now["bindgen"]:
            seen.add(f"bindgen {bindgen} (scripts/lib/env.sh pins {now['bindgen']})")
    for s in sorted(seen):
        reasons.append(f"toolchain changed: {s}")
    return not reasons, reasons


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--system", default="")
    r.add_argument("--lto", default="0", choices=("0", "1"))
    r.add_argument("--base-version", default=None)
    f = sub.add_parser("fingerprint")
    f.add_argument("topic")
    s = sub.add_parser("status")
    s.add_argument("reports", nargs="*")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "record":
            print(json.dumps(record(args.system or systems.DEFAULT, args.lto == "1", args.base_version),
                             indent=1))
        elif args.cmd == "fingerprint":
            print(fingerprint(args.topic))
        else:
            now = toolchain_now()
            for path in args.reports or sorted(glob.glob(os.path.join(TOP, "docs", "benchmarks*.json"))):
                with open(path) as fh:
                    fresh, why = status(json.load(fh), TOP, now)
                print(f"{os.path.relpath(path, TOP)}: {'fresh' if fresh else 'stale: ' + '; '.join(why)}")
    except (systems.SystemFileError, topics.TopicError, OSError) as e:
        print(f"rust-mm: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
