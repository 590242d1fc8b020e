#!/bin/sh
# A scripted orchestration model for the intake tests (run as `sh intake-llm.sh` by
# `lorch agent orchestration`): keeps the prompt it got in $FAKE_PROMPT and proposes one
# fixed task, T-0100, as the intake prompt asks (a fenced JSON block). With
# FAKE_INTAKE=escape the task names a file outside the workspace, which must be refused.
if [ -n "$FAKE_PROMPT" ]; then cat > "$FAKE_PROMPT"; else cat > /dev/null; fi
file="src/greet.txt"
if [ "$FAKE_INTAKE" = escape ]; then file="../outside.txt"; fi
cat <<EOF
I read PLAN.md. One task:

\`\`\`json
{"tasks": [{"id": "T-0100", "goal": "Greet the user by name", "files": ["$file"]}], "plan": "PLAN.md", "notes": "PLAN.md asks for a greeting."}
\`\`\`
EOF
