#!/usr/bin/env bash
# Boot reproducers of upstream problems (tests/repro/*.c) in one QEMU
# guest and print what they print. The guest is run-userspace.sh's
# machine without the test-specific parts: TCG, 3 vCPUs, 4 GiB of RAM in
# two NUMA nodes (numa=fake=2 on x86_64; QEMU's -numa through the device
# tree on arm64), tests/userspace/init.c as /init, no swap, no hugetlb
# pages; khugepaged asleep (init does that always). x86_64 has 7 GiB, of
# which [4G, 4G + 2M) is reserved and [4G + 2M, 7G) legacy pmem for
# tests/repro/devdax_misaligned_heads.c (a namespace 2 MiB- but not
# 1 GiB-aligned): 4 GiB of RAM, as on arm64.
#
#   run-repro.sh [NAME[:ARG,ARG...] ...]
#
# NAME is a tests/repro/NAME.c, built static; ARGs become its arguments
# (/tests/NAME.args, one per line), e.g.
#   run-repro.sh uffd_unregister_race:200000 thp_migration_requeue
# Without a NAME every reproducer runs once, without arguments, in name
# order. A NAME given twice runs twice (the second as NAME_2, ...).
#
#   REPRO_KERNEL        kernel build directory to boot (default: the
#                       unpatched KUnit build of make userspace-base,
#                       build/kunit-base[-<target>]; build-6.12/... with
#                       RUST_MM_BASE=6.12)
#   REPRO_LOG           console log (default build/repro[-<target>].log;
#                       without carriage returns in <log>.txt)
#   REPRO_PROG_TIMEOUT  seconds init gives each program (default 1200)
#   REPRO_TIMEOUT       seconds before the guest counts as hung (default:
#                       every program's limit, plus 300)
#
# Prints the lines each program printed to the console (kernel messages,
# which carry a printk time stamp, left out), then one line per program:
# 'repro: NAME exit N (T s)'. Stops with an error (console tail shown) if
# the guest hangs, panics or does not reach init's end marker
# "RUSTMM-DONE"; exits 1 if a program did not exit 0 (reproducers exit
# nonzero on set-up errors only) or timed out. Kernel warnings and BUGs in
# the console are shown, not judged: a reproducer may provoke them.
set -uo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

KOUT="${REPRO_KERNEL:-$BUILD_DIR/kunit-base$TSUFFIX}"
KERNEL="$KOUT/$KIMAGE"
ROOT="$BUILD_DIR/initramfs-repro$TSUFFIX"
CPIO="$ROOT.cpio"
LOG="${REPRO_LOG:-$BUILD_DIR/repro$TSUFFIX.log}"
PROG_TIMEOUT="${REPRO_PROG_TIMEOUT:-1200}"
REPRO_DIR="$RUST_MM_TOP/tests/repro"

