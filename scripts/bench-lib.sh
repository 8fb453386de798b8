# shellcheck shell=bash
# What scripts/bench.sh and scripts/profile.sh share: the tree, the guest's
# initramfs and the two kernels, built alike. Sourced after env.sh with
# OUT set; never executed.

# The toolchain, both trees, and the guest ($1, default
# $OUT/initramfs.cpio): init runs /tests/* (here only the benchmark).
# Sets base_src.
bench_prepare() {
	local cpio="${1:-$OUT/initramfs.cpio}" root
	root="${cpio%.cpio}"

	bash "$RUST_MM_TOP/scripts/setup.sh" || exit 1
	bash "$RUST_MM_TOP/scripts/prepare-tree.sh" || die "the tree could not be prepared"
	base_src="$(bash "$RUST_MM_TOP/scripts/base-tree.sh")" || exit 1
	rm -rf "$root" && mkdir -p "$root/tests"
	gcc -O2 -Wall -Wextra -Werror -static -o "$root/init" "$RUST_MM_TOP/tests/userspace/init.c" ||
		die "cannot build tests/userspace/init.c"
	gcc -O2 -Wall -Wextra -Werror -static -o "$root/tests/rustmm_bench" \
		"$RUST_MM_TOP/tests/bench/rmap_bench.c" || die "cannot build tests/bench/rmap_bench.c"
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$cpio" ||
		die "cannot build the initramfs"
}

build() { # NAME SRC EXTRA_CONFIG: $OUT/kernel-NAME
	local dir="$OUT/kernel-$1" kcfg args=()
	mkdir -p "$dir"
	kcfg="$dir/bench.kunitconfig"
	cp "$RUST_MM_TOP/tests/bench/bench.kunitconfig" "$kcfg"
	[ -n "$3" ] && echo "$3" >> "$kcfg"
	for o in "${KMAKE_OPTS[@]}"; do args+=(--make_options "$o"); done
	say "[$1] building $(make -s -C "$2" kernelversion) from $2 into $dir (log: $dir/build.log)"
	if ! (cd "$2" && python3 tools/testing/kunit/kunit.py build --arch=x86_64 \
		--build_dir="$dir" --kunitconfig="$kcfg" --jobs="$(nproc)" "${args[@]}") \
		> "$dir/build.log" 2>&1 || [ ! -f "$dir/arch/x86/boot/bzImage" ]; then
		tail -n 20 "$dir/build.log"
		die "[$1] the kernel did not build; no benchmark report"
	fi
	if [ "$1" = base ] && grep -q '^CONFIG_MM_RMAP_ID=y' "$dir/.config"; then
		die "[base] has CONFIG_MM_RMAP_ID"
	fi
	if [ "$1" = patched ] && ! grep -q '^CONFIG_MM_RMAP_ID=y' "$dir/.config"; then
		die "[patched] lacks CONFIG_MM_RMAP_ID"
	fi
}

# base: the pinned tree without the series; patched: with it and the option.
build_kernel() { # base|patched
	if [ "$1" = base ]; then
		build base "$base_src" ""
	else
		build patched "$KSRC" "CONFIG_MM_RMAP_ID=y"
	fi
}
