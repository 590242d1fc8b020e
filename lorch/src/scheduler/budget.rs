//! What a run may spend (`policy.max_model_calls` per run and per task, `policy.max_wall_s`)
//! and the wait before a command's retry (`policy.retry.backoff` with full jitter, longer
//! when the model command said it is rate-limited).
//!
//! Model calls are counted from the agents' terminal events (`payload.model_calls`, see
//! [`crate::run_state::RunState::model_calls`]), so a resumed run counts what its ledger
//! holds. Before each command is sent, a spent budget stops the run (failed, with the
//! reason named); `lorch resume` goes on once lorch.json allows more. Each command carries
//! what is left (`inputs.max_model_calls`), so that a builder's turns stop at the limit too.

use std::time::Duration;

use serde_json::json;

use super::{Command, Orchestrator, RunError, supervisor};
use crate::agent::limits::millis;

/// The input that tells an agent how many model calls the command may make; never part
/// of the idempotency key (it changes as the run spends).
pub const INPUT: &str = "max_model_calls";

/// The input that says how many the run has made (for the console), never part of the key
/// either.
pub const USED: &str = "model_calls_used";

impl Orchestrator {
    /// Why the run may not send another command, if its budget is spent.
    pub(super) fn budget_spent(&self) -> Option<String> {
        let policy = &self.config.policy;
        let used = self.state.model_calls;
        if let Some(max) = policy.max_model_calls.per_run
            && used.run >= max
        {
            return Some(format!(
                "budget spent: {} model calls made, policy.max_model_calls.per_run is {max}; raise it in lorch.json, then `lorch resume --run {}`",
                used.run, self.state.run_id
            ));
        }
        if let Some(max) = policy.max_model_calls.per_task
            && used.task >= max
        {
            return Some(format!(
                "budget spent: {} model calls made for task {}, policy.max_model_calls.per_task is {max}; raise it in lorch.json, then `lorch resume --run {}`",
                used.task, self.state.task.id, self.state.run_id
            ));
        }
        if let Some(max) = policy.max_wall_s
            && self.began.elapsed().as_secs_f64() >= max
        {
            return Some(format!(
                "time spent: this lorch went on for {:.0}s, policy.max_wall_s is {max}; `lorch resume --run {}` goes on",
                self.began.elapsed().as_secs_f64(),
                self.state.run_id
            ));
        }
        None
    }

    /// Stops the run when its budget is spent; says whether it did.
    pub(super) fn stop_if_spent(&mut self) -> Result<bool, RunError> {
        match self.budget_spent() {
            Some(reason) => {
                self.fail(reason)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Writes what is left of the budget into `command` (none: no limit).
    pub(super) fn give_budget(&self, command: &mut Command) {
        let policy = &self.config.policy.max_model_calls;
        let used = self.state.model_calls;
        let left = [
            policy.per_run.map(|m| m.saturating_sub(used.run)),
            policy.per_task.map(|m| m.saturating_sub(used.task)),
        ]
        .into_iter()
        .flatten()
        .min();
        match left {
            Some(left) => {
                command.inputs.insert(INPUT.into(), json!(left));
                command.inputs.insert(USED.into(), json!(used.run));
            }
            None => {
                command.inputs.remove(INPUT);
                command.inputs.remove(USED);
            }
        }
    }

    /// The wait before retry number `attempt` (from 1) of a command: the backoff's full
    /// jitter, or what a rate-limited model command asked for when that is longer.
    pub(super) fn retry_wait(&self, attempt: u32, rate_limited: Option<Duration>) -> Duration {
        let backoff = self
            .config
            .policy
            .retry
            .backoff
            .delay(attempt.saturating_sub(1), supervisor::random());
        backoff.max(rate_limited.unwrap_or_default())
    }
}

/// The `delay_ms` a retry records.
pub fn delay_ms(wait: Duration) -> u64 {
    millis(wait)
}
