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

stage_names=() stage_counts=() stage_secs=() stage_fails=()
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
	"$@" 2>&1 | tee "$out"
	last="$(tail -n 1 "$out")"
	local re="^${tag:+$tag: }([0-9]+) passed, ([0-9]+) failed"
	if [[ "$last" =~ $re ]]; then
		stage_add "$name" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "$(_stage_why "$out")" $((SECONDS - t0))
	else
		echo "rust-mm: $name did not report results (its last line is not '${tag:+$tag: }N passed, N failed')"
		stage_add "$name" 0 1 "did not report results: $(tail -n 3 "$out")" $((SECONDS - t0))
	fi
}

stages_end() {
	local i p f
	if [ ${#stage_fails[@]} -gt 0 ]; then
		say "what failed (full output above and in $BUILD_DIR/<stage>.out):"
		printf '%s\n' "${stage_fails[@]}"
	fi
	say "stages (passed / failed / seconds, build time included):"
	for i in "${!stage_names[@]}"; do
		read -r p f <<<"${stage_counts[$i]}"
		printf '  %-22s %6d %6d %6s\n' "${stage_names[$i]}" "$p" "$f" "${stage_secs[$i]}"
	done
	printf '  %-22s %6d %6d %6s\n' total "$stages_passed" "$stages_failed" "$SECONDS"
	echo "$stages_passed passed, $stages_failed failed"
	[ "$stages_failed" -eq 0 ]
}
