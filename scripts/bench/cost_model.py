#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What the profiling plugin's counted windows say beyond instructions, and
the one cost model that weighs them (issue 46; docs/benchmarking.md).

The plugin (tests/bench/insn_profile.c, cache=1) writes, per closed window
and in the order the windows closed, a line
"# window I INSNS ATOMICS LOADS STORES L1D_MISSES LLC_MISSES". The guest's
console (tests/bench/rmap_bench.c with RUSTMM_BENCH_PROFILE=*) prints one
line per measured attempt, in the same order: "RUSTMM-BENCH <name> <run> ..."
for a run it kept, "RUSTMM-BENCH-REJECT <name> <run> ..." for a window it
threw away (background work moved a counter). pair() puts them together
and keeps the kept runs' windows, per name.

The cost model, one for each arch, states the cycles an instruction count
does not see:

    cycles ≈ instructions + w_atomic·atomics + w_l1d·L1d misses + w_llc·LLC misses

with weights from the published latencies of one named core (MODELS; the
sources are cited beside each). It is an estimate of a serial core: it
ignores memory-level parallelism and out-of-order overlap (which make real
misses cheaper), and coherence traffic, contention, the TLB and the
prefetchers (which the simulated caches cannot see at all).
"""
import re

# The columns of a window, in the plugin's order.
METRICS = ("insns", "atomics", "loads", "stores", "l1d", "llc")

# Per arch: the core the weights are taken from, the extra cycles each
# event costs beyond the one instruction that caused it, and where each
# figure comes from (docs/benchmarking.md quotes them).
MODELS = {
    "x86_64": {
        "core": "Intel Golden Cove (Sapphire Rapids)",
        "atomic": 18,
        "l1d": 11,
        "llc": 250,
        "sources": {
            "atomic": "uncontended LOCK ADD/XADD/CMPXCHG on a line in L1d: about 18-20 cycles "
                      "(uops.info, Alder Lake-P, the same core)",
            "l1d": "an L1d miss that hits L2: L2 16 cycles minus the 5-cycle L1d hit an "
                   "instruction already costs (Intel optimization manual, Golden Cove)",
            "llc": "an LLC miss to DRAM: about 110 ns at 2.3 GHz, minus the L2 hit",
        },
    },
    "arm64": {
        "core": "Arm Neoverse V2 (NVIDIA Grace)",
        "atomic": 10,
        "l1d": 7,
        "llc": 250,
        "sources": {
            "atomic": "LSE LDADD/CAS on a line in L1d (Neoverse V2 software optimization guide)",
            "l1d": "an L1d miss that hits L2: L2 11 cycles minus the 4-cycle L1d hit",
            "llc": "an LLC miss to DRAM: about 110 ns at 3.1 GHz, less the on-chip part",
        },
    },
}

WINDOW = re.compile(r"^# window (\d+) (\d+)((?: \d+){5})?$")
ATTEMPT = re.compile(r"^RUSTMM-BENCH(-REJECT)? (\S+) (\d+) ")


def cycles(arch, w):
    """The model's cycles of window @w (a dict of METRICS)."""
    m = MODELS[arch]
    return w["insns"] + m["atomic"] * w["atomics"] + m["l1d"] * w["l1d"] + m["llc"] * w["llc"]


def read_counts(path):
    """The windows of a plugin file with cache=1: (the "windows N" count,
    [one dict of METRICS per closed window]). Raises ValueError on a file
    without the memory model's columns, with a window that never closed, or
    whose closed windows are not its opened ones."""
    with open(path) as f:
        head = f.readline().split()
        if len(head) == 3 and head[2] == "open":
            raise ValueError(f"{path}: a measured window never closed")
        if len(head) != 2 or head[0] != "windows":
            raise ValueError(f"{path}: not a plugin file (first line {' '.join(head)!r})")
        n = int(head[1])
        windows = []
        for line in f:
            if not line.startswith("# window "):
                continue
            m = WINDOW.match(line.strip())
            if not m or not m.group(3):
                raise ValueError(f"{path}: {line.strip()!r} has no memory-model columns (cache=1)")
            if int(m.group(1)) != len(windows) + 1:
                raise ValueError(f"{path}: window {m.group(1)} out of order")
            windows.append(dict(zip(METRICS, [int(m.group(2))] + [int(x) for x in m.group(3).split()])))
    if len(windows) != n:
        raise ValueError(f"{path}: {n} windows opened, {len(windows)} closed")
    return n, windows


def attempts(console):
    """The measured attempts of a console log, in order: (name, run, kept).
    The warm-up (run 0) has no window."""
    out = []
    with open(console, errors="replace") as f:
        for line in f:
            m = ATTEMPT.match(line.strip())
            if m and int(m.group(3)) > 0:
                out.append((m.group(2), int(m.group(3)), not m.group(1)))
    return out


def pair(console, counts):
    """{name: [window dict of each kept run, in run order]} of a counted
    boot. Raises ValueError when the plugin's windows are not the console's
    attempts one for one."""
    tries = attempts(console)
    _, windows = read_counts(counts)
    if len(tries) != len(windows):
        raise ValueError(f"{counts}: {len(windows)} windows, but {console} shows {len(tries)} "
                         "measured attempts")
    out = {}
    for (name, _, kept), w in zip(tries, windows):
        if kept:
            out.setdefault(name, []).append(w)
    return out
