//! Conflicts that come up while a task is built, put to the user (docs/lorch.md, "Conflicts
//! during a run"): lorch prints the conflict, asks for a decision, records it as
//! `system.user_decision`, and goes on or stops accordingly; it never resolves a conflict
//! with the plan or the spec by itself:
//!
//! - a spec conflict: the spec maintainer would change what it may not (`forbidden_spec_edit`:
//!   the built work and the spec's requirements disagree). lorch never edits the spec for
//!   it; the user tries again (after changing the spec themselves, if it should change: the
//!   retry is pinned to the workspace as it is, on a fresh round of attempts) or stops;
//! - a persistent conflict: the task has not converged after
//!   [`super::MAX_STEPS`] steps (a reviewer or spec maintainer that keeps asking for
//!   changes); the user gives it as many steps again or stops.
//!
//! Each decision is recorded as `system.user_decision` (status `retry`, `continue` or
//! `stopped`, `payload.conflict` `spec` or `persistent`), so a resumed run knows it. When
//! nobody answers (the input ended or is not a terminal's: a script, CI), the run goes on as
//! it would without a human: the spec maintainer's step is retried like any failed step, and
//! a persistent conflict fails the run.

use serde_json::{Value, json};

use super::{EventType, InFlight, MAX_STEPS, Orchestrator, RunError, User};

/// The choices of a spec conflict.
const SPEC_CHOICES: [(&str, &str); 2] = [
    (
        "retry",
        "ask the spec maintainer again (change the spec yourself first if it should change)",
    ),
    (
        "stop",
        "stop the run (`lorch resume --run ID` continues it)",
    ),
];

impl Orchestrator {
    /// When the terminal event of `cur` is the spec maintainer's refusal to make a forbidden
    /// edit, puts the conflict to the user and does what they decide; false when it is no
    /// such conflict or nobody answered (the step is then judged as any other).
    pub(super) fn spec_conflict(
        &mut self,
        cur: &InFlight,
        user: &mut dyn User,
    ) -> Result<bool, RunError> {
        let Some(terminal) = &cur.terminal else {
            return Ok(false);
        };
        let code = terminal.payload.get("code").and_then(Value::as_str);
        if terminal.event != EventType::Error || code != Some("forbidden_spec_edit") {
            return Ok(false);
        }
        let message = terminal
            .payload
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)")
            .to_owned();
        let conflict = format!(
            "the spec maintainer would change what it may not ({message}); lorch never changes the spec for it"
        );
        let Some(choice) = user.settle(&conflict, &SPEC_CHOICES) else {
            return Ok(false);
        };
        let status = if choice == "retry" {
            "retry"
        } else {
            "stopped"
        };
        let m = self.system(
            "system.user_decision",
            Some(status),
            json!({"conflict": "spec", "description": message, "prompt": choice}),
        );
        self.record(&m)?;
        if status == "stopped" {
            return self
                .fail(format!(
                    "you stopped the run on a conflict between the work and the spec: {message}"
                ))
                .map(|()| true);
        }
        let m = self.system(
            "system.step_completed",
            Some("retry"),
            json!({"step": cur.step, "action": cur.command.action.as_str(), "reason": message, "resnapshot": true, "fresh": true}),
        );
        self.record(&m).map(|()| true)
    }

    /// The task has not converged (`reason`): the user gives it another [`MAX_STEPS`] steps
    /// or stops it; without an answer the run fails.
    pub(super) fn persistent_conflict(
        &mut self,
        reason: String,
        user: &mut dyn User,
    ) -> Result<(), RunError> {
        let go_on = format!("give it another {MAX_STEPS} steps");
        let choices = [
            ("continue", go_on.as_str()),
            ("stop", "stop the run (`lorch resume --run ID` asks again)"),
        ];
        let conflict = format!(
            "task {}: {reason}: the agents keep disagreeing",
            self.state.task.id
        );
        let Some(choice) = user.settle(&conflict, &choices) else {
            return self.fail(reason);
        };
        let status = if choice == "continue" {
            "continue"
        } else {
            "stopped"
        };
        let m = self.system(
            "system.user_decision",
            Some(status),
            json!({"conflict": "persistent", "description": reason, "prompt": choice}),
        );
        self.record(&m)?;
        if status == "stopped" {
            return self.fail(format!("you stopped the run: {reason}"));
        }
        Ok(())
    }
}
