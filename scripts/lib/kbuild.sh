# shellcheck shell=bash
# The one way rust-mm builds a kernel: kunit.py (build or run) from a tree,
# for the target env.sh set, with the toolchain's make options, then a
# check that the options asked for stuck. Sourced after env.sh by every
# script that builds a kernel (KUnit, the variants, the benchmarks);
# never executed.

# Our Kconfig options, each topic's (kernel-patches/*/topic), as an ERE
# alternation: "MM_RMAP_ID|ARM64_CONTPTE_RUST|...".
our_options_re() {
	python3 "$RUST_MM_TOP/scripts/lib/topics.py" options | sed 's/^CONFIG_//' | paste -sd'|'
}

# Every Kconfig option the series adds (a "config X" line its diff adds to
# a Kconfig file of the prepared tree: each topic's option and its KUnit,
# debug and helper options), as an ERE alternation.
series_options_re() {
	git -C "$KSRC" diff pristine rust-mm -- '*Kconfig*' |
		sed -n 's/^+config \([A-Za-z0-9_]*\).*/\1/p' | sort -u | paste -sd'|'
}

# kunit.py ACTION (build or run) of the tree SRC into OUT for $KARCH; the
# rest of the arguments go to kunit.py (--kunitconfig, --kconfig_add, ...).
kunit_py() { # SRC OUT ACTION ARGS...
	local src="$1" out="$2" action="$3" o args=() path="$PATH"
	shift 3
	for o in "${KMAKE_OPTS[@]}"; do args+=(--make_options "$o"); done
	mkdir -p "$out"
	# kunit.py of Linux >= 7.x asks QEMU for '-accel kvm -accel hvf
	# -accel tcg'. On these machines /dev/kvm is PVM, and a KUnit kernel
	# booted there printed nothing in 10 minutes, where TCG runs every
	# suite in seconds (docs/linux-7.3.md): put a qemu-system-* first on
	# PATH that drops the accelerators other than TCG.
	if grep -q "'-accel', 'kvm'" "$src/tools/testing/kunit/kunit_kernel.py" 2>/dev/null; then
		local w="$BUILD_DIR/qemu-tcg-only" q
		mkdir -p "$w"
		for q in qemu-system-x86_64 qemu-system-aarch64; do
			local real
			real="$(PATH="${PATH//$w:/}" command -v "$q")" || continue
			cat > "$w/$q" <<-EOF
			#!/bin/sh
			# rust-mm (scripts/lib/kbuild.sh: kunit_py): $q with TCG only.
			n=\$#
			while [ "\$n" -gt 0 ]; do
			    a=\$1; shift; n=\$((n - 1))
			    if [ "\$a" = -accel ] && [ "\$1" != tcg ]; then shift; n=\$((n - 1)); continue; fi
			    set -- "\$@" "\$a"
			done
			exec $real "\$@"
			EOF
			chmod +x "$w/$q"
		done
		path="$w:$PATH"
	fi
	(cd "$src" && PATH="$path" python3 tools/testing/kunit/kunit.py "$action" --arch="$KARCH" \
		--build_dir="$out" --jobs="$(nproc)" "${args[@]}" "$@")
}

# Every CONFIG_X=y of the arguments is in OUT/.config (Kconfig drops an
# option whose dependencies are not met, silently): die naming the first
# that did not stick. Other words ("# CONFIG_X is not set") are skipped.
config_stuck() { # OUT CONFIG...
	local out="$1" c
	shift
	for c in "$@"; do
		case "$c" in
		CONFIG_*=y) grep -qx "$c" "$out/.config" ||
			die "$c did not stick in $out/.config (Kconfig dropped it: see its dependencies)" ;;
		esac
	done
}

# Our options that are on in OUT/.config, space separated ("" if none).
our_options_on() { # OUT
	grep -oE "^CONFIG_($(our_options_re))=y" "$1/.config" | tr '\n' ' ' | sed 's/ $//'
}
