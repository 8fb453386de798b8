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
#   BENCH_CASES     cases to run (default all the system's: rmap-id 18, 25 on
#                   arm64); the report of a subset
#                   goes to build/bench/partial/, never into docs/
#   BENCH_TIMEOUT   seconds per guest before it counts as hung (default 3600)
#   BENCH_SYSTEM    the system measured (default rmap-id): one of
#                   tests/bench/systems/*.toml, which says everything per
#                   system (scripts/bench/system.py): its topic (the patched
#                   kernel has only that topic's option, from
#                   kernel-patches/<topic>/topic), the arches it runs on,
#                   its cases per arch, its guests' extra kernel command
#                   line and kernel config, its targets, the report's name
#                   (docs/benchmarks-<system>[-<arch>].*, build/bench[-<arch>]-<system>)
#                   and what else it needs (vma-lock's slab boot,
#                   pagemap-swap's measurements per boot case); e.g.
#                   contpte (ARCH=arm64: seed 001's cases against +0.5 %),
#                   vma-lock, pagemap-swap, compound-pagemaps (x86_64)
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
#   BENCH_COUNTS    counted boots per case and kernel (default 3, at least 3;
#                   0: none): after the timed boots, the same boots again
#                   under the profiling plugin with its memory model
#                   (tests/bench/insn_profile.c cache=1; every measured run
#                   marked, RUSTMM_BENCH_PROFILE=*), which counts per
#                   window the instructions, loads, stores, atomic RMWs and
#                   the misses of a simulated L1d and LLC; the report gives
#                   their ratios and a cost model's beside the instruction
#                   ratio (scripts/bench/cost_model.py, docs/benchmarking.md).
#                   The plugin makes these boots several times slower in
#                   host time, not in guest time.
#   BENCH_PRINT     1: print each kernel's kunitconfig and every boot's QEMU
#                   command line, then stop (nothing installed, built or booted)
#   BENCH_KERNELS   which kernels to build and run now (default "base
#                   patched"); the other's logs from an earlier run are
#                   reused only if they were made with the same settings,
#                   the same kernel image and the same initramfs (hashes),
#                   and the report names them as reused; with no earlier
#                   run of the other kernel, only this one's boots run and
#                   the report waits for BENCH_KERNELS=<the other> (a run
#                   split over two sittings); BENCH_KERNELS=
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
# The measured system, as tests/bench/systems/<system>.toml declares it
# (SYSTEM SYS_CASES SYS_APPEND SYS_SUFFIX SYS_KCONFIG SYS_OPTION ...:
# scripts/bench/system.py shell); it refuses an arch the system does not run on.
sysvars="$(python3 "$RUST_MM_TOP/scripts/bench/system.py" shell "${BENCH_SYSTEM:-}" "$TARGET")" || exit 1
eval "$sysvars"
ALL_CASES="$SYS_CASES"
# Kernel command-line words the system's guests get beyond the harness's.
BENCH_APPEND="$SYS_APPEND"
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
	[ "$SYS_MMS" = 1 ] || die "BENCH_MMS is not for BENCH_SYSTEM=$SYSTEM (the rmap IDs of the measured process: tests/bench/systems/$SYSTEM.toml has no mms = true)"
	SYS_SUFFIX="$SYS_SUFFIX-mms$MMS"
	BENCH_APPEND="${BENCH_APPEND:+$BENCH_APPEND }RUSTMM_BENCH_MMS=$MMS"
	;;
esac
CASES="$(echo ${BENCH_CASES:-$ALL_CASES})"
OUT="$BUILD_DIR/bench$TSUFFIX$SYS_SUFFIX"
LOGS="$OUT/logs"
[ "$BOOTS" -ge 3 ] 2>/dev/null || die "BENCH_BOOTS=$BOOTS: at least 3 boots per kernel are needed for an interval"
COUNTS="${BENCH_COUNTS:-3}"
[ "$COUNTS" = 0 ] || [ "$COUNTS" -ge 3 ] 2>/dev/null ||
	die "BENCH_COUNTS=$COUNTS: 0, or at least 3 counted boots per kernel (an interval needs 3)"

# shellcheck source=scripts/bench/lib.sh
. "$RUST_MM_TOP/scripts/bench/lib.sh"

# The kernel command line of a boot of CASE beyond qemu_run's own words,
# and of the system's slab boot.
boot_env() { # CASE
	echo "RUSTMM_BENCH_RUNS=$RUNS RUSTMM_BENCH_MIB=$MIB RUSTMM_BENCH_CASE=$1${BENCH_APPEND:+ $BENCH_APPEND}"
}
# The plugin arguments of counted boot NAME (its windows' counts go to
# $LOGS/NAME.counts).
count_plugin() { # NAME
	echo "-plugin $OUT/insn_profile.so,arg=out=$LOGS/$1.counts,arg=cache=1"
}
slab_env() {
	echo "$SYS_SLAB_BOOT RUSTMM_BENCH_RUNS=1 RUSTMM_BENCH_MIB=$MIB RUSTMM_BENCH_CASE=$SYS_SLAB_CASE${BENCH_APPEND:+ $BENCH_APPEND}"
}

