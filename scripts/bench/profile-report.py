#!/usr/bin/env python3
"""Instructions per measured window, per kernel function, base vs patched.

Reads two block files written by tests/bench/insn_profile.c ("windows N",
then "VADDR NR_INSNS EXECUTIONS" lines; make profile runs it with cache=1,
whose five more columns are the block's atomic RMWs, loads, stores and
simulated L1d and LLC misses), attributes each block to the text symbol
containing its first instruction (System.map of the kernel that ran,
booted with nokaslr; user-space blocks count as "[user]"), and prints the
functions whose count differs most, with the totals. With the memory
model's columns, each function also gets its atomics, L1d and LLC misses
and the cost model's cycles (scripts/bench/cost_model.py) per window, base
and patched, and the functions whose model cycles differ most. Without
--base (a case only the patched kernel can run, e.g. pagemap-swap's
opted-in reader), the patched kernel's largest functions alone.

With --blocks F,G (make profile's PROFILE_BLOCKS), each named function's
blocks follow, base and patched: offset in the function, instructions,
executions per window, and the paths those executions took -- the
entries (executions of the block at offset 0) and the instructions per
entry, so that "+88,000 instructions" reads as "+19 on 4,000 of its
10,000 calls".
"""
import argparse
import bisect
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cost_model  # noqa: E402

KERNEL_START = 0xFFFF800000000000


def load_map(path):
    syms = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tTwW":
                syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


# Per function and window: instructions, and with the memory model's
# columns atomics, L1d and LLC misses (the loads and stores are in the
# file, not in the tables).
COLS = ("insns", "atomics", "l1d", "llc", "coherence")


def load_blocks(path, smap, blocks_of=()):
    """(windows, {function: instructions per window}, {function: {COLS:
    per window}} or None without the memory model's columns, {function in
    blocks_of: {(offset, instructions): executions per window}})."""
    addrs, names = smap
    per_sym, mem = {}, {}
    blocks = {n: {} for n in blocks_of}
    with open(path) as f:
        head = f.readline().split()
        if len(head) == 3 and head[0] == "windows" and head[2] == "open":
            sys.exit(f"{path}: a measured window never closed (the guest did not emit "
                     "its end marker)")
        if len(head) != 2 or head[0] != "windows" or int(head[1]) <= 0:
            sys.exit(f"{path}: no measured window recorded (the guest printed no marker)")
        windows = int(head[1])
        for line in f:
            if line.startswith("#"):
                continue
            cols = line.split()
            vaddr, insns, execs = cols[:3]
            vaddr = int(vaddr, 16)
            if vaddr < KERNEL_START:
                name = "[user]"
            else:
                i = bisect.bisect_right(addrs, vaddr) - 1
                name = names[i] if i >= 0 else "[unknown kernel]"
                if name in blocks:
                    # A line is one translation: the same block may be
                    # translated again (its executions add up).
                    key = (vaddr - addrs[i], int(insns))
                    blocks[name][key] = blocks[name].get(key, 0) + int(execs)
            per_sym[name] = per_sym.get(name, 0) + int(insns) * int(execs)
            if mem is not None and len(cols) in (8, 9):
                m = mem.setdefault(name, dict.fromkeys(COLS, 0))
                m["insns"] += int(insns) * int(execs)
                m["atomics"] += int(cols[3])
                m["l1d"] += int(cols[6])
                m["llc"] += int(cols[7])
                m["coherence"] += int(cols[8]) if len(cols) == 9 else 0
            else:
                mem = None
    if mem is not None:
        mem = {k: {c: v / windows for c, v in m.items()} for k, m in mem.items()}
    blocks = {k: {o: e / windows for o, e in b.items()} for k, b in blocks.items()}
    return windows, {k: v / windows for k, v in per_sym.items()}, mem, blocks


def print_blocks(funcs, kernels):
    """Each function's blocks per window in each kernel (kernels: [(name,
    {function: {(offset, instructions): executions}})]): where a
    function's instructions changed, path by path."""
    for f in funcs:
        print(f"\n# blocks of {f}, per window: offset, instructions x executions")
        for k, blocks in kernels:
            b = blocks.get(f, {})
            if not b:
                print(f"{k}: not executed in a window (or no such function)")
                continue
            entries = sum(e for (o, _), e in b.items() if o == 0)
            total = sum(n * e for (_, n), e in b.items())
            per = f"{total / entries:,.1f} instructions per entry" if entries else "never entered at its start"
            print(f"{k}: {total:,.0f} instructions, {entries:,.1f} entries, {per}")
            for (o, n), e in sorted(b.items()):
                print(f"  +0x{o:<6x} {n:>4} x {e:>12,.1f}")


def model_cycles(arch, m):
    """The cost model's cycles of one function's counts per window."""
    return cost_model.cycles(arch, {"insns": m["insns"], "atomics": m["atomics"],
                                    "l1d": m["l1d"], "llc": m["llc"]})


