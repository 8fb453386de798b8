#!/usr/bin/env bash
# Build the patched kernel for ARCH (x86_64, or arm64 with GRANULE=4k|16k|
# 64k; scripts/lib/arch.sh) with our KUnit suites and run them under QEMU
# (TCG, 2 vCPUs) with kunit.py's configuration of that arch. Prints
# kunit.py's report, then one line per test case of our suites and
# 'kunit: N passed, N failed, N skipped'.
#
# The cases counted are the ones the suites' sources declare (each
# KUNIT_CASE*() of the suite's case array, read from the files the series
# adds: scripts/lib/results.py kunit): a declared case without a result, a
# result no source declares, or a suite missing from the results is a
# failure. A skipped case counts as failed: our suites skip only when the
# guest cannot give them what they test, and what was not tested did not
# pass. Two more checks: no kernel warning, BUG, oops, lockdep or RCU
# report in the guest's console, and no compiler warning in the series'
# code among the files this build compiled.
# Settings (environment):
#   KUNIT_SUITES        suites to count (default: every topic's on this arch)
#   KUNIT_BUILD         build directory (default build/kunit-$TARGET)
#   KUNIT_RESULTS       JSON results (default build/kunit-results.json)
#   KUNIT_LOG           kunit.py's output (default build/kunit.log)
#   KUNIT_KCONFIG_ADD   extra CONFIG_X=y options, space separated
#   KUNIT_CONSOLE_ALLOW console lines (regex) that are not kernel reports
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
# shellcheck source=scripts/lib/kbuild.sh
. "$RUST_MM_TOP/scripts/lib/kbuild.sh"

SUITES="${KUNIT_SUITES:-$KUNIT_OUR_SUITES}"
OUT="${KUNIT_BUILD:-$KUNIT_OUT}"
RESULTS="${KUNIT_RESULTS:-$BUILD_DIR/kunit-results$TSUFFIX.json}"
LOG="${KUNIT_LOG:-$BUILD_DIR/kunit$TSUFFIX.log}"

[ -f "$KSRC/.rust-mm-applied" ] || die "the tree is not prepared (run: make prepare)"
rm -f "$RESULTS"

args=()
for c in ${KUNIT_KCONFIG_ADD:-}; do args+=(--kconfig_add "$c"); done
port_kunitconfigs "$KSRC" "$BUILD_DIR"
for k in "${KUNITCONFIGS[@]}"; do args+=(--kunitconfig "$k"); done
need_qemu

say "building and booting the KUnit kernel in $OUT ($TARGET, QEMU TCG, 2 vCPUs); log: $LOG"
# The kunitconfig enables only our suites, so no filter is needed (the
# kernel's kunit.filter_glob takes a single glob, not a list).
set +e
kunit_py "$KSRC" "$OUT" run --timeout=1800 --kernel_args=panic=-1 \
	--qemu_args="-no-reboot -smp 2 -m $KUNIT_MEM" "${args[@]}" --json="$RESULTS" 2>&1 |
	tee "$LOG" | grep -v -E '^\$ make|^Populating config|^Building with' || true
set -e
[ -s "$RESULTS" ] || die "KUnit produced no results (build or boot failure): see $LOG"
# shellcheck disable=SC2086
config_stuck "$OUT" ${KUNIT_KCONFIG_ADD:-}
# shellcheck disable=SC2086
counted="$(python3 "$RUST_MM_TOP/scripts/lib/results.py" kunit "$RESULTS" --tree "$KSRC" $SUITES)"
grep -v '^kunit: ' <<<"$counted" || true
last="$(grep '^kunit: ' <<<"$counted" | tail -n 1)"
[[ "$last" =~ ^kunit:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]] ||
	die "scripts/lib/results.py kunit gave no summary"
p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} s=${BASH_REMATCH[3]}
if [ "$s" -gt 0 ]; then
	echo "rust-mm: $s case(s) skipped (the guest lacked what they test): counted as failed"
	f=$((f + s))
fi
allow=()
[ -n "${KUNIT_CONSOLE_ALLOW:-}" ] && allow=(--allow "$KUNIT_CONSOLE_ALLOW")
if python3 "$RUST_MM_TOP/scripts/lib/results.py" scan "${allow[@]}" --name "KUnit guest" "$OUT/test.log"; then
	p=$((p + 1))
else
	f=$((f + 1))
fi
# And no compiler warning in the series' code in what this build compiled
# (an unregistered KUnit case is an unused function).
if python3 "$RUST_MM_TOP/scripts/lib/results.py" warnings "$LOG" --tree "$KSRC"; then
	p=$((p + 1))
else
	f=$((f + 1))
fi
echo "kunit: $p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
