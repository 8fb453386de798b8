#!/usr/bin/env bash
# `make bench`: the rmap micro benchmarks and anon-cow cases
# (tests/bench/rmap_bench.c) on two kernels built the same way from the
# pinned tree with tests/bench/bench.kunitconfig: the base (series not
# applied) and the patched one (series applied, CONFIG_MM_RMAP_ID=y).
# ARCH=arm64 (4K pages) runs them under qemu-system-aarch64 and adds the
# cases on 64 KiB mTHP (mthp.*, one contiguous-PTE block); its kernels,
# logs and report are build/bench-arm64 and docs/benchmarks-arm64.*.
#
# Method (docs/benchmarks.md says why):
#   - QEMU (x86_64 or aarch64) under TCG with -icount shift=0,sleep=off: guest time is a
#     count of executed instructions, and idle time jumps to the next timer
#     instead of following the host's clock, so nothing of the host leaks
#     in; 2 vCPUs, 2 GiB, CPU 1 isolated for the measured process;
#   - one fresh boot per case (the allocator never carries state from
#     another case), BENCH_BOOTS boots per case and kernel, in alternating
#     order (base, patched, base, patched, ...: BENCH_JOBS guests at a
#     time, started in that order), BENCH_RUNS runs per boot (4x for the
#     cases below 10 ms);
#   - scripts/bench/bench-report.py: median of boot medians, a bootstrap
#     confidence interval of the ratio, a verdict per case; runs with short
#     THP allocation, disturbed windows and unverified folios are refused.
#   BENCH_BOOTS     boots per case and kernel (default 5, at least 3)
#   BENCH_RUNS      runs per boot (default 5)
#   BENCH_MIB       memory per case in MiB (default 256)
#   BENCH_JOBS      guests run at once (default 2: one per host core; under
#                   -icount sleep=off guest time does not depend on it)
#   BENCH_CASES     cases to run (default all 18; 25 on arm64); the report of a subset
#                   goes to build/bench/partial/, never into docs/
#   BENCH_TIMEOUT   seconds per guest before it counts as hung (default 3600)
#   BENCH_SYSTEM    the system measured (default rmap-id): rmap-id's patched
#                   kernel has CONFIG_MM_RMAP_ID=y; contpte (ARCH=arm64) has
#                   only CONFIG_ARM64_CONTPTE_RUST=y, runs seed 001's cases
#                   (fork, munmap, MADV_DONTNEED on 2M THP, 64K mTHP and
#                   order-0) against a +-0.5 % target, and writes
#                   build/bench-arm64-contpte and docs/benchmarks-contpte-arm64.*;
#                   vma-lock has only CONFIG_PER_VMA_LOCK_RUST=y, runs the
#                   per-VMA lock's cases (page faults with 1 and 2 threads,
#                   mmap churn, fork of 1000 vmas; +1 % target) and one
#                   more boot per kernel with slab_nomerge that reads the
#                   slab bytes per vma of 40,000 vmas (vma.slab), and
#                   writes docs/benchmarks-vma-lock.*;
#                   pagemap-swap has only CONFIG_PAGEMAP_SHARED_SWAP=y
#                   (both kernels get zram, booted with 512 MiB of zram
#                   swap), runs pm.d0/d50/d100 (pagemap of a memfd and of
#                   private anon memory, 0/50/100 % written, half of that
#                   paged out; 1/64/512/1024-entry reads) and pm.d50rev
#                   (d50 paged out in reverse: scattered swap slots), and writes
#                   docs/benchmarks-pagemap-swap.*: the reader without
#                   the opt-in within +-0.5 % of the base, the opted-in
#                   reader of shared memory within 1.5x of the private
#                   anon reader on the patched kernel;
#                   compound-pagemaps (x86_64) has only
#                   CONFIG_COMPOUND_PAGEMAPS_RUST=y (both kernels get
#                   legacy pmem, nvdimm and device-dax, gup_test; booted
#                   with memmap=512M!1G), runs gup_test's get/pin_user_pages_fast
#                   over a 2M- and a 4K-aligned /dev/dax0.0 and the slow
#                   get_user_pages over the 2M one (cp.*; the time is
#                   gup_test's get loop alone), and writes
#                   docs/benchmarks-compound-pagemaps.*: gup-fast on 2 MiB
#                   folios at least 10x fewer instructions, 4K and the
#                   slow path within +-0.5 % of the base
#   BENCH_LTO       1: both kernels are Clang ThinLTO builds
#                   (CONFIG_LTO_CLANG_THIN=y), and the patched one has
#                   rust/mm in the LTO link (CONFIG_RUST_MM_LTO=y), which
#                   scripts/test/lto-check.py must prove inlined from its vmlinux
#                   before any boot; build/bench[-SYSTEM]-lto and
#                   docs/benchmarks[-SYSTEM]-lto.* (docs/lto.md)
#   BENCH_MMS       N > 0: the cases run in a process forked after N idle
#                   processes (RUSTMM_BENCH_MMS, tests/bench/rmap_bench.c),
#                   so its rmap ID is above N, as on a machine with N
#                   processes (the guest's own are below 64: one live
#                   sub-ID of an order-9 folio's four; 4000 gives two);
#                   build/bench[-SYSTEM][-lto]-mmsN and
#                   docs/benchmarks[-SYSTEM][-lto]-mmsN.* (rmap-id only)
#   BENCH_KERNELS   which kernels to build and run now (default "base
#                   patched"); the other's logs from an earlier run are
#                   reused only if they were made with the same settings,
#                   the same kernel image and the same initramfs (hashes),
#                   and the report names them as reused; BENCH_KERNELS=
#                   (empty) only rewrites the report from the last run
# A kernel that does not build, or a guest that hangs, panics or stops
# before the end, stops everything with the console tail; no report is
# written from partial results.
set -uo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
case "$TARGET" in
x86_64|arm64) ;;
*) die "make bench runs on x86_64 and arm64 with 4K pages (GRANULE=$GRANULE: the benchmark's sizes are 4K's)" ;;
esac

