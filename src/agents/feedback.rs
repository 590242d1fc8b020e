//! A review's report for the model (docs/review.md) on the agent's next prompt: the hook
//! that begins a turn prints it where the agent adds a hook's output to the model's context.
//!
//! - **Claude Code** and **Codex**: `UserPromptSubmit`'s stdout, as plain text.
//! - **Gemini CLI**: `BeforeAgent`'s JSON answer, as `hookSpecificOutput.additionalContext`
//!   (geminicli.com/docs/hooks/reference).
//! - **Cursor**: `beforeSubmitPrompt` answers only whether the prompt goes on; nothing it
//!   prints reaches the model. The report stays for another channel, and `.git/loaf/review/LAST.md`
//!   holds the latest one for the agent to read.
//!
//! A pure translation, as [`super::hook`] is: the report is taken (once) by the caller.

use serde_json::json;

use super::Agent;
use super::hook::{self, Step};

/// Whether `agent`'s hook for `step` can carry a report to the model.
pub fn carries_report(agent: Agent, step: &Step) -> bool {
    matches!(step, Step::Begin { .. }) && agent != Agent::Cursor
}

/// What the hook prints on stdout for `agent` after `step`, with `report` for the model when
/// there is one (only taken when [`carries_report`]).
pub fn answer(agent: Agent, step: &Step, report: Option<&str>) -> String {
    match (report, agent) {
        (Some(report), Agent::ClaudeCode | Agent::Codex) if carries_report(agent, step) => {
            report.to_owned()
        }
        (Some(report), Agent::Gemini) if carries_report(agent, step) => {
            let answer = json!({
                "hookSpecificOutput": {
                    "hookEventName": "BeforeAgent",
                    "additionalContext": report,
                }
            });
            format!("{answer}\n")
        }
        _ => hook::answer(agent, step).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn begin() -> Step {
        Step::Begin {
            session: "s".into(),
            prompt: None,
            cwd: None,
        }
    }

    #[test]
    fn claude_prints_the_report_gemini_wraps_it_cursor_cannot() {
        assert_eq!(answer(Agent::ClaudeCode, &begin(), Some("R\n")), "R\n");
        assert_eq!(answer(Agent::Codex, &begin(), Some("R\n")), "R\n");
        let gemini: serde_json::Value =
            serde_json::from_str(&answer(Agent::Gemini, &begin(), Some("R\n"))).expect("JSON");
        assert_eq!(gemini["hookSpecificOutput"]["additionalContext"], "R\n");
        assert_eq!(gemini["hookSpecificOutput"]["hookEventName"], "BeforeAgent");
        assert!(!carries_report(Agent::Cursor, &begin()));
        assert_eq!(
            answer(Agent::ClaudeCode, &Step::Ignored("Stop".into()), Some("R")),
            ""
        );
    }
}