# BENCH_PRINT=1: print what would be built and booted -- each kernel's
# kunitconfig, each boot's QEMU command line (qemu_run's QEMU_PRINT=1), the
# report's name -- and stop: nothing is installed, built or booted.
if [ "${BENCH_PRINT:-0}" = 1 ]; then
	for k in base patched; do
		echo "kunitconfig $k:"
		bench_extra_config "$k"
		bench_kunitconfig "$EXTRA_CONFIG" | sed 's/^/  /'
		for c in $CASES; do
			echo "boot $k $c: $(QEMU_PRINT=1 qemu_run "$k" "$OUT/initramfs.cpio" "$(boot_env "$c")")"
		done
		for c in $CASES; do
			[ "$COUNTS" = 0 ] ||
				echo "counted boot $k $c: $(QEMU_PRINT=1 qemu_run "$k" "$OUT/initramfs.cpio" \
					"$(boot_env "$c") RUSTMM_BENCH_PROFILE=*" $(count_plugin "$k-$c-c1"))"
		done
		[ -z "$SYS_SLAB_CASE" ] ||
			echo "boot $k $SYS_SLAB_CASE: $(QEMU_PRINT=1 qemu_run "$k" "$OUT/initramfs.cpio" "$(slab_env)")"
	done
	if [ "$CASES" = "$ALL_CASES" ]; then
		echo "report: docs/benchmarks$SYS_SUFFIX$TSUFFIX$BASE_SUFFIX"
	else
		echo "report: $OUT/partial/benchmarks (a subset of the cases)"
	fi
	exit 0
fi

mkdir -p "$LOGS"
bench_prepare

KERNELS="${BENCH_KERNELS-base patched}"
# Where the kernels built now come from (commit, clean, base, the series'
# fingerprints: scripts/bench/provenance.py), taken before they are built;
# a report only rewritten (BENCH_KERNELS=) keeps the run's.
if [ -n "${KERNELS// /}" ]; then
	python3 "$RUST_MM_TOP/scripts/bench/provenance.py" record --system "$SYSTEM" --lto "$LTO" \
		--base-version "$LINUX_DEB_VERSION" > "$OUT/provenance.json.tmp" ||
		die "cannot record the provenance (scripts/bench/provenance.py)"
	mv "$OUT/provenance.json.tmp" "$OUT/provenance.json"
fi
if [ "$COUNTS" != 0 ]; then
	gcc -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -o "$OUT/insn_profile.so" \
		"$RUST_MM_TOP/tests/bench/insn_profile.c" || die "cannot build tests/bench/insn_profile.c"
fi
settings="boots=$BOOTS counts=$COUNTS plugin=$([ "$COUNTS" = 0 ] || sha256sum < "$OUT/insn_profile.so" | cut -c 1-16) runs=$RUNS mib=$MIB cases=$(echo $CASES | tr ' ' ,)${BENCH_APPEND:+ append=$BENCH_APPEND}"
pending=""
for k in base patched; do
	if [[ " $KERNELS " == *" $k "* ]]; then
		build_kernel "$k"
		rm -f "$LOGS/$k-"*.log
		manifest_write "$k" "$settings" > "$OUT/manifest-$k.txt"
	else
		# Reuse only what provably is the same experiment. With no
		# earlier run at all, this run boots only its own kernels and
		# stops before the report (a run split over two sittings: the
		# base now, the patched kernel later, or the other way).
		if [ ! -f "$OUT/manifest-$k.txt" ]; then
			[ -n "${KERNELS// /}" ] ||
				die "[$k] no earlier run to reuse ($OUT/manifest-$k.txt); run it: BENCH_KERNELS=$k"
			say "[$k] no earlier run ($OUT/manifest-$k.txt): booting only $KERNELS now, no report until BENCH_KERNELS=$k boots it with the same settings"
			pending+="$k "
			continue
		fi
		manifest_write "$k" "$settings" > "$OUT/manifest-$k.now"
		if ! diff -u "$OUT/manifest-$k.txt" "$OUT/manifest-$k.now" > "$OUT/manifest-$k.diff"; then
			cat "$OUT/manifest-$k.diff"
			die "[$k] refusing to reuse the earlier run: its kernel image, initramfs or settings differ from now (above); run it again: BENCH_KERNELS='$KERNELS $k'"
		fi
		say "[$k] reusing the earlier run (same kernel image, initramfs and settings: $OUT/manifest-$k.txt)"
	fi
done

# The plan: boot b of case c on kernel k, alternating kernels; the timed
# boots (1, 2, ...), then the counted ones (c1, c2, ...).
plan="$OUT/plan.txt"
: > "$plan"
for b in $(seq 1 "$BOOTS") $(seq -f 'c%g' 1 "$COUNTS"); do
	for c in $CASES; do
		for k in base patched; do
			[[ " $KERNELS " == *" $k "* ]] && echo "$k $c $b" >> "$plan"
		done
	done