BOOTS="${BENCH_BOOTS:-5}"
RUNS="${BENCH_RUNS:-5}"
MIB="${BENCH_MIB:-256}"
JOBS="${BENCH_JOBS:-2}"
TIMEOUT="${BENCH_TIMEOUT:-3600}"
ALL_CASES="thp.remap thp.munmap thp.fork thp.cow thp.cow-byte thp.cow-reuse thp.cow-reuse-byte thp.pte-dontneed
small.remap small.munmap small.fork small.cow small.cow-byte small.cow-reuse small.cow-reuse-byte small.pte-dontneed
anon-cow-seq anon-cow-rand"
# arm64: the same cases on 64 KiB mTHP, PTE-mapped from the start (no remap).
[ "$TARGET" = arm64 ] &&
	ALL_CASES="$ALL_CASES mthp.munmap mthp.fork mthp.cow mthp.cow-byte mthp.cow-reuse mthp.cow-reuse-byte mthp.pte-dontneed"
SYSTEM="${BENCH_SYSTEM:-rmap-id}"
# Kernel command-line words the system's guests get beyond the harness's.
BENCH_APPEND=""
case "$SYSTEM" in
rmap-id) SYS_SUFFIX="" ;;
contpte)
	[ "$KARCH" = arm64 ] || die "BENCH_SYSTEM=contpte measures arm64's contiguous PTEs: use ARCH=arm64"
	SYS_SUFFIX=-contpte
	ALL_CASES="thp.fork thp.munmap thp.pte-dontneed mthp.fork mthp.munmap mthp.pte-dontneed small.fork small.munmap small.pte-dontneed"
	;;
vma-lock)
	SYS_SUFFIX=-vma-lock
	ALL_CASES="vma.pft-1t vma.pft-2t vma.mmap-churn vma.fork-vmas"
	;;
pagemap-swap)
	SYS_SUFFIX=-pagemap-swap
	ALL_CASES="pm.d0 pm.d50 pm.d100 pm.d50rev"
	# norandmaps: the same address-space layout in every boot (with
	# nothing mapped, a pagemap read costs what the page-table levels
	# around the range hold, which randomized mmap bases change).
	BENCH_APPEND="RUSTMM_SWAP_MIB=512 norandmaps"
	;;
compound-pagemaps)
	[ "$KARCH" = x86_64 ] || die "BENCH_SYSTEM=compound-pagemaps is x86_64's (CONFIG_COMPOUND_PAGEMAPS_RUST depends on X86_64)"
	SYS_SUFFIX=-compound-pagemaps
	ALL_CASES="cp.gup-fast-2m cp.pin-fast-2m cp.gup-fast-4k cp.pin-fast-4k cp.gup-slow-2m"
	# memmap=512M!1G: guest RAM [1 GiB, 1.5 GiB) becomes e820 type 12
	# (legacy pmem: CONFIG_X86_PMEM_LEGACY makes region0/namespace0.0 of
	# it, which tests/bench/devdax_setup.h turns into /dev/dax0.0). The
	# bench guest has 2 GiB (-m 2048, -machine pc: all of it below 4 GiB,
	# one e820 RAM range up to 2 GiB, the initrd loaded at its top), so
	# the region lies inside RAM, away from the kernel image (16 MiB,
	# nokaslr) and the initrd (just below 2 GiB); its start and size are
	# multiples of the 128 MiB memory section, so no section holds boot
	# RAM and device memory both (an early section would change the
	# vmemmap plan); 1.5 GiB of RAM is left. nokaslr and norandmaps: the
	# same physical and virtual layout in every boot.
	BENCH_APPEND="memmap=512M!1G nokaslr norandmaps"
	;;
