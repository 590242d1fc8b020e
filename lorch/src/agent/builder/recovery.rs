//! Answering a command whose earlier handling died before its receipt was written, from
//! what its applies left in git-loaf's operation log (every turn's apply carries the
//! command's [`super::reply_key`]):
//!
//! - the newest one succeeded, the workspace still holds what its commit made, and the
//!   expected outputs and `--check` commands pass on it: the step was finished. The answer
//!   is rebuilt from it (changed files and their checksums from the step's commit and the
//!   workspace, the report and counts from the apply's git note), marked
//!   `payload.recovered: true`; the model is not asked and nothing is applied. When its
//!   turns were not squashed yet they are squashed now, so the step is one commit as ever.
//!   The checks run again: their results were only in the lost events, and a `success` must
//!   not claim checks nobody ran;
//! - otherwise (it failed, committed nothing, was undone since, its files changed, or its
//!   checks fail now) the command is handled afresh. The IK says "the same command": its
//!   work is not in the workspace, or is unfinished; lorch still asks for the step. The
//!   turns of an interrupted conversation still on top of git-loaf's undo stack are undone
//!   first, so that they do not stay behind as commits of their own.

use std::path::Path;

use git_loaf::api::{SQUASH_TRAILER, SQUASHED_TRAILER, Shown};
use git2::{DiffOptions, Oid, Repository};

use super::{Step, answer, assess, changed_files};
use crate::agent::{Answer, Shim, StepError};
use crate::protocol::{Command, LogLevel, Object};

/// The answer the lost receipt would have given; `None` when the command is to be handled
/// afresh (then the turns an interrupted handling left on top of the undo stack are undone).
pub fn recover(shim: &Shim, command: &Command, key: &str) -> Result<Option<Answer>, StepError> {
    let Some(prior) = find_apply(shim, key)? else {
        return Ok(None);
    };
    let answer = answer_from(shim, command, &prior)?;
    if answer.is_none() && !prior.top.is_empty() {
        discard(shim, &prior.top);
    }
    Ok(answer)
}

fn say(shim: &Shim, message: String) {
    // A failed log line is found out by the command loop at its next write.
    let _ = shim.emitter.log(LogLevel::Info, &message, Object::new());
}

/// The answer from `prior`, the newest apply of the command, when it finished the step.
fn answer_from(shim: &Shim, command: &Command, prior: &Prior) -> Result<Option<Answer>, StepError> {
    let root = &shim.options.workspace;
    let Some(commit) = prior.commit.clone() else {
        say(
            shim,
            format!(
                "git-loaf apply {} of this command committed nothing to answer from: handling it afresh",
                prior.id
            ),
        );
        return Ok(None);
    };
    let (report, result) = match git_loaf::api::show(root, Some(&commit)) {
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
        say(
            shim,
            format!(
                "git-loaf apply {} of this command did not fully succeed: handling it afresh, as a retry",
                prior.id
            ),
        );
        return Ok(None);
    }
    if !holds(root, &commit, &changed_files(root, &commit)?)? {
        say(
            shim,
            format!(
                "git-loaf apply {} of this command is no longer in the workspace (undone or changed since): handling it afresh",
                prior.id
            ),
        );
        return Ok(None);
    }
    let (problems, checks) = assess(shim, command, Vec::new(), true);
    if !problems.is_empty() {
        // The answer would have been a failure, retried for real.
        say(
            shim,
            format!(
                "git-loaf apply {} of this command fails now ({}): handling it afresh, as a retry",
                prior.id,
                problems.join("; ")
            ),
        );
        return Ok(None);
    }
    let (apply_id, step_commit) = step_commit(shim, command, prior, &commit)?;
    let results = result["results"].as_array().map_or(&[][..], Vec::as_slice);
    let succeeded = results.iter().filter(|r| r["success"] == true).count();
    let parse_errors = result["parseErrors"].as_array().map_or(0, Vec::len);
    let step = Step {
        report,
        succeeded,
        failed: results.len() - succeeded + parse_errors,
        problems: Vec::new(),
        apply_id,
        commit: Some(step_commit),
        checks,
        turns: 0,
        notices: Vec::new(),
        recovered: true,
    };
    say(
        shim,
        format!(
            "answered from git-loaf apply {} of this command (made before the agent stopped, with no receipt written): the model was not asked again",
            prior.id
        ),
    );
    answer(shim, step).map(Some)
}

