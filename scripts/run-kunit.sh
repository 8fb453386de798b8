#!/usr/bin/env bash
# Build the patched kernel for x86_64 with our KUnit suites and run them
# under QEMU (TCG) with kunit.py.  Writes build/kunit-results.json and
# prints kunit.py's report, then one line 'kunit: N passed, N failed, ...'.
#   KUNIT_SUITES   suites to run and count (default: all of ours)
#   KUNIT_EXTRA    extra kunit.py arguments
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "$0")/env.sh"

SUITES="${KUNIT_SUITES:-rmap_id atomic_seqcount}"
RESULTS="$BUILD_DIR/kunit-results.json"
LOG="$BUILD_DIR/kunit.log"

[ -f "$KSRC/.rust-mm-applied" ] || die "the tree is not prepared (run: make prepare)"
mkdir -p "$KUNIT_OUT"
rm -f "$RESULTS"

make_opts=()
for o in "${KMAKE_OPTS[@]}"; do make_opts+=(--make_options "$o"); done

say "building and booting the KUnit kernel (x86_64, QEMU TCG); log: $LOG"
set +e
# shellcheck disable=SC2086
(cd "$KSRC" && python3 tools/testing/kunit/kunit.py run \
	--arch=x86_64 --build_dir="$KUNIT_OUT" \
	--kunitconfig="$RUST_MM_TOP/tests/kunit/rust_mm.kunitconfig" \
	--jobs="$(nproc)" --timeout=900 \
	--kernel_args=panic=-1 --qemu_args="-no-reboot -smp 2" \
	"${make_opts[@]}" --json="$RESULTS" ${KUNIT_EXTRA:-}) 2>&1 | tee "$LOG" |
	grep -v -E '^\$ make|^Populating config|^Building with' || true
set -e
[ -s "$RESULTS" ] || die "KUnit produced no results (build or boot failure): see $LOG"
# shellcheck disable=SC2086
python3 "$RUST_MM_TOP/scripts/kunit-count.py" "$RESULTS" $SUITES
