# shellcheck shell=bash
# What scripts/bench/bench.sh and scripts/bench/profile.sh share: the tree, the guest's
# initramfs and the two kernels, built alike, for the target env.sh set
# (ARCH=x86_64, the default, or arm64 with 4K pages). Sourced after env.sh
# with OUT set; never executed.

# The toolchain, both trees, and the guest ($1, default
# $OUT/initramfs.cpio): init runs /tests/* (here only the benchmark).
# Sets base_src.
bench_prepare() {
	local cpio="${1:-$OUT/initramfs.cpio}" root
	root="${cpio%.cpio}"

	bash "$RUST_MM_TOP/scripts/setup/setup.sh" || exit 1
	bash "$RUST_MM_TOP/scripts/setup/prepare-tree.sh" || die "the tree could not be prepared"
	base_src="$(bash "$RUST_MM_TOP/scripts/setup/base-tree.sh")" || exit 1
	need_qemu
	need_ucc
	rm -rf "$root" && mkdir -p "$root/tests"
	"$UCC" -O2 -Wall -Wextra -Werror -static -o "$root/init" "$RUST_MM_TOP/tests/userspace/init.c" ||
		die "cannot build tests/userspace/init.c"
	"$UCC" -O2 -Wall -Wextra -Werror -static -o "$root/tests/rustmm_bench" \
		"$RUST_MM_TOP/tests/bench/rmap_bench.c" || die "cannot build tests/bench/rmap_bench.c"
	# Reproducible: the same programs give the same bytes (and hash).
	find "$root" -exec touch -h -d @0 {} +
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet --reproducible) > "$cpio" ||
		die "cannot build the initramfs"
}

# The config: tests/bench/bench.kunitconfig, on arm64 followed by
# tests/kunit/arm64.kunitconfig (48-bit VAs, contiguous PTEs: the arch as
# the test kernels have it) without our options (the test kernels turn
# every system on; a benchmark kernel has only the one it measures), then
# EXTRA_CONFIG.
build() { # NAME SRC EXTRA_CONFIG: $OUT/kernel-NAME
	local dir="$OUT/kernel-$1" kcfg args=()
	mkdir -p "$dir"
	kcfg="$dir/bench.kunitconfig"
	cp "$RUST_MM_TOP/tests/bench/bench.kunitconfig" "$kcfg"
	[ "$KARCH" = arm64 ] && grep -v 'ARM64_CONTPTE_RUST' "$RUST_MM_TOP/tests/kunit/arm64.kunitconfig" >> "$kcfg"
	bench_system_config >> "$kcfg"
	[ -n "$3" ] && echo "$3" >> "$kcfg"
	for o in "${KMAKE_OPTS[@]}"; do args+=(--make_options "$o"); done
	say "[$1] building $(make -s -C "$2" kernelversion) for $TARGET from $2 into $dir (log: $dir/build.log)"
	if ! (cd "$2" && python3 tools/testing/kunit/kunit.py build --arch="$KARCH" \
		--build_dir="$dir" --kunitconfig="$kcfg" --jobs="$(nproc)" "${args[@]}") \
		> "$dir/build.log" 2>&1 || [ ! -f "$dir/$KIMAGE" ]; then
		tail -n 20 "$dir/build.log"
		die "[$1] the kernel did not build; no benchmark report"
	fi
	local c
	for c in $3; do
		case "$c" in
		CONFIG_*=y) grep -qx "$c" "$dir/.config" ||
			die "[$1] $c did not stick in $dir/.config (Kconfig dropped it: see its dependencies)" ;;
		esac
	done
	local ours
	ours="$(grep -oE '^CONFIG_(MM_RMAP_ID|ARM64_CONTPTE_RUST|PER_VMA_LOCK_RUST|PAGEMAP_SHARED_SWAP|COMPOUND_PAGEMAPS_RUST)=y' "$dir/.config" | tr '\n' ' ')"
	if [ "$1" = base ] && [ -n "$ours" ]; then
		die "[base] has $ours"
	fi
	if [ "$1" = patched ] && [ "$ours" != "$(bench_option) " ]; then
		die "[patched] has '${ours% }' of our options, not only $(bench_option)"
	fi
}

