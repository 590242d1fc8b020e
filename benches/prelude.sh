# Sourced by the benchmark scripts, from the project root: builds the release binary and
# makes the temporary work folder $work, deleted on exit (KEEP=1 keeps it and says where).
cargo build --release --locked --quiet
work=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then
  trap 'echo "kept $work" >&2' EXIT
else
  trap 'rm -rf "$work"' EXIT
fi
