#!/usr/bin/env bash
# `make profile`: where the instructions of a benchmark case go, per kernel
# function, base vs patched. The same kernels as `make bench`
# (scripts/bench/lib.sh), booted the same way (qemu_run: -icount
# shift=0,sleep=off, one fresh boot per case; plus nokaslr so that
# System.map applies) with
# tests/bench/insn_profile.c, a QEMU TCG plugin, counting the instructions
# of every block executed inside the case's measured windows (all vCPUs,
# kernel and user), and with its memory model (cache=1) the atomic RMWs
# and simulated L1d and LLC misses of each block.
# scripts/bench/profile-report.py maps the blocks to symbols and writes
# build/bench/profile-CASE.txt, with the cost model's cycles per function
# (scripts/bench/cost_model.py).
#   PROFILE_CASES   cases, e.g. "small.fork thp.pte-dontneed" (default small.fork)
#   PROFILE_RUNS    runs per case and kernel (default 3; 4x for short cases)
#   PROFILE_KERNELS which kernels to build and profile now (default "base
#                   patched"); the other's profile from an earlier run is
#                   reused only with the same kernel image, initramfs and
#                   settings (hashes; said so)
#   PROFILE_BLOCKS  functions whose blocks the table lists too, e.g.
#                   "__vma_start_write vms_gather_munmap_vmas": each block's
#                   offset, instructions and executions per window in both
#                   kernels, and the function's entries and instructions
#                   per entry (which path a change is on)
# The tables go into docs/profiles/<case>.txt (committed: the docs quote
# them) with both kernels' provenance.
#   BENCH_MIB       memory per case in MiB (default 256)
#   BENCH_SYSTEM    whose kernels (make bench's; tests/bench/systems/<system>.toml,
#                   default rmap-id; one whose file says profile = false is
#                   refused): the boots get its kernel command line; a case
#                   of a system with measurements per boot case is one
#                   measurement, e.g. pagemap-swap's pm.d50.b512.shared (in
#                   the boot pm.d50); a compound-pagemaps case (cp.*) is
#                   profiled over its whole gup_test ioctl (get, put and
#                   gup_test's own work: the window brackets the ioctl,
#                   bench times only the get)
#   BENCH_PRINT     1: print every profile boot's QEMU command line, then stop
#   BENCH_TIMEOUT   seconds per guest before it counts as hung (default 5400)
#   BENCH_LTO       1: make bench BENCH_LTO=1's Clang ThinLTO kernels
#                   (build/bench[-SYSTEM]-lto); tables in
#                   docs/profiles/<case>-lto.txt
set -uo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
case "$TARGET" in
x86_64|arm64) ;;
*) die "make profile runs on x86_64 and arm64 with 4K pages, as make bench (GRANULE=$GRANULE)" ;;
esac

CASES="${PROFILE_CASES:-small.fork}"
RUNS="${PROFILE_RUNS:-3}"
MIB="${BENCH_MIB:-256}"
TIMEOUT="${BENCH_TIMEOUT:-5400}"
# BENCH_SYSTEM as for make bench: the same kernels (build/bench-<system>),
# from the same file (scripts/bench/system.py shell).
sysvars="$(python3 "$RUST_MM_TOP/scripts/bench/system.py" shell "${BENCH_SYSTEM:-}" "$TARGET")" || exit 1
eval "$sysvars"
[ "$SYS_PROFILE" = 1 ] ||
	die "make profile: BENCH_SYSTEM=$SYSTEM is not supported here (tests/bench/systems/$SYSTEM.toml: profile = false)"
