//! `policy.retry` of `lorch.json` (docs/lorch.md, "Failures, Ctrl-C and resuming"): how
//! many attempts a command gets, the backoff between them and between an agent's restarts
//! (exponential, full jitter), and how a model command says it is rate-limited.

use std::time::Duration;

use serde::Deserialize;

/// `policy.retry`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct RetryPolicy {
    /// Attempts of one command (same IK) before the run fails.
    pub max_attempts: u32,
    /// Backoff before restarting an agent, and before each retry of a command.
    pub backoff: Backoff,
    /// How a model command says it is rate-limited.
    pub rate_limit: RateLimit,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            backoff: Backoff::default(),
            rate_limit: RateLimit::default(),
        }
    }
}

/// `policy.retry.rate_limit`: a model command whose exit code is one of `exit_codes`, or
/// whose stderr holds one of `stderr_contains`, is rate-limited; the retry waits the seconds
/// its stderr names after `retry after`, else `wait_s`. lorch hands these to its agents as
/// [`RATE_LIMIT_ENV`].
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq)]
#[serde(default)]
pub struct RateLimit {
    /// Exit codes that mean "rate-limited".
    pub exit_codes: Vec<i32>,
    /// Texts of stderr that mean it (case-insensitive).
    pub stderr_contains: Vec<String>,
    /// Seconds to wait when the command does not say.
    pub wait_s: Option<f64>,
}

/// The environment variable lorch passes [`RateLimit`] to its agents in, as JSON.
pub const RATE_LIMIT_ENV: &str = "LORCH_RATE_LIMIT";

impl RateLimit {
    /// Whether a model command that ended with `code` and `stderr` is rate-limited, and
    /// then how long to wait.
    pub fn wait(&self, code: Option<i32>, stderr: &str) -> Option<Duration> {
        let lower = stderr.to_lowercase();
        let limited = code.is_some_and(|c| self.exit_codes.contains(&c))
            || self
                .stderr_contains
                .iter()
                .any(|t| lower.contains(&t.to_lowercase()));
        if !limited {
            return None;
        }
        let told = lower.find("retry after").and_then(|at| {
            let rest = lower[at + "retry after".len()..].trim_start_matches([' ', ':', '=']);
            let digits: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            digits.parse::<f64>().ok()
        });
        let seconds = told.or(self.wait_s).unwrap_or(0.0);
        Some(Duration::from_secs_f64(seconds.clamp(0.0, 3600.0)))
    }
}

/// `policy.retry.backoff`: exponential, with full jitter.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct Backoff {
    /// First ceiling.
    pub initial_ms: u64,
    /// Largest ceiling.
    pub max_ms: u64,
    /// Growth per restart.
    pub multiplier: f64,
    /// `full` (a random delay up to the ceiling) or `none` (the ceiling).
    pub jitter: String,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial_ms: 1000,
            max_ms: 60_000,
            multiplier: 2.0,
            jitter: "full".to_owned(),
        }
    }
}

impl Backoff {
    /// The delay before restart number `restart` (0 for the first): with full jitter a uniform
    /// random value in `[0, min(max, initial × multiplier^restart)]`.
    pub fn delay(&self, restart: u32, random: u64) -> Duration {
        let ceiling = (self.initial_ms as f64 * self.multiplier.powi(restart as i32))
            .min(self.max_ms as f64)
            .max(0.0) as u64;
        let ms = if self.jitter == "none" || ceiling == 0 {
            ceiling
        } else {
            random % (ceiling + 1)
        };
        Duration::from_millis(ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limit_is_known_by_its_exit_code_or_its_words_and_waits_as_told() {
        let limit = RateLimit {
            exit_codes: vec![75],
            stderr_contains: vec!["Rate limit".into()],
            wait_s: Some(2.0),
        };
        assert_eq!(limit.wait(Some(1), "boom"), None);
        assert_eq!(limit.wait(Some(75), ""), Some(Duration::from_secs(2)));
        assert_eq!(
            limit.wait(Some(1), "429: RATE LIMIT reached, retry after 7 s"),
            Some(Duration::from_secs(7))
        );
        assert_eq!(RateLimit::default().wait(Some(75), "rate limit"), None);
    }

    #[test]
    fn backoff_grows_to_its_ceiling_and_jitter_stays_below_it() {
        let b = Backoff::default();
        let none = Backoff {
            jitter: "none".into(),
            ..Backoff::default()
        };
        assert_eq!(none.delay(0, 0), Duration::from_secs(1));
        assert_eq!(none.delay(3, 0), Duration::from_secs(8));
        assert_eq!(none.delay(20, 0), Duration::from_secs(60));
        assert_eq!(b.delay(2, 4001), Duration::from_millis(4001 % 4001));
        assert!(b.delay(2, u64::MAX) <= Duration::from_secs(4));
    }
}
