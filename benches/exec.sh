#!/usr/bin/env bash
# What an exec block costs in an apply (the sandbox's fixed overhead), side by side for this
# build and, with BASE_BIN=/path/to/older/git-loaf, an older one, in one run.
#   bash benches/exec.sh                     (RUNS=15 rounds, FILES=2000)
#   BASE_BIN=../old/target/release/git-loaf bash benches/exec.sh
# Needs python3 and git; about a minute on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/prelude.sh
builds=("now=$PWD/target/release/git-loaf")
if [ -n "${BASE_BIN:-}" ]; then
  builds=("before=$BASE_BIN" "${builds[@]}")
fi
python3 benches/exec_bench.py "$work" "${builds[@]}" --runs "${RUNS:-15}" --files "${FILES:-2000}"
