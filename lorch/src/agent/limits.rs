//! The limits a model call is under: the budget of model calls lorch gives the command
//! (`inputs.max_model_calls`, from `policy.max_model_calls`), and a rate limit the model
//! command reports (`policy.retry.rate_limit`, which lorch hands its agents as
//! [`RATE_LIMIT_ENV`]): the command then fails with `rate_limited` and the time to wait,
//! which lorch waits before its retry.

use std::time::Duration;

use serde_json::Value;

use super::StepError;
use super::llm::LlmError;
use crate::config::{RATE_LIMIT_ENV, RateLimit};
use crate::protocol::Command;

/// The rate limit lorch passed in the environment (none: nothing is a rate limit).
pub fn rate_limit_from_env() -> RateLimit {
    std::env::var(RATE_LIMIT_ENV)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Refuses a model call beyond the command's budget, `used` calls made so far.
pub fn within_budget(command: &Command, used: u64) -> Result<(), StepError> {
    match command
        .inputs
        .get("max_model_calls")
        .and_then(Value::as_u64)
    {
        Some(max) if used >= max => Err(StepError::Budget(max)),
        _ => Ok(()),
    }
}

/// A failed model command that said it is rate-limited, as the error lorch waits on.
pub fn rate_limited(limit: &RateLimit, error: &LlmError) -> Option<StepError> {
    let LlmError::Failed { how, stderr, .. } = error else {
        return None;
    };
    let code = how
        .strip_prefix("exit code ")
        .and_then(|c| c.parse::<i32>().ok());
    let wait = limit.wait(code, stderr)?;
    Some(StepError::RateLimited {
        wait,
        message: error.to_string(),
    })
}

/// Milliseconds, for the error's payload.
pub fn millis(wait: Duration) -> u64 {
    u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
}
