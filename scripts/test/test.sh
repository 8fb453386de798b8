#!/usr/bin/env bash
# `make test`: every test of rust-mm, then one line 'N passed, N failed'.
#   1. host: cargo test of the kernel-independent core (rust/mm), and the
#      loom model checks of the atomic seqcount
#   2. series: every topic exported as it would be mailed (cover letter,
#      Signed-off-by, base-commit); the whole stack applies with git am and
#      quilt, giving exactly the prepared tree; each topic applies on the
#      pristine tree plus the topics it depends on; every added file has
#      our MAINTAINERS entry; cover letters' numbers are docs/benchmarks.json's
#   3. kernel, x86_64 (Clang ThinLTO, rust/mm in the LTO link): our KUnit
#      suites under QEMU (lockdep on, the console free of kernel reports);
#      its vmlinux has no call left to rust/mm's rmap entry points
#      (scripts/test/lto-check.py) and CONFIG_RUST_MM_LTO refuses a toolchain
#      or config it cannot build (scripts/test/lto-refusal.sh); the same kernel booted as a machine (3
#      vCPUs, two NUMA nodes, zram swap, hugetlb pages) with our userspace
#      tests (COW isolation, reuse, swap, NUMA migration; COW on the PMD
#      size and on 64K mTHP) and the tree's mm selftests; the same
#      userspace tests and selftests/mm/cow on the unpatched tree, with
#      cow's outcome case by case equal on patched and unpatched
#   4. kernel, arm64 4K (qemu-system-aarch64 -machine virt -cpu max; no
#      LTO: lto-check.py finds the calls there, the check's control): the
#      same KUnit suites, and the same booted machine with our userspace
#      tests and selftests/mm/cow
#   5. a host run showing the isolation tests catch a leak (MAP_SHARED
#      self-check); style gates: checkpatch --strict, rustfmt, clippy
#      (kernel and host)
# What does not fit CI's time is in scripts/test/test-all.sh (make test-all):
# the CONFIG_MM_RMAP_ID=n kernels, arm64's other selftests and unpatched
# kernel, the 16K and 64K granules, the KCSAN build, every mm selftest on both kernels,
# bisectability.
# A stage that breaks (does not build, guest crash) counts as a failure.
set -uo pipefail
# Every arch, whatever ARCH the caller set: the stages below say which.
unset ARCH GRANULE
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

passed=0 failed=0
add() { passed=$((passed + $1)); failed=$((failed + $2)); }
# Where the time goes, and what failed, printed before the result line (CI
# shows only the tail of the output).
times=() fails=()
# Note what made a stage fail: its lines that say so (at most 8), else its
# last line.
note_fail() { # STAGE FILE-OR-TEXT
	local text lines
	if [ -f "$2" ]; then text="$(cat "$2")"; else text="$2"; fi
	lines="$(grep -E 'FAIL|not ok|panicked|^error|did not|timed out|hung|BUG|WARNING' <<<"$text" |
		grep -v ' 0 failed' | head -n 8)"
	[ -n "$lines" ] || lines="$(tail -n 1 <<<"$text")"
	fails+=("  $1: ${lines//$'\n'/$'\n'    }")
}
mkdir -p "$BUILD_DIR"

bash "$RUST_MM_TOP/scripts/setup/setup.sh" || { echo "0 passed, 1 failed"; exit 1; }

# Count a cargo test log: sums of its "test result" lines; a build error or
# a time-out counts as one failure.
cargo_stage() { # NAME LOG RC
	local p f
	p=$(sed -n 's/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\1/p' "$2" | paste -sd+ | bc)
	f=$(sed -n 's/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\2/p' "$2" | paste -sd+ | bc)
	if [ "$3" -eq 124 ]; then
		echo "rust-mm: $1 timed out (a deadlock?): see $2"
		add "${p:-0}" $(( ${f:-0} + 1 ))
		note_fail "$1" "timed out: $2"
	elif [ -z "$p" ] || grep -q '^error' "$2"; then
		echo "rust-mm: $1 did not build or run (see $2)"
		add "${p:-0}" $(( ${f:-0} + 1 ))
		note_fail "$1" "$2"
	else
		add "$p" "$f"
		[ "$f" -eq 0 ] || note_fail "$1" "$2"
	fi
}

