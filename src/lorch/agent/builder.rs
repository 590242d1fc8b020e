//! The builder: prompt → model → `git loaf apply` of the reply as ONE transaction → checks.
//!
//! Applying through git-loaf is what makes a lorch run reviewable and reversible: each
//! builder step is one commit (with `Loaf-Apply` and `Assisted-by` trailers) in git-loaf's
//! operation log, so `git loaf log`, `undo` and `squash` work on it like on any apply.
//!
//! The events: one `artifact.produced` per file the commit changed (path, `sha256:<hex>`,
//! size of the file now in the workspace), then `builder.completed` whose payload carries
//! the git-loaf report (the text the model would see), the ✅/❌ counts, the commit and apply
//! ids, and `tests`: each `--check` command's exit code and output tail, with `status`
//! `pass`, `fail` or `skipped` (no checks configured). Its status is `success` only when the
//! apply had no failure, reached the user's branch, every required `expected_outputs` file
//! exists, and every check passed; otherwise `failed`, with the reasons in
//! `payload.problems`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::emit::Draft;
use super::{Answer, Shim, StepError, clip, tail};
use crate::config::Config;
use crate::exec::process::{self, Ending, Job};
use crate::lorch::protocol::{Command, EventType, Object};
use crate::ops::apply::{ApplyOptions, apply};

/// Bytes of the git-loaf report in `builder.completed` (the line limit is 256 KiB).
const MAX_REPORT_BYTES: usize = 64 * 1024;
/// Bytes of a check's output kept (its end, where failures are summed up).
const CHECK_TAIL_BYTES: usize = 4 * 1024;
/// Bytes of a check's output read.
const CHECK_OUTPUT_BYTES: usize = 1024 * 1024;

/// Handles `implement` and `implement_changes`.
pub fn handle(shim: &Shim, command: &Command) -> Result<Answer, StepError> {
    let root = &shim.options.workspace;
    // The same text `git loaf instructions` prints here: the syntax and allowed actions.
    let config = Config::load(root).map_err(|e| StepError::Apply(e.to_string()))?;
    let instructions = crate::instructions::render(root, &config);
    let prompt = super::prompt::builder(command, root, &instructions);
    let reply = shim.ask(command, &prompt)?;
    let options = ApplyOptions {
        model: Some(shim.options.model()),
        ..ApplyOptions::default()
    };
    let applied =
        apply(root, &reply.text, &options).map_err(|e| StepError::Apply(e.to_string()))?;
    let result = &applied.result;
    let git = result.git.clone().unwrap_or_default();
    let ok = result.results.iter().filter(|r| r.success).count();
    let failed = result.results.len() - ok + result.parse_errors.len();

    let mut problems: Vec<String> = Vec::new();
    if result.total_blocks == 0 {
        problems.push("the reply has no NESL blocks".into());
    }
    if !result.success {
        problems.push(format!(
            "the apply did not fully succeed ({})",
            result.tally()
        ));
    }
    if let Some(why) = &git.not_applied {
        problems.push(format!("not applied: {why}"));
    }
    if let Some(kept) = &applied.kept {
        problems.push(format!(
            "the commit was not published ({}); kept as {}",
            kept.reason, kept.refname
        ));
    }
    // §3.1: a required expected output must exist once the step is done.
    for output in command.expected_outputs.iter().filter(|o| o.is_required()) {
        let present =
            crate::lorch::safety::confine(root, &output.path).is_ok_and(|path| path.is_file());
        if !present {
            problems.push(format!("expected output {} is missing", output.path));
        }
    }
    let published = git.commit.is_some() && applied.kept.is_none();
    let changed = match (&git.commit, published) {
        (Some(commit), true) => changed_files(root, commit)?,
        _ => Vec::new(),
    };
    let mut drafts = Vec::new();
    let mut deleted = Vec::new();
    for path in &changed {
        match super::artifact(root, path) {
            Some(artifact) => {
                let mut payload = Object::new();
                payload.insert(
                    "description".into(),
                    json!(format!("changed by git-loaf apply {}", git.apply)),
                );
                drafts.push(Draft {
                    artifacts: Some(vec![artifact]),
                    ..Draft::new(EventType::ArtifactProduced, None, payload)
                });
            }
            None => deleted.push(path.clone()),
        }
    }
    // Checks run on what reached the workspace; when nothing did, they would test the old
    // code and say nothing about this step.
    let checks = if git.not_applied.is_none() && applied.kept.is_none() {
        run_checks(shim, command)
    } else {
        Vec::new()
    };
    let failing: Vec<&str> = checks
        .iter()
        .filter(|c| c["status"] != "pass")
        .filter_map(|c| c["command"].as_str())
        .collect();
    if !failing.is_empty() {
        problems.push(format!("checks failed: {}", failing.join(", ")));
    }
    let tests_status = if shim.options.checks.is_empty() {
        "skipped"
    } else if failing.is_empty() && git.not_applied.is_none() && applied.kept.is_none() {
        "pass"
    } else {
        "fail"
    };
    let success = problems.is_empty();
    let mut payload = Object::new();
    payload.insert(
        "report".into(),
        json!(clip(&result.to_text(), MAX_REPORT_BYTES)),
    );
    payload.insert("succeeded".into(), json!(ok));
    payload.insert("failed".into(), json!(failed));
    payload.insert("apply_id".into(), json!(git.apply));
    payload.insert("commit".into(), json!(git.commit));
    payload.insert("changed".into(), json!(changed));
    payload.insert("deleted".into(), json!(deleted));
    payload.insert(
        "tests".into(),
        json!({ "status": tests_status, "checks": checks }),
    );
    if !applied.notices.is_empty() {
        payload.insert("notices".into(), json!(applied.notices));
    }
    if !success {
        payload.insert("problems".into(), json!(problems));
    }
    drafts.push(Draft::new(
        EventType::BuilderCompleted,
        Some(if success { "success" } else { "failed" }),
        payload,
    ));
    Ok(Answer {
        drafts,
        keep: success,
    })
}

