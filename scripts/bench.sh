#!/usr/bin/env bash
# `make bench`: the rmap micro benchmarks and anon-cow cases
# (tests/bench/rmap_bench.c) on two kernels built the same way from the
# pinned tree with tests/bench/bench.kunitconfig: the base (series not
# applied) and the patched one (series applied, CONFIG_MM_RMAP_ID=y). Each
# boots alone under QEMU x86_64 with -icount shift=0 (guest time counts
# executed instructions, so it does not depend on the host's load), 2
# vCPUs, 2 GiB, once per group of cases (thp, small, anon-cow: a fresh
# boot each), and runs every case BENCH_RUNS times (default 5). Then
# scripts/bench-report.py writes docs/benchmarks.{md,json,png}.
#   BENCH_RUNS      runs per case and kernel (default 5)
#   BENCH_MIB       memory per case in MiB (default 256)
#   BENCH_TIMEOUT   seconds per guest before it counts as hung (default 5400)
#   BENCH_KERNELS   which kernels to build and run now (default "base
#                   patched"); the other's complete console log from an
#                   earlier run with the same settings is reused (said so)
# A kernel that does not build, a guest that hangs or panics, or a run that
# stops before the end stops everything with the console tail; no report
# is written from partial results.
set -uo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "$0")/env.sh"

RUNS="${BENCH_RUNS:-5}"
MIB="${BENCH_MIB:-256}"
TIMEOUT="${BENCH_TIMEOUT:-5400}"
OUT="$BUILD_DIR/bench"
mkdir -p "$OUT"

# shellcheck source=scripts/bench-lib.sh
. "$RUST_MM_TOP/scripts/bench-lib.sh"
bench_prepare

GROUPS_RUN="thp small anon-cow"
declare -A GROUP_CASES=([thp]=8 [small]=8 [anon-cow]=2)

boot() { # NAME GROUP
	local dir="$OUT/kernel-$1" log="$OUT/console-$1-$2.log" rc
	say "[$1] booting for the $2 cases with -icount shift=0: $RUNS runs x ${GROUP_CASES[$2]} cases of $MIB MiB (console: $log)"
	timeout "$TIMEOUT" qemu-system-x86_64 -nodefaults -m 2048 -smp 2 -icount shift=0 \
		-kernel "$dir/arch/x86/boot/bzImage" -initrd "$OUT/initramfs.cpio" \
		-append "console=ttyS0 panic=-1 kunit.enable=0 rdinit=/init RUSTMM_BENCH_RUNS=$RUNS RUSTMM_BENCH_MIB=$MIB RUSTMM_BENCH_GROUP=$2" \
		-no-reboot -nographic -serial stdio -bios qboot.rom < /dev/null 2>&1 |
		tr -d '\r' | tee "$log" |
		sed -u -n "s/^RUSTMM-BENCH \([^ ]*\) \([0-9]*\) \([0-9]*\)$/rust-mm: [$1] \1 run \2\/$RUNS: \3 ns/p; s/^RUSTMM-BENCH-ERROR /rust-mm: [$1] ERROR /p"
	rc=${PIPESTATUS[0]}
	local broken=""
	if [ "$rc" -eq 124 ]; then
		broken="the guest did not finish within ${TIMEOUT}s (hung)"
	elif grep -q 'Kernel panic' "$log"; then
		broken="the guest kernel panicked"
	elif ! grep -q '^RUSTMM-BENCH-DONE errors=0' "$log"; then
		broken="the benchmark did not complete cleanly (qemu exit $rc)"
	elif [ "$(grep -c '^RUSTMM-BENCH [^ ]* [0-9]* [0-9]*$' "$log")" -ne $((RUNS * GROUP_CASES[$2])) ]; then
		broken="the $2 boot reported $(grep -c '^RUSTMM-BENCH [^ ]* [0-9]* [0-9]*$' "$log") results, not $((RUNS * GROUP_CASES[$2]))"
	fi
	if [ -n "$broken" ]; then
		echo "rust-mm: [$1] $broken; console tail:"
		tail -n 30 "$log" | sed 's/^/  | /'
		die "no benchmark report from partial results"
	fi
}

# One fresh boot per group: the order-0 cases must not run after the THP
# cases, whose allocations differ between the kernels (COW reuse allocates
# nothing), or the page allocator's state makes order-0 code that is the
# same in both kernels look faster or slower. console-NAME.log joins the
# groups' logs once all of them are complete.
run() { # NAME
	local g log="$OUT/console-$1.log"
	rm -f "$log"
	for g in $GROUPS_RUN; do
		boot "$1" "$g"
	done
	for g in $GROUPS_RUN; do
		cat "$OUT/console-$1-$g.log"
	done > "$log.tmp" && mv "$log.tmp" "$log"
}

KERNELS="${BENCH_KERNELS:-base patched}"
for k in base patched; do
	if [[ " $KERNELS " == *" $k "* ]]; then
		build_kernel "$k"
		run "$k"
	else
		log="$OUT/console-$k.log"
		grep -q '^RUSTMM-BENCH-DONE errors=0' "$log" 2>/dev/null ||
			die "[$k] no complete earlier run to reuse ($log); run it: BENCH_KERNELS=$k"
		[ "$(grep -c "^RUSTMM-BENCH [^ ]* $RUNS " "$log")" -eq 18 ] ||
			die "[$k] the earlier run in $log was not made with BENCH_RUNS=$RUNS"
		[ "$(grep -c '^RUSTMM-BENCH-DONE errors=0' "$log")" -eq 3 ] &&
			grep -q 'RUSTMM_BENCH_GROUP=small' "$log" ||
			die "[$k] the earlier run in $log was not made with one boot per group"
		grep -q "RUSTMM_BENCH_MIB=$MIB\b" "$log" ||
			die "[$k] the earlier run in $log was not made with BENCH_MIB=$MIB"
		say "[$k] reusing the complete earlier run in $log"
	fi
done

cmd="make bench BENCH_RUNS=$RUNS BENCH_MIB=$MIB"
python3 "$RUST_MM_TOP/scripts/bench-report.py" \
	--base "$OUT/console-base.log" --patched "$OUT/console-patched.log" \
	--base-config "$OUT/kernel-base/.config" --patched-config "$OUT/kernel-patched/.config" \
	--tree "$(make -s -C "$KSRC" kernelversion) ($RUST_MM_PIN_DEB)" \
	--series "$(grep -vc '^#' "$RUST_MM_TOP/kernel-patches/series") + 1 patches (rust/mm as 0001)" \
	--command "$cmd" --runs "$RUNS" --mib "$MIB" \
	--out "$RUST_MM_TOP/docs/benchmarks" || die "bench-report.py failed"
say "report: docs/benchmarks.md, docs/benchmarks.json, docs/benchmarks.png"