/// The step's id and commit when its newest apply is `prior` (whose commit is `commit`):
/// its turns squashed now when they are still separate commits on top of the undo stack;
/// the squash that already folded them when HEAD is one; else the apply's own.
fn step_commit(
    shim: &Shim,
    command: &Command,
    prior: &Prior,
    commit: &str,
) -> Result<(String, String), StepError> {
    let root = &shim.options.workspace;
    if prior.top.len() > 1 && prior.top[0] == prior.id {
        let (id, squashed) = super::conversation::squash(shim, command, prior.top.len())?;
        say(
            shim,
            format!(
                "squashed the {} turns of this command into one commit (the agent stopped before it could)",
                prior.top.len()
            ),
        );
        return Ok((id, squashed));
    }
    let repo = Repository::open(root)
        .map_err(|e| StepError::Apply(format!("opening the repository: {e}")))?;
    let head = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    if let Some(head) = head.filter(|h| h.id().to_string() != commit) {
        let message = head.message().unwrap_or_default();
        let (squashed, squash) = (
            format!("{SQUASHED_TRAILER}: "),
            format!("{SQUASH_TRAILER}: "),
        );
        let folded = message
            .lines()
            .any(|l| l.starts_with(&squashed) && l.contains(&prior.id));
        let id = message
            .lines()
            .find_map(|l| l.strip_prefix(squash.as_str()))
            .map(str::trim);
        if let (true, Some(id)) = (folded, id) {
            return Ok((id.to_owned(), head.id().to_string()));
        }
    }
    Ok((prior.id.clone(), commit.to_owned()))
}

/// Undoes the turns `top` (apply ids, newest first, on top of the undo stack) through
/// git-loaf; a refusal is logged, not fatal: the step is made afresh on top of them.
fn discard(shim: &Shim, top: &[String]) {
    let Some(oldest) = top.last() else {
        return;
    };
    match git_loaf::api::undo_to(&shim.options.workspace, oldest, false) {
        Ok(_) => say(
            shim,
            format!(
                "undid the {} commit(s) an interrupted handling of this command left (git-loaf applies back to {oldest})",
                top.len()
            ),
        ),
        Err(e) => {
            let _ = shim.emitter.log(
                LogLevel::Warn,
                &format!(
                    "cannot undo the commits an interrupted handling of this command left (`git loaf undo --to {oldest}` takes them back): {e}"
                ),
                Object::new(),
            );
        }
    }
}

/// The newest apply made in this workspace with `key`.
struct Prior {
    /// The apply's id.
    id: String,
    /// Its commit, when it made one.
    commit: Option<String>,
    /// The applies with `key` on top of the undo stack, newest first: the turns of the
    /// command still separate commits.
    top: Vec<String>,
}

/// The newest apply of this working tree that carries `key`, looked up by git-loaf with its
/// lock held, after it finished a publish a killed apply left half done (its branch moved,
/// its log entry not yet written): otherwise that step would be missed and made again.
fn find_apply(shim: &Shim, key: &str) -> Result<Option<Prior>, StepError> {
    let found = git_loaf::api::reply_applies(&shim.options.workspace, key, "lorch agent")
        .map_err(|e| StepError::Apply(e.to_string()))?;
    for notice in &found.notices {
        let _ = shim.emitter.log(
            LogLevel::Info,
            &format!("git-loaf: {notice}"),
            Object::new(),
        );
    }
    Ok(found.newest.map(|newest| Prior {
        id: newest.id,
        commit: newest.commit,
        top: found.on_top,
    }))
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
