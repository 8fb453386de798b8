#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The one reader of the series' topic metadata (kernel-patches/).

Every fact the harness needs about a system -- its Kconfig option, its
KUnit suites, the arches it builds on, its benchmark report -- is declared
once, in kernel-patches/<topic>/topic, and read here; scripts ask this
module (Python) or its command line (shell) instead of keeping their own
lists.

A topic file is "Key: value" lines. Every key below must be present
(empty where it does not apply); an unknown key or a missing one is
refused, naming the file and the key:

  Title     the cover letter's subject
  Prefix    the subject prefix ("RFC PATCH")
  Version   the posting's version
  Depends   topics it applies on, space separated (each listed before it
            in kernel-patches/topics)
  Kconfig   the option that gates its code (CONFIG_...), or empty
  KUnit     its KUnit suites, space separated, or empty
  Arch      the arches its option builds on (x86_64 arm64), or empty for all
  Bench     its benchmark report under docs/ (a JSON), or empty
  Programs  its booted test programs (tests/userspace/<name>.c), space
            separated, each optionally <name>:<arch> when it runs on one
            arch only; or empty

Command line (what shell scripts use):
  topics.py list                 every topic, in apply order
  topics.py field TOPIC KEY      one value
  topics.py options              every topic's Kconfig option, one per line
  topics.py suites [ARCH]        every KUnit suite (of the topics that build
                                 on ARCH), one per line
  topics.py programs [ARCH]      every booted test program (that runs on
                                 ARCH), one per line
  topics.py check                validate every topic file (exit 1 naming
                                 the first problem)
"""
import os
import re
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MAIN_TOPICS_DIR = os.path.join(TOP, "kernel-patches")
# The series of the base picked (scripts/lib/env.sh: RUST_MM_BASE).
TOPICS_DIR = os.environ.get("PATCHES_DIR") or MAIN_TOPICS_DIR


def default_base(top=TOP):
    """The base scripts/lib/env.sh builds unless RUST_MM_BASE says otherwise."""
    with open(os.path.join(top, "scripts", "lib", "env.sh")) as f:
        m = re.search(r'^RUST_MM_DEFAULT_BASE=([0-9.]+)\s*$', f.read(), re.M)
    if not m:
        raise SystemExit("scripts/lib/env.sh sets no RUST_MM_DEFAULT_BASE")
    return m.group(1)


# The base this process runs for (exported by scripts/lib/env.sh).
BASE = os.environ.get("RUST_MM_BASE") or None
KEYS = ("Title", "Prefix", "Version", "Depends", "Kconfig", "KUnit", "Arch", "Bench", "Programs")
LISTS = ("Depends", "KUnit", "Arch", "Programs")
PROGRAMS_DIR = os.path.join(TOP, "tests", "userspace")
ARCHES = ("x86_64", "arm64")


class TopicError(Exception):
    """A topic file that cannot be read as declared."""


def topic_names(topics_dir=TOPICS_DIR):
    """Every topic of kernel-patches/topics, in apply order."""
    names = []
    with open(os.path.join(topics_dir, "topics")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


def read_topic(name, topics_dir=TOPICS_DIR):
    """The fields of kernel-patches/NAME/topic as a dict (lists split)."""
    path = os.path.join(topics_dir, name, "topic")
    rel = os.path.relpath(path, os.path.dirname(topics_dir))
    if not os.path.isfile(path):
        raise TopicError(f"{rel} is missing (is '{name}' a directory of kernel-patches/?)")
    fields = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            key, sep, value = line.partition(":")
            if not sep:
                raise TopicError(f"{rel}:{n}: not a 'Key: value' line: {line!r}")
            key = key.strip()
            if key not in KEYS:
                raise TopicError(f"{rel}:{n}: unknown key '{key}' (known: {', '.join(KEYS)})")
            if key in fields:
                raise TopicError(f"{rel}:{n}: '{key}' given twice")
            fields[key] = value.strip()
    missing = [k for k in KEYS if k not in fields]
    if missing:
        raise TopicError(f"{rel}: missing key(s) {', '.join(missing)} (every topic declares "
                         f"{', '.join(KEYS)}; empty where it does not apply)")
    for k in LISTS:
        fields[k] = fields[k].split()
    for a in fields["Arch"]:
        if a not in ARCHES:
            raise TopicError(f"{rel}: Arch '{a}' is not one of {' '.join(ARCHES)}")
    for p in fields["Programs"]:
        prog, _, arch = p.partition(":")
        if arch and arch not in ARCHES:
            raise TopicError(f"{rel}: program {p}: arch '{arch}' is not one of {' '.join(ARCHES)}")
    if fields["Kconfig"] and not fields["Kconfig"].startswith("CONFIG_"):
        raise TopicError(f"{rel}: Kconfig '{fields['Kconfig']}' does not start with CONFIG_")
    if not fields["Title"]:
        raise TopicError(f"{rel}: empty Title")
    fields["name"] = name
    return fields


def all_topics(topics_dir=TOPICS_DIR):
    """Every topic's fields, in apply order, with its dependencies checked."""
    seen, out = [], []
    names = topic_names(topics_dir)
    for name in names:
        t = read_topic(name, topics_dir)
        for d in t["Depends"]:
            if d not in names:
                raise TopicError(f"topic {name} depends on {d}, which is not a topic (kernel-patches/topics)")
            if d not in seen:
                raise TopicError(f"topic {name} depends on {d}, which comes after it in kernel-patches/topics")
        seen.append(name)
        out.append(t)
    return out