# The option of the measured system (BENCH_SYSTEM, default rmap-id).
bench_option() {
	case "${SYSTEM:-rmap-id}" in
	contpte) echo CONFIG_ARM64_CONTPTE_RUST=y ;;
	vma-lock) echo CONFIG_PER_VMA_LOCK_RUST=y ;;
	pagemap-swap) echo CONFIG_PAGEMAP_SHARED_SWAP=y ;;
	compound-pagemaps) echo CONFIG_COMPOUND_PAGEMAPS_RUST=y ;;
	*) echo CONFIG_MM_RMAP_ID=y ;;
	esac
}

# What both kernels of the measured system need beyond bench.kunitconfig:
# pagemap-swap pages memory out to zram (init's RUSTMM_SWAP_MIB, which
# finds /dev/zram0 in devtmpfs); compound-pagemaps makes a device-dax of
# the legacy pmem of memmap=nn!ss (docs/notes/compound-pagemaps-plan.md
# C.1, C.2): memory hotplug for ZONE_DEVICE, the e820 nvdimm bus and
# nd_pmem, pfn/dax info blocks, device-dax and its nd driver dax_pmem,
# without dax_kmem (which would take the device as System RAM), with fs
# dax (without it IS_DAX() is 0 and device-dax refuses every mmap; the
# devmap_managed_key nd_pmem's FS_DAX pgmap turns on at boot is off again
# once the device is made: both kernels alike); gup_test
# in debugfs (init mounts debugfs and devtmpfs); and PCI, without which
# x86 never inserts a memmap=! region into iomem (e820_pmem finds none:
# pcibios_resource_survey() calls e820__reserve_resources_late()).
bench_system_config() {
	case "${SYSTEM:-rmap-id}" in
	pagemap-swap) printf '%s\n' CONFIG_SWAP=y CONFIG_ZRAM=y CONFIG_DEVTMPFS=y ;;
	compound-pagemaps)
		printf '%s\n' CONFIG_PCI=y CONFIG_MEMORY_HOTPLUG=y CONFIG_MEMORY_HOTREMOVE=y CONFIG_ZONE_DEVICE=y \
			CONFIG_X86_PMEM_LEGACY=y CONFIG_LIBNVDIMM=y CONFIG_BLK_DEV_PMEM=y \
			CONFIG_NVDIMM_PFN=y CONFIG_NVDIMM_DAX=y CONFIG_DAX=y CONFIG_DEV_DAX=y \
			CONFIG_DEV_DAX_PMEM=y '# CONFIG_DEV_DAX_KMEM is not set' \
			CONFIG_FS_DAX=y CONFIG_DEVTMPFS=y CONFIG_DEBUG_FS=y \
			CONFIG_GUP_TEST=y
		;;
	esac
}

# base: the pinned tree without the series; patched: with it and the
# measured system's option (only that one). Every system's base kernel is
# the same build: one made for another system is copied and brought up to
# date instead of built again.
build_kernel() { # base|patched
	# BENCH_MMS: the kernels of the same run without it, copied (the
	# build below brings them up to date).
	local same="${OUT%-mms*}/kernel-$1"
	if [ "${MMS:-0}" != 0 ] && [ ! -f "$OUT/kernel-$1/.config" ] && [ -f "$same/$KIMAGE" ]; then
		say "[$1] starting from the kernel of $same"
		mkdir -p "$OUT" && cp -a "$same" "$OUT/kernel-$1"
	fi
	if [ "$1" = base ]; then
		local other="$BUILD_DIR/bench$TSUFFIX/kernel-base"
		if [ "${LTO:-0}" = 0 ] && [ ! -f "$OUT/kernel-base/.config" ] && [ "$OUT" != "$BUILD_DIR/bench$TSUFFIX" ] &&
		   [ -f "$other/$KIMAGE" ]; then
			say "[base] starting from the base kernel of $other"
			mkdir -p "$OUT" && cp -a "$other" "$OUT/kernel-base"
		fi
		build base "$base_src" "$(bench_lto_config base)"
	else
		build patched "$KSRC" "$(bench_option)
$(bench_lto_config patched)"
		if [ "${LTO:-0}" = 1 ]; then
			say "[patched] rust/mm inlined into its C callers? (scripts/test/lto-check.py)"
			python3 "$RUST_MM_TOP/scripts/test/lto-check.py" --objdump "$LLVM_BIN/llvm-objdump" \
				"$OUT/kernel-patched/vmlinux" ||
				die "[patched] the LTO kernel still calls rust/mm's entry points (above): no benchmark"
		fi
	fi
}

