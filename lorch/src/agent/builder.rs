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
//!
//! ## A step applied exactly once, across a killed shim
//!
//! A receipt answers a repeated idempotency key (IK), but the shim can be killed after
//! git-loaf committed the step and before the receipt is written; lorch then resends the
//! same command. So the apply carries `lorch-ik:<IK>` as its reply key in git-loaf's
//! operation log ([`reply_key`]), written in the same publish step as the commit, and before
//! asking the model the builder looks for the newest apply of this working tree with that
//! key (in a git-loaf session, which first finishes a publish the kill left half done). When
//! there is one, the answer is what the lost receipt would have said:
//!
//! - it succeeded and the workspace still holds what its commit made: the answer is
//!   rebuilt from it (changed files and their checksums from the commit and the workspace,
//!   the report and counts from its git note), marked `payload.recovered: true`, and
//!   recorded as a receipt; the model is not asked and nothing is applied. The `--check`
//!   commands run again: their results were only in the lost events, they only read the
//!   workspace, and a `success` must not claim checks nobody ran;
//! - it did not fully succeed, or its checks fail now: that answer was a failure, which
//!   gets no receipt, so the command is handled afresh, like lorch's retry of a failure;
//! - it was undone since (`git loaf undo`), or its files changed: the command is handled
//!   afresh. The IK says "the same command", and its work is not in the workspace: lorch
//!   checks artifacts against the files, so answering from the undone step would fail that
//!   check on every retry; the user undid that attempt, and lorch still asks for the step.
//!
//! An apply that committed nothing (every block failed, or git's hook refused the commit)
//! leaves no log entry: the command is handled afresh, which cannot land anything twice.

use std::path::Path;
use std::time::Duration;

use git_loaf::config::Config;
use git_loaf::exec::process::{self, Ending, Job};
use git_loaf::git::oplog::{self, OpKind};
use git_loaf::git::session::Session;
use git_loaf::git::{Oid, Repository};
use git_loaf::ops::apply::{ApplyOptions, apply};
use git_loaf::ops::log::Shown;
use git2::DiffOptions;
use serde_json::{Value, json};

use super::emit::Draft;
use super::{Answer, Shim, StepError, clip, tail};
use crate::protocol::{Command, EventType, LogLevel, Object};

/// Bytes of the git-loaf report in `builder.completed` (the line limit is 256 KiB).
const MAX_REPORT_BYTES: usize = 64 * 1024;
/// Bytes of a check's output kept (its end, where failures are summed up).
const CHECK_TAIL_BYTES: usize = 4 * 1024;
/// Bytes of a check's output read.
const CHECK_OUTPUT_BYTES: usize = 1024 * 1024;

/// Handles `implement` and `implement_changes`.
pub fn handle(shim: &Shim, command: &Command) -> Result<Answer, StepError> {
    let root = &shim.options.workspace;
    let key = reply_key(&command.idempotency_key);
    if let Some(answer) = recover(shim, command, &key)? {
        return Ok(answer);
    }
    super::check_version(shim, command)?;
    // The same text `git loaf instructions` prints here: the syntax and allowed actions.
    let config = Config::load(root).map_err(|e| StepError::Apply(e.to_string()))?;
    let instructions = git_loaf::instructions::render(root, &config);
    let prompt = super::prompt::builder(command, root, &instructions);
    let reply = shim.ask(command, &prompt)?;
    let options = ApplyOptions {
        model: Some(shim.options.model()),
        reply_key: Some(key),
        ..ApplyOptions::default()
    };
    let applied =
        apply(root, &reply.text, &options).map_err(|e| StepError::Apply(e.to_string()))?;
    let result = &applied.result;
    let git = result.git.clone().unwrap_or_default();
    let mut problems = Vec::new();
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
    let ok = result.results.iter().filter(|r| r.success).count();
    let step = Step {
        report: result.to_text(),
        total_blocks: result.total_blocks,
        succeeded: ok,
        failed: result.results.len() - ok + result.parse_errors.len(),
        problems,
        apply_id: git.apply.clone(),
        commit: git.commit.clone(),
        reached: git.not_applied.is_none() && applied.kept.is_none(),
        notices: applied.notices.clone(),
        recovered: false,
    };
    answer(shim, command, step)
}

