#!/usr/bin/env bash
# Install (once, idempotently) everything rust-mm needs on Debian 12 x86_64.
#   scripts/setup/setup.sh          install what is missing, then check
#   scripts/setup/setup.sh --check  only check; exit 1 naming what is missing
#   scripts/setup/setup.sh --doctor print each tool's version
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

mode="${1:-install}"

PKGS=(build-essential bc flex bison libelf-dev libssl-dev cpio kmod xz-utils
      rsync git python3 python3-venv quilt python3-matplotlib python3-ply python3-git
      "clang-$LLVM_MAJOR" "lld-$LLVM_MAJOR" "llvm-$LLVM_MAJOR" "libclang-$LLVM_MAJOR-dev"
      rustc-web rust-web-src cargo-web rustfmt-web rust-web-clippy
      qemu-system-x86 qemu-system-arm libnuma-dev liburing-dev
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross
      qemu-user)
# qemu-user: the profiling plugin's self-tests run guests of known
# behaviour under user-mode QEMU (tests/tools/test_profile_plugin.py).
# The arm64 guests' selftests link these statically (Debian multiarch).
ARM64_PKGS=(libnuma-dev:arm64 liburing-dev:arm64)

check_machine() {
	local id="" ver="" arch
	arch="$(uname -m)"
	if [ -r /etc/os-release ]; then
		# shellcheck disable=SC1091
		id="$(. /etc/os-release; echo "${ID:-}")"
		# shellcheck disable=SC1091
		ver="$(. /etc/os-release; echo "${VERSION_ID:-}")"
	fi
	if [ "$id" != debian ] || [ "$ver" != 12 ]; then
		die "unsupported machine: need Debian 12 (bookworm), found '${id:-unknown} ${ver:-?}'"
	fi
	[ "$arch" = x86_64 ] || die "unsupported machine: need an x86_64 host, found '$arch'"
}

pkg_version() { dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null |
		awk '$3 == "installed" { print $4 }'; }

missing_pkgs() {
	local p
	for p in "${PKGS[@]}" "${ARM64_PKGS[@]}"; do
		[ -n "$(pkg_version "$p")" ] || echo "$p"
	done
	# The kernel source of an installed base (6.12); a downloaded one
	# (7.3, main's) is fetched by prepare-tree.sh, never installed.
	[ -n "$LINUX_DEB_SUITE" ] || [ "$(pkg_version "$LINUX_PKG")" = "$LINUX_DEB_VERSION" ] ||
		echo "$LINUX_PKG=$LINUX_DEB_VERSION"
}

bindgen_ok() {
	[ -x "$BINDGEN" ] && "$BINDGEN" --version 2>/dev/null | grep -qx "bindgen $BINDGEN_VERSION"
}

# b4 (PyPI), for scripts/series/b4-check.py: Debian 12's python3 is
# externally managed (PEP 668), so b4 gets a venv of its own, made by
# /usr/bin/python3 (python3-venv), at ${B4%/bin/b4}. b4 is pinned by
# scripts/lib/env.sh (the version is in B4's path) and so is everything it
# pulls in (the versions PyPI resolved for b4 0.16.0 when it was pinned;
# b4's own requirements leave liblore and ezgb open), so that every
# machine runs the same b4. A new version is a new directory; the old one
# is left alone.
B4_VERSION="${B4#*/b4-}"
B4_VERSION="${B4_VERSION%%/*}"
B4_VENV="${B4%/bin/b4}"
B4_PIP=("b4==$B4_VERSION" certifi==2026.10.19.post1 cffi==2.1.1 charset-normalizer==3.5.3
	dkimpy==1.1.8 dnspython==2.9.2 ezgb==0.2.1 idna==3.20 liblore==0.10.1 patatt==0.8.0
	pycparser==3.12 pygit2==1.21.0 PyNaCl==1.6.2 requests==2.34.2 urllib3==2.8.0)

b4_ok() {
	[ -x "$B4" ] && [ "$("$B4" --version 2>/dev/null)" = "$B4_VERSION" ]
}

install_b4() {
	b4_ok && return 0
	/usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null ||
		die "/usr/bin/python3 cannot make a venv (package python3-venv)"
	say "installing b4 $B4_VERSION from PyPI into $B4_VENV (a venv of /usr/bin/python3)"
	rm -rf "$B4_VENV"
	/usr/bin/python3 -m venv "$B4_VENV" || die "python3 -m venv $B4_VENV failed"
	"$B4_VENV/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir "${B4_PIP[@]}" ||
		{ rm -rf "$B4_VENV"; die "pip install b4==$B4_VERSION failed (PyPI reachable?)"; }
	b4_ok || die "b4 $B4_VERSION not usable at $B4 after install"
}

apt_updated=0
apt_update_once() {
	[ "$apt_updated" = 1 ] && return 0
	say "apt-get update"
	apt-get update -qq || die "apt-get update failed (is a Debian mirror reachable?)"
	apt_updated=1
}