# BENCH_LTO=1: both kernels Clang ThinLTO, the patched one with rust/mm in
# the LTO link; build() checks that both options stuck.
bench_lto_config() { # base|patched
	[ "${LTO:-0}" = 1 ] || return 0
	echo CONFIG_LTO_CLANG_THIN=y
	[ "$1" = patched ] && echo CONFIG_RUST_MM_LTO=y
	return 0
}

# The guest, exactly as every benchmark and profile boot runs it: QEMU
# under TCG (x86_64: -machine pc with qboot; arm64: -machine virt -cpu
# max), -icount shift=0,sleep=off (guest time counts executed
# instructions; idle time jumps to the next timer instead of following the
# host clock), the RTC on virtual time, 2 vCPUs with CPU 1 isolated for the
# measured process, 2 GiB, no watchdog. With QEMU_PRINT=1 the command line
# is printed (shell-quoted) instead of run.
qemu_run() { # KERNEL INITRAMFS BENCH_ENV [QEMU_ARGS...]
	local k="$1" initrd="$2" env="$3" machine=() tail=()
	shift 3
	case "$KARCH" in
	x86_64) machine=(-machine pc) tail=(-bios qboot.rom) ;;
	arm64) machine=(-machine virt -cpu max,pauth-impdef=on) ;;
	esac
	local cmd=("$QEMU" -nodefaults "${machine[@]}" -m 2048 -smp 2
		-icount shift=0,sleep=off -rtc clock=vm
		-kernel "$OUT/kernel-$k/$KIMAGE" -initrd "$initrd"
		-append "console=$CONSOLE panic=-1 kunit.enable=0 rdinit=/init isolcpus=1 nowatchdog $env"
		-no-reboot -nographic -serial stdio "${tail[@]}" "$@")
	if [ "${QEMU_PRINT:-0}" = 1 ]; then
		printf '%q ' "${cmd[@]}" | sed 's/ $//'
		echo
	else
		"${cmd[@]}"
	fi
}

# What identifies a benchmark run of KERNEL: the kernel image, its config,
# the guest's initramfs, the QEMU command line and version, the settings.
# A reused earlier run must have the same manifest.
manifest_write() { # KERNEL SETTINGS
	local dir="$OUT/kernel-$1"
	echo "kernel=$1"
	echo "image_sha256=$(sha256sum < "$dir/$KIMAGE" | cut -d' ' -f1)"
	echo "config_sha256=$(sha256sum < "$dir/.config" | cut -d' ' -f1)"
	echo "initramfs_sha256=$(sha256sum < "$OUT/initramfs.cpio" | cut -d' ' -f1)"
	echo "qemu_cmdline=$(QEMU_PRINT=1 qemu_run "$1" "$OUT/initramfs.cpio" "RUSTMM_BENCH_RUNS=... RUSTMM_BENCH_MIB=... RUSTMM_BENCH_CASE=...")"
	echo "qemu_version=$("$QEMU" --version | head -n 1)"
	if [ "$1" = base ]; then
		echo "source=linux-source-6.12 $LINUX_DEB_VERSION, unpatched (tree $(git -C "$KSRC" rev-parse 'pristine^{tree}'))"
	else
		echo "source=linux-source-6.12 $LINUX_DEB_VERSION + the rust-mm series (tree $(git -C "$KSRC" rev-parse 'rust-mm^{tree}'))"
	fi
	echo "clang=$(clang --version | head -n 1)"
	echo "rustc=$(/usr/bin/rustc --version)"
	echo "bindgen=$("$BINDGEN" --version | head -n 1)"
	echo "settings=$2"
}