# Run a command and count its last line '<TAG>: N passed, N failed'; no
# such line is one failure.
line_stage() { # TAG COMMAND OUTFILE (the command is word-split)
	local t0=$SECONDS
	# shellcheck disable=SC2086
	$2 2>&1 | tee "$BUILD_DIR/$3"
	say "($3: $((SECONDS - t0)) s)"
	times+=("${3%-stage.out} $((SECONDS - t0))s")
	local last
	last="$(tail -n 1 "$BUILD_DIR/$3")"
	if [[ "$last" =~ ^$1:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
		add "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
		# selfcheck's FAIL lines are its passes: name the stage only.
		if [ "${BASH_REMATCH[2]}" -ne 0 ]; then
			if [ "$1" = selfcheck ]; then note_fail "$3" "$last"; else note_fail "$3" "$BUILD_DIR/$3"; fi
		fi
	else
		echo "rust-mm: $2 did not report results"
		add 0 1
		note_fail "$3" "did not report results: $(tail -n 3 "$BUILD_DIR/$3")"
	fi
}

kunit_stage() { # COMMAND OUTFILE
	line_stage kunit "$1" "$2"
}

say "== host tests (cargo test, rust/mm) =="
t_host=$SECONDS
host_log="$BUILD_DIR/host-tests.log"
(cd "$RUST_MM_TOP/rust/mm" && CARGO_TARGET_DIR="$BUILD_DIR/cargo" timeout 900 cargo test --locked 2>&1) > "$host_log"
rc=$?
grep -E '^test |^test result|panicked|^error' "$host_log"
cargo_stage "host tests" "$host_log" "$rc"

say "== loom model checks (cargo test --cfg loom, rust/mm) =="
loom_log="$BUILD_DIR/loom-tests.log"
(cd "$RUST_MM_TOP/rust/mm" && RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$BUILD_DIR/cargo-loom" \
	timeout 1800 cargo test --locked --release --test loom 2>&1) > "$loom_log"
rc=$?
grep -E '^test |^test result|panicked|^error' "$loom_log"
cargo_stage "loom model checks" "$loom_log" "$rc"

times+=("setup ${t_host}s" "host+loom $((SECONDS - t_host))s")
say "== tree and series =="
if bash "$RUST_MM_TOP/scripts/setup/prepare-tree.sh"; then
	series_dir="$BUILD_DIR/series"
	ntopics="$(grep -cv -e '^#' -e '^[[:space:]]*$' "$RUST_MM_TOP/kernel-patches/topics")"
	if bash "$RUST_MM_TOP/scripts/series/series.sh" export "$series_dir" > "$BUILD_DIR/series-export.log" 2>&1; then
		cat "$BUILD_DIR/series-export.log"
		out="$(bash "$RUST_MM_TOP/scripts/series/series.sh" check "$series_dir" 2>&1)"
		echo "$out"
		ok=$(grep -c ': ok$' <<<"$out")
		add "$ok" $((4 + ntopics - ok))
		[ "$ok" -eq $((4 + ntopics)) ] || note_fail series "$(grep -v ': ok$' <<<"$out")"
		say "== what a list's bots check: maintainers, cover letters =="
		out="$(bash "$RUST_MM_TOP/scripts/series/series.sh" robots "$series_dir" 2>&1)"
		echo "$out"
		ok=$(grep -c '^robots: .*: ok$' <<<"$out")
		bad=$(grep -c '^robots: .*: FAILED$' <<<"$out")
		[ $((ok + bad)) -eq 0 ] && bad=1
		add "$ok" "$bad"
		[ "$bad" -eq 0 ] || note_fail robots "$(grep -v ': ok$' <<<"$out")"
	else
		cat "$BUILD_DIR/series-export.log"
		echo "rust-mm: make series failed (see above); the series checks count as failed"
		add 0 $((4 + ntopics + 1))
		note_fail series "$BUILD_DIR/series-export.log"
	fi

	say "== our checkers can fail (bench report, cover-letter check, topic export) =="
	tlog="$BUILD_DIR/tools-tests.log"
	BUILD_DIR="$BUILD_DIR" python3 -m unittest discover -s "$RUST_MM_TOP/tests/tools" -v > "$tlog" 2>&1
	grep -E ' \.\.\. ' "$tlog"
	ran=$(sed -n 's/^Ran \([0-9]*\) tests\? .*/\1/p' "$tlog")
	bad=$(grep -cE ' \.\.\. (FAIL|ERROR|skipped)' "$tlog")
	if [ -z "$ran" ]; then
		tail -n 20 "$tlog"
		add 0 1
		note_fail tools "$tlog"
	else
		# A skipped self-test counts as failed: make test has a prepared tree.
		add $((ran - bad)) "$bad"
		[ "$bad" -eq 0 ] || note_fail tools "$(grep -E ' \.\.\. (FAIL|ERROR|skipped)' "$tlog")"
	fi

	say "== KUnit (x86_64, QEMU) =="
	kunit_stage "bash $RUST_MM_TOP/scripts/test/run-kunit.sh" kunit-stage.out

	say "== rust/mm inlined into its C callers in that x86_64 LTO kernel; refusals =="
	line_stage lto-check "python3 $RUST_MM_TOP/scripts/test/lto-check.py --objdump $LLVM_BIN/llvm-objdump $KUNIT_OUT/vmlinux" lto-check-stage.out
	line_stage lto-refusal "bash $RUST_MM_TOP/scripts/test/lto-refusal.sh" lto-refusal-stage.out

	say "== userspace tests booted in QEMU (x86_64, initramfs) =="
	line_stage userspace "bash $RUST_MM_TOP/scripts/test/run-userspace.sh" userspace-stage.out
	say "== the same userspace tests on the unpatched 6.12 tree =="
	line_stage userspace-base "bash $RUST_MM_TOP/scripts/test/run-variant.sh base" userspace-base-stage.out
	say "== mm selftests: the same outcome, case by case, on the patched and the unpatched kernel =="
	# The programs every kernel runs in make test (ksft.list set "all");
	# make test-all compares all of them.
	all_set="$(awk '$1 !~ /^#/ && NF >= 7 && $7 == "all" { printf "ksft_mm_%s ", $1 }' "$RUST_MM_TOP/tests/userspace/ksft.list")"
	# shellcheck disable=SC2086
	line_stage parity "python3 $RUST_MM_TOP/scripts/test/ksft-parity.py $BUILD_DIR/userspace.log.txt $BUILD_DIR/userspace-base.log.txt $all_set" parity-stage.out
	say "== KUnit (arm64 4K, qemu-system-aarch64 -machine virt -cpu max) =="
	kunit_stage "env ARCH=arm64 bash $RUST_MM_TOP/scripts/test/run-kunit.sh" kunit-arm64-stage.out
	say "== the inlining check can fail: arm64's test kernel (no LTO) calls the entry points =="
	line_stage lto-check "python3 $RUST_MM_TOP/scripts/test/lto-check.py --objdump $LLVM_BIN/llvm-objdump --expect-calls $BUILD_DIR/kunit-arm64/vmlinux" lto-control-stage.out
	say "== userspace tests booted on arm64 4K (the same kernel, initramfs; selftests/mm/cow) =="
	# Our programs and the selftests every kernel runs (set "all"); make
	# test-all boots arm64 with the others too (TCG runs arm64 guests about
	# twice as slowly as x86_64's).
	line_stage userspace "env ARCH=arm64 USERSPACE_KSFT_SETS=all bash $RUST_MM_TOP/scripts/test/run-userspace.sh" userspace-arm64-stage.out
	say "== the userspace checks can fail (host, MAP_SHARED self-check) =="
	line_stage selfcheck "bash $RUST_MM_TOP/scripts/test/run-userspace.sh --selfcheck" selfcheck-stage.out

	say "== style gates (checkpatch --strict, rustfmt, clippy) =="
	lout="$(bash "$RUST_MM_TOP/scripts/test/lint.sh" 2>&1)"
	grep '^lint: ' <<<"$lout"
	ok=$(grep -c '^lint: .*: ok$' <<<"$lout")
	gates=$(grep -c '^gate ' "$RUST_MM_TOP/scripts/test/lint.sh")
	add "$ok" $((gates - ok))
	[ "$ok" -eq "$gates" ] || note_fail lint "$(grep '^lint: ' <<<"$lout" | grep -v ': ok$')"
else
	echo "rust-mm: the tree could not be prepared; kernel tests not run"
	add 0 1
	note_fail prepare "the tree could not be prepared"
fi

# For the cover letters of `make series`: the result, and the tree it is for.
{ echo "result=$passed passed, $failed failed"
  echo "tree=$(git -C "$KSRC" rev-parse 'rust-mm^{tree}' 2>/dev/null)"
  echo "date=$(date -u +%Y-%m-%d)"
  echo "duration=$((SECONDS / 60)) min"; } > "$BUILD_DIR/test-result.txt"
if [ ${#fails[@]} -gt 0 ]; then
	say "what failed (full output above and in $BUILD_DIR):"
	printf '%s\n' "${fails[@]}"
fi
say "stage times (build included): ${times[*]}; total $((SECONDS / 60)) min"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
