#!/usr/bin/env bash
# The history rows on a clone of a real repository (benches/real_repo_bench.py): a 5-file
# apply, undo, redo, squash of two applies, log -n 5 and show, each beside git asked for
# git-loaf's durability and plain git, medians. For git's own repository (issue 39):
#   git clone --bare https://github.com/git/git /tmp/git.git
#   REPO=/tmp/git.git bash benches/real_repo.sh             (RUNS=11)
#   REPO=… LOAF_BIN=/path/to/git-loaf bash benches/real_repo.sh   (no build)
# REPO is only read (cloned three times with --no-hardlinks: ~1.5 GB of disk for git.git).
# The work folder is deleted on exit (KEEP=1 keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${LOAF_BIN:-}" ]; then
  work=$(mktemp -d)
  if [ "${KEEP:-0}" = 1 ]; then trap 'echo "kept $work" >&2' EXIT; else trap 'rm -rf "$work"' EXIT; fi
else
  source benches/prelude.sh
  LOAF_BIN=$PWD/target/release/git-loaf
fi
python3 benches/real_repo_bench.py "$LOAF_BIN" "$work" --repo "${REPO:?set REPO to the repository to clone}" \
  --runs "${RUNS:-11}"
