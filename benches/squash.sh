#!/usr/bin/env bash
# Benchmark of `git-loaf squash` of 200 apply commits against 2 on a generated repository of
# 20,000 files (≈170 MB), and step-back/step-forward against git stash + checkout. Needs
# python3 and git.
#   bash benches/squash.sh            (RUNS=7 rounds, COMMITS=200 by default)
# The repository lives in a temporary folder deleted on exit (KEEP=1 keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/prelude.sh
python3 benches/squash_bench.py "$PWD/target/release/git-loaf" "$work" \
  --runs "${RUNS:-7}" --commits "${COMMITS:-200}"
