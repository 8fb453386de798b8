#!/usr/bin/env bash
# `make test`: every test CI runs, each as a stage, then a table of the
# stages and one line 'N passed, N failed'.
#   host, loom       cargo test of the kernel-independent core (unit,
#                    property, exhaustive, doc tests) and its loom models
#   series           the topic files; every topic exported as it would be
#                    mailed; the whole stack applies with git am and quilt,
#                    giving exactly the prepared tree; each topic applies on
#                    the pristine tree plus the topics it depends on; the
#                    patches that change the repository's Rust files (the
#                    6.12 series' "build 6.12's ..." ones) apply to them
#   b4               each topic's mbox as a maintainer takes it: b4 am
#                    rebuilds every patch and the cover with no warning,
#                    git am applies b4's output on the topic's base
#   robots           what a list's bots check: get_maintainer.pl on every
#                    added file, the cover letters' numbers
#   names            one name per mechanism from topic, Kconfig, core and
#                    edge to C header and exports; every export type-checked
#                    against bindgen; no unsafe in the cores
#   readme           README.md's results table is what the benchmark reports
#                    give (stale ones marked)
#   tools            our checkers can fail (tests/tools): counting, parity,
#                    the report, the cover-letter check, the export, the
#                    inlining check, the console scan
#   kunit            x86_64 test kernel (Clang ThinLTO, rust/mm in the LTO
#                    link): our KUnit suites, every case their sources
#                    declare, the console free of kernel reports
#   lto-check        its vmlinux has no call left to rust/mm's rmap and
#                    vma-lock entry points; lto-refusal: CONFIG_RUST_MM_LTO refuses a
#                    toolchain or config it cannot build
#   userspace        that kernel booted as a machine (3 vCPUs, two NUMA
#                    nodes, zram swap, hugetlb pages): our programs (every
#                    planned case) and the tree's mm selftests
#   kunit-arm64, lto-check-arm64, userspace-arm64
#                    the same on arm64 4K (ThinLTO too; lto-check adds
#                    contpte's entry points)
#   lto-control      the inlining check can fail: the C objects of the
#                    callers it names, compiled again natively from each
#                    LTO build's own commands, must call the entry points
#   selfcheck        the isolation checks catch a leak (MAP_SHARED, host)
#   lint             checkpatch --strict, rustfmt, clippy (kernel and host)
#
# How the last line counts: each stage counts each of its checks once
# (README.md, "How make test counts"). A check is a case of a test program
# or suite on one kernel and arch, or one gate; a skip is never a pass (a
# KUnit skip and an undeclared skip of ours are failures; a declared skip
# and a selftest's skip are reported, not counted). make test builds two
# kernels (x86_64 and arm64 4K, both with LTO); the unpatched kernel and the
# option-off one, with the selftests compared case by case (parity), are
# make test-all's.
# A stage that breaks (does not build, guest crash, no result line) counts
# one failure. What does not fit CI's time is in scripts/test/test-all.sh.
set -uo pipefail
# Every arch, whatever ARCH the caller set: the stages below say which.
unset ARCH GRANULE
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
# shellcheck source=scripts/lib/stages.sh
. "$RUST_MM_TOP/scripts/lib/stages.sh"
mkdir -p "$BUILD_DIR"
T="$RUST_MM_TOP/scripts"

t0=$SECONDS
if ! bash "$T/setup/setup.sh"; then
	stage_add setup 0 1 "the toolchain could not be installed (above)" $((SECONDS - t0))
	stages_end
	exit 1
fi
stage_add setup 0 0 "" $((SECONDS - t0))

# cargo test's log as a stage: the sum of its "test result" lines; a build
# error or a time-out is one failure.
cargo_stage() { # TAG TIMEOUT CARGO-TEST-ARGS...
	local tag="$1" limit="$2" log rc p f
	shift 2
	log="$BUILD_DIR/$tag-cargo.log"
	(cd "$RUST_MM_TOP/rust/mm" && CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$BUILD_DIR/cargo}" \
		timeout "$limit" cargo test --locked "$@") > "$log" 2>&1
	rc=$?
	grep -E '^test |^test result|panicked|^error' "$log"
	p=$(sed -n 's/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\1/p' "$log" | paste -sd+ | bc)
	f=$(sed -n 's/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\2/p' "$log" | paste -sd+ | bc)
	p=${p:-0} f=${f:-0}
	if [ "$rc" -eq 124 ]; then
		echo "rust-mm: $tag timed out after $limit s (a deadlock?): see $log"
		f=$((f + 1))
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "rust-mm: $tag did not build or run (exit $rc): see $log"
		f=$((f + 1))
	fi
	echo "$tag: $p passed, $f failed"
}

