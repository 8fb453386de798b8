#!/usr/bin/env bash
# Series management on the prepared tree (build/linux-<version>, branch
# rust-mm on top of tag 'pristine').
#   series.sh export DIR   write the whole self-contained series (rust/mm as
#                          new-file patch 0001, then kernel-patches/) to DIR
#                          with a quilt 'series' file
#   series.sh refresh      write the tree's commits after 0001 back into
#                          kernel-patches/ (after editing the C side in the
#                          tree and committing there)
#   series.sh check DIR    apply DIR to fresh pristine copies with `git am`
#                          and with `quilt push -a`; prints one line per tool
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "$0")/env.sh"

[ -f "$KSRC/.rust-mm-applied" ] || die "the tree is not prepared (run: make prepare)"
git_t() { git -C "$KSRC" "$@"; }

format() { # DIR START_REV START_NUMBER
	git_t format-patch -q --zero-commit --no-signature --start-number "$3" -o "$1" "$2"..rust-mm
}

write_series() { # DIR
	(cd "$1" && ls [0-9][0-9][0-9][0-9]-*.patch) > "$1/series.tmp"
	{ echo "# rust-mm on linux-source-6.12 $LINUX_DEB_VERSION; apply with 'git am' or 'quilt push -a'"
	  cat "$1/series.tmp"; } > "$1/series"
	rm -f "$1/series.tmp"
}

case "${1:-}" in
export)
	dir="${2:?usage: series.sh export DIR}"
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	rm -f "$dir"/[0-9][0-9][0-9][0-9]-*.patch "$dir/series"
	format "$dir" pristine 1
	write_series "$dir"
	say "exported $(grep -vc '^#' "$dir/series") patches to $dir"
	;;
refresh)
	first="$(git_t rev-list --reverse pristine..rust-mm | head -n1)"
	dir="$RUST_MM_TOP/kernel-patches"
	rm -f "$dir"/[0-9][0-9][0-9][0-9]-*.patch
	format "$dir" "$first" 2
	{ echo "# rust-mm series on linux-source-6.12 (patch 0001, rust/mm, is generated from"
	  echo "# this repository by scripts/prepare-tree.sh and \`make series\`)"
	  (cd "$dir" && ls [0-9][0-9][0-9][0-9]-*.patch); } > "$dir/series"
	say "kernel-patches/ refreshed: $(grep -vc '^#' "$dir/series") patches"
	;;
check)
	dir="$(cd "${2:?usage: series.sh check DIR}" && pwd)"
	tmp="$BUILD_DIR/series-check"
	rm -rf "$tmp" && mkdir -p "$tmp"
	git_t archive --format=tar --prefix=gitam/ pristine | tar -C "$tmp" -x
	cp -a "$tmp/gitam" "$tmp/quilt"
	( cd "$tmp/gitam" && git init -q && git add -f -A . &&
	  git -c user.name=x -c user.email=x@x commit -q -m pristine &&
	  while read -r p; do
		case "$p" in ''|'#'*) continue ;; esac
		git -c user.name=x -c user.email=x@x am -q "$dir/$p" || { echo "git am: FAILED at $p"; exit 1; }
	  done < "$dir/series" ) && echo "series-check: git am applies every patch: ok"
	( cd "$tmp/quilt" && mkdir -p patches && cp "$dir"/*.patch "$dir/series" patches/ &&
	  QUILT_PATCHES=patches quilt push -a -q --fuzz=0 >"$tmp/quilt.log" 2>&1 ||
		{ cat "$tmp/quilt.log"; echo "quilt: FAILED"; exit 1; } ) &&
		echo "series-check: quilt push -a --fuzz=0 applies every patch: ok"
	# Both results must be the same tree.
	diff -r -q -x .git -x .pc -x patches "$tmp/gitam" "$tmp/quilt" >/dev/null &&
		echo "series-check: git am and quilt give identical trees: ok"
	# And the very tree that `make prepare` builds.
	[ "$(git -C "$tmp/gitam" rev-parse 'HEAD^{tree}')" = "$(git_t rev-parse 'rust-mm^{tree}')" ] &&
		echo "series-check: the result is the prepared tree, bit for bit: ok"
	;;
*) die "usage: series.sh export DIR | refresh | check DIR" ;;
esac
