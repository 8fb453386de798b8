#!/usr/bin/env bash
# Prepare the patched kernel tree under build/:
#   1. check the pinned linux-source-6.12 Debian package is what is installed,
#   2. extract it (once) into build/linux-<version>, as a git repository whose
#      first commit is the pristine tree,
#   3. commit rust/mm (the Rust files and Kbuild of this repository) as the
#      first patch of the series,
#   4. apply kernel-patches/series with `git am`: no fuzz at all; a patch that
#      does not apply stops everything with its name.
# Re-running with unchanged inputs does nothing; changed inputs rebuild the
# series on top of the pristine commit (the extracted tree is reused).
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "$0")/env.sh"

TARBALL=/usr/src/linux-source-6.12.tar.xz
installed="$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true)"
[ -n "$installed" ] || die "linux-source-6.12 is not installed (run: make setup)"
if [ "$installed" != "$LINUX_DEB_VERSION" ]; then
	die "installed linux-source-6.12 is $installed, but this series is pinned to $LINUX_DEB_VERSION. Run 'make setup' to install the pinned version, or set LINUX_DEB_VERSION=$installed to build that one explicitly."
fi
[ "$LINUX_DEB_VERSION" = "$RUST_MM_PIN_DEB" ] ||
	say "WARNING: building linux-source-6.12 $LINUX_DEB_VERSION, not the pinned $RUST_MM_PIN_DEB (LINUX_DEB_VERSION override)"
[ -r "$TARBALL" ] || die "$TARBALL is missing (reinstall linux-source-6.12=$LINUX_DEB_VERSION)"

git_t() {
	git -C "$KSRC" -c user.name="rust-mm build" -c user.email="rust-mm@localhost" \
		-c core.autocrlf=false -c advice.detachedHead=false "$@"
}

mkdir -p "$BUILD_DIR"
if [ ! -f "$KSRC/.rust-mm-pristine" ]; then
	say "extracting $TARBALL ($LINUX_DEB_VERSION) into $KSRC"
	rm -rf "$KSRC" "$BUILD_DIR/extract.tmp"
	mkdir -p "$BUILD_DIR/extract.tmp"
	tar -C "$BUILD_DIR/extract.tmp" -xf "$TARBALL"
	mv "$BUILD_DIR/extract.tmp/linux-source-6.12" "$KSRC"
	rmdir "$BUILD_DIR/extract.tmp"
	git_t init -q -b base
	git_t add -A -f .
	git_t commit -q -m "linux-source-6.12 $LINUX_DEB_VERSION (pristine)"
	git_t tag -f pristine >/dev/null
	echo "$LINUX_DEB_VERSION" > "$KSRC/.rust-mm-pristine"
fi

# The tree must be the pinned kernel version.
kver="$(sed -n 's/^VERSION = //p; s/^PATCHLEVEL = //p; s/^SUBLEVEL = //p' "$KSRC/Makefile" | paste -sd.)"
[ "$kver" = "$LINUX_KVER" ] || die "$KSRC is Linux $kver, expected $LINUX_KVER (from $LINUX_DEB_VERSION)"

# Inputs of the patched tree; skip everything if they did not change.
inputs_hash() {
	(cd "$RUST_MM_TOP" && cat kernel-patches/series &&
	 sed -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' kernel-patches/series |
		sed 's|^|kernel-patches/|' | xargs cat &&
	 cat scripts/rust-files.txt && xargs cat < scripts/rust-files.txt &&
	 cat scripts/rust-mm.commit scripts/rust-mm.maintainers) | sha256sum | cut -d' ' -f1
}
want="$(inputs_hash)"
if [ "$(cat "$KSRC/.rust-mm-applied" 2>/dev/null || true)" = "$want" ] &&
   [ -z "$(git_t status --porcelain --untracked-files=no)" ]; then
	say "tree $KSRC is up to date ($(git_t rev-list --count pristine..HEAD) patches)"
	exit 0
fi

say "resetting $KSRC to the pristine $LINUX_DEB_VERSION tree"
git_t am --abort >/dev/null 2>&1 || true
git_t checkout -q -f -B rust-mm pristine
git_t clean -q -fdx -e /.rust-mm-pristine

# Patch 1: rust/mm as new files, generated from this repository.
while read -r f; do
	case "$f" in
	Kbuild) dst=rust/mm/Kbuild ;;
	rust/mm/*) dst="$f" ;;
	*) die "scripts/rust-files.txt: unexpected path $f" ;;
	esac
	mkdir -p "$KSRC/$(dirname "$dst")"
	cp "$RUST_MM_TOP/$f" "$KSRC/$dst"
	git_t add -f "$dst"
done < "$RUST_MM_TOP/scripts/rust-files.txt"
# Its MAINTAINERS section goes right after "MEMORY MANAGEMENT".
python3 - "$KSRC/MAINTAINERS" "$RUST_MM_TOP/scripts/rust-mm.maintainers" <<'PY' ||
import sys
path, entry = sys.argv[1], open(sys.argv[2]).read()
lines = open(path).read().split("\n")
at = lines.index("MEMORY MAPPING")
lines[at:at] = entry.rstrip("\n").split("\n") + [""]
open(path, "w").write("\n".join(lines))
PY
	die "MAINTAINERS of this tree has no 'MEMORY MAPPING' section to insert before"
git_t add MAINTAINERS
# A stable date keeps `make series` output reproducible.
rdate="$(git -C "$RUST_MM_TOP" log -1 --format=%aI -- rust/mm Kbuild 2>/dev/null || true)"
GIT_AUTHOR_DATE="${rdate:-2026-11-21T00:00:00Z}" GIT_COMMITTER_DATE="${rdate:-2026-11-21T00:00:00Z}" \
	git_t commit -q --author="rust-mm developers <rust-mm@localhost>" -F "$RUST_MM_TOP/scripts/rust-mm.commit"
say "applied 0001 (rust/mm, generated from this repository)"

n=1
while read -r p; do
	case "$p" in ''|'#'*) continue ;; esac
	n=$((n + 1))
	[ -f "$RUST_MM_TOP/kernel-patches/$p" ] || die "kernel-patches/series names $p, which does not exist"
	if ! git_t am -q --no-3way --whitespace=nowarn "$RUST_MM_TOP/kernel-patches/$p" >"$BUILD_DIR/am.log" 2>&1; then
		cat "$BUILD_DIR/am.log" >&2
		git_t am --abort >/dev/null 2>&1 || true
		die "PATCH FAILED: kernel-patches/$p does not apply to linux $LINUX_DEB_VERSION (no fuzz is allowed). Nothing was built."
	fi
	say "applied $p"
done < "$RUST_MM_TOP/kernel-patches/series"
echo "$want" > "$KSRC/.rust-mm-applied"
say "tree ready: $KSRC ($n patches on linux-source-6.12 $LINUX_DEB_VERSION)"