OUT="$BUILD_DIR/bench$TSUFFIX$SYS_SUFFIX"
LTO="${BENCH_LTO:-0}"
case "$LTO" in
0) PSUFFIX="$TSUFFIX$BASE_SUFFIX" ;;
1) OUT="$OUT-lto" PSUFFIX="$TSUFFIX-lto$BASE_SUFFIX" ;;
*) die "BENCH_LTO=$LTO: 0 or 1" ;;
esac
# The boot case a measurement belongs to (pagemap-swap: pm.d50 of
# pm.d50.b512.shared-optin), and what that boot needs beyond the profile's
# own nokaslr (the system's words, as make bench's BENCH_APPEND).
declare -A BOOT_CASE=()
for c in $CASES; do
	BOOT_CASE[$c]="$(python3 "$RUST_MM_TOP/scripts/bench/system.py" boot-case "$SYSTEM" "$c")" || exit 1
done
boot_case() { echo "${BOOT_CASE[$1]}"; }
boot_append() { echo "${SYS_PROFILE_APPEND:+ $SYS_PROFILE_APPEND}"; }
# The kernel command line of a profile boot of CASE beyond qemu_run's words.
profile_env() { # CASE
	echo "nokaslr RUSTMM_BENCH_RUNS=$RUNS RUSTMM_BENCH_MIB=$MIB RUSTMM_BENCH_CASE=$(boot_case "$1") RUSTMM_BENCH_PROFILE=$1$(boot_append "$1")"
}
# x86_64's tables keep their names; arm64's are docs/profiles/CASE-arm64.txt.
ARCH_ARG=""
[ "$TARGET" = x86_64 ] || ARCH_ARG=" ARCH=$ARCH"
plugin="$OUT/profile/insn_profile.so"
# The guest the profile boots (its own: every measured run marked).
initramfs="$OUT/profile/initramfs.cpio"

# A case only the patched kernel runs (the system's patched_only patterns,
# e.g. pagemap-swap's opted-in reader: the base has no opt-in) is profiled
# on the patched kernel alone.
patched_only() {
	local p
	for p in "${SYS_PATCHED_ONLY[@]}"; do
		# shellcheck disable=SC2053 # a glob pattern, on purpose
		[[ "$1" == $p ]] && return 0
	done
	return 1
}

# shellcheck source=scripts/bench/lib.sh
. "$RUST_MM_TOP/scripts/bench/lib.sh"

# BENCH_PRINT=1: print each profile boot's QEMU command line (qemu_run's
# QEMU_PRINT=1) and stop: nothing is installed, built or booted.
if [ "${BENCH_PRINT:-0}" = 1 ]; then
	for k in base patched; do
		for c in $CASES; do
			[ "$k" = base ] && patched_only "$c" && continue
			echo "profile $k $c: $(QEMU_PRINT=1 qemu_run "$k" "$initramfs" "$(profile_env "$c")" \
				-plugin "$plugin,arg=out=$OUT/profile/$k-$c.blocks,arg=cache=1")"
		done
	done
	exit 0
fi

mkdir -p "$OUT/profile"
# Its own guest image, so that it can run beside `make bench`.
bench_prepare "$initramfs"
gcc -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -o "$plugin" \
	"$RUST_MM_TOP/tests/bench/insn_profile.c" || die "cannot build tests/bench/insn_profile.c"

export -f qemu_run
export OUT KARCH QEMU KIMAGE CONSOLE SYS_GUEST_MIB SYS_GUEST_CPU

