#!/usr/bin/env bash
# The patches of a series that change this repository's Rust files apply
# to those files as they are now, for every base: main's series
# (kernel-patches/) and the 6.12 release's (kernel-patches-6.12/).
#
# A topic's first patch adds the repository's rust/mm files to the tree as
# they are; a later patch of the topic may change them (the 6.12 series'
# "build 6.12's ..." patches give a core or edge ported to 7.3 its 6.12
# content back). Such a patch is written against the repository's files,
# so any edit of those files must regenerate it -- and nothing else that
# make test runs would notice if it did not: make test prepares 7.3's tree
# only. This applies, in the series' order, every patch's hunks for the
# repository's rust/mm files (rust_mm.rs is generated per tree, not the
# repository's, and is left out) to a copy of those files, without fuzz.
# Needs no kernel tree. Prints one line per series: 'rust-patches: DIR: N
# patches apply to the repository's Rust files: ok' or '...: FAILED', and
# fails if one failed. RUST_PATCHES_DIRS (for the tools tests): the series
# directories to check instead of both.
set -uo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

check_base() { # DIR
	local pdir="$1" name tmp t p f n=0 bad="" inc
	name="$(basename "$pdir")"
	tmp="$(mktemp -d)"
	(cd "$RUST_MM_TOP" && git ls-files -z rust/mm | xargs -0 cp --parents -t "$tmp")
	git -C "$tmp" init -q
	while read -r t; do
		[ -f "$pdir/$t/series" ] || { bad="$name/topics: $t has no series"; break; }
		while read -r p; do
			inc=()
			for f in $(sed -n 's|^diff --git a/\(rust/mm/[^ ]*\) b/.*|\1|p' "$pdir/$t/$p"); do
				[ "$f" != rust/mm/rust_mm.rs ] && [ -f "$tmp/$f" ] && inc+=("--include=$f")
			done
			[ "${#inc[@]}" -gt 0 ] || continue
			if ! git -C "$tmp" apply "${inc[@]}" "$pdir/$t/$p" 2> "$tmp/.err"; then
				bad="$t/$p: $(head -n 3 "$tmp/.err" | tr '\n' ' ')"
				break 2
			fi
			n=$((n + 1))
		done < <(grep -v -E '^(#|$)' "$pdir/$t/series")
	done < <(grep -v -E '^(#|$)' "$pdir/topics")
	rm -rf "$tmp"
	if [ -z "$bad" ]; then
		echo "rust-patches: $name: $n patches apply to the repository's Rust files: ok"
	else
		echo "rust-patches: $name: $bad (regenerate it against the repository's files): FAILED"
		return 1
	fi
}

rc=0
for d in ${RUST_PATCHES_DIRS:-"$RUST_MM_TOP/kernel-patches" "$RUST_MM_TOP/kernel-patches-6.12"}; do
	check_base "$d" || rc=1
done
exit $rc
