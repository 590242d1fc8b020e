//! Why a command failed: [`StepError`], which becomes an `error` event whose `payload.code`
//! says what kind of failure it is, with what else helps (the file, the versions,
//! how long to wait before a retry).

use std::io;
use std::time::Duration;

use serde_json::json;

use super::{limits, llm};
use crate::protocol::{Action, Object, ObservedVersion, Version};

/// Why a command failed: becomes an `error` event with `payload.code`.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The command is for another role.
    #[error("this agent is the {ours}; the command is for the {theirs}")]
    WrongAgent {
        /// Our role.
        ours: &'static str,
        /// The addressee.
        theirs: String,
    },
    /// The role does not do this action.
    #[error("the {role} does not do `{action}`")]
    Unsupported {
        /// Our role.
        role: &'static str,
        /// The action.
        action: Action,
    },
    /// The deadline passed before any work started.
    #[error("the deadline {0} has passed")]
    DeadlinePassed(String),
    /// The model did not answer.
    #[error(transparent)]
    Llm(#[from] llm::LlmError),
    /// The command's budget of model calls is spent (`inputs.max_model_calls`).
    #[error("the budget of {0} model call(s) for this command is spent (policy.max_model_calls)")]
    Budget(u64),
    /// The model command said it is rate-limited: lorch waits `wait` before the retry.
    #[error("rate-limited, lorch waits {}s before the retry: {message}", .wait.as_secs_f64())]
    RateLimited {
        /// How long to wait.
        wait: Duration,
        /// The model command's failure.
        message: String,
    },
    /// git-loaf could not run the transaction at all.
    #[error("git-loaf could not apply the reply: {0}")]
    Apply(String),
    /// The reply has no verdict the role can read.
    #[error("the reply has no verdict: {0}")]
    NoVerdict(String),
    /// The orchestration agent's reply proposes no usable task (nor asks a question).
    #[error("the reply proposes no usable task: {0}")]
    NoProposal(String),
    /// The spec-maintainer's edit touches sections it may not change.
    #[error("refused: the edit changes {} of {file}, which the spec-maintainer may not change ({why})", .sections.join(", "))]
    ForbiddenSpecEdit {
        /// The spec file.
        file: String,
        /// The sections, by heading.
        sections: Vec<String>,
        /// Why, section by section.
        why: String,
    },
    /// The workspace is not what the command was pinned to: lorch takes a new
    /// snapshot and sends the command again.
    #[error(
        "the workspace is at {}, not at the command's {} ({} differ): it changed since lorch took its snapshot",
        .observed.snapshot_id, .expected.snapshot_id, .parts.join(", ")
    )]
    VersionMismatch {
        /// The command's version.
        expected: Box<Version>,
        /// The workspace's.
        observed: Box<Version>,
        /// What differs: `snapshot_id`, `code_hash`, `specs_hash`.
        parts: Vec<&'static str>,
    },
    /// A path is not usable (outside the workspace, …).
    #[error(transparent)]
    Path(#[from] crate::safety::PathError),
    /// Reading or writing a file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// What the OS said.
        source: io::Error,
    },
}

impl StepError {
    /// The machine-readable `payload.code` of the `error` event.
    pub fn code(&self) -> &'static str {
        match self {
            StepError::WrongAgent { .. } => "wrong_agent",
            StepError::Unsupported { .. } => "unsupported_action",
            StepError::DeadlinePassed(_) => "deadline_passed",
            StepError::Llm(e) => e.code(),
            StepError::Budget(_) => "budget_spent",
            StepError::RateLimited { .. } => "rate_limited",
            StepError::Apply(_) => "apply_failed",
            StepError::NoVerdict(_) => "no_verdict",
            StepError::NoProposal(_) => "no_proposal",
            StepError::ForbiddenSpecEdit { .. } => "forbidden_spec_edit",
            StepError::VersionMismatch { .. } => "version_mismatch",
            StepError::Path(_) => "path_not_allowed",
            StepError::Io { .. } => "io_error",
        }
    }

    /// The error event's payload: the code, the message, and what else helps.
    pub fn payload(&self) -> Object {
        let mut payload = Object::new();
        payload.insert("code".into(), json!(self.code()));
        payload.insert("message".into(), json!(self.to_string()));
        if let StepError::RateLimited { wait, .. } = self {
            payload.insert("retry_after_ms".into(), json!(limits::millis(*wait)));
        }
        if let StepError::ForbiddenSpecEdit { file, sections, .. } = self {
            payload.insert("file".into(), json!(file));
            payload.insert("sections".into(), json!(sections));
        }
        if let StepError::VersionMismatch {
            expected,
            observed,
            parts,
        } = self
        {
            payload.insert("expected_snapshot".into(), json!(expected.snapshot_id));
            payload.insert("observed_snapshot".into(), json!(observed.snapshot_id));
            payload.insert("mismatched".into(), json!(parts));
        }
        payload
    }

    /// The version the agent saw, when it is not the command's.
    pub fn observed(&self) -> Option<ObservedVersion> {
        match self {
            StepError::VersionMismatch { observed, .. } => Some(crate::version::observed(observed)),
            _ => None,
        }
    }

    /// An I/O error about `what`.
    pub fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> StepError {
        let what = what.into();
        move |source| StepError::Io { what, source }
    }
}
