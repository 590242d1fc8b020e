#!/bin/sh
# A scripted model whose reviewer approves only when it is shown the task's whole change
# (run as `sh whole-change-llm.sh` under `lorch agent ROLE --`; prompt on stdin, reply on
# stdout). Every prompt is appended to $LLM_PROMPTS, after a line `=== prompt ===`.
#
# builder: `implement` greets lorch in greeting.txt; `implement_changes` adds farewell.txt.
# reviewer: approves when the change it is shown has both (`+Hello, lorch` and
#   `+Goodbye`); otherwise asks for farewell.txt.
# spec_maintainer: marks the task done.
prompt=$(cat)
if [ -n "$LLM_PROMPTS" ]; then
  printf '=== prompt ===\n%s\n' "$prompt" >> "$LLM_PROMPTS"
fi
case "$LORCH_ROLE/$LORCH_ACTION" in
  builder/implement)
    printf '#!nesl [@three-char-SHA-256: gr1]\naction = "file_replace_text"\npath = "%s/greeting.txt"\nold_text = "Hello, world"\nnew_text = "Hello, lorch"\n#!end_gr1\n' "$LORCH_WORKSPACE"
    ;;
  builder/implement_changes)
    printf '#!nesl [@three-char-SHA-256: fw1]\naction = "file_write"\npath = "%s/farewell.txt"\ncontent = "Goodbye"\n#!end_fw1\n' "$LORCH_WORKSPACE"
    ;;
  reviewer/*)
    if printf '%s' "$prompt" | grep -q '^+Hello, lorch' && printf '%s' "$prompt" | grep -q '^+Goodbye'; then
      printf 'The greeting and the farewell are both there.\nVERDICT: approved\n'
    else
      printf 'Say goodbye too, in farewell.txt.\nVERDICT: changes_requested\n'
    fi
    ;;
  spec_maintainer/*)
    printf 'STATUS: updated\nSUMMARY: %s is done.\n\n```spec-section\n## Status\n\n| Task | State |\n|------|-------|\n| %s | done |\n```\n' "$LORCH_TASK_ID" "$LORCH_TASK_ID"
    ;;
esac
