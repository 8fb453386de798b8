# shellcheck shell=bash
# Stage accounting of `make test` and `make test-all` (one implementation
# for both). A stage is a command whose output ends with one line
# 'TAG: N passed, N failed[, ...]'; its counts are added to the total, its
# time and counts kept for the table printed before the last line, and the
# lines that say why it failed kept for a "what failed" block (a CI log
# often keeps only the tail). Sourced after env.sh; never executed.
#
#   stage NAME TAG COMMAND...   run COMMAND (output to the terminal and to
#                               $BUILD_DIR/NAME.out), count its last line
#                               ('TAG: N passed, N failed'; TAG "" for a
#                               plain 'N passed, N failed')
#   stage_add NAME P F [WHY]    count a stage this script judged itself
#   stages_end                  print what failed, the per-stage table and
#                               the last line 'N passed, N failed'; return
#                               0 if nothing failed
#
# A run whose inputs have a fingerprint (STAGES_FP, test-all.sh computes it
# from the commit) stamps each stage's counts in $BUILD_DIR/stamps/NAME as
# 'FP PASSED FAILED SECONDS DATE'. With STAGES_RESUME=1 a stage whose stamp
# has this fingerprint and no failure is not run again: its counts are the
# stamp's, and the table says when they were taken. A run that stops (a
# session's end) is resumed; nothing of another commit is ever reused.

stage_names=() stage_counts=() stage_secs=() stage_fails=() stage_when=()
stages_passed=0 stages_failed=0

# The lines of OUTPUT (a file or text) that say why a stage failed: those
# naming a failure (at most 8), else its last line.
_stage_why() { # OUTPUT
	local text lines
	if [ -f "$1" ]; then text="$(cat "$1")"; else text="$1"; fi
	lines="$(grep -E 'FAIL|not ok|panicked|^error|did not|timed out|hung|BUG|WARNING|no result|not in the plan|without declaring' <<<"$text" |
		grep -v -E ' 0 failed|^[a-z0-9-]+: [0-9]+ passed' | head -n 8)"
	[ -n "$lines" ] || lines="$(tail -n 1 <<<"$text")"
	printf '%s' "$lines"
}

stage_add() { # NAME PASSED FAILED [WHY] [SECONDS]
	stage_names+=("$1")
	stage_counts+=("$2 $3")
	stage_secs+=("${5:--}")
	stage_when+=("${6:-now}")
	stages_passed=$((stages_passed + $2))
	stages_failed=$((stages_failed + $3))
	if [ "$3" -ne 0 ]; then
		local why="${4:-}"
		stage_fails+=("  $1: ${why//$'\n'/$'\n'    }")
	fi
}

stage() { # NAME TAG COMMAND...
	local name="$1" tag="$2" out t0=$SECONDS last
	shift 2
	out="$BUILD_DIR/$name.out"
	local stamp="$BUILD_DIR/stamps/$name" fp p f secs when
	if [ -n "${STAGES_FP:-}" ] && [ "${STAGES_RESUME:-0}" = 1 ] && [ -f "$stamp" ] &&
	   read -r fp p f secs when < "$stamp" && [ "$fp" = "$STAGES_FP" ] && [ "$f" = 0 ]; then
		say "$name: not run again: $p passed, 0 failed on $when with the same inputs ($fp; output: $out)"
		stage_add "$name" "$p" 0 "" "$secs" "$when"
		return
	fi
	"$@" 2>&1 | tee "$out"
	last="$(tail -n 1 "$out")"
	local re="^${tag:+$tag: }([0-9]+) passed, ([0-9]+) failed"
	if [[ "$last" =~ $re ]]; then
		p="${BASH_REMATCH[1]}" f="${BASH_REMATCH[2]}"
		stage_add "$name" "$p" "$f" "$(_stage_why "$out")" $((SECONDS - t0))
	else
		echo "rust-mm: $name did not report results (its last line is not '${tag:+$tag: }N passed, N failed')"
		p=0 f=1
		stage_add "$name" 0 1 "did not report results: $(tail -n 3 "$out")" $((SECONDS - t0))
	fi
	if [ -n "${STAGES_FP:-}" ]; then
		mkdir -p "$BUILD_DIR/stamps"
		echo "$STAGES_FP $p $f $((SECONDS - t0)) $(date -u +%Y-%m-%dT%H:%MZ)" > "$stamp"
	fi
}

stages_end() {
	local i p f
	if [ ${#stage_fails[@]} -gt 0 ]; then
		say "what failed (full output above and in $BUILD_DIR/<stage>.out):"
		printf '%s\n' "${stage_fails[@]}"
	fi
	say "stages (passed / failed / seconds, build time included${STAGES_FP:+ / run: now or when its stamp was taken, inputs $STAGES_FP}):"
	for i in "${!stage_names[@]}"; do
		read -r p f <<<"${stage_counts[$i]}"
		printf '  %-22s %6d %6d %6s%s\n' "${stage_names[$i]}" "$p" "$f" "${stage_secs[$i]}" \
			"${STAGES_FP:+  ${stage_when[$i]}}"
	done
	printf '  %-22s %6d %6d %6s\n' total "$stages_passed" "$stages_failed" "$SECONDS"
	echo "$stages_passed passed, $stages_failed failed"
	[ "$stages_failed" -eq 0 ]
}
