#!/usr/bin/env bash
# Style gates of the series:
#   - scripts/checkpatch.pl --strict on every exported patch of every topic,
#     as sent (Signed-off-by checked too: no --no-signoff)
#   - make rustfmtcheck in the kernel tree (covers rust/mm) and cargo fmt
#     --check for the host-only files
#   - clippy on rust/mm as the x86_64 and arm64 KUnit kernels built it
#     (warnings are errors), and cargo clippy on the host crate with -D
#     warnings
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
	# scripts/spdxcheck.py, which needs python3-ply and python3-git
	# (setup installs them: without, it printed a traceback and checked
	# nothing).
	mapfile -t patches < <(ls "$dir"/*/[0-9]*.patch | grep -v -- '-cover-letter\.patch$')
	[ "${#patches[@]}" -gt 0 ] || { echo "no patch in $dir"; return 1; }
	echo "checkpatch --strict: ${#patches[@]} patches of $dir"
	(cd "$KSRC" && perl scripts/checkpatch.pl --strict -q --ignore FILE_PATH_CHANGES "${patches[@]}")
}
rustfmt_check() {
	make -s -C "$KSRC" O="$KUNIT_OUT" "${KMAKE_OPTS[@]}" rustfmtcheck &&
	(cd "$RUST_MM_TOP/rust/mm" && cargo fmt --check &&
	 rustfmt --check --config-path rustfmt.toml rust_mm.rs)
}
# clippy on rust/mm exactly as a kernel build compiled it: the build's own
# command (rust/mm/.rust_mm.o.cmd: flags, cfgs, target, the crates it
# links against) run by clippy-driver (the same compiler, Debian's
# rust-web-clippy) with warnings as errors, writing only metadata into a
# scratch directory. `make CLIPPY=1 rust/mm/` rebuilt core, kernel and
# every other Rust object of the tree with clippy first (over a minute
# per kernel) and left the build's objects changed.
clippy_rust_mm() { # KBUILD_OUT
	local out="$1" cmd tmp rc
	cmd="$(sed -n 's|^savedcmd_rust/mm/rust_mm\.o := ||p' "$out/rust/mm/.rust_mm.o.cmd" 2>/dev/null)"
	[ -n "$cmd" ] || { echo "no build command in $out/rust/mm/.rust_mm.o.cmd (is rust/mm built there?)"; return 1; }
	tmp="$(mktemp -d)"
	cmd="$(sed -E "s# ([^ ]*/)?(rustc|clippy-driver) # /usr/bin/clippy-driver #; s#--out-dir [^ ]+#--out-dir $tmp#;
		s#--emit=dep-info=[^ ]+##; s#--emit=obj=[^ ]+#--emit=metadata=$tmp/rust_mm.rmeta#" <<<"$cmd")"
	case "$cmd" in *" /usr/bin/clippy-driver "*"--emit=metadata=$tmp/"*) ;;
	*) rm -rf "$tmp"; echo "cannot make a clippy command of $out/rust/mm/.rust_mm.o.cmd"; return 1 ;;
	esac
	echo "clippy-driver on rust/mm as built in $out"
	(cd "$out" && RUSTC_BOOTSTRAP=1 CLIPPY_CONF_DIR="$KSRC" eval "$cmd -Dwarnings") 2>&1
	rc=$?
	rm -rf "$tmp"
	return $rc
}
clippy_kernel() { clippy_rust_mm "$KUNIT_OUT"; }
# The arm64-only modules (contpte) are built only for arm64: clippy them in
# the arm64 KUnit kernel too (make test builds it before this gate).
clippy_kernel_arm64() { clippy_rust_mm "$BUILD_DIR/kunit-arm64"; }
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
