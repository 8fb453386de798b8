#!/usr/bin/env bash
# Regenerate rust-project.json (repository root) so rust-analyzer resolves
# rust/mm against the prepared tree: the kernel's own `make rust-analyzer`
# describes its crates (core, alloc, macros, bindings, kernel, and on 7.x
# pin_init, ffi, ...), and we add the rust_mm crate with the kernel crate's
# dependencies, the kernel crate and its cfgs. Its root is the prepared
# tree's rust/mm/rust_mm.rs: the files of this repository with the base's
# patches of them applied (7.3's series adapts some to its kernel crate),
# i.e. what the kernel compiles. Paths inside the repository are written
# relative to it, so the file works from any checkout once `make prepare`
# and one kernel build (`make run`) have been done.
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
[ -f "$KUNIT_OUT/.config" ] || die "no configured kernel build in $KUNIT_OUT (run: make run)"
make -s -C "$KSRC" O="$KUNIT_OUT" "${KMAKE_OPTS[@]}" rust-analyzer
python3 - "$KUNIT_OUT/rust-project.json" "$RUST_MM_TOP" "$RUST_MM_TOP/rust-project.json" "$KSRC" <<'PY'
import json, os, re, sys
src, top, dst, ksrc = sys.argv[1:]
data = json.load(open(src))
def rel(p):
    return os.path.relpath(p, top) if isinstance(p, str) and p.startswith(top + "/") else p
crates = data["crates"]
for c in crates:
    c["root_module"] = rel(c["root_module"])
    if "source" in c:
        c["source"]["include_dirs"] = [rel(d) for d in c["source"]["include_dirs"]]
    if "env" in c:
        c["env"] = {k: rel(v) for k, v in c["env"].items()}
index = {c["display_name"]: i for i, c in enumerate(crates)}
kernel = crates[index["kernel"]]
# What the kernel crate depends on, and the kernel crate: every crate
# rust/mm may name, on any base.
deps = [d for d in kernel["deps"]] + [{"crate": index["kernel"], "name": "kernel"}]
names = {d["name"] for d in deps} | {"crate", "self", "super"}
mm_dir = os.path.join(ksrc, "rust", "mm")
for f in sorted(os.listdir(mm_dir)):
    if f.endswith(".rs"):
        used = set(re.findall(r"^\s*(?:pub\s+)?use\s+(?:::)?(\w+)::", open(os.path.join(mm_dir, f)).read(), re.M))
        if used - names:
            sys.exit(f"rust-project: rust/mm/{f} uses crates rust-analyzer would not know: {' '.join(sorted(used - names))}")
rust_mm = [c for c in crates if c["display_name"] == "rust_mm"]
crates = [c for c in crates if c["display_name"] != "rust_mm"]
if rust_mm:
    sys.exit("rust-project: the kernel's make rust-analyzer already describes rust_mm; merge, do not duplicate")
crates.append({
    "display_name": "rust_mm",
    "root_module": rel(os.path.join(mm_dir, "rust_mm.rs")),
    "is_workspace_member": True,
    "deps": deps,
    "cfg": kernel.get("cfg", []),
    "edition": "2021",
    "env": kernel.get("env", {}),
    "source": {"include_dirs": [rel(mm_dir)], "exclude_dirs": []},
})
# Keep rust_mm and what it depends on, transitively (not the kernel's
# drivers and samples), with their indices renumbered.
keep, todo = set(), [len(crates) - 1]
while todo:
    i = todo.pop()
    if i not in keep:
        keep.add(i)
        todo += [d["crate"] for d in crates[i]["deps"]]
new_index = {old: new for new, old in enumerate(sorted(keep))}
crates = [crates[i] for i in sorted(keep)]
for c in crates:
    c["deps"] = [dict(d, crate=new_index[d["crate"]]) for d in c["deps"]]
data["crates"] = crates
json.dump(data, open(dst, "w"), indent=4, sort_keys=True)
open(dst, "a").write("\n")
PY
say "wrote rust-project.json ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["crates"]))' "$RUST_MM_TOP/rust-project.json") crates, rust_mm rooted at the prepared tree's rust/mm/rust_mm.rs)"
