#!/usr/bin/env bash
# CONFIG_RUST_MM_LTO refuses what it cannot do, loudly (docs/lto.md):
#   1. a rustc whose LLVM major differs from clang's: Kconfig computes
#      CONFIG_RUSTC_CLANG_LLVM_COMPATIBLE=n (olddefconfig, in a scratch
#      build directory, with a rustc that reports LLVM 19.1.7 and is
#      otherwise the real one), while RUST and RUST_MM_LTO stay on -- the
#      non-LTO build of such a toolchain is not affected;
#   2. the build of rust/mm with that view of the toolchain stops with an
#      error naming both LLVM versions;
#   3. the build of rust/mm with Clang LTO off stops with an error saying
#      LTO is off;
#   4. the real LTO build directory, as it is, builds rust/mm without
#      complaint (the two refusals are not always on).
# 2-4 run make on rust/mm/ of the built LTO kernel (KUnit's x86_64 build
# directory) with the config values overridden on make's command line:
# Kbuild reads them at parse time, so the refusals fire before anything
# is compiled and the build directory is left as it was.
# Prints one line per check, then 'lto-refusal: N passed, N failed'.
set -uo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

OUT="${1:-$KUNIT_OUT}"
passed=0 failed=0
check() { # OK TEXT
	if [ "$1" = 0 ]; then
		passed=$((passed + 1)); echo "lto-refusal: $2: ok"
	else
		failed=$((failed + 1)); echo "lto-refusal: $2: FAILED"
	fi
}
finish() { echo "lto-refusal: $passed passed, $failed failed"; exit $((failed > 0)); }

if ! grep -qx CONFIG_RUST_MM_LTO=y "$OUT/.config" 2>/dev/null || [ ! -f "$OUT/vmlinux" ]; then
	check 1 "a built CONFIG_RUST_MM_LTO kernel in $OUT"
	finish
fi
scratch="$BUILD_DIR/lto-refusal"
rm -rf "$scratch" && mkdir -p "$scratch/bin" "$scratch/o"

# A rustc on another LLVM major: the real one, but -vV says LLVM 19.1.7.
cat > "$scratch/bin/rustc" <<'EOF'
#!/bin/sh
case " $* " in
*" -vV "*|*" --version --verbose "*|*" --verbose --version "*)
	/usr/bin/rustc "$@" | sed 's/^LLVM version: .*/LLVM version: 19.1.7/' ;;
*) exec /usr/bin/rustc "$@" ;;
esac
EOF
chmod +x "$scratch/bin/rustc"
cp "$OUT/.config" "$scratch/o/.config"
mk=(make -s -C "$KSRC" ARCH="$KARCH" "${KMAKE_OPTS[@]}")
"${mk[@]}" O="$scratch/o" RUSTC="$scratch/bin/rustc" olddefconfig > "$scratch/olddefconfig.log" 2>&1
cfg="$scratch/o/.config"
grep -qx 'CONFIG_RUSTC_LLVM_MAJOR_VERSION=19' "$cfg" &&
	! grep -q '^CONFIG_RUSTC_CLANG_LLVM_COMPATIBLE=y' "$cfg" &&
	grep -qx CONFIG_RUST=y "$cfg" && grep -qx CONFIG_RUST_MM_LTO=y "$cfg"
check $? "Kconfig: rustc on LLVM 19, clang $(sed -n 's/^CONFIG_CLANG_VERSION=//p' "$cfg"): RUSTC_CLANG_LLVM_COMPATIBLE off, RUST and RUST_MM_LTO kept"

llvm_rust="$(sed -n 's/^CONFIG_RUSTC_LLVM_VERSION=//p' "$cfg")"
llvm_clang="$(sed -n 's/^CONFIG_CLANG_VERSION=//p' "$cfg")"
log="$scratch/mismatch.log"
"${mk[@]}" O="$OUT" CONFIG_RUSTC_CLANG_LLVM_COMPATIBLE= \
	CONFIG_RUSTC_LLVM_VERSION="$llvm_rust" rust/mm/ > "$log" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q "rustc's LLVM is $llvm_rust, clang's is $llvm_clang" "$log"
check $? "build: rustc LLVM $llvm_rust vs clang $llvm_clang stops with both versions named ($(grep -o 'CONFIG_RUST_MM_LTO=y needs rustc.*is [0-9]*' "$log" | head -n 1))"

log="$scratch/nolto.log"
"${mk[@]}" O="$OUT" CONFIG_LTO_CLANG= CONFIG_LTO_CLANG_THIN= rust/mm/ > "$log" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q 'CONFIG_RUST_MM_LTO=y needs CONFIG_LTO_CLANG_THIN=y or CONFIG_LTO_CLANG_FULL=y' "$log"
check $? "build: Clang LTO off stops with 'needs CONFIG_LTO_CLANG_THIN=y or CONFIG_LTO_CLANG_FULL=y'"

log="$scratch/as-is.log"
"${mk[@]}" O="$OUT" rust/mm/ > "$log" 2>&1
check $? "build: the LTO kernel's own config builds rust/mm"
[ "$(od -An -c -N2 "$OUT/rust/mm/rust_mm.o" | tr -d ' ')" = BC ]
check $? "rust/mm/rust_mm.o of the LTO kernel is LLVM bitcode"
finish
