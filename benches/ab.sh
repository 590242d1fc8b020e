#!/usr/bin/env bash
# Two builds of git-loaf side by side in one run (benches/ab_bench.py): the apply and undo rows
# of a clean and a dirty tree, with and without the user's files among the reply's, and exec.
#   OLD=/path/to/older/git-loaf bash benches/ab.sh            (new: this checkout's release build)
#   OLD=… FILES=2000 RUNS=5 bash benches/ab.sh
# Build the older one from a worktree of its commit:
#   git worktree add --detach /tmp/old REV && (cd /tmp/old && cargo build --release --locked)
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/prelude.sh
python3 benches/ab_bench.py "${OLD:?set OLD to the older git-loaf binary}" \
  "${NEW:-$PWD/target/release/git-loaf}" "$work" --files "${FILES:-20000}" --runs "${RUNS:-7}"