/// The key the apply of a command's step carries in git-loaf's operation log
/// (`OpEntry.reply_key`), the same record `git loaf watch` uses to never run a reply twice.
pub fn reply_key(idempotency_key: &str) -> String {
    format!("lorch-ik:{idempotency_key}")
}

/// What an apply did, from its live result or from its records in the repository.
struct Step {
    /// The git-loaf report (the text the model would see).
    report: String,
    /// Blocks in the reply.
    total_blocks: usize,
    /// Actions that succeeded.
    succeeded: usize,
    /// Actions that failed plus blocks that did not run.
    failed: usize,
    /// Why the apply itself falls short.
    problems: Vec<String>,
    /// The apply's id (empty when it recorded nothing).
    apply_id: String,
    /// The commit, when one was made.
    commit: Option<String>,
    /// Whether the commit reached the user's branch and files (or nothing was to commit).
    reached: bool,
    /// What git-loaf told the user.
    notices: Vec<String>,
    /// Answered from an earlier apply of the same command instead of the model.
    recovered: bool,
}

/// The answer to `command` for `step`: artifacts, checks, `builder.completed`.
fn answer(shim: &Shim, command: &Command, step: Step) -> Result<Answer, StepError> {
    let root = &shim.options.workspace;
    let mut problems: Vec<String> = Vec::new();
    if step.total_blocks == 0 {
        problems.push("the reply has no NESL blocks".into());
    }
    problems.extend(step.problems);
    // §3.1: a required expected output must exist once the step is done.
    for output in command.expected_outputs.iter().filter(|o| o.is_required()) {
        let present = crate::safety::confine(root, &output.path).is_ok_and(|path| path.is_file());
        if !present {
            problems.push(format!("expected output {} is missing", output.path));
        }
    }
    let changed = match (&step.commit, step.reached) {
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
                    json!(format!("changed by git-loaf apply {}", step.apply_id)),
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
    // Checks run on what reached the workspace; when nothing did, they would test the old
    // code and say nothing about this step.
    let checks = if step.reached {
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
    } else if failing.is_empty() && step.reached {
        "pass"
    } else {
        "fail"
    };
    let success = problems.is_empty();
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
        json!({ "status": tests_status, "checks": checks }),
    );
    if !step.notices.is_empty() {
        payload.insert("notices".into(), json!(step.notices));
    }
    if !success {
        payload.insert("problems".into(), json!(problems));
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

/// The answer the lost receipt would have given, when an earlier handling of this command
/// applied its reply and died before writing the receipt; `None` when the command is to be
/// handled afresh (see the module documentation for when).
fn recover(shim: &Shim, command: &Command, key: &str) -> Result<Option<Answer>, StepError> {
    let root = &shim.options.workspace;
    let Some(prior) = find_apply(shim, key)? else {
        return Ok(None);
    };
    let say = |message: String| {
        // A failed log line is found out by the command loop at its next write.
        let _ = shim.emitter.log(LogLevel::Info, &message, Object::new());
    };
    let Some(commit) = prior.commit else {
        say(format!(
            "git-loaf apply {} of this command committed nothing to answer from: handling it afresh",
            prior.id
        ));
        return Ok(None);
    };
    let (report, result) = match git_loaf::ops::log::show(root, Some(&commit)) {
        Ok(Shown::Full { text, result, .. }) => (text, result),
        Ok(Shown::TrailerOnly { result, .. }) => (
            format!(
                "(the git-loaf note of commit {commit} is missing; its Loaf-Result trailer)\n{result:#}"
            ),
            result,
        ),
        Err(e) => return Err(StepError::Apply(e.to_string())),
    };
    if result["success"] != true {
        // Its answer was a failure, which gets no receipt: lorch's retry really retries.
        say(format!(
            "git-loaf apply {} of this command did not fully succeed: handling it afresh, as a retry",
            prior.id
        ));
        return Ok(None);
    }
    let changed = changed_files(root, &commit)?;
    if !holds(root, &commit, &changed)? {
        say(format!(
            "git-loaf apply {} of this command is no longer in the workspace (undone or changed since): handling it afresh",
            prior.id
        ));
        return Ok(None);
    }
    let results = result["results"].as_array().map_or(&[][..], Vec::as_slice);
    let succeeded = results.iter().filter(|r| r["success"] == true).count();
    let parse_errors = result["parseErrors"].as_array().map_or(0, Vec::len);
    let step = Step {
        report,
        total_blocks: result["totalBlocks"]
            .as_u64()
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX)),
        succeeded,
        failed: results.len() - succeeded + parse_errors,
        problems: Vec::new(),
        apply_id: prior.id.clone(),
        commit: Some(commit),
        reached: true,
        notices: Vec::new(),
        recovered: true,
    };
    let answer = answer(shim, command, step)?;
    if answer.keep {
        say(format!(
            "answered from git-loaf apply {} of this command (made before the agent stopped, with no receipt written): the model was not asked again",
            prior.id
        ));
        Ok(Some(answer))
    } else {
        // The checks or expected outputs fail on it now: the answer would have been a
        // failure, retried for real.
        say(format!(
            "git-loaf apply {} of this command fails its checks or expected outputs now: handling it afresh, as a retry",
            prior.id
        ));
        Ok(None)
    }
}

