# shellcheck shell=bash
# The series as topics (kernel-patches/topics, one directory per topic):
# reading a topic's metadata, checking dependencies, and applying a topic
# to a git tree. Sourced after env.sh by prepare-tree.sh and series.sh;
# never executed.
#
# A topic directory holds:
#   topic        "Key: value" lines, every key present: Title, Prefix,
#                Version, Depends, Kconfig, KUnit, Arch, Bench (what each
#                means, and the one reader of them: scripts/lib/topics.py)
#   cover        the text of its cover letter (scripts/series/cover-letter.py)
#   series       its patches, in order
#   rust-files   (optional) files of this repository it adds to rust/mm,
#                in generated patches. The lines before the first '@' line
#                are the topic's first patch, whose commit message is
#                rust.commit and which also inserts the MAINTAINERS section
#                in 'maintainers' (if that file exists), before the section
#                its first line 'Before: TITLE' names (default MEMORY
#                MAPPING): topics that do not depend on each other put
#                their sections at different places, or their hunks would
#                not apply together. A line
#                '@ after PATCH MESSAGE' starts a group of files committed
#                right after PATCH of its series, with the commit message in
#                the file MESSAGE of the topic's directory: Rust that needs
#                C definitions a patch adds comes right after that patch,
#                so that every prefix of the stack builds. The crate root
#                rust/mm/rust_mm.rs is generated again with every group.

TOPICS_DIR="${PATCHES_DIR:-$RUST_MM_TOP/kernel-patches}"
# The same, as messages and the inputs hash name it (kernel-patches).
TOPICS_REL="${TOPICS_DIR#"$RUST_MM_TOP"/}"
# Fixed identity of the generated commits (the pristine tree and each
# topic's Rust patch), so that the trees and `make series` are reproducible.
GEN_IDENT=(-c user.name="rust-mm developers" -c user.email="rust-mm@localhost")

# The topic metadata has one reader, scripts/lib/topics.py; these are its
# shell face.
topics_all() { # every topic, in apply order
	python3 "$RUST_MM_TOP/scripts/lib/topics.py" list || die "cannot read $TOPICS_REL/topics"
}

topic_field() { # TOPIC KEY: the value of "KEY:" in the topic's metadata
	python3 "$RUST_MM_TOP/scripts/lib/topics.py" field "$1" "$2" || exit 1
}

topic_bench() { # TOPIC: the path of its benchmark report (docs/, "Bench:"),
	# which may not exist yet (not measured on this base: its cover says so)
	local f
	f="$(topic_field "$1" Bench)"
	[ -n "$f" ] || die "topic $1 declares no benchmark report (Bench: in $TOPICS_REL/$1/topic)"
	# A base other than the default names its reports with its suffix
	# (benchmarks-lto.json of 6.12 is docs/benchmarks-lto-6.12.json).
	echo "$RUST_MM_TOP/docs/${f%.json}${BASE_SUFFIX:-}.json"
}

topic_patches() { # TOPIC: its patch files, in order
	sed -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' "$TOPICS_DIR/$1/series"
}

topic_has_rust() { [ -f "$TOPICS_DIR/$1/rust-files" ]; }

# The '@ after PATCH MESSAGE' lines of TOPIC's rust-files, as "PATCH MESSAGE".
rust_group_heads() { # TOPIC
	topic_has_rust "$1" || return 0
	sed -n 's/^@[[:space:]]*after[[:space:]]\{1,\}//p' "$TOPICS_DIR/$1/rust-files"
}

# The files of group IDX (0: the first patch) of TOPIC's rust-files.
rust_group_files() { # TOPIC IDX
	awk -v want="$2" '/^[[:space:]]*(#|$)/ { next }
		/^@/ { g++; next }
		g == want { print $1 }' "$TOPICS_DIR/$1/rust-files"
}

# Every file of TOPIC's rust-files, and the commit messages of its groups.
rust_files_all() { # TOPIC
	sed -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' -e '/^@/d' "$TOPICS_DIR/$1/rust-files"
}

# TOPIC's commits in apply order: "rust IDX" for a generated patch, "patch
# FILE" for a file of its series. Dies on an '@ after' naming no patch.
topic_plan() { # TOPIC
	local t="$1" p g=1 after msg
	local -A at=()
	if topic_has_rust "$t"; then
		echo "rust 0"
		while read -r after msg; do
			[ -n "$msg" ] && [ -f "$TOPICS_DIR/$t/$msg" ] ||
				die "$TOPICS_REL/$t/rust-files: '@ after $after $msg': no commit message file $TOPICS_REL/$t/$msg"
			topic_patches "$t" | grep -qxF "$after" ||
				die "$TOPICS_REL/$t/rust-files: '@ after $after': no such patch in $TOPICS_REL/$t/series"
			at[$after]+="$g "
			g=$((g + 1))
		done < <(rust_group_heads "$t")
	fi
	for p in $(topic_patches "$t"); do
		echo "patch $p"
		for g in ${at[$p]:-}; do echo "rust $g"; done
	done
}

topic_ncommits() { # TOPIC: commits it adds to a tree
	topic_plan "$1" | wc -l
}

