#!/bin/sh
# A scripted orchestration model for the intake tests (run as `sh intake-llm.sh` by
# `lorch agent orchestration`): keeps the prompt it got in $FAKE_PROMPT and proposes one
# fixed task, T-0100, as the intake prompt asks (a fenced JSON block). With
# FAKE_INTAKE=escape the task names a file outside the workspace, which must be refused;
# with FAKE_INTAKE=ask it first asks a question, and proposes once the prompt carries the
# user's answer; with FAKE_INTAKE=two it proposes T-0101 after T-0100, with three T-0102
# too; with conflict it proposes T-0100 and names a conflict with the spec; with
# conflict_only it first names a conflict and no task, and proposes once the prompt
# carries the user's answer. Whenever the prompt says the user chose a plan
# (task_discovery), it proposes T-0200 from that plan.
prompt=$(cat)
if [ -n "$FAKE_PROMPT" ]; then printf '%s\n' "$prompt" > "$FAKE_PROMPT"; fi
case "$prompt" in
  *"## The plan the user chose"*)
    echo '{"tasks": [{"id": "T-0200", "goal": "Build what plan v2 says", "files": ["src/v2.txt"]}], "notes": "from the chosen plan"}'
    exit 0 ;;
esac
answered=no
case "$prompt" in
  *"## The user's answers to your questions"*) answered=yes ;;
esac
if [ "$FAKE_INTAKE" = ask ] && [ $answered = no ]; then
  echo '{"questions": ["Greet by name or by title?"]}'; exit 0
fi
if [ "$FAKE_INTAKE" = conflict_only ] && [ $answered = no ]; then
  echo '{"conflicts": ["PLAN.md asks for a greeting by title; specs/MASTER-SPEC.md by name."]}'; exit 0
fi
file="src/greet.txt"
if [ "$FAKE_INTAKE" = escape ]; then file="../outside.txt"; fi
more=""
if [ "$FAKE_INTAKE" = two ] || [ "$FAKE_INTAKE" = three ]; then more=', {"id": "T-0101", "goal": "Say goodbye", "files": ["src/bye.txt"]}'; fi
if [ "$FAKE_INTAKE" = three ]; then more="$more"', {"id": "T-0102", "goal": "Say nothing", "files": []}'; fi
conflicts=""
if [ "$FAKE_INTAKE" = conflict ]; then conflicts=', "conflicts": ["T-0100 greets by name; specs/MASTER-SPEC.md says by title."]'; fi
cat <<EOF
I read PLAN.md. One task:

\`\`\`json
{"tasks": [{"id": "T-0100", "goal": "Greet the user by name", "files": ["$file"]}$more], "plan": "PLAN.md", "notes": "PLAN.md asks for a greeting."$conflicts}
\`\`\`
EOF