def builds_on(t, arch):
    return not t["Arch"] or arch in t["Arch"]


def options(topics_dir=TOPICS_DIR):
    """Every topic's Kconfig option (CONFIG_...), in apply order."""
    return [t["Kconfig"] for t in all_topics(topics_dir) if t["Kconfig"]]


def suites(arch=None, topics_dir=TOPICS_DIR):
    """Every KUnit suite of the topics that build on ARCH (all if None)."""
    return [s for t in all_topics(topics_dir) if arch is None or builds_on(t, arch)
            for s in t["KUnit"]]


def programs(arch=None, topics_dir=TOPICS_DIR, programs_dir=PROGRAMS_DIR):
    """Every booted test program of the topics (that runs on ARCH), in
    topic order; each must be a tests/userspace/<name>.c, and every such
    file (but init.c) must belong to exactly one topic."""
    out, owner = [], {}
    for t in all_topics(topics_dir):
        for p in t["Programs"]:
            prog, _, only = p.partition(":")
            if prog in owner:
                raise TopicError(f"program {prog} is claimed by topics {owner[prog]} and {t['name']}")
            owner[prog] = t["name"]
            if not os.path.isfile(os.path.join(programs_dir, prog + ".c")):
                raise TopicError(f"topic {t['name']}: program {prog}: no tests/userspace/{prog}.c")
            if arch is None or not only or only == arch:
                out.append(prog)
    claimed = set(owner)
    if os.path.realpath(topics_dir) != os.path.realpath(MAIN_TOPICS_DIR):
        # A series being ported (kernel-patches-7.3): a program of a main
        # topic not yet ported is claimed there.
        for t in all_topics(MAIN_TOPICS_DIR):
            claimed.update(p.partition(":")[0] for p in t["Programs"])
    if os.path.isdir(programs_dir):
        for f in sorted(os.listdir(programs_dir)):
            if f.endswith(".c") and f != "init.c" and f[:-2] not in claimed:
                raise TopicError(f"tests/userspace/{f} belongs to no topic (add it to a topic's Programs:)")
    return out


def main(argv):
    try:
        if argv[:1] == ["list"]:
            print("\n".join(topic_names()))
        elif argv[:1] == ["field"] and len(argv) == 3:
            v = read_topic(argv[1])[argv[2]] if argv[2] in KEYS else None
            if v is None:
                raise TopicError(f"no key '{argv[2]}' (known: {', '.join(KEYS)})")
            print(" ".join(v) if isinstance(v, list) else v)
        elif argv[:1] == ["options"]:
            print("\n".join(options()))
        elif argv[:1] == ["suites"] and len(argv) <= 2:
            arch = argv[1] if len(argv) == 2 else None
            if arch is not None and arch not in ARCHES:
                raise TopicError(f"arch '{arch}' is not one of {' '.join(ARCHES)}")
            print("\n".join(suites(arch)))
        elif argv[:1] == ["programs"] and len(argv) <= 2:
            arch = argv[1] if len(argv) == 2 else None
            if arch is not None and arch not in ARCHES:
                raise TopicError(f"arch '{arch}' is not one of {' '.join(ARCHES)}")
            print("\n".join(programs(arch)))
        elif argv[:1] == ["check"]:
            n = len(all_topics())
            programs()
            print(f"topics: {n} topic files valid")
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except BrokenPipeError:
        raise
    except (TopicError, OSError) as e:
        print(f"rust-mm: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        rc = main(sys.argv[1:])
        sys.stdout.flush()
    except BrokenPipeError:
        # A reader that stopped early (grep -q): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        rc = 0
    sys.exit(rc)
