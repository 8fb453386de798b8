#!/usr/bin/env bash
# Build and boot a comparison kernel with the same userspace tests as the
# patched one (scripts/test/run-userspace.sh):
#   run-variant.sh off    the patched tree with every option of ours off
#                         (kernel-patches/*/topic's Kconfig:): the kernel
#                         must behave as the base (no COW reuse)
#   run-variant.sh base   the unpatched base tree (git tag 'pristine' of the
#                         prepared tree), for parity with the selftests and
#                         the base behaviour
# Both use the KUnit kernel's configuration for ARCH (scripts/lib/arch.sh)
# without our options (base also without Rust, which the unpatched tree
# does not need) and without Clang LTO (x86_64's test kernel has it for
# rust/mm's cross-language inlining; these kernels are functional
# references, and a ThinLTO build costs CI minutes), built with kunit.py
# (scripts/lib/kbuild.sh) into build/kunit-<variant>[-<target>]. Prints
# the userspace lines, then 'userspace-<variant>: N passed, N failed, N
# skipped'.
set -uo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
# shellcheck source=scripts/lib/kbuild.sh
. "$RUST_MM_TOP/scripts/lib/kbuild.sh"

variant="${1:-}"
[ -f "$KSRC/.rust-mm-applied" ] || die "the tree is not prepared (run: make prepare)"
# What the variants leave out: every option the series adds (each topic's,
# with its KUnit and debug options), the LTO of x86_64's test kernel, and
# on the unpatched tree Rust itself. The option-off kernel keeps the
# topics' counting options (topics.py counters: contpte's fold/unfold
# counters), so the booted tests count what the C the topics replace
# does, beside what the patched kernel counts.
ours="$(series_options_re)"
[ -n "$ours" ] || die "found no Kconfig option the series adds (is $KSRC prepared?)"
counters="$(counter_options_re)"
if [ "$variant" = off ] && [ -n "$counters" ]; then
	ours="$(tr '|' '\n' <<< "$ours" | grep -Evx "$counters" | paste -sd'|')"
fi
case "$variant" in
off) src="$KSRC"; drop="CONFIG_($ours)(=| is not set)|LTO_CLANG" ;;
base) src="$BUILD_DIR/linux-base"; drop="CONFIG_($ours)(=| is not set)|LTO_CLANG|CONFIG_RUST=" ;;
*) die "usage: run-variant.sh off|base" ;;
esac
out="$BUILD_DIR/kunit-$variant$TSUFFIX"
mkdir -p "$out"

if [ "$variant" = base ]; then
	src="$(bash "$RUST_MM_TOP/scripts/setup/base-tree.sh")" || exit 1
fi

port_kunitconfigs "$src" "$out"
kcfg="$out/variant.kunitconfig"
cat "${KUNITCONFIGS[@]}" | grep -Ev "$drop" > "$kcfg"
say "building the $variant kernel in $out (log: $out/build.log)"
kunit_py "$src" "$out" build --kunitconfig="$kcfg" > "$out/build.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] || [ ! -f "$out/$KIMAGE" ]; then
	tail -n 20 "$out/build.log"
	echo "userspace-$variant: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
on="$(our_options_on "$out")"
[ -z "$on" ] || die "an option of ours is still on in the $variant kernel: $on"

# make test boots the variants with the selftests every kernel runs (set
# "all" of tests/userspace/ksft.list); make test-all with all of them.
USERSPACE_BUILD="$out" USERSPACE_LOG="${USERSPACE_LOG:-$BUILD_DIR/userspace-$variant$TSUFFIX.log}" USERSPACE_NAME="$variant$TSUFFIX" \
USERSPACE_KSFT_SETS="${USERSPACE_KSFT_SETS:-all}" \
	bash "$RUST_MM_TOP/scripts/test/run-userspace.sh" | sed "s/^userspace: /userspace-$variant: /"
