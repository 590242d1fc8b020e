#!/usr/bin/env bash
# The main command, end to end: apply a fixture reply to a scratch repository as one commit,
# then `git loaf log`, `git loaf show` and `git loaf undo`. Paths print as /repo.
#   bash scripts/demo.sh            (builds with cargo; GIT_LOAF=path/to/git-loaf to skip)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${GIT_LOAF:-}" ]; then
  cargo build --release --locked --quiet --manifest-path "$here/Cargo.toml"
  GIT_LOAF="$here/target/release/git-loaf"
fi
fixture="$here/fixtures/003_apply_log_undo"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
repo="$scratch/repo"
mkdir "$repo"
cp -R "$fixture/input/." "$repo"
cd "$repo"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null TZ=UTC LC_ALL=C
export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z
git init -q -b main
git config user.name "Demo User"
git config user.email demo@example.com
git add -A
git commit -q -m "greet: first version"
echo "An uncommitted note of yours" > NOTES.txt

step() { printf '\n$ %s\n' "$*"; }
redact() { sed "s#$repo#/repo#g"; }

step "git loaf apply < reply.md"
status=0
sed "s#/repo#$repo#g" "$fixture/reply.md" | "$GIT_LOAF" apply 2>&1 | redact || status=$?
status=${PIPESTATUS[1]:-$status}
echo "(exit $status: one block used an unknown action, on purpose; the rest is committed)"
step "git log --format='%h %s'"
git log --format='%h %s'
step "git status --short"
git status --short
step "git loaf log"
"$GIT_LOAF" log
step "git loaf show --json | head -5"
"$GIT_LOAF" show --json | head -5 | redact
step "git loaf undo"
"$GIT_LOAF" undo | redact
step "git status --short"
git status --short
step "git log --format='%h %s'"
git log --format='%h %s'
