#!/usr/bin/env bash
# `make test-all`: everything `make test` runs, then what does not fit CI's
# time: every mm selftest of tests/userspace/ksft.list booted on the
# unpatched kernel too, with the same outcome case by case as on the
# patched one (make test compares the "all" set), and the bisectability
# build of every prefix of the stack (scripts/bisect-build.sh). Ends with one line 'N passed, N failed' over
# both. Run it before resolving an issue and quote its last line.
set -uo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "$0")/env.sh"
mkdir -p "$BUILD_DIR"

bash "$RUST_MM_TOP/scripts/test.sh" 2>&1 | tee "$BUILD_DIR/test-all.test.out"
last="$(tail -n 1 "$BUILD_DIR/test-all.test.out")"
passed=0 failed=1
if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
	passed="${BASH_REMATCH[1]}" failed="${BASH_REMATCH[2]}"
fi

say "== full parity: every mm selftest on the unpatched kernel too, the same outcome case by case =="
USERSPACE_KSFT_SETS="all full" USERSPACE_LOG="$BUILD_DIR/userspace-base-full.log" \
	bash "$RUST_MM_TOP/scripts/run-variant.sh" base 2>&1 | sed 's/^userspace-base: /userspace-base-full: /' |
	tee "$BUILD_DIR/test-all.base-full.out"
python3 "$RUST_MM_TOP/scripts/ksft-parity.py" "$BUILD_DIR/userspace.log.txt" \
	"$BUILD_DIR/userspace-base-full.log.txt" 2>&1 | tee "$BUILD_DIR/test-all.parity.out"
for f in base-full parity; do
	last="$(tail -n 1 "$BUILD_DIR/test-all.$f.out")"
	if [[ "$last" =~ :\ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
		passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
	else
		echo "rust-mm: the $f stage did not report results"
		failed=$((failed + 1))
	fi
done

say "== bisectability: every prefix of the stack builds (x86_64, KUnit config) =="
bash "$RUST_MM_TOP/scripts/bisect-build.sh" 2>&1 | tee "$BUILD_DIR/bisect.out"
last="$(tail -n 1 "$BUILD_DIR/bisect.out")"
if [[ "$last" =~ ^bisect:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
	passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
else
	echo "rust-mm: the bisectability build did not report results"
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
