#!/usr/bin/env bash
# Storage benchmarks (issue 13 items 4-6), each side by side in one run:
#   - undo/redo with an operation log of 20 vs 4,000 entries (benches/oplog_bench.py)
#   - the note of a 1,000-file reply (benches/note_size_bench.py)
#   - the parser's MB/s and peak RSS over input size (benches/parse_rss_bench.py)
#   bash benches/storage.sh                 (OLD=path/to/older/git-loaf adds the before)
# Work folders live in a temporary folder deleted on exit (KEEP=1 keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/prelude.sh
bin="$PWD/target/release/git-loaf"
old=()
if [ -n "${OLD:-}" ]; then old=(--old "$OLD"); fi
mkdir -p "$work/oplog" "$work/notes" "$work/parse"
python3 benches/oplog_bench.py "$bin" "$work/oplog" "${old[@]}" --runs "${RUNS:-15}"
echo
python3 benches/note_size_bench.py "$bin" "$work/notes" "${old[@]}" --runs "${NOTE_RUNS:-3}"
echo
python3 benches/parse_rss_bench.py "$bin" "$work/parse" --runs "${PARSE_RUNS:-5}"