# Every topic exists, declares every field, and depends only on topics
# listed before it (scripts/lib/topics.py check); its directory has the
# files every topic has.
topics_validate() {
	local t f
	python3 "$RUST_MM_TOP/scripts/lib/topics.py" check >/dev/null || exit 1
	for t in $(topics_all); do
		for f in cover series; do
			[ -f "$TOPICS_DIR/$t/$f" ] || die "topic $t has no $TOPICS_REL/$t/$f"
		done
	done
}

# The topics TOPIC needs, transitively, in apply order (without TOPIC).
topic_deps_closure() { # TOPIC
	local want=" " t d changed=1
	for d in $(topic_field "$1" Depends); do want+="$d "; done
	while [ "$changed" = 1 ]; do
		changed=0
		for t in $want; do
			for d in $(topic_field "$t" Depends); do
				[[ "$want" == *" $d "* ]] || { want+="$d "; changed=1; }
			done
		done
	done
	for t in $(topics_all); do
		[[ "$want" == *" $t "* ]] && echo "$t"
	done
	return 0
}

# Refuse a selection of topics that leaves out one a selected topic needs.
topics_check_closed() { # TOPIC...
	local sel=" $* " t d missing=""
	for t in "$@"; do
		grep -qx "$t" <<<"$(topics_all)" || die "'$t' is not a topic; topics: $(topics_all | paste -sd' ')"
		for d in $(topic_deps_closure "$t"); do
			[[ "$sel" == *" $d "* ]] || missing+="  $t depends on $d"$'\n'
		done
	done
	if [ -n "$missing" ]; then
		printf 'rust-mm: error: refusing to export a topic without the topics it depends on:\n%s' "$missing" >&2
		local all=""
		for t in $(topics_all); do
			for d in "$@"; do
				if [ "$d" = "$t" ] || topic_deps_closure "$d" | grep -qx "$t"; then
					all+="$t "
					break
				fi
			done
		done
		die "export them together: make series TOPICS='${all% }'"
	fi
}

# rust/mm/rust_mm.rs as a tree with the topics STACK applied has it: the
# items gated by the Kconfig option of a topic outside STACK are left out
# (#[cfg(CONFIG_X)] and the attributes and item that follow it), and so
# are the crate doc's "- `CONFIG_X`: ..." paragraphs; so is a `mod` whose
# file (its #[path], else rust/mm/<name>.rs) the tree DST is in does not
# have yet.
crate_root_for() { # SRC DST STACK...
	local src="$1" dst="$2" drop="" t k
	shift 2
	for t in $(topics_all); do
		k="$(topic_field "$t" Kconfig)"
		[ -n "$k" ] || continue
		[[ " $* " == *" $t "* ]] || drop+="$k "
	done
	python3 - "$src" "$dst" $drop <<'PY'
import re, sys
import os
src, dst, drop = sys.argv[1], sys.argv[2], set(sys.argv[3:])
crate = os.path.dirname(dst)
out, skip_doc, held = [], False, []
for line in open(src).read().split("\n"):
    if skip_doc:
        if line.startswith("//!   "):
            continue
        skip_doc = False
    m = re.match(r"//! - `(CONFIG_\w+)`", line)
    if m and m.group(1) in drop:
        skip_doc = True
        continue
    # An item's comment and attributes are held until the item: kept or
    # left out with it.
    stripped = line.lstrip()
    if stripped.startswith("#[") or (stripped.startswith("//") and not stripped.startswith("//!")
                                     and not stripped.startswith("///")):
        held.append(line)
        continue
    if held or re.match(r"\s*pub\s+mod\s+\w+\s*;", line):
        attrs, held = held, []
        keep = True
        for a in attrs:
            m = re.match(r"\s*#\[cfg\((CONFIG_\w+)\)\]\s*$", a)
            if m and m.group(1) in drop:
                keep = False
        m = re.match(r"\s*pub\s+mod\s+(\w+)\s*;", line)
        if keep and m:
            path = m.group(1) + ".rs"
            for a in attrs:
                p = re.match(r'\s*#\[path\s*=\s*"([^"]+)"\]', a)
                if p:
                    path = p.group(1)
            keep = os.path.exists(os.path.join(crate, path))
        if keep:
            out.extend(attrs + [line])
        continue
    out.append(line)
open(dst, "w").write("\n".join(out))
PY
}

