#!/usr/bin/env bash
# The series as a sender mails it, one topic at a time, from the prepared
# tree (build/linux-<version>: tag 'pristine', branch rust-mm, tag
# rust-mm/<topic> where each topic ends).
#   series.sh export DIR [TOPIC...]
#                          per topic, what `git format-patch --cover-letter
#                          --base -s` gives a sender, in DIR/<topic>/: the
#                          cover letter 0000-cover-letter.patch (filled in
#                          by scripts/series/cover-letter.py), [RFC PATCH n/m]
#                          patches signed off by you (your git identity;
#                          refused without one) and a quilt 'series'; the
#                          cover letter and the patches are one thread
#                          (Message-IDs, reproducible: thread_topic), also
#                          written as the mbox DIR/<topic>.mbox that
#                          scripts/series/b4-check.py takes through b4. Each
#                          topic is based on the pristine tree plus the
#                          topics it depends on (base-commit and
#                          prerequisite-patch-id trailers). Default: every
#                          topic, plus DIR/series, the whole stack in apply
#                          order for `git am` or `quilt push -a`. A topic
#                          without the topics it depends on is refused.
#   series.sh refresh      write the tree's commits back into each topic's
#                          kernel-patches/<topic>/ (after editing the C side
#                          in the tree and committing there)
#   series.sh check DIR    apply DIR/series to fresh pristine copies (of
#                          the files it touches) with `git am` and with
#                          `quilt push -a`, and each topic on the pristine
#                          tree plus only its dependencies; prints one line
#                          per check
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
# shellcheck source=scripts/lib/topics.sh
. "$RUST_MM_TOP/scripts/lib/topics.sh"

[ -f "$KSRC/.rust-mm-applied" ] || die "the tree is not prepared (run: make prepare)"
topics_validate
git_t() { git -C "$KSRC" "$@"; }

# Every path the patch files name (both sides of each diff), one per line.
patch_paths() { # PATCH...
	sed -n 's|^diff --git a/\([^ ]*\) b/\([^ ]*\)$|\1\n\2|p' "$@" | sort -u
}

# Where TOPIC starts in the prepared tree: the end of the topic before it.
topic_start() { # TOPIC
	local prev=pristine t
	for t in $(topics_all); do
		[ "$t" = "$1" ] && { echo "$prev"; return; }
		prev="rust-mm/$t"
	done
	die "no topic $1"
}

# The exporter's identity, as `git format-patch -s` would use it; never
# invented.
identity() {
	local name email
	name="$(git -C "$RUST_MM_TOP" config user.name || true)"
	email="$(git -C "$RUST_MM_TOP" config user.email || true)"
	if [ -z "$name" ] || [ -z "$email" ]; then
		die "no git identity to sign the patches off with (user.name='$name', user.email='$email').
Set yours, as for any patch you send (it goes into From: and Signed-off-by:):
    git config --global user.name 'Your Name'
    git config --global user.email 'you@example.org'
make series never invents one."
	fi
	ID_NAME="$name" ID_EMAIL="$email"
}

