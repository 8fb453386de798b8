#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What the profiling plugin's counted windows say beyond instructions, and
the one cost model that weighs them (issue 46; docs/benchmarking.md).

The plugin (tests/bench/insn_profile.c, cache=1) writes, per closed window
and in the order the windows closed, a line
"# window I INSNS ATOMICS LOADS STORES L1D_MISSES LLC_MISSES COHERENCE_MISSES"
(files of before coherence have no last column: None, not counted). The guest's
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
METRICS = ("insns", "atomics", "loads", "stores", "l1d", "llc", "coherence")

# Per arch: the core the weights are taken from, the extra cycles each
# event costs beyond the one instruction that caused it, and where each
# figure comes from (docs/benchmarking.md quotes them).
MODELS = {
    "x86_64": {
        "core": "Intel Golden Cove (Sapphire Rapids) at 3.5 GHz",
        "atomic": 17,
        "l1d": 11,
        "llc": 320,
        "sources": {
            "atomic": "LOCK INC m32: latency 18 cycles, LOCK CMPXCHG m64: 19, on Alder Lake-P's "
                      "Golden Cove (uops.info, INC_LOCK_M32 and CMPXCHG_LOCK_M64_R64); 18 less the "
                      "one instruction already counted",
            "l1d": "L1d load-to-use 5 cycles (LLVM X86SchedSapphireRapids.td: LoadLatency = 5; "
                   "Chips and Cheese, 'Going Armchair Quarterback on Golden Cove's Caches'), L2 "
                   "16 cycles (~5 ns at 3.5 GHz, a Sapphire Rapids simulator configuration "
                   "compiled from Chips and Cheese and AnandTech): an L1d miss that hits costs "
                   "16 - 5",
            "llc": "DRAM 95-97 ns idle to the local node of a Xeon Platinum 8468 (Intel Memory "
                   "Latency Checker v3.11a, gjbex/Code-optimization sapphirerapids_mlc.txt): "
                   "96 ns = 336 cycles at 3.5 GHz, less the L2 hit the L1d miss already costs",
        },
    },
    "arm64": {
        "core": "Arm Neoverse V2 (AWS Graviton4) at 2.8 GHz",
        "atomic": 13,
        "l1d": 7,
        "llc": 297,
        "sources": {
            "atomic": "no published V2 figure for an LSE atomic on a line in L1d: a CAS measured "
                      "at 14 cycles on Cortex-A78 (llvm-project PR #211195); 14 less the one "
                      "instruction. V2 may run an atomic whose result is unused (STADD) 'far', "
                      "about 50 ns (P. McKenney, C. Marinas, linux-arm-kernel, Oct-Nov 2025): "
                      "this weight does not cover that",
            "l1d": "L1d 1.4 ns, L2 4.0 ns on Graviton4 (Arm Learning Path, 'Measure cache and "
                   "memory latency with a pointer chase'); 4 and 11 cycles at 2.8 GHz "
                   "(LLVM AArch64SchedNeoverseV2.td: LoadLatency = 4)",
            "llc": "DRAM 110 ns on Graviton4 (the same pointer chase): 308 cycles at 2.8 GHz, "
                   "less the L2 hit",
        },
    },
}

WINDOW = re.compile(r"^# window (\d+) (\d+)((?: \d+){5,6})?$")
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
            cols = [int(m.group(2))] + [int(x) for x in m.group(3).split()]
            # A plugin of before coherence: not counted (None), not 0.
            windows.append(dict(zip(METRICS, cols + [None] * (len(METRICS) - len(cols)))))
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
