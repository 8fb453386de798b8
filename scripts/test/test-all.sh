#!/usr/bin/env bash
# `make test-all`: everything `make test` runs (one stage here, with its
# own table above), then what does not fit CI's time, before an issue is
# resolved:
#   - the userspace tests on the unpatched kernel (x86_64 and arm64 4K:
#     our programs see the base behaviour, selftests/mm/cow's outcome case
#     by case equal on patched and unpatched), and on the patched tree
#     with every option of ours off (it must behave as the base);
#   - on arm64 4K, the mm selftests make test leaves out there (sets
#     "patched" and "long" of tests/userspace/ksft.list);
#   - our KUnit suites on arm64's 16K and 64K page kernels (PMD THP orders
#     11 and 13);
#   - on a 7.x tree, our KUnit suites with CONFIG_NO_PAGE_MAPCOUNT=y;
#   - our KUnit suites in a CONFIG_KCSAN=y build, x86_64 and arm64 4K, and
#     no KCSAN report from the series' code (scripts/test/run-kcsan.sh);
#   - every mm selftest of tests/userspace/ksft.list (sets all, patched and
#     full) booted on the patched and on the unpatched kernel, compared
#     case by case and counted there; set "racy" (uffd-unit-tests' events
#     group, a 6.12 race) on both kernels, reported and not counted;
#   - bisectability: every prefix of the stack builds
#     (scripts/test/bisect-build.sh).
#   TEST_ALL_RESUME=1  resumes a run that stopped (a session's end: a cold
#                      run is longer than one): a stage that passed on the
#                      same inputs (the fingerprint below) is not run again
#                      and the table gives the date it passed; any change
#                      to the inputs runs everything again.
#   TEST_ALL_BISECT=0  leaves the bisectability build out (2-3 h on 2 cores)
#                      for a run whose series is unchanged since a whole
#                      bisect run; it says so and counts nothing for it.
# The stages re-run checks make test ran on other boots (the selftests of
# the full runs): their counts are of this run's boots. Ends with the table
# of stages and one line 'N passed, N failed' over all of it.
set -uo pipefail
# Every arch, whatever ARCH the caller set: the stages below say which.
unset ARCH GRANULE
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
# shellcheck source=scripts/lib/stages.sh
. "$RUST_MM_TOP/scripts/lib/stages.sh"
mkdir -p "$BUILD_DIR"
T="$RUST_MM_TOP/scripts"

# The inputs' fingerprint: every file of the commit but the logbooks no
# stage reads (where the results of runs are written down), and the tools'
# versions. A checkout with other changes, or no git, gets none: its stages
# are not stamped and a resume is refused.
logbooks='^docs/(history\.md|linux-7\.3\.md|notes/)'
STAGES_FP="" dirty=""
if git -C "$RUST_MM_TOP" rev-parse -q --verify HEAD > /dev/null 2>&1; then
	dirty="$(git -C "$RUST_MM_TOP" status --porcelain | awk '{ print $NF }' | grep -v -E "$logbooks")"
	if [ -z "$dirty" ]; then
		STAGES_FP="$({
			git -C "$RUST_MM_TOP" ls-tree -r HEAD | awk -F'\t' -v re="$logbooks" '$2 !~ re'
			for t in /usr/bin/rustc "$LLVM_BIN/clang" "$BINDGEN" qemu-system-x86_64 qemu-system-aarch64; do
				"$t" --version 2>&1 | head -n 1
			done
			echo "$LINUX_DEB_VERSION $LINUX_DEB_SHA256"
		} | sha256sum | cut -c 1-16)"
	fi
fi
if [ "${TEST_ALL_RESUME:-0}" = 1 ]; then
	[ -n "$STAGES_FP" ] || die "TEST_ALL_RESUME=1: the checkout has changes (or no git), so there is no fingerprint to resume on: ${dirty//$'\n'/ }"
	STAGES_RESUME=1
fi
say "test-all on $(git -C "$RUST_MM_TOP" rev-parse --short HEAD 2>/dev/null || echo 'no commit'), inputs ${STAGES_FP:-not fingerprinted (changes: ${dirty//$'\n'/ })}${STAGES_RESUME:+, resuming}"

stage make-test "" bash "$T/test/test.sh"

# The selftests every kernel runs (ksft.list set "all"): compared case by
# case on the patched and the unpatched kernel (parity stages).
all_set="$(awk '$1 !~ /^#/ && NF >= 7 && $7 == "all" { printf "ksft_mm_%s ", $1 }' "$RUST_MM_TOP/tests/userspace/ksft.list")"
say "== x86_64: the unpatched kernel, our programs (the base behaviour) and selftests/mm/cow case by case as on the patched one =="
USERSPACE_PARITY="$all_set" stage base userspace-base bash "$T/test/run-variant.sh" base
# shellcheck disable=SC2086
stage parity parity python3 "$T/lib/results.py" parity \
	"$BUILD_DIR/userspace.log.txt" "$BUILD_DIR/userspace-base.log.txt" $all_set

say "== the userspace tests with every option of ours off (must behave as the base) =="
stage off userspace-off bash "$T/test/run-variant.sh" off
stage off-arm64 userspace-off env ARCH=arm64 bash "$T/test/run-variant.sh" off
say "== arm64 4K: the mm selftests make test leaves out there =="
USERSPACE_KSFT_SETS="all patched long" USERSPACE_LOG="$BUILD_DIR/userspace-arm64-all.log" USERSPACE_NAME=arm64-all \
	stage arm64-all userspace env ARCH=arm64 bash "$T/test/run-userspace.sh"