*) die "BENCH_SYSTEM=$SYSTEM is not supported; supported: rmap-id contpte vma-lock pagemap-swap compound-pagemaps" ;;
esac
LTO="${BENCH_LTO:-0}"
case "$LTO" in
0) ;;
1) SYS_SUFFIX="$SYS_SUFFIX-lto" ;;
*) die "BENCH_LTO=$LTO: 0 or 1" ;;
esac
MMS="${BENCH_MMS:-0}"
case "$MMS" in
0) ;;
*[!0-9]*) die "BENCH_MMS=$MMS: a number of idle processes" ;;
*)
	[ "$SYSTEM" = rmap-id ] || die "BENCH_MMS is for BENCH_SYSTEM=rmap-id (the IDs of the measured process)"
	SYS_SUFFIX="$SYS_SUFFIX-mms$MMS"
	BENCH_APPEND="RUSTMM_BENCH_MMS=$MMS"
	;;
esac
CASES="$(echo ${BENCH_CASES:-$ALL_CASES})"
OUT="$BUILD_DIR/bench$TSUFFIX$SYS_SUFFIX"
LOGS="$OUT/logs"
mkdir -p "$LOGS"
[ "$BOOTS" -ge 3 ] 2>/dev/null || die "BENCH_BOOTS=$BOOTS: at least 3 boots per kernel are needed for an interval"

# shellcheck source=scripts/bench/lib.sh
. "$RUST_MM_TOP/scripts/bench/lib.sh"
bench_prepare

KERNELS="${BENCH_KERNELS-base patched}"
settings="boots=$BOOTS runs=$RUNS mib=$MIB cases=$(echo $CASES | tr ' ' ,)${BENCH_APPEND:+ append=$BENCH_APPEND}"
for k in base patched; do
	if [[ " $KERNELS " == *" $k "* ]]; then
		build_kernel "$k"
		rm -f "$LOGS/$k-"*.log
		manifest_write "$k" "$settings" > "$OUT/manifest-$k.txt"
	else
		# Reuse only what provably is the same experiment.
		[ -f "$OUT/manifest-$k.txt" ] || die "[$k] no earlier run to reuse ($OUT/manifest-$k.txt); run it: BENCH_KERNELS=$k"
		manifest_write "$k" "$settings" > "$OUT/manifest-$k.now"
		if ! diff -u "$OUT/manifest-$k.txt" "$OUT/manifest-$k.now" > "$OUT/manifest-$k.diff"; then
			cat "$OUT/manifest-$k.diff"
			die "[$k] refusing to reuse the earlier run: its kernel image, initramfs or settings differ from now (above); run it again: BENCH_KERNELS='$KERNELS $k'"
		fi
		say "[$k] reusing the earlier run (same kernel image, initramfs and settings: $OUT/manifest-$k.txt)"
	fi
done

# The plan: boot b of case c on kernel k, alternating kernels.
plan="$OUT/plan.txt"
: > "$plan"
for b in $(seq 1 "$BOOTS"); do
	for c in $CASES; do
		for k in base patched; do
			[[ " $KERNELS " == *" $k "* ]] && echo "$k $c $b" >> "$plan"
		done
	done
done
njobs="$(wc -l < "$plan")"
say "$njobs boots ($BOOTS per case and kernel, $JOBS at a time); logs in $LOGS"

