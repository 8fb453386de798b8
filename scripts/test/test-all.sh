#!/usr/bin/env bash
# `make test-all`: everything `make test` runs, then what does not fit CI's
# time, before an issue is resolved:
#   - the userspace tests on the patched tree with CONFIG_MM_RMAP_ID=n
#     (x86_64 and arm64 4K: it must behave as the base), and on arm64's
#     unpatched kernel with selftests/mm/cow's outcome case by case equal
#     on patched and unpatched (x86_64's is in make test);
#   - on arm64 4K, the mm selftests make test leaves out there (sets
#     "all patched" of tests/userspace/ksft.list);
#   - our KUnit suites on arm64's 16K and 64K page kernels (PMD THP orders
#     11 and 13);
#   - our KUnit suites in a CONFIG_KCSAN=y build, and no KCSAN report from
#     our code (scripts/test/run-kcsan.sh);
#   - every mm selftest of tests/userspace/ksft.list (sets all, patched and
#     full) booted on the patched and on the unpatched kernel, with the same
#     outcome case by case (make test compares selftests/mm/cow); set
#     "racy" (uffd-unit-tests' events group, a 6.12 race) on both kernels,
#     reported and not counted;
#   - bisectability: every prefix of the stack builds
#     (scripts/test/bisect-build.sh).
#   TEST_ALL_BISECT=0  leaves the bisectability build out (2-3 h on 2 cores)
#                      for a run whose series is unchanged since a whole
#                      bisect run; it says so and counts nothing for it.
# Ends with one line 'N passed, N failed' over all of it.
set -uo pipefail
# Every arch, whatever ARCH the caller set: the stages below say which.
unset ARCH GRANULE
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
mkdir -p "$BUILD_DIR"

