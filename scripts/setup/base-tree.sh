#!/usr/bin/env bash
# Make build/linux-base a plain copy of the unpatched tree (the 'pristine'
# tag of the prepared tree), refreshed when the tag moves; print its path.
# Used by run-variant.sh base and bench.sh.
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

src="$BUILD_DIR/linux-base"
[ -f "$KSRC/.rust-mm-applied" ] || die "the tree is not prepared (run: make prepare)"
want="$(git -C "$KSRC" rev-parse 'pristine^{tree}')" || die "no 'pristine' tag in $KSRC"
if [ "$(cat "$src/.rust-mm-base" 2>/dev/null)" != "$want" ]; then
	say "extracting the unpatched tree (tag pristine) into $src" >&2
	rm -rf "$src" && mkdir -p "$src"
	git -C "$KSRC" archive pristine | tar -x -C "$src" || die "cannot extract the base tree"
	echo "$want" > "$src/.rust-mm-base"
fi
echo "$src"