# One boot: exit 0 only when the guest finished cleanly.
one() { # KERNEL CASE BOOT
	local log="$LOGS/$1-$2-$3.log" rc
	rm -f "$log"
	timeout "$TIMEOUT" bash -c 'qemu_run "$@"' qemu_run "$1" "$OUT/initramfs.cpio" \
		"RUSTMM_BENCH_RUNS=$RUNS RUSTMM_BENCH_MIB=$MIB RUSTMM_BENCH_CASE=$2${BENCH_APPEND:+ $BENCH_APPEND}" \
		< /dev/null 2>&1 | tr -d '\r' > "$log.tmp"
	rc=${PIPESTATUS[0]}
	mv "$log.tmp" "$log"
	if [ "$rc" -eq 124 ]; then
		echo "hung (no end within ${TIMEOUT}s)"
	elif grep -q 'Kernel panic' "$log"; then
		echo "the guest kernel panicked"
	elif ! grep -q '^RUSTMM-BENCH-DONE errors=0' "$log"; then
		echo "the benchmark did not complete cleanly (qemu exit $rc)"
	else
		echo "ok: $(grep -c '^RUSTMM-BENCH ' "$log") runs, $(grep -c '^RUSTMM-BENCH-REJECT ' "$log") rejected windows"
		return 0
	fi
	return 1
}
export -f one qemu_run say die
export LOGS RUNS MIB TIMEOUT OUT RUST_MM_TOP KARCH QEMU KIMAGE CONSOLE BENCH_APPEND

start=$SECONDS
if ! xargs -r -P "$JOBS" -L 1 bash -c 'r="$(one "$0" "$1" "$2")"; echo "rust-mm: [$0] $1 boot $2: $r"; case "$r" in ok*) ;; *) exit 255 ;; esac' < "$plan"; then
	for f in "$LOGS"/*.log; do
		grep -q '^RUSTMM-BENCH-DONE errors=0' "$f" && continue
		echo "rust-mm: $f did not complete; console tail:"
		tail -n 30 "$f" | sed 's/^/  | /'
		break
	done
	die "no benchmark report from partial results"
fi
say "all $njobs boots done in $(((SECONDS - start) / 60)) min"

# vma-lock: the slab cost of a vma, one boot per kernel with slab_nomerge
# (each cache its own, as /proc/slabinfo must show it).
slab_args=()
if [ "$SYSTEM" = vma-lock ]; then
	for k in base patched; do
		[[ " $KERNELS " == *" $k "* ]] || continue
		log="$LOGS/$k-vma.slab.log"
		timeout "$TIMEOUT" bash -c 'qemu_run "$@"' qemu_run "$k" "$OUT/initramfs.cpio" \
			"slab_nomerge RUSTMM_BENCH_RUNS=1 RUSTMM_BENCH_MIB=$MIB RUSTMM_BENCH_CASE=vma.slab" \
			< /dev/null 2>&1 | tr -d '\r' > "$log"
		grep -q '^RUSTMM-BENCH-DONE errors=0' "$log" && grep -q '^RUSTMM-SLAB total' "$log" ||
			{ tail -n 30 "$log"; die "[$k] the slab boot did not complete"; }
		say "[$k] slab: $(grep '^RUSTMM-SLAB total' "$log")"
	done
	slab_args=(--slab-logs "$LOGS")
fi

reused=""
for k in base patched; do
	[[ " $KERNELS " == *" $k "* ]] || reused+="$k "
done
cmd="make bench BENCH_BOOTS=$BOOTS BENCH_RUNS=$RUNS BENCH_MIB=$MIB"
[ "$TARGET" = x86_64 ] || cmd="make bench ARCH=$ARCH BENCH_BOOTS=$BOOTS BENCH_RUNS=$RUNS BENCH_MIB=$MIB"
[ "$SYSTEM" = rmap-id ] || cmd+=" BENCH_SYSTEM=$SYSTEM"
lto_args=()
[ "$LTO" = 1 ] && cmd+=" BENCH_LTO=1" && lto_args=(--lto)
[ "$MMS" = 0 ] || { cmd+=" BENCH_MMS=$MMS"; lto_args+=(--mms "$MMS"); }
report="$RUST_MM_TOP/docs/benchmarks$SYS_SUFFIX$TSUFFIX"
if [ "$CASES" != "$(echo $ALL_CASES)" ]; then
	# A subset of the cases never replaces the docs' report.
	cmd+=" BENCH_CASES='$CASES'"
	report="$OUT/partial/benchmarks"
	mkdir -p "$OUT/partial"
fi
python3 "$RUST_MM_TOP/scripts/bench/bench-report.py" \
	--logs "$LOGS" --cases "$CASES" --boots "$BOOTS" --runs "$RUNS" --mib "$MIB" \
	--base-manifest "$OUT/manifest-base.txt" --patched-manifest "$OUT/manifest-patched.txt" \
	--base-config "$OUT/kernel-base/.config" --patched-config "$OUT/kernel-patched/.config" \
	--diffconfig "$KSRC/scripts/diffconfig" --reused "$reused" --target "$TARGET" --system "$SYSTEM" \
	--command "$cmd" --out "$report" "${slab_args[@]}" "${lto_args[@]}" || die "bench-report.py failed"
say "report: $report.md, $report.json, $report.png"