def print_memory(arch, base, patched, top):
    """The memory model's table: functions whose model cycles differ most."""
    zero = dict.fromkeys(COLS, 0)
    model = cost_model.MODELS[arch]
    cyc = {k: {n: model_cycles(arch, m) for n, m in d.items()} for k, d in (("b", base), ("p", patched))}
    tb, tp = sum(cyc["b"].values()), sum(cyc["p"].values())
    print(f"\n# memory model (cache=1) and cost model ({model['core']}: cycles = instructions + "
          f"{model['atomic']}*atomics + {model['l1d']}*L1d misses + {model['llc']}*LLC misses; "
          "scripts/bench/cost_model.py), per window")
    for c in ("atomics", "l1d", "llc", "coherence"):
        b, p = sum(m[c] for m in base.values()), sum(m[c] for m in patched.values())
        print(f"total {c}: base {b:,.1f}  patched {p:,.1f}  delta {p - b:+,.1f}")
    print(f"total model cycles: base {tb:,.0f}  patched {tp:,.0f}  delta {tp - tb:+,.0f} "
          f"({(tp / tb - 1) * 100 if tb else 0:+.2f}%)")
    print(f"\n{'function':<40} {'atomics b/p':>13} {'L1d miss b/p':>15} {'LLC miss b/p':>13} "
          f"{'coherence b/p':>13} {'cycles delta':>12}")
    names = set(base) | set(patched)
    for n in sorted(names, key=lambda n: -abs(cyc["p"].get(n, 0) - cyc["b"].get(n, 0)))[:top]:
        b, p = base.get(n, zero), patched.get(n, zero)
        print(f"{n[:40]:<40} {b['atomics']:>6.1f}/{p['atomics']:<6.1f} {b['l1d']:>7.1f}/{p['l1d']:<7.1f} "
              f"{b['llc']:>6.1f}/{p['llc']:<6.1f} {b['coherence']:>6.1f}/{p['coherence']:<6.1f} "
              f"{cyc['p'].get(n, 0) - cyc['b'].get(n, 0):>+12,.0f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--case", required=True)
    ap.add_argument("--base")
    ap.add_argument("--base-map")
    ap.add_argument("--patched", required=True)
    ap.add_argument("--patched-map", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--arch", default="x86_64", choices=sorted(cost_model.MODELS),
                    help="whose cost model weighs the memory model's counts")
    ap.add_argument("--blocks", default="",
                    help="functions whose blocks to list, comma- or space-separated")
    a = ap.parse_args()
    funcs = a.blocks.replace(",", " ").split()
    if not a.base:
        wp, patched, mem_p, blk_p = load_blocks(a.patched, load_map(a.patched_map), funcs)
        print(f"# {a.case}: instructions per measured window (patched {wp} windows; "
              "a case only the patched kernel runs: no base)")
        print(f"# reproduce: {a.command}")
        print(f"total: patched {sum(patched.values()):,.0f}")
        print(f"\n{'largest functions (patched)':<44} {'patched':>14}")
        for n in sorted(patched, key=lambda n: -patched[n])[:a.top]:
            print(f"{n[:44]:<44} {patched[n]:>14,.0f}")
        if mem_p is not None:
            print_memory(a.arch, {}, mem_p, a.top)
        print_blocks(funcs, [("patched", blk_p)])
        return
    wb, base, mem_b, blk_b = load_blocks(a.base, load_map(a.base_map), funcs)
    wp, patched, mem_p, blk_p = load_blocks(a.patched, load_map(a.patched_map), funcs)
    tb, tp = sum(base.values()), sum(patched.values())
    print(f"# {a.case}: instructions per measured window (base {wb}, patched {wp} windows)")
    print(f"# reproduce: {a.command}")
    print(f"total: base {tb:,.0f}  patched {tp:,.0f}  delta {tp - tb:+,.0f} "
          f"({(tp / tb - 1) * 100:+.2f}%)")
    print(f"\n{'function':<44} {'base':>14} {'patched':>14} {'delta':>12}")
    names = set(base) | set(patched)
    rows = sorted(names, key=lambda n: -abs(patched.get(n, 0) - base.get(n, 0)))
    for n in rows[:a.top]:
        b, p = base.get(n, 0), patched.get(n, 0)
        print(f"{n[:44]:<44} {b:>14,.0f} {p:>14,.0f} {p - b:>+12,.0f}")
    print(f"\n{'largest functions (patched)':<44} {'base':>14} {'patched':>14}")
    for n in sorted(patched, key=lambda n: -patched[n])[:a.top]:
        print(f"{n[:44]:<44} {base.get(n, 0):>14,.0f} {patched[n]:>14,.0f}")
    if mem_b is not None and mem_p is not None:
        print_memory(a.arch, mem_b, mem_p, a.top)
    print_blocks(funcs, [("base", blk_b), ("patched", blk_p)])


if __name__ == "__main__":
    main()
