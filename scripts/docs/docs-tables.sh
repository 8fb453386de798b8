#!/usr/bin/env bash
# Regenerate the generated parts of docs/ from the code: the sub-ID class
# table in docs/subid.md (between the GENERATED markers) and
# docs/subid-tables.json.
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
cd "$RUST_MM_TOP/rust/mm"
export CARGO_TARGET_DIR="$BUILD_DIR/cargo"
table="$(cargo run -q --locked --bin subid-tables -- --markdown)"
cargo run -q --locked --bin subid-tables -- --json > "$RUST_MM_TOP/docs/subid-tables.json"
doc="$RUST_MM_TOP/docs/subid.md"
python3 - "$doc" "$table" <<'PY'
import sys
path, table = sys.argv[1], sys.argv[2]
text = open(path).read()
begin, end = "<!-- GENERATED: make docs-tables -->", "<!-- END GENERATED -->"
a, b = text.index(begin) + len(begin), text.index(end)
open(path, "w").write(text[:a] + "\n" + table.strip() + "\n" + text[b:])
PY
say "updated docs/subid.md and docs/subid-tables.json"
