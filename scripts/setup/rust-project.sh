#!/usr/bin/env bash
# Regenerate rust-project.json (repository root) so rust-analyzer resolves
# rust/mm against the prepared tree: the kernel's own `make rust-analyzer`
# describes core/alloc/macros/bindings/kernel, and we add the rust_mm crate
# with its root in this repository.  Paths inside the repository are written
# relative to it, so the file works from any checkout once `make prepare`
# and one kernel build (`make run`) have been done.
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
[ -f "$KUNIT_OUT/.config" ] || die "no configured kernel build in $KUNIT_OUT (run: make run)"
make -s -C "$KSRC" O="$KUNIT_OUT" "${KMAKE_OPTS[@]}" rust-analyzer
python3 - "$KUNIT_OUT/rust-project.json" "$RUST_MM_TOP" "$RUST_MM_TOP/rust-project.json" <<'PY'
import json, os, sys
src, top, dst = sys.argv[1:]
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
deps = [{"crate": index[n], "name": n} for n in ("core", "alloc", "macros", "bindings", "kernel", "ffi") if n in index]
crates = [c for c in crates if c["display_name"] != "rust_mm"]
crates.append({
    "display_name": "rust_mm",
    "root_module": "rust/mm/rust_mm.rs",
    "is_workspace_member": True,
    "deps": deps,
    "cfg": kernel.get("cfg", []),
    "edition": "2021",
    "env": kernel.get("env", {}),
    "source": {"include_dirs": ["rust/mm"], "exclude_dirs": []},
})
data["crates"] = crates
json.dump(data, open(dst, "w"), indent=4, sort_keys=True)
open(dst, "a").write("\n")
PY
say "wrote rust-project.json ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["crates"]))' "$RUST_MM_TOP/rust-project.json") crates, rust_mm rooted at rust/mm/rust_mm.rs)"