# START..END of TOPIC in a tree that has only the pristine tree and the
# topics it depends on: the prepared tree itself when those are exactly the
# topics before it, else a scratch worktree built for it. Sets RANGE_START,
# RANGE_END.
topic_range() { # TOPIC
	local t="$1" deps before="" x tmp start=pristine
	deps="$(topic_deps_closure "$t" | paste -sd' ')"
	for x in $(topics_all); do
		[ "$x" = "$t" ] && break
		before+="$x "
		# The prepared tree's end of a first run of topics that is
		# exactly the dependencies: the scratch tree starts there.
		[ "${before% }" = "$deps" ] && start="rust-mm/$x"
	done
	if [ "$deps" = "${before% }" ]; then
		RANGE_START="$(git_t rev-parse "$(topic_start "$t")")"
		RANGE_END="$(git_t rev-parse "rust-mm/$t")"
		return
	fi
	# One scratch worktree for every topic and every export, kept between
	# runs: going back to pristine touches only the files the last topic
	# changed (a fresh worktree checks out the whole kernel, a minute or
	# two each).
	# It is a sparse checkout of the directories the topics touch (and
	# rust/mm, where the Rust files are added): a kernel's whole tree
	# took a minute to write on a fresh machine.
	tmp="$BUILD_DIR/topic-tree"
	if ! git -C "$tmp" rev-parse -q --verify 'pristine^{commit}' >/dev/null 2>&1 ||
	   [ "$(git -C "$tmp" rev-parse pristine)" != "$(git_t rev-parse pristine)" ]; then
		git_t worktree remove --force "$tmp" >/dev/null 2>&1 || rm -rf "$tmp"
		git_t worktree prune
		git_t worktree add -q --no-checkout --detach "$tmp" pristine
	fi
	{ echo rust/mm
	  patch_paths "$TOPICS_DIR"/*/[0-9]*.patch | xargs -r -n1 dirname
	} | sort -u | grep -v -x '\.' | git -C "$tmp" sparse-checkout set --cone --stdin
	git -C "$tmp" am --abort >/dev/null 2>&1 || true
	git -C "$tmp" checkout -q -f --detach "$start"
	git -C "$tmp" clean -q -fdx
	local applied=()
	if [ "$start" != pristine ]; then
		read -r -a applied <<< "$deps"
	else
		for x in $deps; do
			apply_topic "$tmp" "$x" "${applied[@]}" >/dev/null
			applied+=("$x")
		done
	fi
	RANGE_START="$(git -C "$tmp" rev-parse HEAD)"
	apply_topic "$tmp" "$t" "${applied[@]}" >/dev/null
	RANGE_END="$(git -C "$tmp" rev-parse HEAD)"
}

# The commits START..END again, authored by the exporter (same messages,
# trees and author dates; plumbing only, the work tree is not touched).
# Prints the new end.
reauthor() { # START END
	local parent="$1" c
	for c in $(git_t rev-list --reverse "$1..$2"); do
		parent="$(GIT_AUTHOR_NAME="$ID_NAME" GIT_AUTHOR_EMAIL="$ID_EMAIL" \
			GIT_AUTHOR_DATE="$(git_t log -1 --format=%aD "$c")" \
			GIT_COMMITTER_NAME="$ID_NAME" GIT_COMMITTER_EMAIL="$ID_EMAIL" \
			GIT_COMMITTER_DATE="$(git_t log -1 --format=%aD "$c")" \
			git_t commit-tree "$(git_t rev-parse "$c^{tree}")" -p "$parent" \
			-m "$(git_t log -1 --format=%B "$c")")"
	done
	echo "$parent"
}

export_topic() { # TOPIC OUTDIR
	local t="$1" out="$2" prefix version end n
	prefix="$(topic_field "$t" Prefix)"
	version="$(topic_field "$t" Version)"
	topic_range "$t"
	n="$(git_t rev-list --count "$RANGE_START..$RANGE_END")"
	[ "$n" -eq "$(topic_ncommits "$t")" ] ||
		die "topic $t: the tree has $n commits for it, $TOPICS_REL/$t lists $(topic_ncommits "$t")"
	end="$(reauthor "$RANGE_START" "$RANGE_END")"
	rm -rf "$out" && mkdir -p "$out"
	local vopt=() addr=() who
	[ "${version:-1}" -gt 1 ] && vopt=(-v "$version")
	# Addressed as a sender would: maintainers and reviewers To, lists Cc
	# (scripts/get_maintainer.pl on the topic's whole diff). It orders
	# names of equal rank by Perl's hash order, which Perl randomizes per
	# run: a fixed hash seed keeps the order, and so the export, the same.
	git_t diff "$RANGE_START" "$RANGE_END" > "$BUILD_DIR/topic-$t.diff"
	# (The two lookups, To and Cc, run side by side: a few seconds each.)
	(cd "$KSRC" && PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0 perl scripts/get_maintainer.pl \
		--no-git --no-git-fallback --no-rolestats --no-l "$BUILD_DIR/topic-$t.diff") > "$BUILD_DIR/topic-$t.to" &
	local to_pid=$!
	(cd "$KSRC" && PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0 perl scripts/get_maintainer.pl \
		--no-git --no-git-fallback --no-rolestats --no-m --no-r "$BUILD_DIR/topic-$t.diff") > "$BUILD_DIR/topic-$t.cc" ||
		die "topic $t: scripts/get_maintainer.pl (Cc) failed"
	wait "$to_pid" || die "topic $t: scripts/get_maintainer.pl (To) failed"
	while read -r who; do addr+=(--to="$who"); done < "$BUILD_DIR/topic-$t.to"
	while read -r who; do addr+=(--cc="$who"); done < "$BUILD_DIR/topic-$t.cc"
	[ "${#addr[@]}" -gt 0 ] || die "topic $t: scripts/get_maintainer.pl found nobody to send it to"
	# Reproducible: the cover letter is dated as the topic's newest patch
	# (format-patch dates it with the committer date, "now" by default), and
	# the blob abbreviations of the index lines have a fixed length (12, as
	# Documentation/process/submitting-patches.rst asks of commit IDs; git's
	# default grows once git has packed the tree's objects).
	GIT_COMMITTER_DATE="$(git_t log --format='%ct %cD' "$RANGE_START..$end" | sort -n | tail -n 1 | cut -d' ' -f2-)" \
	git_t -c user.name="$ID_NAME" -c user.email="$ID_EMAIL" format-patch -q --abbrev=12 \
		--zero-commit --no-signature --signoff --cover-letter --numbered --thread=shallow \
		--base=pristine --subject-prefix="${prefix:-PATCH}" "${vopt[@]}" "${addr[@]}" \
		-o "$out" "$RANGE_START..$end"
	python3 "$RUST_MM_TOP/scripts/series/cover-letter.py" --topic "$t" \
		--topic-dir "$TOPICS_DIR/$t" --cover "$(ls "$out"/*0000-cover-letter.patch)" \
		--bench "$(topic_bench "$t")" --tree "$KSRC" \
		--test-result "$BUILD_DIR/test-result.txt" || die "topic $t: cannot write its cover letter"
	(cd "$out" && ls ./*.patch | sed 's|^\./||' | grep -v -- '-cover-letter\.patch$') > "$out/series"
	thread_topic "$t" "$out" "${version:-1}"
}

# One threaded message set per topic, as `git format-patch --thread=shallow
# --cover-letter` gives (the cover letter's Message-ID; each patch
# In-Reply-To and References it), so that a maintainer's tools (b4 am, a
# list archive) put the topic back together: git's own Message-IDs carry the
# time of the export, so they are replaced by IDs made of a hash of the
# topic's messages (without those three headers) and the message's number:
# the same series exported again gives the same IDs (make series is
# reproducible), any change to a message (a patch, the cover, the sender)
# gives new ones. The domain is the sender's, as git's and b4's are: two
# senders' IDs never collide. Then OUTDIR.mbox: the cover and the patches in
# order, as a list archive serves the thread (mboxrd: a body line starting
# with "From " is written ">From ", one ">" more for one already quoted, so
# that no reader splits a message there).
thread_topic() { # TOPIC OUTDIR VERSION
	local t="$1" out="$2" version="$3" files=() f hash n=0 domain cover_id id
	files=("$(ls "$out"/*0000-cover-letter.patch)")
	while read -r f; do files+=("$out/$f"); done < "$out/series"
	hash="$(for f in "${files[@]}"; do
		awk 'NR == 1 { hdr = 1 } hdr && /^$/ { hdr = 0 }
		     hdr && /^[ \t]/ && skip { next } { skip = 0 }
		     hdr && tolower($0) ~ /^(message-id|in-reply-to|references):/ { skip = 1; next } { print }' "$f"
		done | sha256sum | cut -c1-16)"
	domain="${ID_EMAIL##*@}"
	[ "$domain" != "$ID_EMAIL" ] && [ -n "$domain" ] || domain=rust-mm.localhost
	cover_id="<$t-v$version-0-$hash@$domain>"
	for f in "${files[@]}"; do
		id="<$t-v$version-$n-$hash@$domain>"
		awk -v id="$id" -v cover="$cover_id" -v n="$n" '
			NR == 1 { hdr = 1 }
			hdr && /^$/ { hdr = 0 }
			hdr && /^[ \t]/ && skip { next }
			{ skip = 0 }
			hdr && tolower($0) ~ /^message-id:/ { print substr($0, 1, 11) " " id; mid++; skip = 1; next }
			hdr && tolower($0) ~ /^in-reply-to:/ { print substr($0, 1, 12) " " cover; irt++; skip = 1; next }
			hdr && tolower($0) ~ /^references:/ { print substr($0, 1, 11) " " cover; refs++; skip = 1; next }
			{ print }
			END { exit !(mid == 1 && (n == 0 ? irt + refs == 0 : irt == 1 && refs == 1)) }' \
			"$f" > "$f.tmp" || { rm -f "$f.tmp"; die "topic $t: $(basename "$f") is not threaded as format-patch --thread=shallow writes it"; }
		mv "$f.tmp" "$f"
		n=$((n + 1))
	done
	for f in "${files[@]}"; do
		sed '2,$ s/^\(>*From \)/>\1/' "$f"
	done > "$out.mbox"
}

case "${1:-}" in
export)
	dir="${2:?usage: series.sh export DIR [TOPIC...]}"
	shift 2
	sel=("$@")
	[ "${#sel[@]}" -eq 0 ] && mapfile -t sel < <(topics_all)
	topics_check_closed "${sel[@]}"
	identity
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	rm -f "$dir/series"
	for t in $(topics_all); do rm -rf "${dir:?}/$t" "${dir:?}/$t.mbox"; done
	for t in "${sel[@]}"; do
		export_topic "$t" "$dir/$t"
		say "[$t] $(grep -c . "$dir/$t/series") patches and a cover letter in $dir/$t, one thread in $dir/$t.mbox (signed off by $ID_NAME <$ID_EMAIL>)"
	done
	# The whole stack, for git am / quilt (only when every topic is there).
	if [ "${#sel[@]}" -eq "$(topics_all | wc -l)" ]; then
		{ echo "# rust-mm on $LINUX_PKG $LINUX_DEB_VERSION, every topic in apply order; 'git am' or 'quilt push -a'"
		  for t in $(topics_all); do sed "s|^|$t/|" "$dir/$t/series"; done; } > "$dir/series"
	fi
	;;
refresh)
	# Map the tree's commits to topics by count, in each topic's plan
	# (generated Rust patches where rust-files puts them, the series
	# between), and rewrite each topic's patch files; the names may change
	# (their numbers are positions in the topic), and so do the names
	# rust-files' '@ after' lines give.
	total=0
	for t in $(topics_all); do total=$((total + $(topic_ncommits "$t"))); done
	have="$(git_t rev-list --count pristine..rust-mm)"
	[ "$have" -eq "$total" ] ||
		die "the tree has $have commits, $TOPICS_REL/ lists $total: to add or drop a patch, add or remove a line in its topic's series first (any name; refresh renames the files)"
	mapfile -t commits < <(git_t rev-list --reverse pristine..rust-mm)
	i=0
	for t in $(topics_all); do
		d="$TOPICS_DIR/$t"
		mapfile -t plan < <(topic_plan "$t")
		tmpd="$BUILD_DIR/refresh-$t"
		rm -rf "$tmpd" && mkdir -p "$tmpd"
		declare -A renamed=()
		for ((k = 0; k < ${#plan[@]}; k++)); do
			read -r kind x <<< "${plan[$k]}"
			[ "$kind" = patch ] || continue
			new="$(git_t format-patch --abbrev=9 --zero-commit --no-signature --start-number $((k + 1)) \
				-o "$tmpd" -1 "${commits[$((i + k))]}")"
			renamed[$x]="$(basename "$new")"
		done
		rm -f "$d"/[0-9][0-9][0-9][0-9]-*.patch
		cp "$tmpd"/*.patch "$d"/
		# format-patch -1 numbers every patch [PATCH]; keep the files' names.
		(cd "$d" && ls [0-9][0-9][0-9][0-9]-*.patch 2>/dev/null || true) > "$d/series"
		if topic_has_rust "$t"; then
			while IFS= read -r line; do
				if [[ "$line" =~ ^@[[:space:]]*after[[:space:]]+([^[:space:]]+)[[:space:]]+(.*)$ ]]; then
					x="${BASH_REMATCH[1]}"
					line="@ after ${renamed[$x]:-$x} ${BASH_REMATCH[2]}"
				fi
				printf '%s\n' "$line"
			done < "$d/rust-files" > "$tmpd/rust-files"
			cp "$tmpd/rust-files" "$d/rust-files"
		fi
		unset renamed
		i=$((i + ${#plan[@]}))
		say "$TOPICS_REL/$t refreshed: $(grep -c . "$d/series") patches"
	done
	;;
check)
	dir="$(cd "${2:?usage: series.sh check DIR}" && pwd)"
	[ -f "$dir/series" ] || die "$dir/series is missing (export every topic: make series)"
	tmp="$BUILD_DIR/series-check"
	rm -rf "$tmp" && mkdir -p "$tmp"
	# Only the files the series touches are written out (a kernel tree is
	# 90,000 files; a copy of it per check cost CI minutes): a git am
	# clone of the prepared tree's repository sparse-checked-out to them
	# (its commits still have whole trees), and a quilt directory of their
	# pristine content. A patch touching a file outside them cannot
	# exist: they are every path every patch names.
	mapfile -t files < <(patch_paths "$dir"/*/[0-9]*.patch)
	[ "${#files[@]}" -gt 0 ] || die "no patch in $dir names a file"
	git clone -q --shared --no-checkout "$KSRC" "$tmp/gitam"
	git -C "$tmp/gitam" config user.name x && git -C "$tmp/gitam" config user.email x@x &&
		git -C "$tmp/gitam" config gc.auto 0
	printf '/%s\n' "${files[@]}" | git -C "$tmp/gitam" sparse-checkout set --no-cone --stdin
	git -C "$tmp/gitam" checkout -q -f --detach pristine
	ga() { git -C "$tmp/gitam" "$@"; }
	# One git am per run of patches (a kernel's index is read and written
	# once per invocation, not once per patch); git am names the patch
	# that does not apply.
	mapfile -t ps < <(grep -v -E '^(#|$)' "$dir/series" | sed "s|^|$dir/|")
	if ga am -q "${ps[@]}" > "$tmp/am.log" 2>&1; then
		echo "series-check: git am applies every topic's patches in order: ok"
	else
		ga am --abort
		cat "$tmp/am.log"
		echo "git am: FAILED (above)"
	fi
	mkdir -p "$tmp/quilt/patches"
	git_t ls-tree -r -z --name-only pristine -- "${files[@]}" | xargs -0 -r git -C "$KSRC" archive pristine -- |
		tar -C "$tmp/quilt" -x
	( cd "$tmp/quilt" && cp -a "$dir"/. patches/ &&
	  QUILT_PATCHES=patches quilt push -a -q --fuzz=0 >"$tmp/quilt.log" 2>&1 ||
		{ cat "$tmp/quilt.log"; echo "quilt: FAILED"; exit 1; } ) &&
		echo "series-check: quilt push -a --fuzz=0 applies every patch: ok"
	# Both results must be the same files.
	diff -r -q -x .git -x .pc -x patches "$tmp/gitam" "$tmp/quilt" >/dev/null &&
		echo "series-check: git am and quilt give identical trees: ok"
	# And the very tree that `make prepare` builds.
	[ "$(git -C "$tmp/gitam" rev-parse 'HEAD^{tree}' 2>/dev/null)" = "$(git_t rev-parse 'rust-mm^{tree}')" ] &&
		echo "series-check: the result is the prepared tree, bit for bit: ok"
	# Each topic alone on the pristine tree plus the topics it depends on
	# (each chain of dependencies applied once, then reused).
	am_list() { # TOPIC...: their patches in order
		local x p
		for x in "$@"; do
			while read -r p; do echo "$dir/$x/$p"; done < "$dir/$x/series"
		done
	}
	declare -A chain=()
	for t in $(topics_all); do
		deps="$(topic_deps_closure "$t" | paste -sd' ')"
		# shellcheck disable=SC2086
		chain[none]=pristine
		if { ga checkout -q -f --detach "${chain[${deps:-none}]:-pristine}" &&
		     if [ -z "${chain[${deps:-none}]:-}" ]; then
			mapfile -t ps < <(am_list $deps) && ga am -q "${ps[@]}" && chain[$deps]="$(ga rev-parse HEAD)"
		     fi &&
		     mapfile -t ps < <(am_list "$t") && ga am -q "${ps[@]}"; } > "$tmp/topic-$t.log" 2>&1; then
			echo "series-check: topic $t applies on the pristine tree + ${deps:-nothing else}: ok"
		else
			ga am --abort > /dev/null 2>&1
			cat "$tmp/topic-$t.log"
			echo "series-check: topic $t does not apply on the pristine tree + ${deps:-nothing else}: FAILED"
		fi
	done
	;;
robots)
	# What a mailing list's bots check besides checkpatch (scripts/test/lint.sh):
	# every file the series adds has a MAINTAINERS entry of ours -- a
	# section whose maintainer (M:) is the first topic's section's, as
	# get_maintainer.pl reports it: that section, one under it ("MEMORY
	# MANAGEMENT - RUST - PER-VMA LOCK WORD"), or a topic's own elsewhere
	# in the alphabet ("MEMORY MANAGEMENT - PAGEMAP SHARED SWAP (RUST)",
	# "DEVICE DIRECT ACCESS (DAX) - COMPOUND PAGEMAPS (RUST)", "ARM64 PORT -
	# CONTIGUOUS PTE DECISIONS (RUST)": topics that do not depend on each
	# other need sections at different places, or their MAINTAINERS hunks
	# would not apply together) -- and
	# every cover letter's benchmark numbers are those of its topic's
	# report (Bench:).
	dir="$(cd "${2:?usage: series.sh robots DIR}" && pwd)"
	first="$TOPICS_DIR/$(topics_all | head -n 1)/maintainers"
	section="$(grep -v '^Before: ' "$first" | head -n 1)"
	maint="$(sed -n 's/^M:\t//p' "$first" | head -n 1)"
	[ -n "$maint" ] || die "$first has no M: line"
	mapfile -t added < <(git_t diff --name-only --diff-filter=A pristine rust-mm)
	unmaintained=()
	for f in "${added[@]}"; do
		(cd "$KSRC" && perl scripts/get_maintainer.pl --no-git --no-git-fallback --no-l --no-r -f "$f") |
			grep -qE "$maint \\(maintainer:(MEMORY MANAGEMENT|DEVICE DIRECT ACCESS \\(DAX\\)|ARM64 PORT) - " || unmaintained+=("$f")
	done
	if [ "${#unmaintained[@]}" -eq 0 ]; then
		echo "robots: get_maintainer.pl names '$maint' (maintainer of '$section' or a MEMORY MANAGEMENT section of a topic) for all ${#added[@]} files the series adds: ok"
	else
		echo "robots: get_maintainer.pl does not name '$maint' as the maintainer of a section of ours for: ${unmaintained[*]}: FAILED"
	fi
	for t in $(topics_all); do
		c="$dir/$t/0000-cover-letter.patch"
		[ -f "$c" ] || c="$(ls "$dir/$t"/*0000-cover-letter.patch 2>/dev/null | head -n 1 || true)"
		[ -f "$c" ] || { echo "robots: topic $t has no cover letter in $dir/$t: FAILED"; continue; }
		grep -q '^Benchmarks (' "$c" || continue
		bench="$(topic_bench "$t")"
		if python3 "$RUST_MM_TOP/scripts/series/cover-letter.py" --bench "$bench" \
			--check "$c" > "$BUILD_DIR/cover-check-$t.log"; then
			echo "robots: topic $t: the cover letter's benchmark numbers are docs/${bench##*/}'s: ok"
		else
			cat "$BUILD_DIR/cover-check-$t.log"
			echo "robots: topic $t: the cover letter's benchmark numbers differ from docs/${bench##*/}: FAILED"
		fi
	done
	;;
*) die "usage: series.sh export DIR [TOPIC...] | refresh | check DIR | robots DIR" ;;
esac
