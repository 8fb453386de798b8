#!/usr/bin/env bash
# Prepare the patched kernel tree under build/:
#   1. check the pinned kernel source (env.sh: RUST_MM_BASE) is what is
#      installed (6.12), or fetch and verify it (7.3: fetch-base.sh),
#   2. extract it (once) into build/linux-<version>, as a git repository whose
#      first commit is the pristine tree,
#   3. apply the topics of kernel-patches/topics in order (scripts/
#      topics-lib.sh): a topic with Rust first gets its generated patch (its
#      rust/mm files from this repository), then its series is applied with
#      `git am`: no fuzz at all; a patch that does not apply stops
#      everything with its name. Each topic's end is tagged rust-mm/<topic>.
# Re-running with unchanged inputs does nothing; changed inputs rebuild the
# series on top of the pristine commit (the extracted tree is reused).
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

if [ -n "$LINUX_DEB_SUITE" ]; then
	# A downloaded base: fetched, verified and unpacked into the build
	# directory (nothing installed).
	TARBALL="$(bash "$RUST_MM_TOP/scripts/setup/fetch-base.sh")" || exit 1
else
	TARBALL=/usr/src/$LINUX_PKG.tar.xz
	installed="$(dpkg-query -W -f='${Version}' "$LINUX_PKG" 2>/dev/null || true)"
	[ -n "$installed" ] || die "$LINUX_PKG is not installed (run: make setup)"
	if [ "$installed" != "$LINUX_DEB_VERSION" ]; then
		die "installed $LINUX_PKG is $installed, but this series is pinned to $LINUX_DEB_VERSION. Run 'make setup' to install the pinned version, or set LINUX_DEB_VERSION=$installed to build that one explicitly."
	fi
	[ -r "$TARBALL" ] || die "$TARBALL is missing (reinstall $LINUX_PKG=$LINUX_DEB_VERSION)"
fi
[ "$LINUX_DEB_VERSION" = "$RUST_MM_PIN_DEB" ] ||
	say "WARNING: building $LINUX_PKG $LINUX_DEB_VERSION, not the pinned $RUST_MM_PIN_DEB (LINUX_DEB_VERSION override)"

# shellcheck source=scripts/lib/topics.sh
. "$RUST_MM_TOP/scripts/lib/topics.sh"
topics_validate

git_t() {
	git -C "$KSRC" "${GEN_IDENT[@]}" -c core.autocrlf=false -c advice.detachedHead=false "$@"
}

# The pristine commit is reproducible: the tarball's content, a fixed
# identity and the tarball's own date. Its hash is the base-commit of every
# exported topic (make series), the same on every machine.
pristine_commit() { # TREE
	GIT_AUTHOR_DATE="@$(stat -c %Y "$TARBALL") +0000" GIT_COMMITTER_DATE="@$(stat -c %Y "$TARBALL") +0000" \
		git_t commit-tree "$1" -m "$LINUX_PKG $LINUX_DEB_VERSION (pristine)"
}

mkdir -p "$BUILD_DIR"
if [ ! -f "$KSRC/.rust-mm-pristine" ]; then
	say "extracting $TARBALL ($LINUX_DEB_VERSION) into $KSRC"
	rm -rf "$KSRC" "$BUILD_DIR/extract.tmp"
	mkdir -p "$BUILD_DIR/extract.tmp"
	tar -C "$BUILD_DIR/extract.tmp" -xf "$TARBALL" || { rm -rf "$BUILD_DIR/extract.tmp"; die "cannot extract $TARBALL"; }
	x="$BUILD_DIR/extract.tmp/$LINUX_PKG"
	# The version is checked before the tree takes its place: a tarball
	# of another kernel leaves nothing behind.
	kver="$(sed -n 's/^VERSION = //p; s/^PATCHLEVEL = //p; s/^SUBLEVEL = //p' "$x/Makefile" 2>/dev/null | paste -sd.)"
	[ "$kver" = "$LINUX_KVER" ] || { rm -rf "$BUILD_DIR/extract.tmp"; die "$TARBALL holds Linux ${kver:-(no Makefile)}, expected $LINUX_KVER (from $LINUX_DEB_VERSION): nothing extracted"; }
	mv "$x" "$KSRC"
	rm -rf "$BUILD_DIR/extract.tmp"
	git_t init -q -b base
	git_t add -A -f .
	git_t tag -f pristine "$(pristine_commit "$(git_t write-tree)")" >/dev/null
	git_t checkout -q -f -B base pristine
	echo "$LINUX_DEB_VERSION" > "$KSRC/.rust-mm-pristine"