# Lines ending ': ok' are passes, ': FAILED...' failures; EXPECT checks
# were due (fewer lines is failures too).
ok_lines_stage() { # TAG EXPECT COMMAND...
	local tag="$1" expect="$2" out ok bad
	shift 2
	out="$("$@" 2>&1)"
	echo "$out"
	ok=$(grep -c ': ok$' <<<"$out")
	bad=$(grep -c ': FAILED' <<<"$out")
	if [ "$expect" -gt 0 ] && [ $((ok + bad)) -lt "$expect" ]; then
		echo "rust-mm: $tag: $((ok + bad)) checks reported, $expect due"
		bad=$((expect - ok))
	fi
	[ $((ok + bad)) -eq 0 ] && bad=1
	echo "$tag: $ok passed, $bad failed"
}

series_stage() {
	local ntopics dir="$BUILD_DIR/series"
	ntopics="$(python3 "$T/lib/topics.py" list | wc -l)"
	if ! python3 "$T/lib/topics.py" check; then
		echo "series: 0 passed, 1 failed"
		return
	fi
	if ! bash "$T/series/series.sh" export "$dir" > "$BUILD_DIR/series-export.log" 2>&1; then
		cat "$BUILD_DIR/series-export.log"
		echo "rust-mm: make series failed (above)"
		echo "series: 1 passed, $((4 + ntopics)) failed"
		return
	fi
	cat "$BUILD_DIR/series-export.log"
	# The topic files (1) and the export (1), then series.sh check's 4 + one
	# per topic, then the patches that change the repository's Rust files
	# apply to them, in main's series and in the 6.12 release's (2).
	local out ok
	out="$(bash "$T/series/series.sh" check "$dir" 2>&1; bash "$T/series/rust-patches-check.sh" 2>&1)"
	echo "$out"
	ok=$(grep -c ': ok$' <<<"$out")
	echo "series: $((ok + 2)) passed, $((6 + ntopics - ok)) failed"
}

tools_stage() {
	local log="$BUILD_DIR/tools-tests.log" ran bad summary n k
	BUILD_DIR="$BUILD_DIR" python3 -m unittest discover -s "$RUST_MM_TOP/tests/tools" -p 'test_*.py' -v > "$log" 2>&1
	grep -E ' \.\.\. ' "$log"
	ran=$(sed -n 's/^Ran \([0-9]*\) tests\? .*/\1/p' "$log")
	# Counted from unittest's summary ("OK", "OK (skipped=N)", "FAILED
	# (failures=N, errors=N, skipped=N)"), not from the per-test lines: a
	# warning printed while a test runs splits its line from its verdict.
	# A skipped self-test counts as failed: make test has a prepared tree.
	summary=$(grep -E '^(OK|FAILED)( \(.*\))?$' "$log" | tail -n 1)
	bad=0
	for k in failures errors skipped; do
		n=$(sed -n "s/.*[( ]$k=\([0-9]*\).*/\1/p" <<<"$summary")
		bad=$((bad + ${n:-0}))
	done
	if [ -z "$ran" ] || [ -z "$summary" ]; then
		tail -n 20 "$log"
		echo "tools: 0 passed, 1 failed"
	else
		[ "$bad" -eq 0 ] || grep -E '^(FAIL|ERROR): ' "$log"
		echo "tools: $((ran - bad)) passed, $bad failed"
	fi
}

say "== host tests (cargo test, rust/mm) =="
stage host host cargo_stage host 900
say "== loom model checks (cargo test --cfg loom, rust/mm) =="
# One model at a time: loom's threads are coroutines on stacks it maps
# and unmaps per execution, and two models side by side spent most of
# their time in the kernel (90 s against 57 s one at a time, 2 cores).
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$BUILD_DIR/cargo-loom" \
	stage loom loom cargo_stage loom 1800 --release --test loom -- --test-threads 1

say "== tree and series =="
t0=$SECONDS
if ! bash "$T/setup/prepare-tree.sh"; then
	stage_add prepare 0 1 "the tree could not be prepared; kernel tests not run" $((SECONDS - t0))
	stages_end
	exit 1
fi
stage series series series_stage
say "== the series as a maintainer takes it: b4 am, then git am =="
stage b4 b4 ok_lines_stage b4 $((1 + 6 * $(python3 "$T/lib/topics.py" list | wc -l))) \
	python3 "$T/series/b4-check.py" "$BUILD_DIR/series"
