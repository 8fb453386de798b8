#!/usr/bin/env bash
# `make profile`: where the instructions of a benchmark case go, per kernel
# function, base vs patched. The same kernels as `make bench`
# (scripts/bench-lib.sh), booted the same way (-icount shift=0, 2 vCPUs,
# 2 GiB, one fresh boot per case, nokaslr so that System.map applies) with
# tests/bench/insn_profile.c, a QEMU TCG plugin, counting the instructions
# of every block executed inside the case's measured windows (all vCPUs,
# kernel and user). scripts/profile-report.py maps the blocks to symbols
# and writes build/bench/profile-CASE.txt.
#   PROFILE_CASES   cases, e.g. "small.fork thp.pte-dontneed" (default small.fork)
#   PROFILE_RUNS    windows per case and kernel (default 3)
#   PROFILE_KERNELS which kernels to build and profile now (default "base
#                   patched"); the other's profile from an earlier run with
#                   the same settings is reused (said so)
#   BENCH_MIB       memory per case in MiB (default 256)
#   BENCH_TIMEOUT   seconds per guest before it counts as hung (default 5400)
set -uo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "$0")/env.sh"

CASES="${PROFILE_CASES:-small.fork}"
RUNS="${PROFILE_RUNS:-3}"
MIB="${BENCH_MIB:-256}"
TIMEOUT="${BENCH_TIMEOUT:-5400}"
OUT="$BUILD_DIR/bench"
mkdir -p "$OUT/profile"

# shellcheck source=scripts/bench-lib.sh
. "$RUST_MM_TOP/scripts/bench-lib.sh"
# Its own guest image, so that it can run beside `make bench`.
bench_prepare "$OUT/profile/initramfs.cpio"
plugin="$OUT/profile/insn_profile.so"
gcc -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -o "$plugin" \
	"$RUST_MM_TOP/tests/bench/insn_profile.c" || die "cannot build tests/bench/insn_profile.c"

profile() { # KERNEL CASE
	local dir="$OUT/kernel-$1" log="$OUT/profile/console-$1-$2.log"
	local data="$OUT/profile/$1-$2.blocks" group="${2%%.*}" rc
	[[ "$2" == anon-cow-* ]] && group=anon-cow
	rm -f "$data"
	say "[$1] profiling $2: $RUNS windows of $MIB MiB (console: $log)"
	timeout "$TIMEOUT" qemu-system-x86_64 -nodefaults -m 2048 -smp 2 -icount shift=0 \
		-plugin "$plugin,arg=out=$data" \
		-kernel "$dir/arch/x86/boot/bzImage" -initrd "$OUT/profile/initramfs.cpio" \
		-append "console=ttyS0 panic=-1 nokaslr kunit.enable=0 rdinit=/init RUSTMM_BENCH_RUNS=$RUNS RUSTMM_BENCH_MIB=$MIB RUSTMM_BENCH_GROUP=$group RUSTMM_BENCH_PROFILE=$2" \
		-no-reboot -nographic -serial stdio -bios qboot.rom < /dev/null 2>&1 |
		tr -d '\r' > "$log"
	rc=${PIPESTATUS[0]}
	if [ "$rc" -ne 0 ] || grep -q 'Kernel panic' "$log" ||
		! grep -q '^RUSTMM-BENCH-DONE errors=0' "$log" || [ ! -s "$data" ]; then
		echo "rust-mm: [$1] the $2 profile did not complete (qemu exit $rc); console tail:"
		tail -n 30 "$log" | sed 's/^/  | /'
		die "no profile from partial results"
	fi
	[ "$(head -n 1 "$data")" = "windows $RUNS" ] ||
		die "[$1] $data has '$(head -n 1 "$data")', not 'windows $RUNS' (no such case?)"
}

KERNELS="${PROFILE_KERNELS:-base patched}"
for k in base patched; do
	if [[ " $KERNELS " == *" $k "* ]]; then
		build_kernel "$k"
		for c in $CASES; do
			profile "$k" "$c"
		done
		continue
	fi
	for c in $CASES; do
		grep -q "RUSTMM_BENCH_RUNS=$RUNS RUSTMM_BENCH_MIB=$MIB " "$OUT/profile/console-$k-$c.log" 2>/dev/null &&
			[ "$(head -n 1 "$OUT/profile/$k-$c.blocks" 2>/dev/null)" = "windows $RUNS" ] ||
			die "[$k] no earlier $c profile with PROFILE_RUNS=$RUNS BENCH_MIB=$MIB to reuse; run it: PROFILE_KERNELS=$k"
		say "[$k] reusing the earlier $c profile ($OUT/profile/$k-$c.blocks)"
	done
done
for c in $CASES; do
	python3 "$RUST_MM_TOP/scripts/profile-report.py" --case "$c" \
		--base "$OUT/profile/base-$c.blocks" --base-map "$OUT/kernel-base/System.map" \
		--patched "$OUT/profile/patched-$c.blocks" --patched-map "$OUT/kernel-patched/System.map" \
		--command "make profile PROFILE_CASES=$c PROFILE_RUNS=$RUNS BENCH_MIB=$MIB" \
		> "$OUT/profile-$c.txt" || die "profile-report.py failed"
	cat "$OUT/profile-$c.txt"
	say "profile: $OUT/profile-$c.txt"
done
