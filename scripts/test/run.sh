#!/usr/bin/env bash
# `make run`: build the patched kernel, boot it under QEMU, run our KUnit
# suites, and print a report.  (make has already run setup and prepare.)
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
# shellcheck source=scripts/lib/kbuild.sh
. "$RUST_MM_TOP/scripts/lib/kbuild.sh"

set +e
kout="$BUILD_DIR/run-kunit$TSUFFIX.out" uout="$BUILD_DIR/run-userspace$TSUFFIX.out"
bash "$RUST_MM_TOP/scripts/test/run-kunit.sh" > "$kout" 2>&1
krc=$?
urc=1
if [ "$krc" -eq 0 ]; then
	bash "$RUST_MM_TOP/scripts/test/run-userspace.sh" > "$uout" 2>&1
	urc=$?
fi
set -e
cfg="$KUNIT_OUT/.config"

echo
echo "==================== rust-mm report ===================="
echo "base tree     $LINUX_PKG $LINUX_DEB_VERSION (Linux $LINUX_KVER), $KSRC"
echo "series        $(git -C "$KSRC" rev-list --count pristine..rust-mm) patches in topics (kernel-patches/topics):"
prev=pristine
for t in $(python3 "$RUST_MM_TOP/scripts/lib/topics.py" list); do
	echo "  topic $t: $(python3 "$RUST_MM_TOP/scripts/lib/topics.py" field "$t" Title)"
	git -C "$KSRC" log --reverse --format='                %s' "$prev..rust-mm/$t"
	prev="rust-mm/$t"
done
echo "config        $(grep -E "^CONFIG_(RUST|TRANSPARENT_HUGEPAGE|LTO_CLANG_THIN|KCSAN|$(our_options_re))=" "$cfg" 2>/dev/null | paste -sd' ')"
if [ -f "$KUNIT_OUT/$KIMAGE" ]; then
	echo "kernel        $KUNIT_OUT/$KIMAGE ($TARGET, $(stat -c %s "$KUNIT_OUT/$KIMAGE") bytes)"
	echo "rust/mm       $(ls "$KUNIT_OUT"/rust/mm/*.o 2>/dev/null | xargs -r size 2>/dev/null | awk 'NR>1 {t+=$1; d+=$2} END {printf "text %d bytes, data %d bytes", t, d}')"
fi
echo "KUnit ($TARGET under $QEMU, TCG; full log $BUILD_DIR/kunit$TSUFFIX.log):"
sed -n '/^  \(PASS\|FAIL\|SKIP\) /p; /^kunit: /p' "$kout"
echo "userspace tests (same kernel booted with an initramfs; console $BUILD_DIR/userspace$TSUFFIX.log):"
sed -n '/^  rustmm_/p; /^  ksft_/p; /^userspace: /p; /^rust-mm: /p' "$uout" 2>/dev/null
echo "sub-ID classes (computed at build time; docs/subid.md explains them):"
(cd "$RUST_MM_TOP/rust/mm" && CARGO_TARGET_DIR="$BUILD_DIR/cargo" cargo run -q --locked --bin subid-tables -- --markdown) | sed 's/^/  /'
# This target's folio orders and their classes (make subid-tables: all).
tname="$KARCH ${GRANULE^^}"
(cd "$RUST_MM_TOP/rust/mm" && CARGO_TARGET_DIR="$BUILD_DIR/cargo" cargo run -q --locked --bin subid-tables -- --targets) |
	awk -v t="$tname" 'index($0, t " ") == 1 { on = 1 } /^[^ ]/ && index($0, t " ") != 1 { on = 0 } on' | sed 's/^/  /'
echo "========================================================="
if [ "$krc" -ne 0 ] || ! grep -q '^kunit: [0-9]* passed, 0 failed' "$kout"; then
	tail -n 30 "$kout"
	die "KUnit run failed (see above and $BUILD_DIR/kunit$TSUFFIX.log)"
fi
[ "$urc" -eq 0 ] || die "userspace tests failed (see above and $BUILD_DIR/userspace$TSUFFIX.log)"
