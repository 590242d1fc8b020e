#!/usr/bin/env bash
# History-length independence (issue 27): undo, redo, squash, log, show and take on a fresh
# repository and on one with a long history (80,000 commits, nine remote-tracking refs), each
# beside its git equivalent, in one run.
#   bash benches/history_depth.sh                     (COMMITS=80000 RUNS=7)
#   COMMITS=20000 RUNS=3 bash benches/history_depth.sh
#   LOAF_BIN=/path/to/older/git-loaf bash benches/history_depth.sh
# Needs python3 and git; about 3 minutes and 200 MB of disk. The work folder is deleted on
# exit (KEEP=1 keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/prelude.sh
python3 benches/history_depth.py "${LOAF_BIN:-$PWD/target/release/git-loaf}" "$work" \
  --commits "${COMMITS:-80000}" --runs "${RUNS:-7}"