say "== arm64 4K: the unpatched kernel, selftests/mm/cow case by case as on the patched one =="
USERSPACE_PARITY="$all_set" stage base-arm64 userspace-base env ARCH=arm64 bash "$T/test/run-variant.sh" base
# shellcheck disable=SC2086
stage parity-arm64 parity python3 "$T/lib/results.py" parity \
	"$BUILD_DIR/userspace-arm64.log.txt" "$BUILD_DIR/userspace-base-arm64.log.txt" $all_set

say "== KUnit on arm64's 16K and 64K page kernels =="
for g in 16k 64k; do
	stage "kunit-arm64-$g" kunit env ARCH=arm64 GRANULE=$g bash "$T/test/run-kunit.sh"
done

# A tree with CONFIG_NO_PAGE_MAPCOUNT (7.x: no per-page mapcounts of large
# folios; the rmap values and the folio's mapcount are all there is):
# our KUnit suites on a kernel with it, x86_64.
if grep -q '^config NO_PAGE_MAPCOUNT$' "$KSRC/mm/Kconfig" 2>/dev/null; then
	say "== KUnit with CONFIG_NO_PAGE_MAPCOUNT=y (x86_64) =="
	KUNIT_BUILD="$BUILD_DIR/kunit-nopm" KUNIT_KCONFIG_ADD="CONFIG_NO_PAGE_MAPCOUNT=y" \
		KUNIT_LOG="$BUILD_DIR/kunit-nopm.log" KUNIT_RESULTS="$BUILD_DIR/kunit-results-nopm.json" \
		stage kunit-nopm kunit bash "$T/test/run-kunit.sh"
fi

say "== KUnit in a KCSAN build (x86_64 and arm64 4K, QEMU), no KCSAN report from the series' code =="
for a in x86_64 arm64; do
	k=kcsan
	[ "$a" = x86_64 ] || k="kcsan-$a"
	stage "$k" kunit env ARCH=$a bash "$T/test/run-kcsan.sh"
	if grep -q '^kcsan: [0-9]* reports (0 from rust-mm code' "$BUILD_DIR/$k.out"; then
		stage_add "$k-ours" 1 0
	else
		stage_add "$k-ours" 0 1 "$(grep '^kcsan: ' "$BUILD_DIR/$k.out" || echo 'the KCSAN run gave no report count')"
	fi
done

say "== every mm selftest on the patched and on the unpatched kernel, compared case by case =="
full_sets="all patched long full"
full_progs="$(awk -v sets=" $full_sets " '$1 !~ /^#/ && NF >= 7 && index(sets, " " $7 " ") { printf "ksft_mm_%s ", $1 }' \
	"$RUST_MM_TOP/tests/userspace/ksft.list")"
USERSPACE_OURS=0 USERSPACE_KSFT_SETS="$full_sets" USERSPACE_LOG="$BUILD_DIR/userspace-full.log" \
	USERSPACE_NAME=full USERSPACE_PARITY="$full_progs" \
	stage full userspace bash "$T/test/run-userspace.sh"
USERSPACE_OURS=0 USERSPACE_KSFT_SETS="$full_sets" USERSPACE_LOG="$BUILD_DIR/userspace-base-full.log" \
	USERSPACE_PARITY="$full_progs" \
	stage base-full userspace-base bash "$T/test/run-variant.sh" base
stage parity-full parity python3 "$T/lib/results.py" parity "$BUILD_DIR/userspace-full.log.txt" \
	"$BUILD_DIR/userspace-base-full.log.txt"

say "== uffd-unit-tests' events group on both kernels: reported, not counted =="
# A race of 6.12 (docs/test-guests.md: UFFDIO_UNREGISTER against a
# userfault taken under the per-VMA lock) fails it on the unpatched kernel
# about as often as on ours; its outcome says nothing about the series.
if [ -n "${STAGES_RESUME:-}" ] && [ "$(cat "$BUILD_DIR/stamps/racy" 2>/dev/null)" = "$STAGES_FP" ]; then
	say "racy: not run again (same inputs, outputs of that run below)"
else
	USERSPACE_OURS=0 USERSPACE_KSFT_SETS=racy USERSPACE_LOG="$BUILD_DIR/userspace-racy.log" \
		USERSPACE_NAME=racy bash "$T/test/run-userspace.sh" > "$BUILD_DIR/racy-patched.out" 2>&1
	USERSPACE_OURS=0 USERSPACE_KSFT_SETS=racy USERSPACE_LOG="$BUILD_DIR/userspace-base-racy.log" \
		bash "$T/test/run-variant.sh" base > "$BUILD_DIR/racy-base.out" 2>&1
	[ -z "$STAGES_FP" ] || { mkdir -p "$BUILD_DIR/stamps"; echo "$STAGES_FP" > "$BUILD_DIR/stamps/racy"; }
fi
for k in patched base; do
	say "racy, $k kernel: $(tail -n 1 "$BUILD_DIR/racy-$k.out")"
done

say "== bisectability: every prefix of the stack builds (x86_64, KUnit config) =="
if [ "${TEST_ALL_BISECT:-1}" = 0 ]; then
	say "bisect: NOT RUN (TEST_ALL_BISECT=0): quote the last whole make bisect and the series it ran on"
else
	stage bisect bisect bash "$T/test/bisect-build.sh"
fi

stages_end