/// The files `commit` changed against its first parent (all of them for a root commit), as
/// workspace-relative paths. Read with the git CLI: plumbing output, NUL-separated.
fn changed_files(root: &Path, commit: &str) -> Result<Vec<String>, StepError> {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "core.quotepath=off",
            "diff-tree",
            "-r",
            "--root",
            "--no-commit-id",
            "--name-only",
            "-z",
            commit,
        ])
        .current_dir(root)
        .output()
        .map_err(StepError::io("git diff-tree"))?;
    if !out.status.success() {
        return Err(StepError::Apply(format!(
            "git diff-tree {commit}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}

/// Runs every `--check` in the workspace with `sh -c`, within the command's deadline (at
/// least a second each: a check that could not even start tells nothing).
fn run_checks(shim: &Shim, command: &Command) -> Vec<Value> {
    let root = &shim.options.workspace;
    shim.options
        .checks
        .iter()
        .map(|check| {
            let timeout = super::time_left(command)
                .unwrap_or_default()
                .max(Duration::from_secs(1));
            let job = Job {
                program: "sh",
                args: vec!["-c".into(), check.into()],
                cwd: root,
                env: Vec::new(),
                path: None,
                timeout,
                max_output: CHECK_OUTPUT_BYTES,
                sandbox: None,
            };
            match process::run(&job) {
                Ok(finished) => {
                    let output = format!("{}{}", finished.stdout.text, finished.stderr.text);
                    let (status, exit_code) = match finished.ending {
                        Ending::Exited(0) => ("pass", Some(0)),
                        Ending::Exited(code) => ("fail", Some(code)),
                        Ending::Signalled(_) => ("fail", None),
                        Ending::TimedOut => ("timeout", None),
                    };
                    json!({
                        "command": check,
                        "status": status,
                        "exit_code": exit_code,
                        "output_tail": tail(&output, CHECK_TAIL_BYTES),
                    })
                }
                Err(e) => json!({
                    "command": check,
                    "status": "error",
                    "exit_code": null,
                    "output_tail": e.to_string(),
                }),
            }
        })
        .collect()
}
