#!/bin/sh
# A scripted stand-in for an LLM, so that lorch can be watched doing a whole run without one.
# lorch's agents run it as `lorch agent ROLE -- sh model.sh`: the prompt comes on stdin, the
# reply goes to stdout, as with `claude -p` or `llm`. It answers in the formats the prompts
# ask for (docs/lorch.md, "The replies each role's prompt asks for") and plays a model that
# makes the ordinary slips lorch is built for:
#
# builder, implement: its first reply replaces an old_text that is not in greeting.txt (the
#   comma forgotten); shown git-loaf's report of it (the next turn), it fixes the slip.
# reviewer: the first time, asks for the farewell the spec wants; once the whole change it
#   is shown has both files, approves.
# builder, implement_changes: writes farewell.txt.
# spec_maintainer: marks the task done in the spec's Status table and adds a changelog line.
#
# It reads only what lorch gives every model: the prompt, and LORCH_ROLE, LORCH_ACTION,
# LORCH_TASK_ID, LORCH_WORKSPACE and LORCH_TURN in its environment.
prompt=$(cat)
saw() { printf '%s' "$prompt" | grep -q "$1"; }

case "$LORCH_ROLE/$LORCH_ACTION" in
  builder/implement)
    old='Hello world'
    if saw 'gr1 ❌ file_replace_text'; then
      old='Hello, world'
      echo "My old_text missed the comma; fixed."
    else
      echo "Greeting lorch instead of the world."
    fi
    cat <<NESL

#!nesl [@three-char-SHA-256: gr1]
action = "file_replace_text"
path = "$LORCH_WORKSPACE/greeting.txt"
old_text = "$old"
new_text = "Hello, lorch"
#!end_gr1
NESL
    ;;
  builder/implement_changes)
    cat <<NESL
Adding the farewell the review asks for.

#!nesl [@three-char-SHA-256: fw1]
action = "file_write"
path = "$LORCH_WORKSPACE/farewell.txt"
content = "Goodbye, lorch\n"
#!end_fw1
NESL
    ;;
  reviewer/*)
    if saw '^+Hello, lorch' && saw '^+Goodbye, lorch'; then
      cat <<'REPLY'
Both files now say what the spec asks.

```json
{"status": "approved", "summary": "greeting.txt greets lorch and farewell.txt says goodbye, as the spec requires.", "findings": []}
```
REPLY
    else
      cat <<'REPLY'
The greeting is right, but the spec also wants a farewell.

```json
{"status": "changes_requested", "summary": "Add farewell.txt.", "findings": [{"path": "farewell.txt", "comment": "write `Goodbye, lorch` here, as the spec's requirements say"}]}
```
REPLY
    fi
    ;;
  spec_maintainer/*)
    cat <<REPLY
STATUS: updated
SUMMARY: $LORCH_TASK_ID is done: both requirements are met.

\`\`\`spec-section
## Status

| Task | State |
|------|-------|
| $LORCH_TASK_ID | done |
\`\`\`

\`\`\`spec-section
## Changelog

- created with the example
- $LORCH_TASK_ID done: greeting and farewell
\`\`\`
REPLY
    ;;
  *)
    echo "model.sh: no scripted answer for $LORCH_ROLE/$LORCH_ACTION" >&2
    exit 1
    ;;
esac
