#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The one reader of the series' topic metadata (kernel-patches/).

Every fact the harness needs about a system -- its Kconfig option, its
KUnit suites, the arches it builds on, its benchmark report -- is declared
once, in kernel-patches/<topic>/topic, and read here; scripts ask this
module (Python) or its command line (shell) instead of keeping their own
lists.

A topic file is "Key: value" lines. Every key below must be present
(empty where it does not apply) but Counters, which may be left out; an
unknown key or a missing one is refused, naming the file and the key:

  Title     the cover letter's subject
  Prefix    the subject prefix ("RFC PATCH")
  Version   the posting's version
  Depends   topics it applies on, space separated (each listed before it
            in kernel-patches/topics)
  Kconfig   the option that gates its code (CONFIG_...), or empty
  Counters  options of the topic that only count what the code it
            replaces does (CONFIG_..., space separated), or empty: the
            option-off kernel (make test-all's off variants) keeps them
            on, so its counts are the unpatched code's, beside ours;
            benchmark kernels leave them off
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
  topics.py counters             every topic's Counters options, one per line
  topics.py suites [ARCH]        every KUnit suite (of the topics that build
                                 on ARCH), one per line
  topics.py programs [ARCH]      every booted test program (that runs on
                                 ARCH), one per line
  topics.py unported             the 6.12 topics not yet on 7.3, with
                                 the issue that ports them
  topics.py check                validate every topic file (exit 1 naming
                                 the first problem)

Main's series is Linux 7.3's (kernel-patches/); the series of the 6.12
release (kernel-patches-6.12/, RUST_MM_BASE=6.12) is kept while its
topics are ported, and kernel-patches/unported lists those not yet on 7.3.
Their Rust and programs belong to their 6.12 topic meanwhile (programs(),
with_unported()).
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
KEYS = ("Title", "Prefix", "Version", "Depends", "Kconfig", "Counters", "KUnit", "Arch", "Bench", "Programs")
LISTS = ("Depends", "Counters", "KUnit", "Arch", "Programs")
PROGRAMS_DIR = os.path.join(TOP, "tests", "userspace")
ARCHES = ("x86_64", "arm64")


class TopicError(Exception):
    """A topic file that cannot be read as declared."""


def topic_names(topics_dir=None):
    """Every topic of kernel-patches/topics, in apply order."""
    topics_dir = topics_dir or TOPICS_DIR
    names = []
    with open(os.path.join(topics_dir, "topics")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


def read_topic(name, topics_dir=None):
    """The fields of kernel-patches/NAME/topic as a dict (lists split)."""
    topics_dir = topics_dir or TOPICS_DIR
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
    fields.setdefault("Counters", "")
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
    for c in fields["Counters"]:
        if not c.startswith("CONFIG_"):
            raise TopicError(f"{rel}: Counters option '{c}' does not start with CONFIG_")
    if not fields["Title"]:
        raise TopicError(f"{rel}: empty Title")
    fields["name"] = name
    fields["dir"] = topics_dir
    return fields


def all_topics(topics_dir=None):
    """Every topic's fields, in apply order, with its dependencies checked."""
    topics_dir = topics_dir or TOPICS_DIR
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


def options(topics_dir=None):
    """Every topic's Kconfig option (CONFIG_...), in apply order."""
    topics_dir = topics_dir or TOPICS_DIR
    return [t["Kconfig"] for t in all_topics(topics_dir) if t["Kconfig"]]


def counters(topics_dir=None):
    """Every topic's Counters options (CONFIG_...), in apply order."""
    topics_dir = topics_dir or TOPICS_DIR
    return [c for t in all_topics(topics_dir) for c in t["Counters"]]


def suites(arch=None, topics_dir=None):
    """Every KUnit suite of the topics that build on ARCH (all if None)."""
    topics_dir = topics_dir or TOPICS_DIR
    return [s for t in all_topics(topics_dir) if arch is None or builds_on(t, arch)
            for s in t["KUnit"]]


def programs(arch=None, topics_dir=None, programs_dir=PROGRAMS_DIR):
    """Every booted test program of the topics (that runs on ARCH), in
    topic order; each must be a tests/userspace/<name>.c, and every such
    file (but init.c) must belong to exactly one topic."""
    topics_dir = topics_dir or TOPICS_DIR
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
    if os.path.realpath(topics_dir) == os.path.realpath(MAIN_TOPICS_DIR):
        # A topic not yet ported claims its programs in the 6.12 series.
        for t in unported_topics(topics_dir):
            claimed.update(p.partition(":")[0] for p in t["Programs"])
    if os.path.isdir(programs_dir):
        for f in sorted(os.listdir(programs_dir)):
            if f.endswith(".c") and f != "init.c" and f[:-2] not in claimed:
                raise TopicError(f"tests/userspace/{f} belongs to no topic (add it to a topic's Programs:)")
    return out


def unported(topics_dir=MAIN_TOPICS_DIR):
    """{topic: (kind, what)} of TOPICS_DIR/unported: kind "issue" (what:
    the issue that ports it) or "folded" (what: the topic of this series
    that carries it). Every name is a topic of the 6.12 series and none
    of this one. A series without the file (6.12's) has none."""
    path = os.path.join(topics_dir, "unported")
    if not os.path.isfile(path):
        return {}
    rel = os.path.relpath(path, os.path.dirname(topics_dir))
    here = topic_names(topics_dir)
    old = topic_names(series_6_12(topics_dir))
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) == 2 and words[1].isdigit():
                kind, what = "issue", words[1]
            elif len(words) == 3 and words[1] == "folded":
                kind, what = "folded", words[2]
                if what not in here:
                    raise TopicError(f"{rel}:{n}: {words[0]} is folded into {what}, which is not a topic here")
            else:
                raise TopicError(f"{rel}:{n}: not '<topic> <issue>' or '<topic> folded <topic>': {line.strip()!r}")
            if words[0] not in old:
                raise TopicError(f"{rel}:{n}: {words[0]} is not a topic of kernel-patches-6.12/topics")
            if words[0] in here:
                raise TopicError(f"{rel}:{n}: {words[0]} is a topic of this series: ported, so not unported")
            out[words[0]] = (kind, what)
    return out


def unported_topics(topics_dir=MAIN_TOPICS_DIR):
    """The fields (from the 6.12 series) of the topics not yet ported, in
    the 6.12 apply order; "folded" ones are carried by a topic here."""
    u = unported(topics_dir)
    if not u:
        return []
    return [t for t in all_topics(series_6_12(topics_dir)) if u.get(t["name"], ("",))[0] == "issue"]


def find_topic(name, topics_dir=None):
    """NAME's fields from TOPICS_DIR, or from the 6.12 series when it is a
    topic not yet ported (its "dir" says which)."""
    topics_dir = topics_dir or TOPICS_DIR
    if name not in topic_names(topics_dir) and name in unported(topics_dir):
        return read_topic(name, series_6_12(topics_dir))
    return read_topic(name, topics_dir)


def series_6_12(topics_dir):
    """The 6.12 series beside the series TOPICS_DIR (kernel-patches-6.12)."""
    return os.path.join(os.path.dirname(os.path.abspath(topics_dir)), "kernel-patches-6.12")


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
        elif argv[:1] == ["counters"]:
            print("\n".join(counters()))
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
        elif argv[:1] == ["unported"] and len(argv) == 1:
            for name, (kind, what) in unported().items():
                print(f"{name}: " + (f"issue {what}" if kind == "issue" else f"folded into {what}"))
        elif argv[:1] == ["check"]:
            n = len(all_topics())
            unported()
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