[[ "$PROG_TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "REPRO_PROG_TIMEOUT=$PROG_TIMEOUT: seconds, please"
[ -f "$KERNEL" ] ||
	die "no kernel at $KERNEL (the unpatched one: RUST_MM_BASE=$RUST_MM_BASE make userspace-base ARCH=$ARCH; or set REPRO_KERNEL)"
[ -f "$KOUT/.config" ] || die "no .config in $KOUT"
need_qemu
need_ucc
needs=(BLK_DEV_INITRD DEVTMPFS NUMA PRINTK_TIME)
[ "$KARCH" = x86_64 ] && needs+=(NUMA_EMU)
for c in "${needs[@]}"; do
	grep -q "^CONFIG_$c=y" "$KOUT/.config" ||
		die "the kernel in $KOUT lacks CONFIG_$c (tests/kunit/*.kunitconfig have it)"
done

available=()
for src in "$REPRO_DIR"/*.c; do
	[ -f "$src" ] && available+=("$(basename "$src" .c)")
done
[ ${#available[@]} -gt 0 ] || die "no reproducers in $REPRO_DIR"
[ $# -gt 0 ] || set -- "${available[@]}"

rm -rf "$ROOT" && mkdir -p "$ROOT/tests"
cflags=(-O2 -Wall -Wextra -Werror -static)
"$UCC" "${cflags[@]}" -o "$ROOT/init" "$RUST_MM_TOP/tests/userspace/init.c" ||
	die "cannot build tests/userspace/init.c ($UCC with static libc needed: $UCC_PKG)"
: > "$ROOT/tests/order"
declare -A built=()
progs=()
for spec in "$@"; do
	name="${spec%%:*}" args=""
	[ "$name" = "$spec" ] || args="${spec#*:}"
	if ! [[ "$name" =~ ^[A-Za-z0-9_]+$ ]] || [ ! -f "$REPRO_DIR/$name.c" ]; then
		die "no reproducer '$name' (tests/repro/$name.c); there are: ${available[*]}"
	fi
	# The program's name in the guest: NAME, then NAME_2, NAME_3, ...
	inst="$name" n=1
	while [ -n "${built[$inst]:-}" ]; do
		n=$((n + 1))
		inst="${name}_$n"
	done
	if [ "$inst" = "$name" ]; then
		"$UCC" "${cflags[@]}" -o "$ROOT/tests/$inst" "$REPRO_DIR/$name.c" -lpthread ||
			die "cannot build tests/repro/$name.c"
	else
		cp "$ROOT/tests/$name" "$ROOT/tests/$inst"
	fi
	built[$inst]=1
	[ -z "$args" ] || tr ',' '\n' <<<"$args" > "$ROOT/tests/$inst.args"
	echo "$PROG_TIMEOUT" > "$ROOT/tests/$inst.timeout"
	echo "$inst" >> "$ROOT/tests/order"
	progs+=("$inst")
done
(cd "$ROOT" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$CPIO" ||
	die "cannot build $CPIO"
TIMEOUT="${REPRO_TIMEOUT:-$((${#progs[@]} * PROG_TIMEOUT + 300))}"

# run-userspace.sh's machine and command line, less what only its tests
# need (zram swap, hugetlb pages, init's RUSTMM_* settings), with the
# legacy pmem of devdax_misaligned_heads on x86_64.
append="console=$CONSOLE panic=-1 kunit.enable=0 rdinit=/init proc_mem.force_override=always"
numa=() cpu=() mem=4096
case "$KARCH" in
x86_64) append="$append numa=fake=2 memmap=2M\$4G memmap=3070M!4098M"
	cpu=(-cpu qemu64,+pdpe1gb) mem=7168 ;;
arm64) numa=(-object memory-backend-ram,id=m0,size=2G -object memory-backend-ram,id=m1,size=2G
	     -numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,cpus=2,memdev=m1) ;;
esac
say "booting $KERNEL ($TARGET) with ${progs[*]}; console: $LOG"
timeout "$TIMEOUT" "$QEMU" -nodefaults "${QEMU_ARGS[@]}" "${cpu[@]}" -m "$mem" -smp 3 "${numa[@]}" \
	-kernel "$KERNEL" -initrd "$CPIO" -append "$append" \
	-no-reboot -nographic -serial stdio < /dev/null > "$LOG" 2>&1
rc=$?
tr -d '\r' < "$LOG" > "$LOG.txt"

# What each program printed: the lines between init's start and end
# lines for it, less the kernel's (printk time stamps). Then how each
# ended: 'NAME exit N' (or 'killed by signal N', 'timeout after N s', or
# 'did not end') and its guest time.
awk '
/^RUSTMM-PROGRAM [^ ]+ start$/ { cur = $2; next }
/^RUSTMM-PROGRAM-TIME / { t[$2] = $3; next }
/^RUSTMM-PROGRAM [^ ]+ / {
	name = $2; $1 = ""; $2 = ""; sub(/^ +/, "")
	end[name] = $0; cur = ""; next
}
cur != "" && !/^\[ *[0-9]+\.[0-9]+\]/ && NF { print }
END {
	n = split(progs, p, " ")
	for (i = 1; i <= n; i++)
		printf "repro: %s %s%s\n", p[i], p[i] in end ? end[p[i]] : "did not end",
		       p[i] in t ? " (" t[p[i]] " s)" : ""
}' progs="${progs[*]}" "$LOG.txt"

warn="$(grep -E '(WARNING|BUG):|Oops|Kernel panic' "$LOG.txt" | head -n 10)"
[ -z "$warn" ] || { echo "rust-mm: kernel warnings/BUGs in $LOG.txt:"; sed 's/^/  | /' <<<"$warn"; }

broken="$(guest_broken "$rc" "$LOG.txt" "$TIMEOUT")"
if [ -n "$broken" ]; then
	echo "rust-mm: console tail ($LOG.txt):"
	tail -n 30 "$LOG.txt" | sed 's/^/  | /'
	die "$broken"
fi
bad=0
for p in "${progs[@]}"; do
	grep -q "^RUSTMM-PROGRAM $p exit 0$" "$LOG.txt" || bad=$((bad + 1))
done
[ "$bad" -eq 0 ] || die "$bad of ${#progs[@]} program(s) did not exit 0 (see above; console: $LOG.txt)"
