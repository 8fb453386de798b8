# shellcheck shell=bash
# The series as topics (kernel-patches/topics, one directory per topic):
# reading a topic's metadata, checking dependencies, and applying a topic
# to a git tree. Sourced after env.sh by prepare-tree.sh and series.sh;
# never executed.
#
# A topic directory holds:
#   topic        "Key: value" lines: Title, Prefix, Version, Depends (the
#                topics it needs, space separated), Kconfig (the option
#                gating its Rust modules in rust/mm/rust_mm.rs, if any)
#   cover        the text of its cover letter (scripts/cover-letter.py)
#   series       its patches, in order
#   rust-files   (optional) files of this repository it adds to rust/mm; it
#                then starts with a generated patch of those files, whose
#                commit message is rust.commit and which also inserts the
#                MAINTAINERS section in 'maintainers' (if that file exists)

TOPICS_DIR="$RUST_MM_TOP/kernel-patches"
# Fixed identity of the generated commits (the pristine tree and each
# topic's Rust patch), so that the trees and `make series` are reproducible.
GEN_IDENT=(-c user.name="rust-mm developers" -c user.email="rust-mm@localhost")

topics_all() { # every topic, in apply order
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$TOPICS_DIR/topics"
}

topic_field() { # TOPIC KEY: the value of "KEY:" in the topic's metadata
	local f="$TOPICS_DIR/$1/topic"
	[ -f "$f" ] || die "kernel-patches/$1/topic is missing (is '$1' a topic of kernel-patches/topics?)"
	sed -n "s/^$2:[[:space:]]*//p" "$f" | head -n 1 | sed 's/[[:space:]]*$//'
}

topic_patches() { # TOPIC: its patch files, in order
	sed -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' "$TOPICS_DIR/$1/series"
}

topic_has_rust() { [ -f "$TOPICS_DIR/$1/rust-files" ]; }

topic_ncommits() { # TOPIC: commits it adds to a tree
	local n
	n="$(topic_patches "$1" | wc -l)"
	topic_has_rust "$1" && n=$((n + 1))
	echo "$n"
}

# Every topic exists and depends only on topics listed before it.
topics_validate() {
	local seen=" " t d
	for t in $(topics_all); do
		[ -d "$TOPICS_DIR/$t" ] || die "kernel-patches/topics names '$t', which is not a directory of kernel-patches/"
		for f in topic cover series; do
			[ -f "$TOPICS_DIR/$t/$f" ] || die "topic $t has no kernel-patches/$t/$f"
		done
		for d in $(topic_field "$t" Depends); do
			[[ "$seen" == *" $d "* ]] && continue
			if topics_all | grep -qx "$d"; then
				die "topic $t depends on $d, which comes after it in kernel-patches/topics"
			fi
			die "topic $t depends on $d, which is not a topic (kernel-patches/topics)"
		done
		seen+="$t "
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
		topics_all | grep -qx "$t" || die "'$t' is not a topic; topics: $(topics_all | paste -sd' ')"
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
# are the crate doc's "- `CONFIG_X`: ..." paragraphs.
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
src, dst, drop = sys.argv[1], sys.argv[2], set(sys.argv[3:])
out, skip_item, skip_doc = [], False, False
for line in open(src).read().split("\n"):
    if skip_doc:
        if line.startswith("//!   "):
            continue
        skip_doc = False
    if skip_item:
        if not line.lstrip().startswith("#["):
            skip_item = False
        continue
    m = re.match(r"\s*#\[cfg\((CONFIG_\w+)\)\]\s*$", line)
    if m and m.group(1) in drop:
        skip_item = True
        continue
    m = re.match(r"//! - `(CONFIG_\w+)`", line)
    if m and m.group(1) in drop:
        skip_doc = True
        continue
    out.append(line)
open(dst, "w").write("\n".join(out))
PY
}

