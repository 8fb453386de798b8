#!/usr/bin/env bash
# Fetch the pinned kernel source of a downloaded base (RUST_MM_BASE=7.3:
# linux-source-7.3 from trixie-backports) into the build directory, verify
# it, and print the path of its source tarball.
#
# Nothing touches the machine's apt configuration or dpkg database: the
# suite's index is read with a private apt state under $BUILD_DIR/dl/apt,
# the one package is downloaded (never installed) and unpacked with
# dpkg-deb.  In order:
#   1. a .deb already in $BUILD_DIR/dl whose sha256 is the expected one is
#      used as it is (an offline re-run needs no network);
#   2. otherwise the suite's index is fetched; the version must be offered
#      (else: the versions offered, and the override to pick one); for the
#      pinned version the index's SHA256 must be the pinned one;
#   3. the .deb is downloaded into a scratch directory, its sha256 checked
#      against the expected one, and only then moved into place;
#   4. the tarball is unpacked from it into a scratch directory and moved
#      into place whole, so a failure leaves nothing half-extracted.
# Environment (beyond env.sh's pin): RUST_MM_DEB_SOURCE replaces the
# apt source line (tests point it at a local repository);
# LINUX_DEB_VERSION/LINUX_DEB_SHA256 override the pin (loudly).
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

[ -n "$LINUX_DEB_SUITE" ] ||
	die "RUST_MM_BASE=$RUST_MM_BASE is installed from this machine's own archive, not downloaded (make setup)"
for tool in apt-get apt-cache dpkg-deb sha256sum; do
	command -v "$tool" >/dev/null || die "$tool is missing (a Debian machine has it: apt, dpkg, coreutils)"
done

dl="$BUILD_DIR/dl"
tarball="$dl/$LINUX_PKG-$LINUX_DEB_VERSION.tar.xz"
# apt names the file <pkg>_<version with ':' as %3a>_all.deb
deb="$dl/${LINUX_PKG}_${LINUX_DEB_VERSION//:/%3a}_all.deb"
mkdir -p "$dl"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

if [ "$LINUX_DEB_VERSION" != "$RUST_MM_PIN_DEB" ]; then
	say "WARNING: fetching $LINUX_PKG $LINUX_DEB_VERSION, not the pinned $RUST_MM_PIN_DEB (LINUX_DEB_VERSION override); the series may not apply to it" >&2
fi

# A tarball from a verified .deb is kept beside it with the .deb's sum.
if [ -f "$tarball" ] && [ -n "$LINUX_DEB_SHA256" ] &&
   [ "$(cat "$tarball.from" 2>/dev/null)" = "$LINUX_DEB_SHA256" ]; then
	echo "$tarball"
	exit 0
fi