fi
# Trees prepared before the pristine commit was reproducible get it now
# (same tree, so nothing is rebuilt).
want_pristine="$(pristine_commit "$(git_t rev-parse 'pristine^{tree}')")"
if [ "$(git_t rev-parse pristine)" != "$want_pristine" ]; then
	git_t tag -f pristine "$want_pristine" >/dev/null
	rm -f "$KSRC/.rust-mm-applied"
fi

# The tree must be the pinned kernel version.
kver="$(sed -n 's/^VERSION = //p; s/^PATCHLEVEL = //p; s/^SUBLEVEL = //p' "$KSRC/Makefile" | paste -sd.)"
[ "$kver" = "$LINUX_KVER" ] || die "$KSRC is Linux $kver, expected $LINUX_KVER (from $LINUX_DEB_VERSION)"

# Inputs of the patched tree; skip everything if they did not change.
want="$(topics_inputs_hash)"
if [ "$(cat "$KSRC/.rust-mm-applied" 2>/dev/null || true)" = "$want" ] &&
   [ -z "$(git_t status --porcelain --untracked-files=no)" ]; then
	say "tree $KSRC is up to date ($(git_t rev-list --count pristine..HEAD) patches in $(topics_all | wc -l) topics)"
	exit 0
fi

say "resetting $KSRC to the pristine $LINUX_DEB_VERSION tree"
git_t am --abort >/dev/null 2>&1 || true
# The files the old series changed, with their content and mtime: a file
# the new series leaves as it was gets its old mtime back below, so that
# re-applying the stack after one patch changed rebuilds what that patch
# touches, not every object that includes a header of the series.
keep="$BUILD_DIR/prepare-mtimes"
: > "$keep"
if git_t rev-parse -q --verify rust-mm >/dev/null &&
   [ -z "$(git_t status --porcelain --untracked-files=no)" ]; then
	git_t diff --name-only -z pristine rust-mm |
	while IFS= read -r -d '' f; do
		[ -f "$KSRC/$f" ] || continue
		printf '%s %s %s\n' "$(git_t rev-parse "rust-mm:$f")" "$(stat -c %.9Y "$KSRC/$f")" "$f"
	done > "$keep"
fi
git_t checkout -q -f -B rust-mm pristine
git_t clean -q -fdx -e /.rust-mm-pristine

# Every topic in order, each tagged rust-mm/<topic> where it ends.
applied=()
for t in $(topics_all); do
	apply_topic "$KSRC" "$t" "${applied[@]}"
	git_t tag -f "rust-mm/$t" >/dev/null
	applied+=("$t")
done
kept=0
while read -r blob mtime f; do
	[ -f "$KSRC/$f" ] && [ "$(git_t rev-parse "HEAD:$f" 2>/dev/null)" = "$blob" ] || continue
	touch -m -d "@$mtime" "$KSRC/$f" && kept=$((kept + 1))
done < "$keep"
[ "$kept" -eq 0 ] || say "$kept files the series changed are as before: their mtimes kept (no rebuild for them)"
echo "$want" > "$KSRC/.rust-mm-applied"
say "tree ready: $KSRC ($(git_t rev-list --count pristine..HEAD) patches in ${#applied[@]} topics on $LINUX_PKG $LINUX_DEB_VERSION)"
