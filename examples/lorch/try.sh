#!/bin/sh
# Watch lorch do a whole run without any LLM:  sh examples/lorch/try.sh [DIR]
#
# Copies examples/lorch/project/ into DIR (default: a new temporary folder), makes it a git
# repository, writes a lorch.json whose three agents run the scripted model model.sh, and
# runs `lorch run --task T-0001` there. The lorch used is $LORCH, else `lorch` on PATH, else
# the one `cargo build -p lorch` builds from this clone.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$(mktemp -d "${TMPDIR:-/tmp}/lorch-try.XXXXXX")}

lorch=${LORCH:-}
if [ -z "$lorch" ] && command -v lorch >/dev/null 2>&1; then
  lorch=$(command -v lorch)
fi
if [ -z "$lorch" ]; then
  manifest="$here/../../Cargo.toml"
  echo "== building lorch (cargo build -p lorch)"
  cargo build --quiet -p lorch --manifest-path "$manifest"
  target=$(cargo metadata --format-version 1 --no-deps --manifest-path "$manifest" |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  lorch="$target/debug/lorch"
fi

mkdir -p "$dir"
if [ -n "$(ls -A "$dir")" ]; then
  echo "try.sh: $dir is not empty" >&2
  exit 2
fi
cp -R "$here/project/." "$dir/"
cd "$dir"
git init -q -b main
# An identity of the scratch repository's own: the builder's steps are commits, and a
# machine without user.name/user.email (a fresh container, CI) must run this too.
git config user.name "lorch example"
git config user.email "lorch-example@example.invalid"
git add -A
git commit -q -m "the example project"

# An agent's command; the builder's step is accepted only when its check passes (§4).
agent() {
  checks=""
  [ "$1" = builder ] && checks='"--check", "grep -q lorch greeting.txt", '
  printf '["%s", "agent", "%s", %s"--", "sh", "%s/model.sh"]' "$lorch" "$1" "$checks" "$here"
}
cat > lorch.json <<JSON
{
  "version": "1.0",
  "workspace_root": ".",
  "spec_path": "SPEC.md",
  "policy": { "max_turns": 4 },
  "agents": {
    "builder": { "cmd": $(agent builder), "heartbeat_interval_s": 2 },
    "reviewer": { "cmd": $(agent reviewer), "heartbeat_interval_s": 2 },
    "spec_maintainer": { "cmd": $(agent spec_maintainer), "heartbeat_interval_s": 2 }
  },
  "tasks": [
    { "id": "T-0001", "goal": "Greet lorch in greeting.txt, as SPEC.md requires.", "files": ["greeting.txt", "SPEC.md"] }
  ]
}
JSON
# lorch.json is the run's configuration, not the project's work.
echo "/lorch.json" >> .git/info/exclude

echo "== lorch run --task T-0001 in $dir"
status=0
"$lorch" run --task T-0001 || status=$?
echo
if [ "$status" -ne 0 ]; then
  echo "try.sh: lorch run failed (exit $status): what it said is above; \`lorch doctor\` in $dir checks the setup" >&2
  exit $status
fi
echo "== git log (one commit per builder step, and the spec update)"
git --no-pager log --format='%h %s'
echo
echo "Look around in $dir: the ledger events/run-*.ndjson, reviews/T-0001.json,"
echo "git loaf log, git loaf show. The agents' view: logs/<role>/."