passed=0 failed=0
# Count the last line 'TAG: N passed, N failed' of a stage's output file.
count() { # FILE WHAT
	local last
	last="$(tail -n 1 "$1")"
	if [[ "$last" =~ ^([a-z-]+:\ )?([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
		passed=$((passed + BASH_REMATCH[2])) failed=$((failed + BASH_REMATCH[3]))
	else
		echo "rust-mm: $2 did not report results"
		failed=$((failed + 1))
	fi
}

bash "$RUST_MM_TOP/scripts/test/test.sh" 2>&1 | tee "$BUILD_DIR/test-all.test.out"
count "$BUILD_DIR/test-all.test.out" "make test"

# One stage: run a command, keep its output, count its last line.
stage() { # OUTFILE WHAT COMMAND...
	local out="$BUILD_DIR/$1" what="$2" t0=$SECONDS
	shift 2
	"$@" 2>&1 | tee "$out"
	say "($what: $((SECONDS - t0)) s)"
	count "$out" "$what"
}

say "== the userspace tests with CONFIG_MM_RMAP_ID=n (must behave as the base) =="
stage test-all.off.out "the x86_64 option-off run" bash "$RUST_MM_TOP/scripts/test/run-variant.sh" off
stage test-all.off-arm64.out "the arm64 option-off run" env ARCH=arm64 bash "$RUST_MM_TOP/scripts/test/run-variant.sh" off
say "== arm64 4K: the mm selftests make test leaves out there =="
USERSPACE_KSFT_SETS="all patched" USERSPACE_LOG="$BUILD_DIR/userspace-arm64-all.log" USERSPACE_NAME=arm64-all \
	stage test-all.arm64-all.out "the arm64 run of every selftest" env ARCH=arm64 \
	bash "$RUST_MM_TOP/scripts/test/run-userspace.sh"
say "== arm64 4K: the unpatched kernel, selftests/mm/cow case by case as on the patched one =="
stage test-all.base-arm64.out "the arm64 unpatched run" env ARCH=arm64 bash "$RUST_MM_TOP/scripts/test/run-variant.sh" base
all_set="$(awk '$1 !~ /^#/ && NF >= 7 && $7 == "all" { printf "ksft_mm_%s ", $1 }' "$RUST_MM_TOP/tests/userspace/ksft.list")"
# shellcheck disable=SC2086
stage test-all.parity-arm64.out "the arm64 parity check" python3 "$RUST_MM_TOP/scripts/test/ksft-parity.py" \
	"$BUILD_DIR/userspace-arm64.log.txt" "$BUILD_DIR/userspace-base-arm64.log.txt" $all_set

say "== KUnit on arm64's 16K and 64K page kernels =="
for g in 16k 64k; do
	stage "test-all.kunit-arm64-$g.out" "the arm64 $g KUnit run" env ARCH=arm64 GRANULE=$g \
		bash "$RUST_MM_TOP/scripts/test/run-kunit.sh"
done

say "== KUnit in a KCSAN build (x86_64, QEMU) =="
bash "$RUST_MM_TOP/scripts/test/run-kcsan.sh" 2>&1 | tee "$BUILD_DIR/test-all.kcsan.out"
count "$BUILD_DIR/test-all.kcsan.out" "the KCSAN run"
# One more check: no KCSAN report from our code.
if grep -q '^kcsan: [0-9]* reports (0 from rust-mm code)' "$BUILD_DIR/test-all.kcsan.out"; then
	passed=$((passed + 1))
else
	echo "rust-mm: KCSAN reported a data race in rust-mm code (or did not run)"
	failed=$((failed + 1))
fi

say "== every mm selftest on the patched and on the unpatched kernel =="
USERSPACE_KSFT_SETS="all patched full" USERSPACE_LOG="$BUILD_DIR/userspace-full.log" \
	USERSPACE_NAME=full bash "$RUST_MM_TOP/scripts/test/run-userspace.sh" 2>&1 |
	tee "$BUILD_DIR/test-all.full.out"
count "$BUILD_DIR/test-all.full.out" "the full patched run"
USERSPACE_KSFT_SETS="all patched full" USERSPACE_LOG="$BUILD_DIR/userspace-base-full.log" \
	bash "$RUST_MM_TOP/scripts/test/run-variant.sh" base 2>&1 | tee "$BUILD_DIR/test-all.base-full.out"
count "$BUILD_DIR/test-all.base-full.out" "the full unpatched run"
python3 "$RUST_MM_TOP/scripts/test/ksft-parity.py" "$BUILD_DIR/userspace-full.log.txt" \
	"$BUILD_DIR/userspace-base-full.log.txt" 2>&1 | tee "$BUILD_DIR/test-all.parity.out"
count "$BUILD_DIR/test-all.parity.out" "the parity check"

say "== uffd-unit-tests' events group on both kernels: reported, not counted =="
# A race of 6.12 (docs/test-guests.md: UFFDIO_UNREGISTER against a
# userfault taken under the per-VMA lock) fails it on the unpatched kernel
# about as often as on ours; its outcome says nothing about the series.
USERSPACE_OURS=0 USERSPACE_KSFT_SETS=racy USERSPACE_LOG="$BUILD_DIR/userspace-racy.log" \
	USERSPACE_NAME=racy bash "$RUST_MM_TOP/scripts/test/run-userspace.sh" > "$BUILD_DIR/test-all.racy-patched.out" 2>&1
USERSPACE_OURS=0 USERSPACE_KSFT_SETS=racy USERSPACE_LOG="$BUILD_DIR/userspace-base-racy.log" \
	bash "$RUST_MM_TOP/scripts/test/run-variant.sh" base > "$BUILD_DIR/test-all.racy-base.out" 2>&1
for k in patched base; do
	say "racy, $k kernel: $(tail -n 1 "$BUILD_DIR/test-all.racy-$k.out")"
done

say "== bisectability: every prefix of the stack builds (x86_64, KUnit config) =="
if [ "${TEST_ALL_BISECT:-1}" = 0 ]; then
	say "bisect: NOT RUN (TEST_ALL_BISECT=0): quote the last whole make bisect and the series it ran on"
else
	bash "$RUST_MM_TOP/scripts/test/bisect-build.sh" 2>&1 | tee "$BUILD_DIR/test-all.bisect.out"
	count "$BUILD_DIR/test-all.bisect.out" "the bisectability build"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