profile() { # KERNEL CASE
	local log="$OUT/profile/console-$1-$2.log"
	local data="$OUT/profile/$1-$2.blocks" rc windows
	rm -f "$data"
	say "[$1] profiling $2: $RUNS runs of $MIB MiB (console: $log)"
	timeout "$TIMEOUT" bash -c 'qemu_run "$@"' qemu_run "$1" "$initramfs" "$(profile_env "$2")" \
		-plugin "$plugin,arg=out=$data,arg=cache=1" < /dev/null 2>&1 | tr -d '\r' > "$log"
	rc=${PIPESTATUS[0]}
	if [ "$rc" -ne 0 ] || grep -q 'Kernel panic' "$log" ||
		! grep -q '^RUSTMM-BENCH-DONE errors=0' "$log" || [ ! -s "$data" ]; then
		echo "rust-mm: [$1] the $2 profile did not complete (qemu exit $rc); console tail:"
		tail -n 30 "$log" | sed 's/^/  | /'
		die "no profile from partial results"
	fi
	# Every attempt is a window, rejected ones too (they ran the action).
	windows=$(grep -c -e "^RUSTMM-BENCH $2 " -e "^RUSTMM-BENCH-REJECT $2 [1-9]" "$log")
	[ "$(head -n 1 "$data")" = "windows $windows" ] ||
		die "[$1] $data has '$(head -n 1 "$data")', but the console shows $windows windows of $2"
	grep -q "^RUSTMM-BENCH-DISTURBED $2 " "$log" &&
		say "[$1] note: some $2 windows were disturbed by background work (they are in the profile)"
	manifest_write "$1" "profile runs=$RUNS mib=$MIB case=$2" "$initramfs" > "$OUT/profile/manifest-$1-$2.txt"
}

KERNELS="${PROFILE_KERNELS:-base patched}"
for k in base patched; do
	if [[ " $KERNELS " == *" $k "* ]]; then
		build_kernel "$k"
		for c in $CASES; do
			[ "$k" = base ] && patched_only "$c" && continue
			profile "$k" "$c"
		done
		continue
	fi
	# Reuse only a profile of this very kernel image, initramfs and settings.
	for c in $CASES; do
		[ "$k" = base ] && patched_only "$c" && continue
		m="$OUT/profile/manifest-$k-$c.txt"
		[ -f "$m" ] && [ -s "$OUT/profile/$k-$c.blocks" ] ||
			die "[$k] no earlier $c profile to reuse; run it: PROFILE_KERNELS=$k"
		if ! diff -u "$m" <(manifest_write "$k" "profile runs=$RUNS mib=$MIB case=$c" "$initramfs"); then
			die "[$k] refusing to reuse the earlier $c profile: kernel image, initramfs or settings differ (above); run it: PROFILE_KERNELS=$k"
		fi
		say "[$k] reusing the earlier $c profile (same kernel image, initramfs and settings)"
	done
done
mkdir -p "$RUST_MM_TOP/docs/profiles"
for c in $CASES; do
	base_args=(--base "$OUT/profile/base-$c.blocks" --base-map "$OUT/kernel-base/System.map")
	patched_only "$c" && base_args=()
	python3 "$RUST_MM_TOP/scripts/bench/profile-report.py" --case "$c" --arch "$TARGET" "${base_args[@]}" \
		--patched "$OUT/profile/patched-$c.blocks" --patched-map "$OUT/kernel-patched/System.map" \
		--command "make profile$ARCH_ARG$([ "$SYS_DEFAULT" = 1 ] || echo " BENCH_SYSTEM=$SYSTEM")$([ "$LTO" = 0 ] || echo " BENCH_LTO=1") PROFILE_CASES=$c PROFILE_RUNS=$RUNS BENCH_MIB=$MIB${PROFILE_BLOCKS:+ PROFILE_BLOCKS=\"$PROFILE_BLOCKS\"}" \
		--blocks "${PROFILE_BLOCKS:-}" \
		> "$OUT/profile-$c.txt" || die "profile-report.py failed"
	{ cat "$OUT/profile-$c.txt"
	  echo
	  echo "# provenance"
	  patched_only "$c" || sed 's/^/#   base: /' "$OUT/profile/manifest-base-$c.txt"
	  sed 's/^/#   patched: /' "$OUT/profile/manifest-patched-$c.txt"; } > "$RUST_MM_TOP/docs/profiles/$c$PSUFFIX.txt"
	cat "$OUT/profile-$c.txt"
	say "profile: docs/profiles/$c$PSUFFIX.txt (and $OUT/profile-$c.txt)"
done
