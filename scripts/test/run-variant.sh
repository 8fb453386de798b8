#!/usr/bin/env bash
# Build and boot a comparison kernel with the same userspace tests as the
# patched one (scripts/test/run-userspace.sh):
#   run-variant.sh off    the patched tree with CONFIG_MM_RMAP_ID=n: the
#                         kernel must behave as the base (no COW reuse)
#   run-variant.sh base   the unpatched 6.12 tree (git tag 'pristine' of the
#                         prepared tree), for skip parity with the
#                         selftests and the base behaviour
# Both use the KUnit kernel's configuration for ARCH (scripts/lib/arch.sh)
# without our options (base also without Rust, which the unpatched tree
# does not need) and without Clang LTO (x86_64's test kernel has it for
# rust/mm's cross-language inlining; these kernels are functional
# references, and a ThinLTO build costs CI minutes), built with kunit.py
# into build/kunit-<variant>[-<target>]. Prints the userspace lines, then
# 'userspace-<variant>: N passed, N failed, N skipped'.
set -uo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

variant="${1:-}"
case "$variant" in
off) src="$KSRC"; drop='MM_RMAP_ID|MM_ATOMIC_SEQCOUNT_KUNIT_TEST|ARM64_CONTPTE_RUST|PER_VMA_LOCK_RUST|PAGEMAP_SHARED_SWAP|COMPOUND_PAGEMAPS_RUST|RUST_MM_LTO|LTO_CLANG' ;;
base) src="$BUILD_DIR/linux-base"; drop='MM_RMAP_ID|MM_ATOMIC_SEQCOUNT_KUNIT_TEST|ARM64_CONTPTE_RUST|PER_VMA_LOCK_RUST|PAGEMAP_SHARED_SWAP|COMPOUND_PAGEMAPS_RUST|RUST_MM_LTO|LTO_CLANG|CONFIG_RUST=' ;;
*) die "usage: run-variant.sh off|base" ;;
esac
[ -f "$KSRC/.rust-mm-applied" ] || die "the tree is not prepared (run: make prepare)"
out="$BUILD_DIR/kunit-$variant$TSUFFIX"
mkdir -p "$out"

if [ "$variant" = base ]; then
	src="$(bash "$RUST_MM_TOP/scripts/setup/base-tree.sh")" || exit 1
fi

kcfg="$out/variant.kunitconfig"
cat "${KUNITCONFIGS[@]}" | grep -Ev "$drop" > "$kcfg"
args=()
for o in "${KMAKE_OPTS[@]}"; do args+=(--make_options "$o"); done
say "building the $variant kernel in $out (log: $out/build.log)"
(cd "$src" && python3 tools/testing/kunit/kunit.py build --arch="$KARCH" \
	--build_dir="$out" --kunitconfig="$kcfg" --jobs="$(nproc)" "${args[@]}") \
	> "$out/build.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] || [ ! -f "$out/$KIMAGE" ]; then
	tail -n 20 "$out/build.log"
	echo "userspace-$variant: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
if grep -qE '^CONFIG_(MM_RMAP_ID|ARM64_CONTPTE_RUST|PER_VMA_LOCK_RUST|PAGEMAP_SHARED_SWAP|COMPOUND_PAGEMAPS_RUST)=y' "$out/.config"; then
	die "an option of ours is still on in the $variant kernel: $(grep -E '^CONFIG_(MM_RMAP_ID|ARM64_CONTPTE_RUST|PER_VMA_LOCK_RUST|PAGEMAP_SHARED_SWAP|COMPOUND_PAGEMAPS_RUST)=y' "$out/.config" | tr '\n' ' ')"
fi

# make test boots the variants with the selftests every kernel runs (set
# "all" of tests/userspace/ksft.list); make test-all with all of them.
USERSPACE_BUILD="$out" USERSPACE_LOG="${USERSPACE_LOG:-$BUILD_DIR/userspace-$variant$TSUFFIX.log}" USERSPACE_NAME="$variant$TSUFFIX" \
USERSPACE_KSFT_SETS="${USERSPACE_KSFT_SETS:-all}" \
	bash "$RUST_MM_TOP/scripts/test/run-userspace.sh" | sed "s/^userspace: /userspace-$variant: /"
