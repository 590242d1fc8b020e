#!/usr/bin/env bash
# What git-loaf writes into history, in bytes: the subject of a 5-block apply with long
# paths, the `Loaf-Result` trailer of a 5-block and of a 20-block reply, and the message of a
# squash of 10 applies; and squash's "N files changed" beside `git diff --stat` with a rename.
# Usage: benches/history_size.sh [path/to/git-loaf]   (default: target/debug/git-loaf)
set -euo pipefail
LOAF=$(realpath "${1:-${CARGO_TARGET_DIR:-target}/debug/git-loaf}")
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=Ada GIT_AUTHOR_EMAIL=ada@example.com \
  GIT_COMMITTER_NAME=Ada GIT_COMMITTER_EMAIL=ada@example.com TZ=UTC LC_ALL=C NO_COLOR=1 \
  GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z HOME=$(mktemp -d)
dir=$(mktemp -d); trap 'rm -rf "$dir" "$HOME"' EXIT
cd "$dir" && git init -q -b main && mkdir -p src/report/rendering src/ops/apply/committing
for i in $(seq 1 20); do printf 'fn f%s() { old(); }\n' "$i" > "src/report/rendering/module_number_$i.rs"; done
echo readme > README.md && git add -A && git commit -qm initial
block() { # id action key value...
  local id=$1 action=$2; shift 2
  printf '#!nesl [@three-char-SHA-256: %s]\naction = "%s"\n' "$id" "$action"
  while [ $# -gt 0 ]; do
    case "$2" in *$'\n'*) printf "%s = <<'EOT_%s'\n%s\nEOT_%s\n" "$1" "$id" "$2" "$id";;
      *) printf '%s = "%s"\n' "$1" "$2";; esac
    shift 2
  done
  printf '#!end_%s\n\n' "$id"
}
R=$dir/src/report/rendering
five() {
  block w01 file_write path "$dir/src/ops/apply/committing/subject_line_composition.rs" content $'//! new\npub fn subject() {}\n'
  block r02 file_replace_text path "$R/module_number_1.rs" old_text "old();" new_text $'new();\nmore();'
  block r03 file_replace_text path "$R/module_number_2.rs" old_text "old();" new_text "new();"
  block a04 file_append path "$dir/README.md" content $'\nA paragraph about subjects.\n'
  block d05 file_read path "$R/module_number_3.rs"
}
five | "$LOAF" apply >/dev/null
subject=$(git log -1 --format=%s)
echo "subject (5 blocks, long paths): $(printf %s "$subject" | LC_ALL=C.UTF-8 wc -m) characters: $subject"
echo "Loaf-Result, 5 blocks: $(git log -1 --format='%(trailers:key=Loaf-Result,valueonly)' | tr -d '\n' | wc -c) bytes"
twenty() {
  for i in $(seq 4 19); do block "x$(printf %02d "$i")" file_replace_text path "$R/module_number_$i.rs" old_text "old();" new_text $'new();\nagain();'; done
  block y01 file_write path "$dir/src/ops/apply/committing/another_new_module_file.rs" content $'pub fn g() {}\n'
  block y02 file_read path "$R/module_number_1.rs"
  block y03 file_move old_path "$R/module_number_20.rs" new_path "$R/module_number_twenty.rs"
  block y04 file_append path "$dir/README.md" content $'more\n'
}
twenty | "$LOAF" apply >/dev/null
subject=$(git log -1 --format=%s)
echo "subject (20 blocks): $(printf %s "$subject" | LC_ALL=C.UTF-8 wc -m) characters: $subject"
echo "Loaf-Result, 20 blocks: $(git log -1 --format='%(trailers:key=Loaf-Result,valueonly)' | tr -d '\n' | wc -c) bytes"
base=$(git rev-parse HEAD)
for i in $(seq 1 10); do
  { block "s$(printf %02d "$i")" file_replace_text path "$R/module_number_$((i+3)).rs" old_text "new();" new_text "newer$i();"
    block "t$(printf %02d "$i")" file_write path "$dir/src/ops/apply/committing/generated_file_$i.rs" content $'pub fn h() {}\n'
    block "u$(printf %02d "$i")" file_read path "$R/module_number_11.rs"
    [ "$i" != 10 ] || block v10 file_move old_path "$R/module_number_19.rs" new_path "$R/module_renamed_19.rs"
  } | "$LOAF" apply >/dev/null 2>&1
done
"$LOAF" squash --limit 10 >/dev/null 2>&1
echo "squash of 10 applies (one renames a file): message $(git log -1 --format=%B | wc -c) bytes; subject: $(git log -1 --format=%s)"
echo "git diff --stat of the same range: $(git diff --stat "$base" HEAD | tail -1)"
