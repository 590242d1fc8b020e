#!/bin/sh
# A scripted model that slips once, as a person's model does (run as `sh slipping-llm.sh`
# under `lorch agent ROLE --`): it reads the prompt on stdin and answers on stdout.
#
# builder: asked to greet lorch in greeting.txt, its first reply replaces an old_text that
#   is not in the file ("Hello world", the comma forgotten). Shown git-loaf's report of that
#   reply (the line `sl1 ❌ file_replace_text …` in the prompt), it fixes the slip. With
#   SLIP_NEVER_FIX=1 it never does.
# reviewer: approves. spec_maintainer: marks the task done in the spec's Status section.
#
# Every prompt is appended to $SLIP_PROMPTS (when set), separated by a line `=== prompt ===`.
prompt=$(cat)
if [ -n "$SLIP_PROMPTS" ]; then
  printf '=== prompt ===\n%s\n' "$prompt" >> "$SLIP_PROMPTS"
fi
case "$LORCH_ROLE" in
  builder)
    if [ "$LORCH_TURN" = "$SLIP_HANG_AT_TURN" ]; then sleep 120; fi
    if [ -n "$SLIP_ALSO_WRITE" ]; then
      printf '#!nesl [@three-char-SHA-256: nt1]\naction = "file_write"\npath = "%s/notes.txt"\ncontent = "turn %s"\n#!end_nt1\n\n' "$LORCH_WORKSPACE" "$LORCH_TURN"
    fi
    old='Hello world'
    if [ -z "$SLIP_NEVER_FIX" ] && printf '%s' "$prompt" | grep -q 'sl1 ❌ file_replace_text'; then
      old='Hello, world'
    fi
    cat <<NESL
Greeting lorch.

#!nesl [@three-char-SHA-256: sl1]
action = "file_replace_text"
path = "$LORCH_WORKSPACE/greeting.txt"
old_text = "$old"
new_text = "Hello, lorch"
#!end_sl1
NESL
    ;;
  reviewer)
    printf 'Looks right.\nVERDICT: approved\n'
    ;;
  spec_maintainer)
    printf 'STATUS: updated\nSUMMARY: %s is done.\n\n```spec-section\n## Status\n\n| Task | State |\n|------|-------|\n| %s | done |\n```\n' "$LORCH_TASK_ID" "$LORCH_TASK_ID"
    ;;
esac
