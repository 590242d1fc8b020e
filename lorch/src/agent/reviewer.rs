//! The reviewer: the task and the diff of the builder's work → model → verdict →
//! `reviews/<task>.json` (§16.2) written atomically → `review.completed`.
//!
//! Which work: `inputs.commits` (commit ids, e.g. the `commit` of each `builder.completed`)
//! each shown with its patch; else `inputs.base` (a revision) diffed against HEAD; else
//! HEAD's own commit. Read with the git CLI (`git show` / `git diff`), as a reviewer would.
//!
//! `reviews/` is listed in the repository's `info/exclude` ([`crate::git_exclude`]): a review
//! must not stop `git loaf undo` from taking back the step it reviewed.

use std::path::Path;

use serde_json::{Value, json};

use super::emit::Draft;
use super::verdict::parse_review;
use super::{Answer, Shim, StepError, input_str};
use crate::protocol::{Command, EventType, Object, Timestamp};
use crate::safety;

/// Bytes of the summary in `review.completed`.
const MAX_SUMMARY_BYTES: usize = 16 * 1024;

/// Handles `review`.
pub fn handle(shim: &Shim, command: &Command) -> Result<Answer, StepError> {
    let root = &shim.options.workspace;
    let diff = work_diff(root, command)?;
    let prompt = super::prompt::reviewer(command, &diff);
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

/// Writes `value` as pretty JSON, redacted, atomically (0600, §14.4).
pub fn write_json(path: &Path, mut value: Value, secrets: &[String]) -> Result<(), StepError> {
    super::emit::redact_value(&mut value, secrets);
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    safety::atomic_write(path, text.as_bytes())
        .map_err(StepError::io(format!("write {}", path.display())))
}

/// The diff the reviewer sees.
fn work_diff(root: &Path, command: &Command) -> Result<String, StepError> {
    let commits: Vec<&str> = command
        .inputs
        .get("commits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !commits.is_empty() {
        let mut out = String::new();
        for commit in commits {
            out.push_str(&git(root, "show", &[commit])?);
            out.push('\n');
        }
        return Ok(out);
    }
    match input_str(command, "base") {
        Some(base) => git(root, "diff", &[base, "HEAD"]),
        None => git(root, "show", &["HEAD"]),
    }
}

/// `git <sub> --stat --patch <revs>`'s stdout. A revision that starts with `-` is refused:
/// git would take it for an option.
fn git(root: &Path, sub: &str, revs: &[&str]) -> Result<String, StepError> {
    let shown = format!("git {sub} {}", revs.join(" "));
    if revs.iter().any(|r| r.starts_with('-')) {
        return Err(StepError::Io {
            what: shown,
            source: std::io::Error::other("a revision may not start with `-`"),
        });
    }
    let out = std::process::Command::new("git")
        .args(["-c", "core.quotepath=off", "--no-pager", sub])
        .args(["--no-color", "--no-ext-diff", "--stat", "--patch"])
        .args(revs)
        .current_dir(root)
        .output()
        .map_err(StepError::io("run git"))?;
    if !out.status.success() {
        return Err(StepError::Io {
            what: shown,
            source: std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_owned()),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
