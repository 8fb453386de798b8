#!/usr/bin/env bash
# `make kcsan`: our KUnit suites once more, in a CONFIG_KCSAN=y build
# (build/kunit-kcsan on x86_64, build/kunit-kcsan-arm64 with ARCH=arm64),
# then the KCSAN reports in the guest's console log.
# Prints the KUnit lines, 'kcsan: N reports (M from rust-mm code; ...)' and
# last 'kunit: N passed, N failed, N skipped'. Fails if a KCSAN report
# involves the series' code or a test fails.
#
# "The series' code" is derived from the series, never listed by hand
# (scripts/lib/results.py kcsan): every function of a file the series adds,
# every function whose body its diff touches in a file it changes, every
# export of rust/mm and every symbol of the rust_mm crate. A new topic is
# watched without an edit here.
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
case "$TARGET" in
x86_64) add="" ;;
# arm64 selects HAVE_ARCH_KCSAN only under EXPERT.
arm64) add="CONFIG_EXPERT=y" ;;
*) die "make kcsan runs on x86_64 and arm64 4K (the granules' KUnit kernels are in make test-all; TARGET=$TARGET)" ;;
esac

OUT="$BUILD_DIR/kunit-kcsan$TSUFFIX"
set +e
KUNIT_BUILD="$OUT" KUNIT_RESULTS="$BUILD_DIR/kcsan-results$TSUFFIX.json" KUNIT_LOG="$BUILD_DIR/kcsan$TSUFFIX.log" \
KUNIT_KCONFIG_ADD="CONFIG_DEBUG_KERNEL=y CONFIG_KCSAN=y CONFIG_KCSAN_REPORT_ONCE_IN_MS=0${add:+ $add}" \
KUNIT_CONSOLE_ALLOW='BUG: KCSAN: ' \
	bash "$RUST_MM_TOP/scripts/test/run-kunit.sh" > "$BUILD_DIR/kcsan-kunit$TSUFFIX.out" 2>&1
rc=$?
set -e
grep -v '^kunit: ' "$BUILD_DIR/kcsan-kunit$TSUFFIX.out" || true
# kunit.py keeps the guest's whole console log in test.log.
[ -s "$OUT/test.log" ] || die "no console log at $OUT/test.log"
python3 "$RUST_MM_TOP/scripts/lib/results.py" kcsan "$OUT/test.log" --tree "$KSRC" || rc=1
grep '^kunit: ' "$BUILD_DIR/kcsan-kunit$TSUFFIX.out" || echo "kunit: 0 passed, 1 failed, 0 skipped"
exit $rc