done
njobs="$(wc -l < "$plan")"
say "$njobs boots ($BOOTS timed and $COUNTS counted per case and kernel, $JOBS at a time); logs in $LOGS"

# One boot: exit 0 only when the guest finished cleanly. A counted boot
# (BOOT c<n>) runs under the plugin, every measured run marked; its
# windows must be as many as the console's measured attempts.
one() { # KERNEL CASE BOOT
	local log="$LOGS/$1-$2-$3.log" rc env plugin=() windows
	rm -f "$log"
	env="$(boot_env "$2")"
	if [[ "$3" == c* ]]; then
		rm -f "$LOGS/$1-$2-$3.counts"
		env+=" RUSTMM_BENCH_PROFILE=*"
		read -r -a plugin <<<"$(count_plugin "$1-$2-$3")"
	fi
	timeout "$TIMEOUT" bash -c 'qemu_run "$@"' qemu_run "$1" "$OUT/initramfs.cpio" "$env" "${plugin[@]}" \
		< /dev/null 2>&1 | tr -d '\r' > "$log.tmp"
	rc=${PIPESTATUS[0]}
	mv "$log.tmp" "$log"
	if [[ "$3" == c* ]] && grep -q '^RUSTMM-BENCH-DONE errors=0' "$log"; then
		windows=$(grep -c -E '^RUSTMM-BENCH(-REJECT)? \S+ [1-9]' "$log")
		if [ "$(head -n 1 "$LOGS/$1-$2-$3.counts" 2>/dev/null)" != "windows $windows" ]; then
			echo "the plugin's windows ($(head -n 1 "$LOGS/$1-$2-$3.counts" 2>/dev/null || echo 'no file')) are not the console's $windows measured attempts"
			return 1
		fi
	fi
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
export -f one boot_env count_plugin qemu_run say die
export LOGS RUNS MIB TIMEOUT OUT RUST_MM_TOP KARCH QEMU KIMAGE CONSOLE BENCH_APPEND SYS_GUEST_MIB SYS_GUEST_CPU

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

# The system's slab boot (vma-lock: the slab cost of a vma), one per kernel
# with its words first (slab_nomerge: each cache its own, as /proc/slabinfo
# must show it).
slab_args=()
if [ -n "$SYS_SLAB_CASE" ]; then
	for k in base patched; do
		[[ " $KERNELS " == *" $k "* ]] || continue
		log="$LOGS/$k-$SYS_SLAB_CASE.log"
		timeout "$TIMEOUT" bash -c 'qemu_run "$@"' qemu_run "$k" "$OUT/initramfs.cpio" "$(slab_env)" \
			< /dev/null 2>&1 | tr -d '\r' > "$log"
		grep -q '^RUSTMM-BENCH-DONE errors=0' "$log" && grep -q '^RUSTMM-SLAB total' "$log" ||
			{ tail -n 30 "$log"; die "[$k] the slab boot did not complete"; }
		say "[$k] slab: $(grep '^RUSTMM-SLAB total' "$log")"
	done
	slab_args=(--slab-logs "$LOGS")
fi
if [ -n "$pending" ]; then
	say "no report yet: ${pending% } has no run with these settings; BENCH_KERNELS=\"${pending% }\" with the same settings boots it and writes the report"
	exit 0
fi

reused=""
for k in base patched; do
	[[ " $KERNELS " == *" $k "* ]] || reused+="$k "
done
cmd="make bench BENCH_BOOTS=$BOOTS BENCH_RUNS=$RUNS BENCH_MIB=$MIB BENCH_COUNTS=$COUNTS"
[ "$TARGET" = x86_64 ] || cmd="make bench ARCH=$ARCH BENCH_BOOTS=$BOOTS BENCH_RUNS=$RUNS BENCH_MIB=$MIB BENCH_COUNTS=$COUNTS"
[ -z "$BASE_SUFFIX" ] || cmd="RUST_MM_BASE=$RUST_MM_BASE $cmd"
[ "$SYS_DEFAULT" = 1 ] || cmd+=" BENCH_SYSTEM=$SYSTEM"
lto_args=()
[ "$LTO" = 1 ] && cmd+=" BENCH_LTO=1" && lto_args=(--lto)
[ "$MMS" = 0 ] || { cmd+=" BENCH_MMS=$MMS"; lto_args+=(--mms "$MMS"); }
report="$RUST_MM_TOP/docs/benchmarks$SYS_SUFFIX$TSUFFIX$BASE_SUFFIX"
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
	--provenance "$OUT/provenance.json" --counts "$COUNTS" \
	--command "$cmd" --out "$report" "${slab_args[@]}" "${lto_args[@]}" || die "bench-report.py failed"
say "report: $report.md, $report.json, $report.png"
