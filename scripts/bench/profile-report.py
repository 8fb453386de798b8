#!/usr/bin/env python3
"""Instructions per measured window, per kernel function, base vs patched.

Reads two block files written by tests/bench/insn_profile.c ("windows N",
then "VADDR NR_INSNS EXECUTIONS" lines, with the plugin's cache=1 five
more columns and a "# cache" line, which this report does not use yet),
attributes each block to the
text symbol containing its first instruction (System.map of the kernel
that ran, booted with nokaslr; user-space blocks count as "[user]"), and
prints the functions whose count differs most, with the totals. Without
--base (a case only the patched kernel can run, e.g. pagemap-swap's
opted-in reader), the patched kernel's largest functions alone.
"""
import argparse
import bisect
import sys

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


def load_blocks(path, smap):
    addrs, names = smap
    per_sym = {}
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
            vaddr, insns, execs = line.split()[:3]
            vaddr = int(vaddr, 16)
            if vaddr < KERNEL_START:
                name = "[user]"
            else:
                i = bisect.bisect_right(addrs, vaddr) - 1
                name = names[i] if i >= 0 else "[unknown kernel]"
            per_sym[name] = per_sym.get(name, 0) + int(insns) * int(execs)
    return windows, {k: v / windows for k, v in per_sym.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--case", required=True)
    ap.add_argument("--base")
    ap.add_argument("--base-map")
    ap.add_argument("--patched", required=True)
    ap.add_argument("--patched-map", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    if not a.base:
        wp, patched = load_blocks(a.patched, load_map(a.patched_map))
        print(f"# {a.case}: instructions per measured window (patched {wp} windows; "
              "a case only the patched kernel runs: no base)")
        print(f"# reproduce: {a.command}")
        print(f"total: patched {sum(patched.values()):,.0f}")
        print(f"\n{'largest functions (patched)':<44} {'patched':>14}")
        for n in sorted(patched, key=lambda n: -patched[n])[:a.top]:
            print(f"{n[:44]:<44} {patched[n]:>14,.0f}")
        return
    wb, base = load_blocks(a.base, load_map(a.base_map))
    wp, patched = load_blocks(a.patched, load_map(a.patched_map))
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


if __name__ == "__main__":
    main()
