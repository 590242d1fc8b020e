//! The builder: a conversation with the model whose every reply is applied through
//! git-loaf (`conversation`), ending as ONE commit, then `builder.completed`.
//!
//! Applying through git-loaf is what makes a lorch run reviewable and reversible: each
//! builder step is one commit (with `Loaf-Apply` and `Assisted-by` trailers, or, when it
//! took several turns, git-loaf's squash of them) in git-loaf's operation log, so `git loaf
//! log`, `undo` and `squash` work on it like on any apply. A step that fails leaves no
//! commit: its turns are undone through git-loaf.
//!
//! The events: one `artifact.produced` per file the step's commit changed (path,
//! `sha256:<hex>`, size of the file now in the workspace), then `builder.completed` whose
//! payload carries the last turn's git-loaf report (the text the model saw), the ✅/❌
//! counts, the commit and apply (or squash) ids, `turns`, and `tests`: each `--check`
//! command's exit code and output tail, with `status` `pass`, `fail` or `skipped` (no
//! checks configured); with `--lint` commands, `lint` beside it, their results the same way
//! (run after the tests; a failing one fails the step). Its status is `success` only when
//! the last turn's apply had no failure, reached the user's branch, the step changed at
//! least one file, every required `expected_outputs` file exists, and every check passed;
//! otherwise `failed`, with the reasons in `payload.problems`.
//!
//! ## A step applied exactly once, across a killed shim
//!
//! A receipt answers a repeated idempotency key (IK), but the shim can be killed after
//! git-loaf committed the step and before the receipt is written; lorch then resends the
//! same command. So every turn's apply carries `lorch-ik:<IK>` as its reply key in
//! git-loaf's operation log ([`reply_key`]), written in the same publish step as the
//! commit, and before asking the model the builder looks at what those applies left
//! (`recovery`): a finished step is answered from its commit without asking the model; the
//! turns of an interrupted one are undone and the step made afresh.

mod conversation;
mod memory;
mod recovery;

use std::path::Path;
use std::time::Duration;

use git_loaf::api::{DEFAULT_ENVIRONMENT, Ending, Job};
use serde_json::{Value, json};

use super::emit::Draft;
use super::{Answer, Shim, StepError, clip, tail};
use crate::protocol::{Command, EventType, Object};

pub use conversation::{DEFAULT_MAX_TURNS, max_turns};

/// Bytes of the git-loaf report in `builder.completed` (the line limit is 256 KiB).
const MAX_REPORT_BYTES: usize = 64 * 1024;
/// Bytes of a check's output kept (its end, where failures are summed up).
const CHECK_TAIL_BYTES: usize = 4 * 1024;
/// Bytes of a check's output read.
const CHECK_OUTPUT_BYTES: usize = 1024 * 1024;

/// Handles `implement` and `implement_changes`: from what an earlier handling of the same
/// command left in git-loaf's log, else as a conversation with the model. A failure is
/// remembered (by IK), so that lorch's retry of the command tells the model why the last
/// attempt failed.
pub fn handle(shim: &Shim, command: &Command) -> Result<Answer, StepError> {
    let key = reply_key(&command.idempotency_key);
    if let Some(answer) = recovery::recover(shim, command, &key)? {
        return Ok(answer);
    }
    super::check_version(shim, command)?;
    let memory = memory::Memory::new(&shim.options.state_dir, &command.idempotency_key);
    let answer = conversation::converse(shim, command, &key, memory.recall().as_deref())
        .and_then(|step| answer(shim, step));
    let failure = match &answer {
        Ok(answer) if answer.keep => None,
        Ok(answer) => Some(problems_of(answer)),
        Err(error) => Some(error.to_string()),
    };
    let remembered = match failure {
        None => memory.forget(),
        Some(why) => memory.remember(&shim.emitter.redact(&why)),
    };
    if let Err(error) = remembered {
        let _ = shim.emitter.log(
            crate::protocol::LogLevel::Warn,
            &format!("cannot remember why the step failed (a retry will not be told): {error}"),
            Object::new(),
        );
    }
    answer
}

/// The key the apply of a command's step carries in git-loaf's operation log
/// (`OpEntry.reply_key`), the same record `git loaf watch` uses to never run a reply twice.
pub fn reply_key(idempotency_key: &str) -> String {
    format!("lorch-ik:{idempotency_key}")
}

/// The `problems` of a failed answer's `builder.completed`, one per line.
fn problems_of(answer: &Answer) -> String {
    let lines: Vec<&str> = answer
        .drafts
        .iter()
        .filter_map(|d| d.payload.get("problems"))
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    lines.join("\n")
}

/// What a step did, from its live conversation or from its records in the repository.
struct Step {
    /// The last turn's git-loaf report (the text the model saw last).
    report: String,
    /// Actions of the last reply that succeeded.
    succeeded: usize,
    /// Actions of the last reply that failed plus blocks that did not run.
    failed: usize,
    /// Why the step falls short (empty: it succeeded).
    problems: Vec<String>,
    /// The apply's id, or the squash's when the step took several turns (empty when it
    /// recorded nothing).
    apply_id: String,
    /// The step's commit, when it left one on the user's branch.
    commit: Option<String>,
    /// The `--check` results (empty when they did not run).
    checks: Vec<Value>,
    /// The model's turns (0 when answered from the repository).
    turns: usize,
    /// What git-loaf told the user.
    notices: Vec<String>,
    /// Answered from an earlier apply of the same command instead of the model.
    recovered: bool,
}