/// The newest apply made in this workspace with `key`.
struct Prior {
    /// The apply's id.
    id: String,
    /// Its commit, when it made one.
    commit: Option<String>,
}

/// The newest apply of this working tree that carries `key`. Looked up in a git-loaf
/// session, which first finishes a publish a killed apply left half done (its branch moved,
/// its log entry not yet written): otherwise that step would be missed and made again.
fn find_apply(shim: &Shim, key: &str) -> Result<Option<Prior>, StepError> {
    let session = Session::begin(&shim.options.workspace, "lorch agent")
        .map_err(|e| StepError::Apply(e.to_string()))?;
    for notice in &session.notices {
        let _ = shim.emitter.log(
            LogLevel::Info,
            &format!("git-loaf: {notice}"),
            Object::new(),
        );
    }
    // Linked worktrees share one log: the same command in another worktree is not ours.
    let workdir = session.root.display().to_string();
    for entry in oplog::walk(&session.repo) {
        let entry = entry.map_err(|e| StepError::Apply(format!("git-loaf operation log: {e}")))?;
        if entry.kind == OpKind::Apply
            && entry.workdir == workdir
            && entry.reply_key.as_deref() == Some(key)
        {
            let commit = entry
                .after
                .head
                .filter(|h| Some(h) != entry.before.head.as_ref());
            return Ok(Some(Prior {
                id: entry.id,
                commit,
            }));
        }
    }
    Ok(None)
}

/// Whether the workspace still holds what `commit` made of `paths`: each with the commit's
/// content (the same bytes after git's filters, the same mode), or absent where it deleted it.
fn holds(root: &Path, commit: &str, paths: &[String]) -> Result<bool, StepError> {
    let failed =
        |e: git2::Error| StepError::Apply(format!("comparing {commit} with the workspace: {e}"));
    let repo = Repository::open(root).map_err(failed)?;
    let oid = Oid::from_str(commit).map_err(failed)?;
    let tree = repo
        .find_commit(oid)
        .and_then(|c| c.tree())
        .map_err(failed)?;
    if paths.is_empty() {
        return Ok(true);
    }
    let mut options = DiffOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .disable_pathspec_match(true);
    for path in paths {
        options.pathspec(path);
    }
    let diff = repo
        .diff_tree_to_workdir_with_index(Some(&tree), Some(&mut options))
        .map_err(failed)?;
    Ok(diff.deltas().len() == 0)
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
