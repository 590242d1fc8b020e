#!/bin/sh
# A fake LLM command line for the `lorch agent` tests (run as `sh fake-llm.sh`).
#
# It writes its pid to $FAKE_PID, counts its runs (a line appended to $FAKE_COUNT), keeps the prompt it got on stdin
# ($FAKE_PROMPT), sleeps $FAKE_SLEEP seconds if asked, and prints a canned reply: the file
# $FAKE_REPLY, or, when that is a folder, $FAKE_REPLY/$LORCH_CORRELATION_ID.md, with @ROOT@
# replaced by the workspace (NESL paths are absolute).
if [ -n "$FAKE_PID" ]; then echo $$ > "$FAKE_PID"; fi
if [ -n "$FAKE_COUNT" ]; then echo "$LORCH_ACTION $LORCH_CORRELATION_ID" >> "$FAKE_COUNT"; fi
if [ -n "$FAKE_PROMPT" ]; then cat > "$FAKE_PROMPT"; else cat > /dev/null; fi
if [ -n "$FAKE_SLEEP" ]; then sleep "$FAKE_SLEEP"; fi
reply="$FAKE_REPLY"
if [ -d "$reply" ]; then reply="$reply/$LORCH_CORRELATION_ID.md"; fi
sed "s|@ROOT@|$LORCH_WORKSPACE|g" "$reply"