# Commit group IDX of TOPIC's rust-files to the git work tree GITDIR, whose
# topics are STACK (TOPIC last): the group's files, the crate root for this
# point of the stack, and (first group) the MAINTAINERS section.
apply_rust_group() { # GITDIR TOPIC IDX STACK...
	local tree="$1" t="$2" g="$3" f dst rdate msg
	shift 3
	local git_t=(git -C "$tree" "${GEN_IDENT[@]}" -c core.autocrlf=false)
	local files
	files="$(rust_group_files "$t" "$g")"
	[ -n "$files" ] || die "$TOPICS_REL/$t/rust-files: group $g lists no files"
	for f in $files; do
		case "$f" in
		Kbuild) dst=rust/mm/Kbuild ;;
		rust/mm/rust_mm.rs) continue ;;
		rust/mm/*) dst="$f" ;;
		*) die "$TOPICS_REL/$t/rust-files: unexpected path $f" ;;
		esac
		[ -f "$RUST_MM_TOP/$f" ] || die "$TOPICS_REL/$t/rust-files names $f, which does not exist"
		mkdir -p "$tree/$(dirname "$dst")"
		cp "$RUST_MM_TOP/$f" "$tree/$dst"
		"${git_t[@]}" add -f "$dst"
	done
	# The crate root: generated last, with the modules whose files are here.
	if rust_files_all "$t" | grep -qx rust/mm/rust_mm.rs &&
	   { [ "$g" != 0 ] || grep -qx rust/mm/rust_mm.rs <<< "$files"; }; then
		mkdir -p "$tree/rust/mm"
		crate_root_for "$RUST_MM_TOP/rust/mm/rust_mm.rs" "$tree/rust/mm/rust_mm.rs" "$@"
		"${git_t[@]}" add -f rust/mm/rust_mm.rs
	fi
	if [ "$g" = 0 ]; then
		msg="$TOPICS_DIR/$t/rust.commit"
		if [ -f "$TOPICS_DIR/$t/maintainers" ]; then
			python3 - "$tree/MAINTAINERS" "$TOPICS_DIR/$t/maintainers" <<'PY' ||
import sys
path, entry = sys.argv[1], open(sys.argv[2]).read().rstrip("\n").split("\n")
before = "MEMORY MAPPING"
if entry[0].startswith("Before: "):
    before, entry = entry[0][len("Before: "):], entry[1:]
lines = open(path).read().split("\n")
if entry[0] not in lines:
    at = lines.index(before)
    lines[at:at] = entry + [""]
    open(path, "w").write("\n".join(lines))
PY
				die "MAINTAINERS of this tree has no section to insert $t's before (the 'Before:' line of its maintainers file, or 'MEMORY MAPPING')"
			"${git_t[@]}" add MAINTAINERS
		fi
	else
		msg="$TOPICS_DIR/$t/$(rust_group_heads "$t" | sed -n "${g}p" | awk '{ print $2 }')"
	fi
	# A stable date keeps the tree and `make series` reproducible.
	rdate="$(cd "$RUST_MM_TOP" && git log -1 --format=%aI -- $files 2>/dev/null || true)"
	GIT_AUTHOR_DATE="${rdate:-2026-11-21T00:00:00Z}" GIT_COMMITTER_DATE="${rdate:-2026-11-21T00:00:00Z}" \
		"${git_t[@]}" commit -q --author="rust-mm developers <rust-mm@localhost>" \
		-F "$msg" || die "topic $t: cannot commit its Rust files (group $g)"
	say "[$t] applied its generated Rust patch $g ($(head -n 1 "$msg"))"
}

# Apply TOPIC to the git work tree GITDIR, on top of the topics APPLIED
# (already in that tree): its series with `git am` (no fuzz), and its
# generated Rust patches where rust-files puts them. A patch that does not
# apply stops everything.
apply_topic() { # GITDIR TOPIC APPLIED...
	local tree="$1" t="$2" kind x
	shift 2
	local stack=("$@" "$t")
	local git_t=(git -C "$tree" "${GEN_IDENT[@]}" -c core.autocrlf=false)
	local plan
	plan="$(topic_plan "$t")" || exit 1
	while read -r kind x; do
		if [ "$kind" = rust ]; then
			apply_rust_group "$tree" "$t" "$x" "${stack[@]}"
			continue
		fi
		[ -f "$TOPICS_DIR/$t/$x" ] || die "$TOPICS_REL/$t/series names $x, which does not exist"
		if ! "${git_t[@]}" am -q --no-3way --whitespace=nowarn "$TOPICS_DIR/$t/$x" >"$BUILD_DIR/am.log" 2>&1; then
			cat "$BUILD_DIR/am.log" >&2
			"${git_t[@]}" am --abort >/dev/null 2>&1 || true
			die "PATCH FAILED: $TOPICS_REL/$t/$x does not apply on top of ${*:-the pristine tree}${*:+ (pristine + topics: $*)} (no fuzz is allowed). Nothing was built."
		fi
		say "[$t] applied $x"
	done <<< "$plan"
}

# Every input of the patched tree, hashed: topics, patches, Rust files.
topics_inputs_hash() {
	local t
	(cd "$RUST_MM_TOP" && cat $TOPICS_REL/topics &&
	 for t in $(topics_all); do
		 for f in topic series rust-files rust.commit maintainers; do
			 [ -f "$TOPICS_REL/$t/$f" ] && cat "$TOPICS_REL/$t/$f"
		 done
		 topic_patches "$t" | sed "s|^|$TOPICS_REL/$t/|" | xargs cat
		 if topic_has_rust "$t"; then
			 rust_group_heads "$t" | awk '{ print $2 }' | sed "s|^|$TOPICS_REL/$t/|" | xargs -r cat
			 rust_files_all "$t" | xargs cat
		 fi
	 done) | sha256sum | cut -d' ' -f1
}
