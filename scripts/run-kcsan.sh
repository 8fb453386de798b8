#!/usr/bin/env bash
# `make kcsan`: run the atomic seqcount and rmap-ID suites once in a
# CONFIG_KCSAN=y build (x86_64, QEMU, 2 vCPUs) and count KCSAN reports.
# Prints the KUnit lines, then 'kcsan: N reports (M from rust-mm code)',
# then 'kunit: N passed, N failed, N skipped'.  Fails if any KCSAN report
# involves our code or a test fails.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "$0")/env.sh"

OUT="$BUILD_DIR/kunit-kcsan"
RESULTS="$BUILD_DIR/kcsan-results.json"
LOG="$BUILD_DIR/kcsan.log"
SUITES="atomic_seqcount rmap_id"
[ -f "$KSRC/.rust-mm-applied" ] || die "the tree is not prepared (run: make prepare)"
mkdir -p "$OUT"
rm -f "$RESULTS"
make_opts=()
for o in "${KMAKE_OPTS[@]}"; do make_opts+=(--make_options "$o"); done

say "KCSAN build and run (x86_64, QEMU TCG, 2 vCPUs); log: $LOG"
set +e
(cd "$KSRC" && python3 tools/testing/kunit/kunit.py run \
	--arch=x86_64 --build_dir="$OUT" \
	--kunitconfig="$RUST_MM_TOP/tests/kunit/rust_mm.kunitconfig" \
	--kconfig_add CONFIG_DEBUG_KERNEL=y --kconfig_add CONFIG_KCSAN=y \
	--kconfig_add CONFIG_KCSAN_REPORT_ONCE_IN_MS=0 \
	--jobs="$(nproc)" --timeout=1800 \
	--kernel_args=panic=-1 --qemu_args="-no-reboot -smp 2" \
	"${make_opts[@]}" --json="$RESULTS") > "$LOG" 2>&1
set -e
[ -s "$RESULTS" ] || { tail -n 40 "$LOG"; die "KCSAN run produced no results: see $LOG"; }
grep -q '^CONFIG_KCSAN=y' "$OUT/.config" || die "CONFIG_KCSAN=y did not stick (see $OUT/.config)"
# kunit.py keeps the guest's whole console log in test.log.
[ -s "$OUT/test.log" ] || die "no console log at $OUT/test.log"
# Each report is a block starting with 'BUG: KCSAN:' and ending with a line
# of '='; attribute it to us if any frame is in our code or tests.
python3 - "$OUT/test.log" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
blocks = re.split(r"\n(?=.*BUG: KCSAN:)", text)
reports = [b for b in blocks if "BUG: KCSAN:" in b]
ours = [b for b in reports
        if re.search(r"atomic_seqcount|rmap_id|rust_mm|aseq_stress|stress_(writer|reader)", b.split("\n=====")[0])]
for b in ours:
    print(b.split("\n=====")[0][:3000])
print(f"kcsan: {len(reports)} reports ({len(ours)} from rust-mm code)")
sys.exit(1 if ours else 0)
PY
# shellcheck disable=SC2086
python3 "$RUST_MM_TOP/scripts/kunit-count.py" "$RESULTS" $SUITES
