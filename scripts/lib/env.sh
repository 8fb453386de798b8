# shellcheck shell=bash
# Common settings for every rust-mm script.  Sourced, never executed.
#
die() { echo "rust-mm: error: $*" >&2; exit 1; }
say() { echo "rust-mm: $*"; }
# How a guest of init.c (tests/userspace/init.c) ended, from QEMU's exit
# code under timeout(1) and its console: "" if it reached RUSTMM-DONE,
# else why not.
guest_broken() { # RC CONSOLE TIMEOUT
	if [ "$1" -eq 124 ]; then
		echo "the guest did not finish within ${3}s (hung)"
	elif grep -q 'Kernel panic' "$2"; then
		echo "the guest kernel panicked"
	elif ! grep -q '^RUSTMM-DONE' "$2"; then
		echo "the guest stopped before init's end marker RUSTMM-DONE (qemu exit $1)"
	fi
}

RUST_MM_TOP="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# The base tree is pinned: one exact Debian package version of the kernel
# source.  An explicit LINUX_DEB_VERSION=... overrides it (the scripts say
# so loudly); nothing ever silently builds another version.
#
# RUST_MM_BASE picks the base and with it the series: 7.3 (main's series,
# kernel-patches/, linux-source-7.3 from trixie-backports, downloaded into
# the build directory by scripts/setup/fetch-base.sh and never installed:
# nothing of trixie touches this machine's apt sources or packages) or 6.12
# (the series of the 6.12 release, kernel-patches-6.12/, kept while its
# topics are ported -- kernel-patches/unported lists them --, with
# linux-source-6.12 installed from Debian 12's archive).  Each base builds
# in a directory of its own, so the two never share an object.
#   LINUX_PKG          the Debian source package
#   RUST_MM_PIN_DEB    its pinned version
#   LINUX_DEB_SHA256   the pinned .deb's sha256 (downloaded bases)
#   LINUX_DEB_SUITE    the suite that serves it (downloaded bases)
#   PATCHES_DIR        the series' topics (kernel-patches/topics there)
# The pins, one per base (scripts/bench/provenance.py reads them here).
RUST_MM_PIN_DEB_6_12="6.12.117-1~deb12u1"
RUST_MM_PIN_DEB_7_3="7.3.4-1~bpo13+1"
# The base every command builds unless RUST_MM_BASE says otherwise; the
# reports of another base carry its name (BASE_SUFFIX: docs/benchmarks-lto-6.12.md).
RUST_MM_DEFAULT_BASE=7.3
RUST_MM_BASE="${RUST_MM_BASE:-$RUST_MM_DEFAULT_BASE}"
BASE_SUFFIX=""
[ "$RUST_MM_BASE" = "$RUST_MM_DEFAULT_BASE" ] || BASE_SUFFIX="-$RUST_MM_BASE"
case "$RUST_MM_BASE" in
6.12)
	LINUX_PKG=linux-source-6.12
	RUST_MM_PIN_DEB="$RUST_MM_PIN_DEB_6_12"
	LINUX_DEB_SUITE=""
	LINUX_DEB_PIN_SHA256=""
	PATCHES_DIR="$RUST_MM_TOP/kernel-patches-6.12"
	BUILD_DIR="${BUILD_DIR:-$RUST_MM_TOP/build-6.12}"
	;;
7.3)
	LINUX_PKG=linux-source-7.3
	RUST_MM_PIN_DEB="$RUST_MM_PIN_DEB_7_3"
	LINUX_DEB_SUITE=trixie-backports
	LINUX_DEB_PIN_SHA256=703e369ddd4cce971452f5a593ee55df3a5c10c83caf0fa0df039633ed181ee3
	PATCHES_DIR="$RUST_MM_TOP/kernel-patches"
	BUILD_DIR="${BUILD_DIR:-$RUST_MM_TOP/build}"
	;;
*)
	die "RUST_MM_BASE=$RUST_MM_BASE: no such base (6.12 or 7.3)"
	;;
esac
export RUST_MM_BASE PATCHES_DIR
LINUX_DEB_VERSION="${LINUX_DEB_VERSION:-$RUST_MM_PIN_DEB}"
# The .deb's sha256: the pin's for the pinned version; for an override,
# whatever LINUX_DEB_SHA256 says, else the archive index's (said loudly).
if [ "$LINUX_DEB_VERSION" = "$RUST_MM_PIN_DEB" ]; then
	LINUX_DEB_SHA256="$LINUX_DEB_PIN_SHA256"
else
	LINUX_DEB_SHA256="${LINUX_DEB_SHA256:-}"
fi
# Kernel version implied by the Debian version (6.12.117-1~deb12u1 -> 6.12.117).
LINUX_KVER="${LINUX_DEB_VERSION%%-*}"

BINDGEN_VERSION="0.73.2"
TOOLS_PREFIX="/usr/local"
# b4 from PyPI, the maintainers' tool scripts/series/b4-check.py runs on the
# export, in a venv of its own; pinned: its version is the path's
# (b4-<version>), which setup.sh installs.
B4="$TOOLS_PREFIX/lib/rust-mm/b4-0.16.0/bin/b4"

KSRC="$BUILD_DIR/linux-$LINUX_KVER"

# shellcheck source=scripts/lib/arch.sh
. "$RUST_MM_TOP/scripts/lib/arch.sh"
KUNIT_OUT="$BUILD_DIR/kunit-$TARGET"

# The LLVM every kernel build uses (clang, lld, llvm-ar/nm/objcopy and
# bindgen's libclang), pinned here and nowhere else.  It is the LLVM major
# of Debian's rustc-web (1.96: LLVM 22.1), so that a Clang LTO link can
# read rustc's bitcode (CONFIG_RUST_MM_LTO, docs/lto.md); setup.sh installs
# clang-$LLVM_MAJOR lld-$LLVM_MAJOR llvm-$LLVM_MAJOR libclang-$LLVM_MAJOR-dev.
LLVM_MAJOR=22
LLVM_BIN="/usr/lib/llvm-$LLVM_MAJOR/bin"

# Debian's rustc-web (with rust-src) and that clang must come first: the
# rustup toolchain in ~/.cargo/bin has no rust-src.
export PATH="$LLVM_BIN:/usr/bin:$TOOLS_PREFIX/bin:$PATH"
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTFMT=/usr/bin/rustfmt
export CARGO=/usr/bin/cargo
export BINDGEN="$TOOLS_PREFIX/bin/bindgen"
# bindgen loads the newest libclang it finds (clang-sys), which need not be
# the compiler's; 6.12's rust_is_available.sh warns on a mismatch.  Pin it
# to the compiler's.
export LIBCLANG_PATH="/usr/lib/llvm-$LLVM_MAJOR/lib"

# Make options every kernel build uses.
KMAKE_OPTS=(LLVM=1 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
	    RUSTFMT=/usr/bin/rustfmt BINDGEN="$BINDGEN" HOSTRUSTC=/usr/bin/rustc)