if [ ! -f "$deb" ] || [ -z "$LINUX_DEB_SHA256" ] || [ "$(sha_of "$deb")" != "$LINUX_DEB_SHA256" ]; then
	rm -f "$deb"
	# The Debian mirror this machine's apt already uses (its archive, not
	# its security suite), else deb.debian.org.
	mirror="$( (cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true) |
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\/.*\/debian\/?$/) { print $i; exit } }')"
	if [ -z "$mirror" ]; then
		mirror="$( (cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true) |
			sed -n 's/^URIs: *\(https\?:\/\/[^ ]*\/debian\/\?\)$/\1/p' | head -n1)"
	fi
	mirror="${mirror:-http://deb.debian.org/debian}"
	source_line="${RUST_MM_DEB_SOURCE:-deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $LINUX_DEB_SUITE main}"
	A="$dl/apt"
	rm -rf "$A" && mkdir -p "$A/lists/partial" "$A/cache/archives/partial"
	echo "$source_line" > "$A/sources.list"
	O=(-o "Dir::State=$A" -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache"
	   -o "Dir::Etc::SourceList=$A/sources.list" -o Dir::Etc::SourceParts=/dev/null
	   -o "Dir::State::status=/var/lib/dpkg/status" -o APT::Sandbox::User=root
	   -o Acquire::Retries=2)
	say "reading the $LINUX_DEB_SUITE index ($source_line), private apt state in $A" >&2
	if ! apt-get "${O[@]}" -q update > "$A/update.log" 2>&1 ||
	   grep -q '^\(E:\|Err:\|W: Failed\)' "$A/update.log"; then
		sed 's/^/  /' "$A/update.log" >&2
		die "cannot read the $LINUX_DEB_SUITE index ($source_line): no network to the mirror? Nothing was downloaded. Way out: restore the network, or put $(basename "$deb") into $dl yourself (it is used when its sha256 is ${LINUX_DEB_SHA256:-the one LINUX_DEB_SHA256 names})"
	fi
	offered="$(apt-cache "${O[@]}" madison "$LINUX_PKG" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}' | sort -u)"
	if ! grep -qxF -- "$LINUX_DEB_VERSION" <<< "$offered"; then
		echo "rust-mm: $LINUX_PKG versions $LINUX_DEB_SUITE offers now:" >&2
		sed 's/^/  /' <<< "${offered:-(none)}" >&2
		die "$LINUX_PKG $LINUX_DEB_VERSION is not (or no longer) offered by $LINUX_DEB_SUITE. Nothing was built. Pick one explicitly with LINUX_DEB_VERSION=<version> (the series may then need a rebase)"
	fi
	index_sha="$(apt-cache "${O[@]}" show "$LINUX_PKG=$LINUX_DEB_VERSION" | sed -n 's/^SHA256: //p' | head -n1)"
	[ -n "$index_sha" ] || die "the $LINUX_DEB_SUITE index gives no SHA256 for $LINUX_PKG $LINUX_DEB_VERSION"
	if [ -z "$LINUX_DEB_SHA256" ]; then
		say "WARNING: no pinned sha256 for $LINUX_DEB_VERSION: trusting the signed index's $index_sha (set LINUX_DEB_SHA256 to pin it)" >&2
		LINUX_DEB_SHA256="$index_sha"
	elif [ "$index_sha" != "$LINUX_DEB_SHA256" ]; then
		die "$LINUX_DEB_SUITE's index gives $LINUX_PKG $LINUX_DEB_VERSION the sha256 $index_sha, but the pin is $LINUX_DEB_SHA256: the archive changed the package under the same version. Nothing was downloaded. Way out: check the archive, then set LINUX_DEB_SHA256=<sum> explicitly"
	fi
	part="$dl/download.tmp"
	rm -rf "$part" && mkdir -p "$part"
	say "downloading $LINUX_PKG $LINUX_DEB_VERSION into $dl" >&2
	(cd "$part" && apt-get "${O[@]}" -q download "$LINUX_PKG=$LINUX_DEB_VERSION" > "$A/download.log" 2>&1) || {
		sed 's/^/  /' "$A/download.log" >&2
		rm -rf "$part"
		die "downloading $LINUX_PKG $LINUX_DEB_VERSION failed (network?). Nothing was kept"
	}
	got="$(find "$part" -name '*.deb' | head -n1)"
	[ -n "$got" ] || die "apt-get download left no .deb in $part"
	sum="$(sha_of "$got")"
	if [ "$sum" != "$LINUX_DEB_SHA256" ]; then
		rm -rf "$part"
		die "the downloaded $LINUX_PKG $LINUX_DEB_VERSION has sha256 $sum, expected $LINUX_DEB_SHA256: deleted, nothing extracted"
	fi
	mv "$got" "$deb"
	rm -rf "$part"
fi

# Unpack the tarball whole, or not at all.
x="$dl/unpack.tmp"
rm -rf "$x" && mkdir -p "$x"
say "unpacking $(basename "$deb")" >&2
dpkg-deb -x "$deb" "$x" || { rm -rf "$x" "$deb"; die "dpkg-deb could not unpack $deb (deleted it; run again to download it again)"; }
src="$(find "$x/usr/src" -maxdepth 1 -name "$LINUX_PKG.tar.xz" | head -n1)"
[ -n "$src" ] || { rm -rf "$x"; die "$deb holds no usr/src/$LINUX_PKG.tar.xz"; }
mv "$src" "$tarball"
echo "$LINUX_DEB_SHA256" > "$tarball.from"
rm -rf "$x"
echo "$tarball"
