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

# The topics' counting options (topics.py counters), as an ERE alternation
# without CONFIG_; empty when no topic has one.
counter_options_re() {
	python3 "$RUST_MM_TOP/scripts/lib/topics.py" counters | sed 's/^CONFIG_//' | paste -sd'|'
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
	# PATH that drops the accelerators other than TCG. Its arm64 config
	# also asks for '-cpu max' without 6.12's pauth-impdef=on, whose
	# QARMA pointer authentication TCG emulates several times slower: the
	# arm64 wrapper gives it back (the CPU every other arm64 guest of
	# ours boots, scripts/lib/arch.sh).
	if grep -q "'-accel', 'kvm'" "$src/tools/testing/kunit/kunit_kernel.py" 2>/dev/null; then
		local w="$BUILD_DIR/qemu-tcg-only" q
		mkdir -p "$w"
		for q in qemu-system-x86_64 qemu-system-aarch64; do
			local real cpu=max
			real="$(PATH="${PATH//$w:/}" command -v "$q")" || continue
			[ "$q" = qemu-system-aarch64 ] && cpu=max,pauth-impdef=on
			cat > "$w/$q" <<-EOF
			#!/bin/sh
			# rust-mm (scripts/lib/kbuild.sh: kunit_py): $q with TCG only
			# and '-cpu max' as -cpu $cpu.
			n=\$#
			while [ "\$n" -gt 0 ]; do
			    a=\$1; shift; n=\$((n - 1))
			    if [ "\$a" = -accel ] && [ "\$1" != tcg ]; then shift; n=\$((n - 1)); continue; fi
			    if [ "\$a" = -cpu ] && [ "\$1" = max ]; then shift; n=\$((n - 1)); set -- "\$@" -cpu $cpu; continue; fi
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

# The kunitconfigs serve both bases, and neither series defines every
# option of them: main's 7.3 series does not carry everything of 6.12's
# yet (kernel-patches/unported; options such as CONFIG_DEBUG_MM_RMAP_ID,
# docs/linux-7.3.md "Not done yet"), and 6.12's has no
# CONFIG_ARM64_CONTPTE_STATS (its counters came with the topic's option).
# kunit.py refuses a kunitconfig whose options do not stick, so rewrite
# each fragment of KUNITCONFIGS into DIR keeping an option only if SRC
# defines it, naming each one dropped.
port_kunitconfigs() { # SRC DIR
	local src="$1" dir="$2" i k f line defined drop=""
	mkdir -p "$dir"
	# The build of rust/mm without CONFIG_RUST_MM_LTO (native code on the
	# kernel crate's atomics, what a config without LTO gets) is booted on
	# the 16K and 64K kernels; 6.12's arm64 kernels are all native (its
	# rust-lto patch builds x86_64 only: no -mno-outline-atomics).
	if [ "$TARGET" != "$KARCH" ] || { [ "$RUST_MM_BASE" = 6.12 ] && [ "$KARCH" = arm64 ]; }; then
		drop='^CONFIG_(LTO_CLANG_THIN|RUST_MM_LTO)='
	fi
	defined=" $(grep -rhoE --include='Kconfig*' '^(menu)?config [A-Za-z0-9_]+' "$src" |
		awk '{ print $2 }' | sort -u | tr '\n' ' ') "
	for i in "${!KUNITCONFIGS[@]}"; do
		k="${KUNITCONFIGS[$i]}" f="$dir/$(basename "${KUNITCONFIGS[$i]}")"
		: > "$f"
		while IFS= read -r line; do
			if [ -n "$drop" ] && [[ "$line" =~ $drop ]]; then
				continue
			fi
			if [[ "$line" =~ ^CONFIG_([A-Za-z0-9_]+)= ]] &&
			   [[ "$defined" != *" ${BASH_REMATCH[1]} "* ]]; then
				say "dropped, not defined in $src: ${line%%=*}"
				continue
			fi
			echo "$line" >> "$f"
		done < "$k"
		KUNITCONFIGS[$i]="$f"
	done
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
