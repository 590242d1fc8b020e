#!/usr/bin/env bash
# Side-by-side benchmark of `git-loaf parse --json` against the reference NESL parser on a
# generated 20 MB reply (≈15,000 blocks with heredocs). Needs node and npm; installs the
# reference (npm nesl@0.1.12-beta.1) into target/nesl-ref once.
#   bash benches/compare-reference.sh [SIZE_MB] [ERROR_RATE]   (RUNS=11 by default)
# ERROR_RATE (default 0) is the share of blocks with a syntax error: the reference cuts a
# context window from the whole input for each error, so it slows down sharply with them.
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-20}
cargo build --release --locked --quiet
ref=target/nesl-ref
if [ ! -d "$ref/node_modules/nesl" ]; then
  npm install --silent --no-save --prefix "$ref" nesl@0.1.12-beta.1 >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 benches/gen_long_reply.py "$work/reply.md" --size-mb "$size" --error-rate "${2:-0}"
python3 benches/compare_reference.py target/release/git-loaf "$ref" "$work/reply.md" --runs "${RUNS:-11}"
