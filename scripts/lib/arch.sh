# shellcheck shell=bash
# The target a kernel is built and booted for: ARCH (x86_64, the default,
# or arm64) and, on arm64, GRANULE (4k, the default, 16k or 64k). Sourced
# by env.sh, never executed. Sets:
#   TARGET        x86_64, arm64, arm64-16k or arm64-64k (build/kunit-$TARGET)
#   KARCH         the kernel's ARCH= and kunit.py's --arch
#   KIMAGE        the image QEMU boots, relative to a build directory
#   KUNITCONFIGS  tests/kunit fragments: common, the arch's, the granule's
#   KUNIT_MEM     memory of the KUnit guest (MiB)
#   QEMU QEMU_PKG QEMU_ARGS CONSOLE
#   UCC UCC_PKG   the C compiler for the guest's static userspace programs
# An ARCH or GRANULE we do not support stops at once with the list. The
# kernel's own spellings are accepted too (ARCH=x86, ARCH=aarch64).
RUST_MM_ARCHES="x86_64 arm64"
ARCH="${ARCH:-x86_64}"
GRANULE="${GRANULE:-4k}"
case "$ARCH" in
x86) ARCH=x86_64 ;;
aarch64) ARCH=arm64 ;;
esac
case "$ARCH" in
x86_64)
	[ "$GRANULE" = 4k ] || die "GRANULE=$GRANULE: x86_64 has only 4k pages (GRANULE=4k|16k|64k is for ARCH=arm64)"
	TARGET=x86_64 KARCH=x86_64 KIMAGE=arch/x86/boot/bzImage
	QEMU=qemu-system-x86_64 QEMU_PKG=qemu-system-x86 CONSOLE=ttyS0
	QEMU_ARGS=(-bios qboot.rom)
	UCC=gcc UCC_PKG="gcc (build-essential)"
	;;
arm64)
	case "$GRANULE" in
	4k) TARGET=arm64 ;;
	16k|64k) TARGET="arm64-$GRANULE" ;;
	*) die "GRANULE=$GRANULE is not supported; supported on arm64: 4k 16k 64k" ;;
	esac
	KARCH=arm64 KIMAGE=arch/arm64/boot/Image.gz
	QEMU=qemu-system-aarch64 QEMU_PKG=qemu-system-arm CONSOLE=ttyAMA0
	QEMU_ARGS=(-machine virt -cpu max,pauth-impdef=on)
	UCC=aarch64-linux-gnu-gcc UCC_PKG=gcc-aarch64-linux-gnu
	;;
*) die "ARCH=$ARCH is not supported; supported: $RUST_MM_ARCHES" ;;
esac
# Memory of the KUnit guest (MiB). folio_rmap allocates a folio of every
# order up to MAX_PAGE_ORDER; with 64K pages that is order 13, 512 MiB, and
# a 2 GiB guest had no free 512 MiB block left by the time the suite ran.
KUNIT_MEM=2048
[ "$TARGET" = arm64-64k ] && KUNIT_MEM=4096
KUNITCONFIGS=("$RUST_MM_TOP/tests/kunit/rust_mm.kunitconfig" "$RUST_MM_TOP/tests/kunit/$KARCH.kunitconfig")
# Our KUnit suites on this arch: every topic's that builds on it (the
# KUnit: and Arch: fields of kernel-patches/*/topic).
KUNIT_OUR_SUITES="$(python3 "$RUST_MM_TOP/scripts/lib/topics.py" suites "$KARCH" | paste -sd' ')" ||
	die "cannot read the topics' suites (scripts/lib/topics.py suites $KARCH)"
[ "$TARGET" = "$KARCH" ] || KUNITCONFIGS+=("$RUST_MM_TOP/tests/kunit/$TARGET.kunitconfig")
# Build directories of other targets carry the target's name.
TSUFFIX=""
[ "$TARGET" = x86_64 ] || TSUFFIX="-$TARGET"

# The QEMU binary and the guest C compiler, or a message naming the package.
need_qemu() {
	command -v "$QEMU" >/dev/null 2>&1 || die "$QEMU not found (Debian package $QEMU_PKG; run: make setup)"
}
need_ucc() {
	command -v "$UCC" >/dev/null 2>&1 || die "$UCC not found (Debian package $UCC_PKG; run: make setup)"
}