say "== what a list's bots check: maintainers, cover letters =="
stage robots robots ok_lines_stage robots 0 bash "$T/series/series.sh" robots "$BUILD_DIR/series"
say "== one name per mechanism, from topic to exported symbol =="
stage names names python3 "$T/test/names-check.py"
say "== the README's results table is what the reports give =="
stage readme readme ok_lines_stage readme 1 python3 "$T/docs/readme-table.py" --check "$RUST_MM_TOP/README.md"
say "== our checkers can fail (tests/tools) =="
stage tools tools tools_stage

# The inlining check: every system with tables in scripts/test/lto-check.py
# for this base whose topic builds on the vmlinux's arch.
lto_check() { python3 "$T/test/lto-check.py" --objdump "$LLVM_BIN/llvm-objdump" "$@"; }
# Its control, one count for both arches: the named callers' C objects of
# each LTO build compiled again natively (seconds, no third kernel).
lto_control_stage() {
	local b out p=0 f=0
	for b in "$KUNIT_OUT" "$BUILD_DIR/kunit-arm64"; do
		out="$(lto_check --replay "$b" 2>&1)"
		echo "$out"
		if [[ "$(tail -n 1 <<<"$out")" =~ ^lto-check:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
			p=$((p + BASH_REMATCH[1])) f=$((f + BASH_REMATCH[2]))
		else
			f=$((f + 1))
		fi
	done
	echo "lto-check: $p passed, $f failed"
}
say "== KUnit (x86_64, QEMU) =="
stage kunit kunit bash "$T/test/run-kunit.sh"
say "== rust/mm inlined into its C callers in that x86_64 LTO kernel; refusals =="
stage lto-check lto-check lto_check "$KUNIT_OUT/vmlinux"
stage lto-refusal lto-refusal bash "$T/test/lto-refusal.sh"

# Our programs and the tree's mm selftests (ksft.list sets "all" and
# "patched"), counted here: make test-all boots the unpatched kernel with
# them too and compares the selftests case by case (a third kernel build
# does not fit CI's time).
say "== userspace tests booted in QEMU (x86_64, initramfs) =="
stage userspace userspace bash "$T/test/run-userspace.sh"

say "== KUnit (arm64 4K, qemu-system-aarch64 -machine virt -cpu max) =="
stage kunit-arm64 kunit env ARCH=arm64 bash "$T/test/run-kunit.sh"
if [ "$RUST_MM_BASE" = 6.12 ]; then
	# 6.12's arm64 test kernel is native (its rust-lto patch builds x86_64
	# only): it is the control, and its callers must call.
	say "== the inlining check can fail: arm64's test kernel (no LTO) calls the entry points =="
	stage lto-control lto-check lto_check --expect-calls "$BUILD_DIR/kunit-arm64/vmlinux"
else
	say "== rust/mm inlined into its C callers in that arm64 LTO kernel (contpte too) =="
	stage lto-check-arm64 lto-check lto_check "$BUILD_DIR/kunit-arm64/vmlinux"
	say "== the inlining check can fail: the callers compiled natively call the entry points =="
	stage lto-control lto-check lto_control_stage
fi
say "== userspace tests booted on arm64 4K (the same kernel, initramfs; selftests/mm/cow) =="
# Our programs and the selftests every kernel runs (set "all"); make
# test-all boots arm64 with the others too (TCG runs arm64 guests about
# twice as slowly as x86_64's). No unpatched arm64 kernel here: its
# selftests are counted in this stage.
stage userspace-arm64 userspace env ARCH=arm64 USERSPACE_KSFT_SETS=all bash "$T/test/run-userspace.sh"
say "== the userspace checks can fail (host, MAP_SHARED self-check) =="
stage selfcheck selfcheck bash "$T/test/run-userspace.sh" --selfcheck

say "== style gates (checkpatch --strict, rustfmt, clippy) =="
LINT_SERIES_DIR="$BUILD_DIR/series" stage lint lint bash "$T/test/lint.sh"

# For the cover letters of `make series`: the result, and the tree it is for.
{ echo "result=$stages_passed passed, $stages_failed failed"
  echo "tree=$(git -C "$KSRC" rev-parse 'rust-mm^{tree}' 2>/dev/null)"
  echo "date=$(date -u +%Y-%m-%d)"
  echo "duration=$((SECONDS / 60)) min"; } > "$BUILD_DIR/test-result.txt"
stages_end