install_pkgs() {
	local missing
	mapfile -t missing < <(missing_pkgs)
	[ "${#missing[@]}" -eq 0 ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages: ${missing[*]} (run as root, or: sudo dpkg --add-architecture arm64; sudo apt-get update; sudo apt-get install ${missing[*]})"
	if [[ " ${missing[*]} " == *":arm64 "* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
		say "dpkg --add-architecture arm64 (the arm64 guests' static libraries)"
		dpkg --add-architecture arm64 || die "dpkg --add-architecture arm64 failed"
		apt_updated=0
	fi
	apt_update_once
	if [[ " ${missing[*]} " == *" $LINUX_PKG="* ]]; then
		if ! apt-cache madison "$LINUX_PKG" | awk '{print $3}' | grep -qx "$LINUX_DEB_VERSION"; then
			echo "rust-mm: $LINUX_PKG versions the archive offers now:" >&2
			apt-cache madison "$LINUX_PKG" | awk '{print "  " $3}' >&2
			die "pinned $LINUX_PKG $LINUX_DEB_VERSION is no longer in the archive. Nothing was built. Pick one explicitly with LINUX_DEB_VERSION=<version> (the series may then need a rebase)."
		fi
	fi
	say "installing: ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		--allow-downgrades "${missing[@]}" || die "apt-get install failed for: ${missing[*]}"
}

install_bindgen() {
	bindgen_ok && return 0
	[ -x /usr/bin/cargo ] || die "missing /usr/bin/cargo (package cargo-web)"
	say "installing bindgen-cli $BINDGEN_VERSION into $TOOLS_PREFIX (cargo install)"
	CARGO_TARGET_DIR="$BUILD_DIR/cargo-bindgen" /usr/bin/cargo install --locked --quiet \
		--root "$TOOLS_PREFIX" bindgen-cli --version "$BINDGEN_VERSION" ||
		die "cargo install bindgen-cli $BINDGEN_VERSION failed (crates.io reachable?)"
	bindgen_ok || die "bindgen $BINDGEN_VERSION not usable at $BINDGEN after install"
}

check_all() {
	local missing=() p
	mapfile -t missing < <(missing_pkgs)
	bindgen_ok || missing+=("bindgen-cli $BINDGEN_VERSION (cargo install)")
	b4_ok || missing+=("b4 $B4_VERSION (PyPI, in the venv $B4_VENV: run scripts/setup/setup.sh)")
	for p in /usr/bin/rustc /usr/bin/cargo "$LLVM_BIN/clang" "$LLVM_BIN/ld.lld" "$LLVM_BIN/llvm-link" \
		 /usr/bin/qemu-system-x86_64 /usr/bin/qemu-system-aarch64 /usr/bin/aarch64-linux-gnu-gcc \
		 /usr/bin/qemu-x86_64 /usr/bin/qemu-aarch64; do
		[ -x "$p" ] || missing+=("$p")
	done
	# Cross-language LTO needs rustc's LLVM major to be clang's
	# (CONFIG_RUSTC_CLANG_LLVM_COMPATIBLE): LLVM_MAJOR pins clang to it.
	if [ -x /usr/bin/rustc ]; then
		local rl
		rl="$(/usr/bin/rustc -vV 2>/dev/null | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')"
		[ "$rl" = "$LLVM_MAJOR" ] ||
			missing+=("a rustc on LLVM $LLVM_MAJOR (/usr/bin/rustc is on LLVM ${rl:-unknown}; scripts/lib/env.sh pins clang to LLVM_MAJOR=$LLVM_MAJOR)")
	fi
	[ -d /usr/lib/rustlib/src/rust/library/core ] || missing+=("rust-src (/usr/lib/rustlib/src/rust/library, package rust-web-src)")
	if [ "${#missing[@]}" -ne 0 ]; then
		printf 'rust-mm: missing: %s\n' "${missing[@]}" >&2
		return 1
	fi
	return 0
}

doctor() {
	local t
	echo "rust-mm doctor (pinned $LINUX_PKG $LINUX_DEB_VERSION)"
	printf '  %-22s %s\n' "machine" "$(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}") $(uname -m)"
	printf '  %-22s %s\n' "$LINUX_PKG" "$(pkg_version "$LINUX_PKG" || echo "(downloaded: $BUILD_DIR/dl)")"
	for t in "rustc:/usr/bin/rustc --version" "rustdoc:/usr/bin/rustdoc --version" \
		 "cargo:/usr/bin/cargo --version" "rustfmt:/usr/bin/rustfmt --version" \
		 "clippy:/usr/bin/clippy-driver --version" "bindgen:$BINDGEN --version" \
		 "b4:$B4 --version" "clang:$LLVM_BIN/clang --version" "ld.lld:$LLVM_BIN/ld.lld --version" \
		 "qemu-x86_64:qemu-system-x86_64 --version" "qemu-aarch64:qemu-system-aarch64 --version" \
		 "aarch64-gcc:aarch64-linux-gnu-gcc --version" "qemu-user:qemu-x86_64 --version" \
		 "python3:python3 --version" "quilt:quilt --version" "make:make --version" \
		 "flex:flex --version" "bison:bison --version" "bc:bc --version"; do
		local name="${t%%:*}" cmd="${t#*:}" out
		if command -v "${cmd%% *}" >/dev/null 2>&1 &&
		   out="$($cmd 2>&1 | head -n1)" && [ -n "$out" ]; then
			printf '  %-22s %s\n' "$name" "$out"
		else
			printf '  %-22s %s\n' "$name" "MISSING"
		fi
	done
	check_all && echo "rust-mm: all tools present"
}

case "$mode" in
install)
	check_machine
	install_pkgs
	install_bindgen
	install_b4
	check_all || die "toolchain incomplete after install (see above)"
	;;
--check) check_machine; check_all ;;
--doctor) doctor ;;
*) die "usage: $0 [--check|--doctor]" ;;
esac
