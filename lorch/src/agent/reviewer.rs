//! The reviewer: the task and the diff of the builder's work → model → verdict →
//! `reviews/<task>.json` written atomically → `review.completed`.
//!
//! Which work: the task's whole change, `inputs.base..HEAD` with `inputs.commits` named
//! ([`super::change`]).
//!
//! `reviews/` is listed in the repository's `info/exclude` ([`crate::git_exclude`]): a review
//! must not stop `git loaf undo` from taking back the step it reviewed.

use std::path::Path;

use serde_json::{Value, json};

use super::emit::Draft;
use super::verdict::parse_review;
use super::{Answer, Shim, StepError};
use crate::protocol::{Command, EventType, Object, Timestamp};
use crate::safety;

/// Bytes of the summary in `review.completed`.
const MAX_SUMMARY_BYTES: usize = 16 * 1024;

/// Handles `review`.
pub fn handle(shim: &Shim, command: &Command) -> Result<Answer, StepError> {
    let root = &shim.options.workspace;
    let change = super::change::section(root, command, super::prompt::MAX_DIFF_BYTES)?;
    let prompt = super::prompt::reviewer(command, &change);
    let reply = shim.ask(command, &prompt)?;
    let review = parse_review(&reply.text).map_err(StepError::NoVerdict)?;
    let relative = format!("reviews/{}.json", command.task_id);
    let path = safety::confine(root, &relative)?;
    shim.exclude(&["/reviews/"]);
    let record = json!({
        "task_id": command.task_id,
        "status": review.verdict.as_str(),
        "findings": review.findings,
        "summary": review.summary,
        "created_at": Timestamp::now().to_string(),
    });
    write_json(&path, record, shim.emitter.secrets())?;
    let mut payload = Object::new();
    payload.insert("review".into(), json!(relative));
    // The file has it whole; the event, bound by the line limit, the start of it.
    payload.insert(
        "summary".into(),
        json!(super::clip(&review.summary, MAX_SUMMARY_BYTES)),
    );
    payload.insert("findings".into(), json!(review.findings.len()));
    let artifact = super::artifact(root, &relative);
    Ok(Answer {
        drafts: vec![Draft {
            artifacts: artifact.map(|a| vec![a]),
            ..Draft::new(
                EventType::ReviewCompleted,
                Some(review.verdict.as_str()),
                payload,
            )
        }],
        keep: true,
    })
}

/// Writes `value` as pretty JSON, redacted, atomically (0600).
pub fn write_json(path: &Path, mut value: Value, secrets: &[String]) -> Result<(), StepError> {
    super::emit::redact_value(&mut value, secrets);
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    safety::atomic_write(path, text.as_bytes())
        .map_err(StepError::io(format!("write {}", path.display())))
}
