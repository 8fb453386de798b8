#!/usr/bin/env bash
# `make bench-seqcount`: the host micro benchmark of one uncontended write
# section, written to docs/seqcount-bench.md with the machine and command.
set -euo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
cd "$RUST_MM_TOP/rust/mm"
export CARGO_TARGET_DIR="$BUILD_DIR/cargo"
cargo build --release -q --locked --bin seqcount-bench
out="$RUST_MM_TOP/docs/seqcount-bench.md"
table="$("$CARGO_TARGET_DIR/release/seqcount-bench" 20000000 7 --markdown)"
cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
python3 - "$out" "$table" "$cpu" "$(rustc --version)" <<'PY'
import sys
path, table, cpu, rustc = sys.argv[1:]
text = open(path).read()
begin, end = "<!-- GENERATED: make bench-seqcount -->", "<!-- END GENERATED -->"
a, b = text.index(begin) + len(begin), text.index(end)
body = f"\nMachine: {cpu}; {rustc}; release build, one thread, 20M sections per run, best of 7.\n\n{table.strip()}\n"
open(path, "w").write(text[:a] + body + text[b:])
PY
echo "$table"
say "updated docs/seqcount-bench.md"
