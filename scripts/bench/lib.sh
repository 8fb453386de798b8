# shellcheck shell=bash
# What scripts/bench/bench.sh and scripts/bench/profile.sh share: the tree, the guest's
# initramfs and the two kernels, built alike, for the target env.sh set
# (ARCH=x86_64, the default, or arm64 with 4K pages). Sourced after env.sh
# with OUT set; never executed.

# shellcheck source=scripts/lib/kbuild.sh
. "$RUST_MM_TOP/scripts/lib/kbuild.sh"

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
# the test kernels have it) without our options and their KUnit tests (the
# test kernels turn every system on; a benchmark kernel has only the one it
# measures), the topics' counters (which only the tests read) nor the test
# kernel's LTO (BENCH_LTO says), then the measured system's config, then
# EXTRA_CONFIG.
bench_kunitconfig() { # EXTRA_CONFIG
	local re counters
	re="CONFIG_($(our_options_re))"
	[ "$re" != "CONFIG_()" ] || die "cannot read our Kconfig options (scripts/lib/topics.py options)"
	counters="$(counter_options_re)"
	[ -z "$counters" ] || re="$re|CONFIG_($counters)="
	re="$re|CONFIG_(LTO_CLANG_THIN|RUST_MM_LTO)="
	cat "$RUST_MM_TOP/tests/bench/bench.kunitconfig"
	[ "$KARCH" = arm64 ] && grep -vE "$re" "$RUST_MM_TOP/tests/kunit/arm64.kunitconfig"
	bench_system_config
	[ -n "$1" ] && echo "$1"
	return 0
}

# What a kernel gets beyond the shared config, in EXTRA_CONFIG: base, with
# BENCH_LTO=1, ThinLTO; patched, the measured system's option too.
bench_extra_config() { # base|patched
	if [ "$1" = base ]; then
		EXTRA_CONFIG="$(bench_lto_config base)"
	else
		EXTRA_CONFIG="$(bench_option)
$(bench_lto_config patched)"
	fi
}

# Kernel NAME from tree SRC with bench_kunitconfig EXTRA_CONFIG, checked:
# EXTRA_CONFIG's options stuck, and of our options (every topic's) the base
# has none, the patched kernel only the measured system's.
build() { # NAME SRC EXTRA_CONFIG: $OUT/kernel-NAME
	local dir="$OUT/kernel-$1" kcfg ours
	mkdir -p "$dir"
	kcfg="$dir/bench.kunitconfig"
	bench_kunitconfig "$3" > "$kcfg"
	say "[$1] building $(make -s -C "$2" kernelversion) for $TARGET from $2 into $dir (log: $dir/build.log)"
	if ! kunit_py "$2" "$dir" build --kunitconfig="$kcfg" > "$dir/build.log" 2>&1 ||
	   [ ! -f "$dir/$KIMAGE" ]; then
		tail -n 20 "$dir/build.log"
		die "[$1] the kernel did not build; no benchmark report"
	fi
	# shellcheck disable=SC2086
	config_stuck "$dir" $3
	ours="$(our_options_on "$dir")"
	if [ "$1" = base ] && [ -n "$ours" ]; then
		die "[base] has $ours"
	fi
	if [ "$1" = patched ] && [ "$ours" != "$(bench_option)" ]; then
		die "[patched] has '$ours' of our options, not only $(bench_option)"
	fi
}

# The option of the measured system (BENCH_SYSTEM, default rmap-id): its
# topic's Kconfig (SYS_OPTION, from scripts/bench/system.py shell).
bench_option() {
	echo "$SYS_OPTION=y"
}

