#!/usr/bin/env bash
# Bisectability, as a list's build bots check it: every prefix of the stack
# (pristine + the first k patches, k = 1..N, across all topics) builds
# vmlinux for x86_64 with the KUnit kernel's configuration (our options on
# wherever the prefix defines them). One scratch worktree of the prepared
# tree is moved from commit to commit and built incrementally into one
# output directory, so only what a patch touches is rebuilt. The
# configuration is the KUnit kernel's without LTO: a prefix is a compile
# and link check, and a ThinLTO link per prefix would cost minutes each;
# the whole stack with LTO (CONFIG_RUST_MM_LTO, the rust-lto topic) is the
# KUnit kernel itself, which `make bisect` builds first (its prerequisite
# `make kunit`). Prints one line per prefix, then 'bisect: N passed,
# N failed'. Part of `make test-all` (it does not fit CI's time for
# `make test`).
#   BISECT_FROM   first prefix to build (default 1)
#   BISECT_CACHE  0: build every prefix even if it built before. By default
#                 a prefix whose source tree (its git tree hash), final
#                 .config and compilers are those of a prefix that built
#                 here before is not built again (the stamp in
#                 $BUILD_DIR/bisect-stamps says when it built); a series
#                 that grows at its end builds only its new prefixes.
set -uo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
[ "$TARGET" = x86_64 ] || die "make bisect is x86_64 only for now (ARCH=$ARCH: not yet, see docs/arm64.md)"

[ -f "$KSRC/.rust-mm-applied" ] || die "the tree is not prepared (run: make prepare)"
cfg="$KUNIT_OUT/.config"
[ -f "$cfg" ] || die "no configured KUnit kernel in $KUNIT_OUT (run: make kunit)"
src="$BUILD_DIR/bisect-src"
obj="$BUILD_DIR/bisect-obj"
git_t() { git -C "$KSRC" "$@"; }

if [ ! -d "$src/.git" ] && [ ! -f "$src/.git" ]; then
	git_t worktree prune
	rm -rf "$src"
	git_t worktree add -q --detach "$src" pristine || die "cannot create the worktree $src"
fi
mkdir -p "$obj"
mapfile -t commits < <(git_t rev-list --reverse pristine..rust-mm)
n=${#commits[@]}
passed=0 failed=0 reused=0
stamps="$BUILD_DIR/bisect-stamps"
mkdir -p "$stamps"
tools="$({ "$LLVM_BIN/clang" --version; /usr/bin/rustc --version; "$BINDGEN" --version; } 2>&1 | sha256sum | cut -c 1-16)"
for ((k = ${BISECT_FROM:-1}; k <= n; k++)); do
	c="${commits[$((k - 1))]}"
	subj="$(git_t log -1 --format=%s "$c")"
	git -C "$src" checkout -q -f --detach "$c" || die "cannot check out $c in $src"
	# The full config every time: olddefconfig drops what this prefix does
	# not define, and a later prefix must get it back.
	cp "$cfg" "$obj/.config"
	# CONFIG_RUST_MM_LTO refuses a build without LTO (rust-lto's Kbuild):
	# off with it.
	"$src/scripts/config" --file "$obj/.config" -d LTO_CLANG_THIN -d LTO_CLANG_FULL -e LTO_NONE \
		-d RUST_MM_LTO
	log="$obj/build-$k.log"
	if ! make -C "$src" O="$obj" ARCH=x86_64 "${KMAKE_OPTS[@]}" olddefconfig > "$log" 2>&1; then
		echo "bisect: $k/$n $subj: olddefconfig fails (log: $log): FAILED"
		failed=$((failed + 1))
		continue
	fi
	key="$(git -C "$src" rev-parse HEAD^{tree})-$(sha256sum < "$obj/.config" | cut -c 1-16)-$tools"
	if [ "${BISECT_CACHE:-1}" != 0 ] && [ -f "$stamps/$key" ]; then
		echo "bisect: $k/$n $subj: builds: ok (built $(cat "$stamps/$key"), same tree, .config and compilers)"
		passed=$((passed + 1)) reused=$((reused + 1))
		continue
	fi
	if make -C "$src" O="$obj" ARCH=x86_64 "${KMAKE_OPTS[@]}" -j"$(nproc)" vmlinux >> "$log" 2>&1; then
		on=""
		if grep -q '^config MM_RMAP_ID$' "$src/mm/Kconfig"; then
			if grep -q '^CONFIG_MM_RMAP_ID=y' "$obj/.config"; then
				on=" (CONFIG_MM_RMAP_ID=y)"
			else
				echo "bisect: $k/$n $subj: CONFIG_MM_RMAP_ID exists but did not stay on: FAILED"
				failed=$((failed + 1))
				continue
			fi
		fi
		echo "bisect: $k/$n $subj: builds$on: ok"
		date -u +%Y-%m-%dT%H:%MZ > "$stamps/$key"
		passed=$((passed + 1))
	else
		grep -E 'error|Error' "$log" | head -n 10 | sed 's/^/  | /'
		echo "bisect: $k/$n $subj: does not build (log: $log): FAILED"
		failed=$((failed + 1))
	fi
done
[ "$reused" -eq 0 ] || echo "bisect: $reused of the $passed prefixes that pass built in an earlier run (BISECT_CACHE=0 builds them all)"
echo "bisect: $passed passed, $failed failed"
