#!/bin/sh
# A scripted orchestration model for the intake tests (run as `sh intake-llm.sh` by
# `lorch agent orchestration`): keeps the prompt it got in $FAKE_PROMPT and proposes one
# fixed task, T-0100, as the intake prompt asks (a fenced JSON block). With
# FAKE_INTAKE=escape the task names a file outside the workspace, which must be refused;
# with FAKE_INTAKE=ask it first asks a question, and proposes once the prompt carries the
# user's answer; with FAKE_INTAKE=two it proposes T-0101 after T-0100.
prompt=$(cat)
if [ -n "$FAKE_PROMPT" ]; then printf '%s\n' "$prompt" > "$FAKE_PROMPT"; fi
if [ "$FAKE_INTAKE" = ask ]; then
  case "$prompt" in
    *"## The user's answers to your questions"*) ;;
    *) echo '{"questions": ["Greet by name or by title?"]}'; exit 0 ;;
  esac
fi
file="src/greet.txt"
if [ "$FAKE_INTAKE" = escape ]; then file="../outside.txt"; fi
more=""
if [ "$FAKE_INTAKE" = two ]; then more=', {"id": "T-0101", "goal": "Say goodbye", "files": ["src/bye.txt"]}'; fi
cat <<EOF
I read PLAN.md. One task:

\`\`\`json
{"tasks": [{"id": "T-0100", "goal": "Greet the user by name", "files": ["$file"]}$more], "plan": "PLAN.md", "notes": "PLAN.md asks for a greeting."}
\`\`\`
EOF