# What both kernels of the measured system need beyond bench.kunitconfig:
# its file's kconfig lines (SYS_KCONFIG; tests/bench/systems/<system>.toml
# says why each is there).
bench_system_config() {
	[ "${#SYS_KCONFIG[@]}" -eq 0 ] || printf '%s\n' "${SYS_KCONFIG[@]}"
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
		# The default system's base of the same kind (BENCH_LTO=1: its
		# LTO one).
		local first="$BUILD_DIR/bench$TSUFFIX"
		[ "${LTO:-0}" = 0 ] || first+="-lto"
		local other="$first/kernel-base"
		if [ ! -f "$OUT/kernel-base/.config" ] && [ "$OUT" != "$first" ] && [ -f "$other/$KIMAGE" ]; then
			say "[base] starting from the base kernel of $other"
			mkdir -p "$OUT" && cp -a "$other" "$OUT/kernel-base"
		fi
		bench_extra_config base
		build base "$base_src" "$EXTRA_CONFIG"
	else
		bench_extra_config patched
		build patched "$KSRC" "$EXTRA_CONFIG"
		if [ "${LTO:-0}" = 1 ]; then
			say "[patched] rust/mm inlined into its C callers? (scripts/test/lto-check.py)"
			python3 "$RUST_MM_TOP/scripts/test/lto-check.py" --objdump "$LLVM_BIN/llvm-objdump" \
				--system "$SYSTEM" "$OUT/kernel-patched/vmlinux" ||
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
# measured process, 2 GiB, no watchdog; a system's file may give its guest
# more memory and another CPU model (SYS_GUEST_MIB, SYS_GUEST_CPU:
# tests/bench/systems/*.toml [guest]). With QEMU_PRINT=1 the command line
# is printed (shell-quoted) instead of run.
qemu_run() { # KERNEL INITRAMFS BENCH_ENV [QEMU_ARGS...]
	local k="$1" initrd="$2" env="$3" machine=() tail=() cpu="${SYS_GUEST_CPU:-}"
	shift 3
	case "$KARCH" in
	x86_64) machine=(-machine pc) tail=(-bios qboot.rom) ;;
	arm64) machine=(-machine virt) cpu="${cpu:-max,pauth-impdef=on}" ;;
	esac
	[ -z "$cpu" ] || machine+=(-cpu "$cpu")
	local cmd=("$QEMU" -nodefaults "${machine[@]}" -m "${SYS_GUEST_MIB:-2048}" -smp 2
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
# the guest's initramfs (INITRAMFS, default make bench's; make profile
# boots its own), the QEMU command line and version, the settings. A
# reused earlier run must have the same manifest.
manifest_write() { # KERNEL SETTINGS [INITRAMFS]
	local dir="$OUT/kernel-$1" init="${3:-$OUT/initramfs.cpio}"
	[ -f "$init" ] || die "no initramfs to identify the run by: $init"
	echo "kernel=$1"
	echo "image_sha256=$(sha256sum < "$dir/$KIMAGE" | cut -d' ' -f1)"
	echo "config_sha256=$(sha256sum < "$dir/.config" | cut -d' ' -f1)"
	echo "initramfs_sha256=$(sha256sum < "$init" | cut -d' ' -f1)"
	echo "qemu_cmdline=$(QEMU_PRINT=1 qemu_run "$1" "$init" "RUSTMM_BENCH_RUNS=... RUSTMM_BENCH_MIB=... RUSTMM_BENCH_CASE=...")"
	echo "qemu_version=$("$QEMU" --version | head -n 1)"
	if [ "$1" = base ]; then
		echo "source=$LINUX_PKG $LINUX_DEB_VERSION, unpatched (tree $(git -C "$KSRC" rev-parse 'pristine^{tree}'))"
	else
		echo "source=$LINUX_PKG $LINUX_DEB_VERSION + the rust-mm series (tree $(git -C "$KSRC" rev-parse 'rust-mm^{tree}'))"
	fi
	echo "clang=$(clang --version | head -n 1)"
	echo "rustc=$(/usr/bin/rustc --version)"
	echo "bindgen=$("$BINDGEN" --version | head -n 1)"
	echo "settings=$2"
}
