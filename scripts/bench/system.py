#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The one reader of the benchmark systems (tests/bench/systems/<system>.toml).

Each system `make bench` measures (BENCH_SYSTEM=...) is described in one
TOML file, read here by scripts/bench/bench.sh and scripts/bench/profile.sh
(through the command line below) and by scripts/bench/bench-report.py and
scripts/docs/readme-table.py (as a module). Its Kconfig option is not in it:
that is the `Kconfig:` of kernel-patches/<topic>/topic (scripts/lib/topics.py).

Keys (a file with an unknown key, without a required one, or with a value of
the wrong type is refused, naming the file and the key):

  title         str, required: the report's title ("rmap IDs, COW reuse")
  topic         str, required: its topic in kernel-patches/ (with a Kconfig)
  arches        [str], required: the targets it runs on (x86_64, arm64);
                within the topic's Arch
  report        str, required: the report's file stem under docs/
                ("benchmarks-vma-lock"; a target other than x86_64 adds
                "-<target>", BENCH_LTO=1 "-lto", BENCH_MMS=N "-mmsN"); its
                build directory is build/bench[-<target>]<the same suffix>
  cases         table, required: per arch in `arches`, the cases one boot
                each runs (BENCH_CASES' default), in order
  buys          str, required: what it buys, in words (README's table)
  headline      [str], required: what states the gain in README's table:
                cases, "ratios" (the same-kernel ratios with a target) or
                "slab" (the slab saving)
  targets       table case -> {min = float, max = float}, percent change
                patched / base - 1 (a missing bound is unbounded)
  base_targets  table base -> table case -> {min, max} or {}: the targets
                on that base (RUST_MM_BASE, scripts/lib/env.sh) where
                they differ from `targets` ({}: no target there)
  base_buys     table base -> {buys = str, headline = [str]}: what it buys
                on that base where that differs from `buys` and `headline`
  seed          table case -> float: the seed's figure (percent)
  append        str: kernel command-line words every boot gets beyond the
                harness's (make profile: without "nokaslr", which it boots
                with anyway)
  guest         table: the system's guest where it differs from the
                harness's (scripts/bench/lib.sh qemu_run): memory_mib int
                (default 2048), cpu table arch -> str (QEMU's -cpu; default
                x86_64: QEMU's own, arm64: max,pauth-impdef=on)
  kconfig       [str]: config lines both kernels get beyond
                tests/bench/bench.kunitconfig
  mms           bool: BENCH_MMS is allowed (default false)
  profile       bool: make profile supports it (default true)
  patched_only  [str]: glob patterns of measurements only the patched
                kernel runs (make profile profiles them there alone)
  measurements  table: each boot case C measures C.b<batch>.<reader>:
                  batches [int], readers [str], target {min, max},
                  ratios [{num = reader, den = reader, max = float}]
                  (same-kernel ratios on the patched kernel; no max: no
                  target)
  slab          table: one more boot per kernel, `boot` words first, runs
                `case` once (RUSTMM-SLAB lines):
                  case str, boot str, and its targets (at least one):
                  saving float (bytes per vma less than the base, at
                  least), max_pages_per_1000 float (the patched kernel's
                  slab pages per 1000 vmas, at most)
  beside        table: another report whose figures the report shows
                beside its own, case by case, for the cases both have:
                report str (its stem under docs/, e.g. the same system's
                report of an earlier base), title str (the section's
                heading), text str (its paragraph)
  report_text   table: the report's prose for its cases: kinds str (what
                the case names mean), numbers str (a paragraph; {append} is
                the boots' words), ratios_title and ratios str (the heading
                and the paragraph of the same-kernel ratios; {max}: their
                target)

Command line (what shell scripts use):
  system.py list                      every system
  system.py check                     validate every system file
  system.py shell [SYSTEM] [TARGET]   shell assignments (eval them) of
                                      SYSTEM (empty: the default) on TARGET
  system.py boot-case SYSTEM NAME     the boot case measurement NAME runs in
"""
import fnmatch
import os
import shlex
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts", "lib"))
import topics  # noqa: E402

SYSTEMS_DIR = os.path.join(TOP, "tests", "bench", "systems")
DEFAULT = "rmap-id"
ARCHES = ("x86_64", "arm64")
# What make profile boots with anyway (System.map must apply).
PROFILE_BOOT = ("nokaslr",)


class SystemFileError(Exception):
    """A system file that cannot be read as declared."""


def _str(v):
    return isinstance(v, str)


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _strs(v):
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _ints(v):
    return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


def _bool(v):
    return isinstance(v, bool)


def _table(v):
    return isinstance(v, dict)


# key: (required, type check, what the type is called)
KEYS = {
    "title": (True, _str, "a string"),
    "topic": (True, _str, "a string"),
    "arches": (True, _strs, "a list of strings"),
    "report": (True, _str, "a string"),
    "cases": (True, _table, "a table of arch = [cases]"),
    "buys": (True, _str, "a string"),
    "headline": (True, _strs, "a list of strings"),
    "targets": (False, _table, "a table of case = {min, max}"),
    "base_targets": (False, _table, "a table of base = {case = {min, max}}"),
    "seed": (False, _table, "a table of case = number"),
    "base_buys": (False, _table, "a table of base = {buys, headline}"),
    "append": (False, _str, "a string"),
    "guest": (False, _table, "a table {memory_mib, cpu}"),
    "kconfig": (False, _strs, "a list of strings"),
    "mms": (False, _bool, "true or false"),
    "profile": (False, _bool, "true or false"),
    "patched_only": (False, _strs, "a list of strings"),
    "measurements": (False, _table, "a table"),
    "slab": (False, _table, "a table"),
    "report_text": (False, _table, "a table"),
    "beside": (False, _table, "a table {report, title, text}"),
}
BOUND_KEYS = {"min": (False, _num, "a number"), "max": (False, _num, "a number")}
MEASUREMENT_KEYS = {"batches": (True, _ints, "a list of integers"),
                    "readers": (True, _strs, "a list of strings"),
                    "target": (True, _table, "a table {min, max}"),
                    "ratios": (False, lambda v: isinstance(v, list), "a list of tables")}
RATIO_KEYS = {"num": (True, _str, "a string"), "den": (True, _str, "a string"),
              "max": (False, _num, "a number")}
SLAB_KEYS = {"case": (True, _str, "a string"), "boot": (True, _str, "a string"),
             "saving": (False, _num, "a number"),
             "max_pages_per_1000": (False, _num, "a number")}
BUYS_KEYS = {"buys": (True, _str, "a string"), "headline": (True, _strs, "a list of strings")}
GUEST_KEYS = {"memory_mib": (False, lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 256,
                             "an integer of at least 256"),
              "cpu": (False, _table, "a table of arch = str")}
DEFAULT_GUEST_MIB = 2048
BESIDE_KEYS = {"report": (True, _str, "a string"), "title": (True, _str, "a string"),
               "text": (False, _str, "a string")}
TEXT_KEYS = {"kinds": (False, _str, "a string"), "numbers": (False, _str, "a string"),
             "ratios_title": (False, _str, "a string"), "ratios": (False, _str, "a string")}


def _check(where, table, keys, prefix=""):
    """Unknown, missing and wrongly typed keys of @table, named."""
    for k in table:
        if k not in keys:
            raise SystemFileError(f"{where}: unknown key '{prefix}{k}' (known: {', '.join(keys)})")
    for k, (required, ok, what) in keys.items():
        if k not in table:
            if required:
                raise SystemFileError(f"{where}: missing key '{prefix}{k}'")
            continue
        if not ok(table[k]):
            raise SystemFileError(f"{where}: key '{prefix}{k}' must be {what}, not "
                               f"{type(table[k]).__name__} {table[k]!r}")


def _bound(where, key, v):
    """A {min, max} table as the (low, high) the report uses (None: unbounded)."""
    if not _table(v):
        raise SystemFileError(f"{where}: key '{key}' must be a table {{min, max}}, not "
                           f"{type(v).__name__} {v!r}")
    _check(where, v, BOUND_KEYS, key + ".")
    if "min" not in v and "max" not in v:
        raise SystemFileError(f"{where}: key '{key}' has neither min nor max")
    lo = float(v["min"]) if "min" in v else None
    hi = float(v["max"]) if "max" in v else None
    if lo is not None and hi is not None and lo > hi:
        raise SystemFileError(f"{where}: key '{key}': min {lo} > max {hi}")
    return (lo, hi)


class System:
    """One benchmark system, as its file declares it (see the module doc)."""

    def __init__(self, name, data, where, topics_dir):
        self.name, self.where = name, where
        _check(where, data, KEYS)
        self.title = data["title"]
        self.topic = data["topic"]
        try:
            t = topics.find_topic(self.topic, topics_dir)
        except topics.TopicError as e:
            raise SystemFileError(f"{where}: key 'topic': {e}")
        # A topic not yet ported to this series' base (kernel-patches/unported)
        # is read from the 6.12 series: its file stays valid, but it cannot
        # be measured on this base (shell()).
        self.ported = os.path.realpath(t["dir"]) == os.path.realpath(topics_dir)
        if not t["Kconfig"]:
            raise SystemFileError(f"{where}: key 'topic': topic {self.topic} has no Kconfig option to measure")
        self.option = t["Kconfig"]
        self.topic_fields = t
        self.arches = list(data["arches"])
        for a in self.arches:
            if a not in ARCHES:
                raise SystemFileError(f"{where}: key 'arches': '{a}' is not one of {' '.join(ARCHES)}")
            if t["Arch"] and a not in t["Arch"]:
                raise SystemFileError(f"{where}: key 'arches': topic {self.topic} builds only on "
                                   f"{' '.join(t['Arch'])}, not {a}")
        if not self.arches:
            raise SystemFileError(f"{where}: key 'arches' is empty")
        self.report = data["report"]
        if not self.report.startswith("benchmarks"):
            raise SystemFileError(f"{where}: key 'report': '{self.report}' does not start with 'benchmarks'")
        self.suffix = self.report[len("benchmarks"):]
        cases = data["cases"]
        for a, v in cases.items():
            if a not in self.arches:
                raise SystemFileError(f"{where}: unknown key 'cases.{a}' (its arches: {' '.join(self.arches)})")
            if not _strs(v) or not v:
                raise SystemFileError(f"{where}: key 'cases.{a}' must be a non-empty list of strings, "
                                   f"not {type(v).__name__} {v!r}")
        for a in self.arches:
            if a not in cases:
                raise SystemFileError(f"{where}: missing key 'cases.{a}'")
        self.cases = {a: list(cases[a]) for a in self.arches}
        every = {c for v in self.cases.values() for c in v}
        self.targets = {}
        for c, v in data.get("targets", {}).items():
            if c not in every:
                raise SystemFileError(f"{where}: key 'targets.{c}': '{c}' is none of its cases")
            self.targets[c] = _bound(where, f"targets.{c}", v)
        # The targets on each base; the base this process runs for
        # (RUST_MM_BASE, as scripts/lib/env.sh exports it) picks its own.
        self.base = topics.BASE or topics.default_base()
        self.base_targets = {}
        for b, t in data.get("base_targets", {}).items():
            if not _table(t):
                raise SystemFileError(f"{where}: key 'base_targets.{b}' must be a table of case = "
                                   f"{{min, max}}, not {type(t).__name__} {t!r}")
            over = {}
            for c, v in t.items():
                if c not in every:
                    raise SystemFileError(f"{where}: key 'base_targets.{b}.{c}': '{c}' is none of its cases")
                over[c] = None if v == {} else _bound(where, f"base_targets.{b}.{c}", v)
            self.base_targets[b] = over
        for c, v in self.base_targets.get(self.base, {}).items():
            if v is None:
                self.targets.pop(c, None)
            else:
                self.targets[c] = v
        self.seed = {}
        for c, v in data.get("seed", {}).items():
            if c not in every:
                raise SystemFileError(f"{where}: key 'seed.{c}': '{c}' is none of its cases")
            if not _num(v):
                raise SystemFileError(f"{where}: key 'seed.{c}' must be a number, not {type(v).__name__} {v!r}")
            self.seed[c] = float(v)
        self.append = data.get("append", "")
        guest = data.get("guest", {})
        _check(where, guest, GUEST_KEYS, "guest.")
        self.guest_mib = guest.get("memory_mib", DEFAULT_GUEST_MIB)
        self.guest_cpu = {}
        for a, v in guest.get("cpu", {}).items():
            if a not in self.arches:
                raise SystemFileError(f"{where}: unknown key 'guest.cpu.{a}' (its arches: {' '.join(self.arches)})")
            if not _str(v) or not v or any(ch.isspace() for ch in v):
                raise SystemFileError(f"{where}: key 'guest.cpu.{a}' must be one QEMU -cpu word, not {v!r}")
            self.guest_cpu[a] = v
        self.kconfig = list(data.get("kconfig", []))
        self.mms = data.get("mms", False)
        self.profile = data.get("profile", True)
        self.patched_only = list(data.get("patched_only", []))
        self.measurements = None
        if "measurements" in data:
            m = data["measurements"]
            _check(where, m, MEASUREMENT_KEYS, "measurements.")
            ratios = []
            for i, r in enumerate(m.get("ratios", [])):
                if not _table(r):
                    raise SystemFileError(f"{where}: key 'measurements.ratios[{i}]' must be a table, "
                                       f"not {type(r).__name__} {r!r}")
                _check(where, r, RATIO_KEYS, f"measurements.ratios[{i}].")
                ratios.append({"num": r["num"], "den": r["den"],
                               "max": float(r["max"]) if "max" in r else None})
            self.measurements = {"batches": list(m["batches"]), "readers": list(m["readers"]),
                                 "target": _bound(where, "measurements.target", m["target"]),
                                 "ratios": ratios}
        self.slab = None
        if "slab" in data:
            _check(where, data["slab"], SLAB_KEYS, "slab.")
            sl = data["slab"]
            if "saving" not in sl and "max_pages_per_1000" not in sl:
                raise SystemFileError(f"{where}: [slab] has no target (saving or max_pages_per_1000)")
            self.slab = dict(sl, saving=float(sl["saving"]) if "saving" in sl else None,
                             max_pages_per_1000=float(sl["max_pages_per_1000"])
                             if "max_pages_per_1000" in sl else None)
        self.report_text = {}
        if "report_text" in data:
            _check(where, data["report_text"], TEXT_KEYS, "report_text.")
            self.report_text = dict(data["report_text"])
        self.beside = None
        if "beside" in data:
            _check(where, data["beside"], BESIDE_KEYS, "beside.")
            self.beside = dict(data["beside"])
            if not self.beside["report"].startswith("benchmarks"):
                raise SystemFileError(f"{where}: key 'beside.report': '{self.beside['report']}' does not "
                                   "start with 'benchmarks'")
        self.buys = data["buys"]
        self.headline = list(data["headline"])
        for b, v in data.get("base_buys", {}).items():
            if not _table(v):
                raise SystemFileError(f"{where}: key 'base_buys.{b}' must be a table {{buys, headline}}, "
                                   f"not {type(v).__name__} {v!r}")
            _check(where, v, BUYS_KEYS, f"base_buys.{b}.")
            for h in v["headline"]:
                if h not in every and h not in ("ratios", "slab"):
                    raise SystemFileError(f"{where}: key 'base_buys.{b}.headline': '{h}' is none of its cases")
            if b == self.base:
                self.buys, self.headline = v["buys"], list(v["headline"])
        for h in self.headline:
            if h == "ratios":
                if not self.measurements or not any(r["max"] for r in self.measurements["ratios"]):
                    raise SystemFileError(f"{where}: key 'headline': 'ratios', but no ratio has a target")
            elif h == "slab":
                if not self.slab:
                    raise SystemFileError(f"{where}: key 'headline': 'slab', but no [slab]")
            elif h not in every:
                raise SystemFileError(f"{where}: key 'headline': '{h}' is none of its cases")

    # The measurements a boot case runs (itself, or C.b<batch>.<reader>).
    def sub_measurements(self, case):
        m = self.measurements
        return [f"{case}.b{b}.{r}" for b in m["batches"] for r in m["readers"]]

    def ratio_pairs(self, case):
        """(numerator, denominator, target or None) per batch of @case."""
        m = self.measurements
        return [(f"{case}.b{b}.{r['num']}", f"{case}.b{b}.{r['den']}", r["max"])
                for b in m["batches"] for r in m["ratios"]]

    def boot_case(self, name):
        """The boot case a measurement @name runs in (make profile)."""
        if self.measurements:
            for c in sorted({c for v in self.cases.values() for c in v}, key=len, reverse=True):
                if name.startswith(c + ".b"):
                    return c
        return name

    def is_patched_only(self, name):
        return any(fnmatch.fnmatchcase(name, p) for p in self.patched_only)

    def profile_append(self):
        """The words a make profile boot gets beyond its own (nokaslr)."""
        return " ".join(w for w in self.append.split() if w not in PROFILE_BOOT)

    def report_name(self, target):
        """docs/<this> (no extension) of its report on @target."""
        return self.report + ("" if target == "x86_64" else f"-{target}")

    def companions(self, topics_dir):
        """Topics without an option of their own measured with it: those
        whose Bench is this topic's report (rmap-id-users with rmap-id)."""
        bench = self.topic_fields["Bench"]
        return [t["name"] for t in topics.all_topics(topics_dir)
                if t["name"] != self.topic and bench and t["Bench"] == bench and not t["Kconfig"]]


def names(systems_dir=SYSTEMS_DIR):
    return sorted(f[:-len(".toml")] for f in os.listdir(systems_dir) if f.endswith(".toml"))


def load(name=None, systems_dir=SYSTEMS_DIR, topics_dir=None):
    """System @name (None or empty: the default) from its file; its topic
    from TOPICS_DIR (default: the series of the base this process runs for)."""
    topics_dir = topics_dir or topics.TOPICS_DIR
    name = name or DEFAULT
    path = os.path.join(systems_dir, f"{name}.toml")
    where = os.path.relpath(path, TOP) if path.startswith(TOP + os.sep) else path
    if not os.path.isfile(path):
        raise SystemFileError(f"BENCH_SYSTEM={name}: no {where}; systems: {' '.join(names(systems_dir))}")
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise SystemFileError(f"{where}: not TOML: {e}")
    return System(name, data, where, topics_dir)


def load_all(systems_dir=SYSTEMS_DIR, topics_dir=None):
    return [load(n, systems_dir, topics_dir) for n in names(systems_dir)]


def _sh(name, v):
    if isinstance(v, list):
        return f"{name}=(" + " ".join(shlex.quote(x) for x in v) + ")"
    return f"{name}={shlex.quote(str(v))}"


def shell(s, target):
    """Shell assignments for bench.sh/profile.sh (eval them)."""
    if target not in s.arches:
        raise SystemFileError(f"BENCH_SYSTEM={s.name} runs on {' '.join(s.arches)}, not {target} "
                           f"({s.where}: arches)")
    if not s.ported:
        kind, what = topics.unported(topics.MAIN_TOPICS_DIR).get(s.topic, ("issue", "?"))
        raise SystemFileError(f"BENCH_SYSTEM={s.name}: topic {s.topic} is not ported to Linux {s.base} yet "
                           f"(issue {what}, kernel-patches/unported); its 6.12 report is measured with "
                           f"RUST_MM_BASE=6.12")
    slab = s.slab or {}
    out = [
        _sh("SYSTEM", s.name),
        _sh("SYS_DEFAULT", 1 if s.name == DEFAULT else 0),
        _sh("SYS_TITLE", s.title),
        _sh("SYS_TOPIC", s.topic),
        _sh("SYS_OPTION", s.option),
        _sh("SYS_ARCHES", " ".join(s.arches)),
        _sh("SYS_CASES", " ".join(s.cases[target])),
        _sh("SYS_APPEND", s.append),
        _sh("SYS_GUEST_MIB", s.guest_mib),
        _sh("SYS_GUEST_CPU", s.guest_cpu.get(target, "")),
        _sh("SYS_PROFILE_APPEND", s.profile_append()),
        _sh("SYS_KCONFIG", s.kconfig),
        _sh("SYS_SUFFIX", s.suffix),
        _sh("SYS_MMS", 1 if s.mms else 0),
        _sh("SYS_PROFILE", 1 if s.profile else 0),
        _sh("SYS_PATCHED_ONLY", s.patched_only),
        _sh("SYS_SLAB_CASE", slab.get("case", "")),
        _sh("SYS_SLAB_BOOT", slab.get("boot", "")),
    ]
    return "\n".join(out)


def main(argv):
    try:
        if argv[:1] == ["list"] and len(argv) == 1:
            print("\n".join(names()))
        elif argv[:1] == ["check"] and len(argv) == 1:
            n = len(load_all())
            print(f"systems: {n} system files valid")
        elif argv[:1] == ["shell"] and len(argv) <= 3:
            s = load(argv[1] if len(argv) > 1 else None)
            print(shell(s, argv[2] if len(argv) > 2 else "x86_64"))
        elif argv[:1] == ["boot-case"] and len(argv) == 3:
            print(load(argv[1]).boot_case(argv[2]))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (SystemFileError, topics.TopicError, OSError) as e:
        print(f"rust-mm: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
