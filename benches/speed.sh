#!/usr/bin/env bash
# Every speed target (issues 13, 27 and 39) against its git baseline, git asked for git-loaf's
# durability (plain git beside), side by side in one run, on generated repositories of 2,000,
# 20,000 and 100,000 files: prints one table of ratios.
#   bash benches/speed.sh                  (RUNS=7 rounds; SIZES=2000,20000,100000)
#   SIZES=2000 RUNS=5 QUICK=1 bash benches/speed.sh     (a quick look: 5-file rounds only)
#   SIZES=20000 DIRTY=1 bash benches/speed.sh     (the rows of a dirty tree only)
#   SIZES=20000 ONLY=big,writes bash benches/speed.sh   (these rows of the table only, no
#                                                       history, many-files or storage rows)
#   LOAF_BIN=/path/to/older/git-loaf bash benches/speed.sh   (the same table for another build)
# Needs python3, git and about 3 GB of disk; 5-10 minutes on 2 cores. The work folder is
# deleted on exit (KEEP=1 keeps it). Then, unless QUICK, the history rows of
# benches/history_depth.py (undo, redo, squash, log, show on a fresh and an 80,000-commit
# repository with remotes: COMMITS=N), benches/many_files_bench.py (an exec creating 1,000 /
# 10,000 / 50,000 files: COUNTS=..., MANY_RUNS=3) and benches/storage.sh, when present
# (operation log length, note size, parser throughput and memory: issue 13 items 4-6).
# Every git baseline is asked for git-loaf's durability (core.fsync=all, batch); plain git is
# printed beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/prelude.sh
python3 benches/speed_bench.py "${LOAF_BIN:-$PWD/target/release/git-loaf}" "$work" \
  --runs "${RUNS:-7}" --sizes "${SIZES:-2000,20000,100000}" ${QUICK:+--quick} ${DIRTY:+--dirty} ${ONLY:+--only "$ONLY"}
if [ -z "${QUICK:-}${DIRTY:-}${ONLY:-}" ]; then
  echo
  python3 benches/history_depth.py "${LOAF_BIN:-$PWD/target/release/git-loaf}" "$work/depth" \
    --commits "${COMMITS:-80000}" --runs "${RUNS:-7}"
fi
if [ -z "${QUICK:-}${DIRTY:-}${ONLY:-}" ]; then
  echo
  python3 benches/many_files_bench.py "${LOAF_BIN:-$PWD/target/release/git-loaf}" "$work/many" \
    --counts "${COUNTS:-1000,10000,50000}" --runs "${MANY_RUNS:-3}"
fi
if [ -f benches/storage.sh ] && [ -z "${DIRTY:-}${ONLY:-}" ]; then
  echo
  bash benches/storage.sh
fi
