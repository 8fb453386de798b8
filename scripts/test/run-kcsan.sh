#!/usr/bin/env bash
# `make kcsan`: our KUnit suites once more, in a CONFIG_KCSAN=y build
# (build/kunit-kcsan), then count the KCSAN reports in the guest's console
# log.  Prints the KUnit lines, 'kcsan: N reports (M from rust-mm code)' and
# last 'kunit: N passed, N failed, N skipped'.  Fails if a KCSAN report
# involves our code or a test fails.
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
[ "$TARGET" = x86_64 ] || die "make kcsan is x86_64 only for now (ARCH=$ARCH: not yet, see docs/arm64.md)"

OUT="$BUILD_DIR/kunit-kcsan"
set +e
KUNIT_BUILD="$OUT" KUNIT_RESULTS="$BUILD_DIR/kcsan-results.json" KUNIT_LOG="$BUILD_DIR/kcsan.log" \
KUNIT_KCONFIG_ADD="CONFIG_DEBUG_KERNEL=y CONFIG_KCSAN=y CONFIG_KCSAN_REPORT_ONCE_IN_MS=0" \
KUNIT_CONSOLE_ALLOW='BUG: KCSAN: ' \
	bash "$RUST_MM_TOP/scripts/test/run-kunit.sh" > "$BUILD_DIR/kcsan-kunit.out" 2>&1
rc=$?
set -e
grep -v '^kunit: ' "$BUILD_DIR/kcsan-kunit.out" || true
# kunit.py keeps the guest's whole console log in test.log.
[ -s "$OUT/test.log" ] || die "no console log at $OUT/test.log"
# Each report is a block starting with 'BUG: KCSAN:' up to a line of '=';
# it is ours if any frame is in our code or tests.
python3 - "$OUT/test.log" <<'PY' || rc=1
import re, sys
text = open(sys.argv[1], errors="replace").read()
blocks = re.split(r"\n(?=.*BUG: KCSAN:)", text)
reports = [b.split("\n=====")[0] for b in blocks if "BUG: KCSAN:" in b]
ours = [b for b in reports
        if re.search(r"atomic_seqcount|rmap_id|rust_mm|aseq_stress|stress_(writer|reader)", b)]
for b in ours:
    print(b[:3000])
print(f"kcsan: {len(reports)} reports ({len(ours)} from rust-mm code)")
sys.exit(1 if ours else 0)
PY
grep '^kunit: ' "$BUILD_DIR/kcsan-kunit.out" || echo "kunit: 0 passed, 1 failed, 0 skipped"
exit $rc
