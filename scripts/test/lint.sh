#!/usr/bin/env bash
# Style gates of the series:
#   - scripts/checkpatch.pl --strict on every exported patch of every topic,
#     as sent (Signed-off-by checked too: no --no-signoff)
#   - make rustfmtcheck in the kernel tree (covers rust/mm) and cargo fmt
#     --check for the host-only files
#   - rust/mm rebuilt with CLIPPY=1 (warnings are errors for our crate),
#     and cargo clippy on the host crate with -D warnings
# Prints one line per gate, then 'lint: N passed, N failed'; exits 1 if
# any failed.
set -uo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
[ -f "$KUNIT_OUT/.config" ] || die "no configured kernel build in $KUNIT_OUT (run: make run)"
bad=0
gate() { if "$@" > "$BUILD_DIR/lint.$1.log" 2>&1; then echo "lint: $1: ok"; else
	echo "lint: $1: FAILED"; tail -n 40 "$BUILD_DIR/lint.$1.log"; bad=$((bad + 1)); fi; }

checkpatch() {
	local dir="${LINT_SERIES_DIR:-}" patches=()
	# A fresh export (make test passes the one its series stage just made):
	# a topic exported by an earlier run of another series must not be
	# checked as this one's.
	if [ -z "$dir" ]; then
		dir="$BUILD_DIR/series-lint"
		rm -rf "$dir"
		bash "$RUST_MM_TOP/scripts/series/series.sh" export "$dir" >/dev/null || return 1
	fi
	# Every patch of every topic (not the cover letters), signed off as
	# sent: a missing Signed-off-by fails. FILE_PATH_CHANGES ("does
	# MAINTAINERS need updating?") is asked of any patch that adds a file
	# without touching MAINTAINERS, even one under a directory an entry
	# already has (rust/mm/); the robots check of `make test` answers it
	# for every added file with get_maintainer.pl. One checkpatch for all
	# of them (it loads its word lists once); its SPDX check runs
	# scripts/spdxcheck.py with `env python3`, which must be Debian's
	# (python3-ply, python3-git), not another python3 earlier in PATH.
	mapfile -t patches < <(ls "$dir"/*/[0-9]*.patch | grep -v -- '-cover-letter\.patch$')
	[ "${#patches[@]}" -gt 0 ] || { echo "no patch in $dir"; return 1; }
	echo "checkpatch --strict: ${#patches[@]} patches of $dir"
	(cd "$KSRC" && PATH="/usr/bin:$PATH" perl scripts/checkpatch.pl --strict -q --ignore FILE_PATH_CHANGES "${patches[@]}")
}
rustfmt_check() {
	make -s -C "$KSRC" O="$KUNIT_OUT" "${KMAKE_OPTS[@]}" rustfmtcheck &&
	(cd "$RUST_MM_TOP/rust/mm" && cargo fmt --check &&
	 rustfmt --check --config-path rustfmt.toml rust_mm.rs)
}
clippy_kernel() {
	rm -f "$KUNIT_OUT/rust/mm/rust_mm.o"
	make -C "$KSRC" O="$KUNIT_OUT" "${KMAKE_OPTS[@]}" CLIPPY=1 KRUSTFLAGS=-Dwarnings rust/mm/ \
		> "$BUILD_DIR/clippy-kernel.out" 2>&1 || { cat "$BUILD_DIR/clippy-kernel.out"; return 1; }
	cat "$BUILD_DIR/clippy-kernel.out"
	! grep -E '^(warning|error)' "$BUILD_DIR/clippy-kernel.out"
}
# The arm64-only modules (contpte) are built only for arm64: clippy them in
# the arm64 KUnit kernel too (make test builds it before this gate).
clippy_kernel_arm64() {
	local out="$BUILD_DIR/kunit-arm64"
	[ -f "$out/.config" ] || { echo "no configured arm64 kernel in $out (run: make kunit ARCH=arm64)"; return 1; }
	rm -f "$out/rust/mm/rust_mm.o"
	make -C "$KSRC" O="$out" ARCH=arm64 "${KMAKE_OPTS[@]}" CLIPPY=1 KRUSTFLAGS=-Dwarnings rust/mm/ \
		> "$BUILD_DIR/clippy-kernel-arm64.out" 2>&1 || { cat "$BUILD_DIR/clippy-kernel-arm64.out"; return 1; }
	cat "$BUILD_DIR/clippy-kernel-arm64.out"
	! grep -E '^(warning|error)' "$BUILD_DIR/clippy-kernel-arm64.out"
}
clippy_host() {
	(cd "$RUST_MM_TOP/rust/mm" && CARGO_TARGET_DIR="$BUILD_DIR/cargo" \
		cargo clippy --locked --all-targets -- -D warnings)
}
gate checkpatch
gate rustfmt_check
gate clippy_kernel
gate clippy_kernel_arm64
gate clippy_host
gates=$(grep -c '^gate ' "$0")
echo "lint: $((gates - bad)) passed, $bad failed"
[ "$bad" -eq 0 ]
