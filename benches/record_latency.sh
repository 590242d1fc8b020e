#!/usr/bin/env bash
# The agent hooks' latency (issues 25, 36): record begin, the tool events of Edit and Bash
# calls, and commit through `git loaf agent-hook claude-code` on a 20,000-file repository
# with the user's uncommitted work present, beside `git status --porcelain`, in one run.
#   bash benches/record_latency.sh                  (FILES=20000 TURNS=20)
#   STAGED=1 bash benches/record_latency.sh         (the user also has a staged change)
#   LOAF_BIN=/path/to/older/git-loaf bash benches/record_latency.sh
#   OLD=/path/to/older/git-loaf bash benches/record_latency.sh   (its Bash pair alongside)
# Needs python3 and git; about a minute and 100 MB of disk. The work folder is deleted on
# exit (KEEP=1 keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/prelude.sh
python3 benches/record_latency.py "${LOAF_BIN:-$PWD/target/release/git-loaf}" "$work" \
  --files "${FILES:-20000}" --turns "${TURNS:-20}" ${STAGED:+--staged} ${OLD:+--old "$OLD"}
