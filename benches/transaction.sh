#!/usr/bin/env bash
# Side-by-side benchmark of `git-loaf apply` / `git-loaf undo` against plain git (file
# writes + `git add -A` + `git commit`, and `git reset --hard HEAD~1`) on a generated
# repository of 20,000 files (≈170 MB). Needs python3 and git; about 35 s on 2 cores.
#   bash benches/transaction.sh            (RUNS=11 rounds by default)
# The two repositories live in a temporary folder that is deleted on exit
# (KEEP=1 keeps it and prints where it is).
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/prelude.sh
python3 benches/transaction_bench.py "$PWD/target/release/git-loaf" "$work" --runs "${RUNS:-11}"