/// The problems of the workspace as the step leaves it, besides the apply's own: `nothing
/// changed` when the step has no commit, a required expected output missing; then, when
/// there are none so far, the `--check` commands run, and the failing ones named. Returns
/// the problems and the checks' results (empty when they did not run).
fn assess(
    shim: &Shim,
    command: &Command,
    mut problems: Vec<String>,
    changed: bool,
) -> (Vec<String>, Vec<Value>) {
    let root = &shim.options.workspace;
    if !changed {
        problems.push("no file is changed yet: the task needs changes to the files".into());
    }
    // A required expected output must exist once the step is done.
    for output in command.expected_outputs.iter().filter(|o| o.is_required()) {
        let present = crate::safety::confine(root, &output.path).is_ok_and(|path| path.is_file());
        if !present {
            problems.push(format!("expected output {} is missing", output.path));
        }
    }
    // Checks run on a workspace that holds the whole of the step: otherwise they would test
    // half of it, or the old code, and say nothing about this step.
    if !problems.is_empty() {
        return (problems, Vec::new());
    }
    let mut checks = run_checks(shim, command, &shim.options.checks, "test");
    checks.extend(run_checks(shim, command, &shim.options.lints, "lint"));
    for (kind, what) in [("test", "checks"), ("lint", "lint")] {
        let failing: Vec<&str> = checks
            .iter()
            .filter(|c| c["kind"] == kind && c["status"] != "pass")
            .filter_map(|c| c["command"].as_str())
            .collect();
        if !failing.is_empty() {
            problems.push(format!("{what} failed: {}", failing.join(", ")));
        }
    }
    (problems, checks)
}

/// The answer to `command` for `step`: artifacts, `builder.completed`.
fn answer(shim: &Shim, step: Step) -> Result<Answer, StepError> {
    let root = &shim.options.workspace;
    let changed = match &step.commit {
        Some(commit) => changed_files(root, commit)?,
        None => Vec::new(),
    };
    let mut drafts = Vec::new();
    let mut deleted = Vec::new();
    for path in &changed {
        match super::artifact(root, path) {
            Some(artifact) => {
                let mut payload = Object::new();
                payload.insert(
                    "description".into(),
                    json!(format!("changed by git-loaf {}", step.apply_id)),
                );
                if step.recovered {
                    payload.insert("recovered".into(), json!(true));
                }
                drafts.push(Draft {
                    artifacts: Some(vec![artifact]),
                    ..Draft::new(EventType::ArtifactProduced, None, payload)
                });
            }
            None => deleted.push(path.clone()),
        }
    }
    let success = step.problems.is_empty();
    let tests_status = if shim.options.checks.is_empty() {
        "skipped"
    } else if success {
        "pass"
    } else {
        "fail"
    };
    // The lint commands' results beside the tests' (a step is accepted when both pass).
    let (lints, tests): (Vec<Value>, Vec<Value>) =
        step.checks.into_iter().partition(|c| c["kind"] == "lint");
    let lint_status = if success { "pass" } else { "fail" };
    let mut payload = Object::new();
    payload.insert("report".into(), json!(clip(&step.report, MAX_REPORT_BYTES)));
    payload.insert("succeeded".into(), json!(step.succeeded));
    payload.insert("failed".into(), json!(step.failed));
    payload.insert("apply_id".into(), json!(step.apply_id));
    payload.insert("commit".into(), json!(step.commit));
    payload.insert("changed".into(), json!(changed));
    payload.insert("deleted".into(), json!(deleted));
    payload.insert(
        "tests".into(),
        json!({ "status": tests_status, "checks": tests }),
    );
    if !shim.options.lints.is_empty() {
        payload.insert(
            "lint".into(),
            json!({ "status": lint_status, "checks": lints }),
        );
    }
    if step.turns > 0 {
        payload.insert("turns".into(), json!(step.turns));
    }
    if !step.notices.is_empty() {
        payload.insert("notices".into(), json!(step.notices));
    }
    if !success {
        payload.insert("problems".into(), json!(step.problems));
    }
    if step.recovered {
        payload.insert("recovered".into(), json!(true));
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

/// Runs each of `commands` (the `--check`s, `kind` `test`, or the `--lint`s, `lint`) in the
/// workspace with `sh -c`, within the command's deadline (at least a second each: a check
/// that could not even start tells nothing).
fn run_checks(shim: &Shim, command: &Command, commands: &[String], kind: &str) -> Vec<Value> {
    let root = &shim.options.workspace;
    commands
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
                // The model's code: without the secrets of lorch's environment.
                environment: &DEFAULT_ENVIRONMENT,
                path: None,
                timeout,
                max_output: CHECK_OUTPUT_BYTES,
                // Checks run the code the model wrote: with --sandbox, contained as it is.
                sandbox: shim.options.sandbox.as_ref(),
            };
            match git_loaf::api::run(&job) {
                Ok(finished) => {
                    let output = format!("{}{}", finished.stdout.text, finished.stderr.text);
                    let (status, exit_code) = match finished.ending {
                        Ending::Exited(0) => ("pass", Some(0)),
                        Ending::Exited(code) => ("fail", Some(code)),
                        Ending::Signalled(_) => ("fail", None),
                        Ending::TimedOut => ("timeout", None),
                    };
                    json!({
                        "kind": kind,
                        "command": check,
                        "status": status,
                        "exit_code": exit_code,
                        "output_tail": tail(&output, CHECK_TAIL_BYTES),
                    })
                }
                Err(e) => json!({
                    "kind": kind,
                    "command": check,
                    "status": "error",
                    "exit_code": null,
                    "output_tail": e.to_string(),
                }),
            }
        })
        .collect()
}
