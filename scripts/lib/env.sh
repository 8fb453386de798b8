# shellcheck shell=bash
# Common settings for every rust-mm script.  Sourced, never executed.
#
# The base tree is pinned: this exact Debian package version of
# linux-source-6.12.  An explicit LINUX_DEB_VERSION=... overrides it (the
# scripts say so loudly); nothing ever silently builds another version.
RUST_MM_PIN_DEB="6.12.117-1~deb12u1"
RUST_MM_PIN_KVER="6.12.117"
LINUX_DEB_VERSION="${LINUX_DEB_VERSION:-$RUST_MM_PIN_DEB}"
# Kernel version implied by the Debian version (6.12.117-1~deb12u1 -> 6.12.117).
LINUX_KVER="${LINUX_DEB_VERSION%%-*}"

BINDGEN_VERSION="0.73.2"
TOOLS_PREFIX="/usr/local"
# b4 from PyPI, the maintainers' tool scripts/series/b4-check.py runs on the
# export, in a venv of its own; pinned: its version is the path's
# (b4-<version>), which setup.sh installs.
B4="$TOOLS_PREFIX/lib/rust-mm/b4-0.16.0/bin/b4"

RUST_MM_TOP="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$RUST_MM_TOP/build}"
KSRC="$BUILD_DIR/linux-$LINUX_KVER"

die() { echo "rust-mm: error: $*" >&2; exit 1; }
say() { echo "rust-mm: $*"; }

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
