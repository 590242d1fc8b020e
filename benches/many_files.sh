#!/usr/bin/env bash
# An exec that creates N files (1,000 / 10,000 / 50,000; in one folder and over 100 folders),
# applied and undone, beside the same script + `git add -A && git commit` and
# `git reset --hard HEAD~1`, git asked for the same durability (plain git printed beside).
#   bash benches/many_files.sh               (RUNS=3 rounds, COUNTS=1000,10000,50000)
#   COUNTS=1000,10000 RUNS=5 bash benches/many_files.sh
#   LOAF_BIN=/path/to/git-loaf bash benches/many_files.sh
# Needs python3, bash and git; 10-20 minutes on 2 cores with 50,000.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/prelude.sh
python3 benches/many_files_bench.py "${LOAF_BIN:-$PWD/target/release/git-loaf}" "$work" \
  --counts "${COUNTS:-1000,10000,50000}" --runs "${RUNS:-3}"