# Apply TOPIC to the git work tree GITDIR, on top of the topics APPLIED
# (already in that tree): its generated Rust patch, if any, then its series
# with `git am` (no fuzz). A patch that does not apply stops everything.
apply_topic() { # GITDIR TOPIC APPLIED...
	local tree="$1" t="$2" f dst rdate p
	shift 2
	local stack=("$@" "$t")
	local git_t=(git -C "$tree" "${GEN_IDENT[@]}" -c core.autocrlf=false)
	if topic_has_rust "$t"; then
		while read -r f; do
			case "$f" in
			''|'#'*) continue ;;
			Kbuild) dst=rust/mm/Kbuild ;;
			rust/mm/*) dst="$f" ;;
			*) die "kernel-patches/$t/rust-files: unexpected path $f" ;;
			esac
			[ -f "$RUST_MM_TOP/$f" ] || die "kernel-patches/$t/rust-files names $f, which does not exist"
			mkdir -p "$tree/$(dirname "$dst")"
			if [ "$dst" = rust/mm/rust_mm.rs ]; then
				crate_root_for "$RUST_MM_TOP/$f" "$tree/$dst" "${stack[@]}"
			else
				cp "$RUST_MM_TOP/$f" "$tree/$dst"
			fi
			"${git_t[@]}" add -f "$dst"
		done < "$TOPICS_DIR/$t/rust-files"
		if [ -f "$TOPICS_DIR/$t/maintainers" ]; then
			python3 - "$tree/MAINTAINERS" "$TOPICS_DIR/$t/maintainers" <<'PY' ||
import sys
path, entry = sys.argv[1], open(sys.argv[2]).read().rstrip("\n").split("\n")
lines = open(path).read().split("\n")
if entry[0] not in lines:
    at = lines.index("MEMORY MAPPING")
    lines[at:at] = entry + [""]
    open(path, "w").write("\n".join(lines))
PY
				die "MAINTAINERS of this tree has no 'MEMORY MAPPING' section to insert before"
			"${git_t[@]}" add MAINTAINERS
		fi
		# A stable date keeps the tree and `make series` reproducible.
		rdate="$(cd "$RUST_MM_TOP" && git log -1 --format=%aI -- $(sed -e '/^#/d' "$TOPICS_DIR/$t/rust-files") 2>/dev/null || true)"
		GIT_AUTHOR_DATE="${rdate:-2026-11-21T00:00:00Z}" GIT_COMMITTER_DATE="${rdate:-2026-11-21T00:00:00Z}" \
			"${git_t[@]}" commit -q --author="rust-mm developers <rust-mm@localhost>" \
			-F "$TOPICS_DIR/$t/rust.commit" || die "topic $t: cannot commit its Rust files"
		say "[$t] applied its generated Rust patch (rust/mm from this repository)"
	fi
	for p in $(topic_patches "$t"); do
		[ -f "$TOPICS_DIR/$t/$p" ] || die "kernel-patches/$t/series names $p, which does not exist"
		if ! "${git_t[@]}" am -q --no-3way --whitespace=nowarn "$TOPICS_DIR/$t/$p" >"$BUILD_DIR/am.log" 2>&1; then
			cat "$BUILD_DIR/am.log" >&2
			"${git_t[@]}" am --abort >/dev/null 2>&1 || true
			die "PATCH FAILED: kernel-patches/$t/$p does not apply on top of ${*:-the pristine tree}${*:+ (pristine + topics: $*)} (no fuzz is allowed). Nothing was built."
		fi
		say "[$t] applied $p"
	done
}

# Every input of the patched tree, hashed: topics, patches, Rust files.
topics_inputs_hash() {
	local t
	(cd "$RUST_MM_TOP" && cat kernel-patches/topics &&
	 for t in $(topics_all); do
		 for f in topic series rust-files rust.commit maintainers; do
			 [ -f "kernel-patches/$t/$f" ] && cat "kernel-patches/$t/$f"
		 done
		 topic_patches "$t" | sed "s|^|kernel-patches/$t/|" | xargs cat
		 if topic_has_rust "$t"; then
			 sed -e '/^#/d' "kernel-patches/$t/rust-files" | xargs cat
		 fi
	 done) | sha256sum | cut -d' ' -f1
}
