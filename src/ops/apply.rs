//! `git loaf apply` as one git transaction (docs/apply.md): lock → checkpoint → stage → hooks and
//! actions → commit with trailers and note → publish → report.
//!
//! [`apply`] reads as that pipeline, one call a step; the steps live beside it, each over
//! the transaction's shared state (`Tx`): `staging` (checkpoint, stage), `running` (the
//! sandbox, hooks and actions), `committing` (snapshot, pre-commit, commit, note) and
//! `publishing` (publish, report, keep).

pub mod answer;
mod committing;
mod placing;
mod publishing;
mod running;
mod staging;

use std::path::{Path, PathBuf};

use super::exec_changes::StageWatch;
use super::targets::{action_targets, through_symlink, writes_unplaced};
use crate::config::Config;
use crate::config::NotesOutputs;
use crate::git::Oid;
use crate::git::commit::{write_note_value, write_report_value};
use crate::git::sign::SignRequest;
use crate::notice::Notice;
use crate::ops::check::{CheckedReply, check};
use crate::report::{ExecutionResult, GitInfo, redact};
use crate::tx::githooks::{Place, Refusal};
use crate::tx::oplog::OpKind;
use crate::tx::publish::crash_point;
use crate::tx::session::{Session, TxError};
use crate::tx::stage::Touched;
use running::RunEnv;

/// What to record besides the reply.
#[derive(Debug, Clone, Default)]
pub struct ApplyOptions {
    /// `Assisted-by: <model>`.
    pub model: Option<String>,
    /// The key of the reply's blocks when `git loaf watch` runs it (recorded in the
    /// operation log, so that the watcher never runs it twice).
    pub reply_key: Option<String>,
    /// `--no-verify`: skip the repository's pre-commit and commit-msg hooks.
    pub no_verify: bool,
    /// Whether to sign the commit (`--gpg-sign`, `--no-gpg-sign`, commit.gpgSign).
    pub sign: SignRequest,
    /// What the change is for, in the caller's words (MCP `apply`'s `message`): the
    /// commit's subject after `AI: `, before the reply's own opening sentence.
    pub message: Option<String>,
}

/// How an apply ended.
#[derive(Debug)]
pub struct Applied {
    /// What ran, with the git transaction's ids.
    pub result: ExecutionResult,
    /// When the user's branch or files moved meanwhile: where the commit was kept instead.
    pub kept: Option<Kept>,
    /// Things to tell the user on stderr.
    pub notices: Vec<Notice>,
}

impl Applied {
    /// An apply that recorded nothing (no commit, no operation-log entry): the report shows
    /// no id, since `show` and `undo` could not find one.
    fn unrecorded(mut result: ExecutionResult, mut git: GitInfo, notices: Vec<Notice>) -> Self {
        git.apply.clear();
        result.git = Some(git);
        Applied {
            result,
            kept: None,
            notices,
        }
    }

    /// An apply whose commit was refused (by the repository's git hook, or signing failed):
    /// nothing published, nothing recorded; the report says why first, the blocks' results
    /// follow.
    fn refused(
        mut result: ExecutionResult,
        mut git: GitInfo,
        notices: Vec<Notice>,
        refusal: Refusal,
    ) -> Self {
        git.not_applied = Some(refusal.reason);
        git.refused_output = (!refusal.output.is_empty()).then_some(refusal.output);
        result.success = false;
        Applied::unrecorded(result, git, notices)
    }
}

/// A commit that could not be published and was kept under `refs/loaf/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// `refs/loaf/<apply id>`.
    pub refname: String,
    /// Why it was not published.
    pub reason: String,
}

/// The record stored for every apply commit: the text report and the result (stored
/// without the file contents the commit holds: [`write_note_value`]).
pub fn note_json(result: &ExecutionResult) -> serde_json::Value {
    serde_json::json!({ "text": result.to_text(), "result": result })
}

/// Records `result` on `commit` (docs/trailers-and-notes.md): the full report locally, for `git
/// loaf show`, and the note that can be pushed, whose outputs are sizes and hashes unless loaf.yml
/// says `notes.outputs: full`.
pub fn record(
    repo: &crate::git::Repository,
    commit: crate::git::Oid,
    root: &Path,
    result: &ExecutionResult,
    outputs: NotesOutputs,
) -> Result<(), TxError> {
    write_report_value(repo, commit, root, note_json(result))?;
    let note = match outputs {
        NotesOutputs::Full => note_json(result),
        NotesOutputs::Hashes => {
            let mut note = note_json(&result.outputs_hashed());
            note["outputs"] = redact::HASHED_MARKER.into();
            note
        }
    };
    write_note_value(repo, commit, root, note)?;
    Ok(())
}

/// How [`apply_once`] ended.
#[derive(Debug)]
pub enum Once {
    /// The reply ran (see [`apply`]).
    Applied(Box<Applied>),
    /// An apply recorded in the operation log carries the reply's key: nothing ran.
    AlreadyApplied {
        /// That apply's id.
        apply: String,
    },
}

/// Runs `reply` as one transaction in the repository containing `cwd`.
pub fn apply(cwd: &Path, reply: &str, options: &ApplyOptions) -> Result<Applied, TxError> {
    let session = Session::begin(cwd, "apply")?;
    let reply = check(reply, &session.root);
    apply_locked(session, &reply, options)
}

/// [`apply`], of a reply already checked: checked again only if against another root than
/// the repository's (the one `cwd` is in).
pub fn apply_checked(
    cwd: &Path,
    reply: &CheckedReply<'_>,
    options: &ApplyOptions,
) -> Result<Applied, TxError> {
    let session = Session::begin(cwd, "apply")?;
    if reply.root == session.root {
        apply_locked(session, reply, options)
    } else {
        let reply = check(reply.text, &session.root);
        apply_locked(session, &reply, options)
    }
}

/// [`apply`], unless the operation log records an apply of the same reply
/// (`options.reply_key`). The log is read with the lock held, so a reply another process
/// applied a moment ago (`git loaf apply` by hand while `git loaf watch` runs) is seen, and
/// the same reply never runs twice (docs/watch.md).
pub fn apply_once(cwd: &Path, reply: &str, options: &ApplyOptions) -> Result<Once, TxError> {
    let session = Session::begin(cwd, "apply")?;
    if let Some(key) = &options.reply_key
        && let Some(apply) = applied_as(&session.repo, key)?
    {
        return Ok(Once::AlreadyApplied { apply });
    }
    let reply = check(reply, &session.root);
    apply_locked(session, &reply, options).map(|applied| Once::Applied(Box::new(applied)))
}

/// The id of the newest apply in the operation log that ran the reply with `key`.
fn applied_as(repo: &crate::git::Repository, key: &str) -> Result<Option<String>, TxError> {
    for entry in crate::tx::oplog::walk(repo) {
        let entry = entry?;
        if entry.kind == OpKind::Apply && entry.reply_key.as_deref() == Some(key) {
            return Ok(Some(entry.id));
        }
    }
    Ok(None)
}

/// [`apply`] with the operation lock held (by `session`, released when it ends): docs/apply.md's
/// pipeline, one named step a call; each step's effects (and crash point) in this order.
fn apply_locked(
    session: Session,
    reply: &CheckedReply<'_>,
    options: &ApplyOptions,
) -> Result<Applied, TxError> {
    crash_point("locked");
    // Every look at the reply (is there code to sandbox? which blocks run?) reads the one
    // check of it; only its prose is read again, for the subject.
    let mut tx = Tx::begin(session, reply.text, options)?;
    let checkpoint = tx.checkpoint()?;
    let git_hooks = tx.git_hooks()?;
    let runs_code = tx.runs_code(reply, &git_hooks);
    let staging = tx.stage(&checkpoint, reply, runs_code)?;
    let mut env = tx.run_env(&staging.stage, git_hooks, runs_code)?;
    tx.show_users_view(&staging.stage, &checkpoint, &mut env)?;
    let watch = StageWatch::new(&staging.stage, tx.repo(), checkpoint.work_tree, &tx.root);
    let mut result = tx.run_actions(reply, &staging.stage, &env, &checkpoint, &watch)?;
    let mut git = tx.git_info();
    if result.fatal_error.is_some() {
        // Before hooks failed (or loaf.yml's guard is unusable): nothing is committed, and
        // the marker stays so that the next apply scans what the hooks may have left.
        return Ok(Applied::unrecorded(result, git, tx.notices));
    }
    let (planned, carried) = tx.snapshot(&staging, &checkpoint, &result, &watch)?;
    let planned = match tx.pre_commit(&staging.stage, &env, planned)? {
        Ok(planned) => planned,
        Err(refusal) => return Ok(Applied::refused(result, git, tx.notices, refusal)),
    };
    let extras = tx.extras(&staging.stage, &env, &result, planned.tree)?;
    let after = tx.user_after(&checkpoint, &planned)?;
    git.kept = after.kept.iter().map(|p| p.display().to_string()).collect();
    if planned.changed.is_empty() && extras.is_empty() {
        // Nothing changed (reads only, writes that changed nothing, or code that only
        // reverted the user's work, which stays): no commit.
        staging.unchanged(after.kept.is_empty())?;
        return Ok(Applied::unrecorded(result, git, tx.notices));
    }
    git.uncommitted = tx.carried_uncommitted(carried);
    let subject = tx.subject(reply.text, &result, &planned.changed);
    let commit = match tx.commit(&staging, &env, &planned, &subject, &result)? {
        Ok(commit) => commit,
        Err(refusal) => return Ok(Applied::refused(result, git, tx.notices, refusal)),
    };
    staging.finish();
    git.commit = commit.map(|c| c.to_string());
    git.checkpoint = (!checkpoint.is_clean()).then(|| checkpoint.work_tree.to_string());
    result.git = Some(git);
    tx.note(commit, &result)?;
    crash_point("committed");
    let states = (after.work, after.index);
    let transition = tx.transition(&checkpoint, states, commit, subject, extras);
    let outcome = tx.publish(transition)?;
    tx.report(result, outcome, commit, &checkpoint, &env)
}

/// One apply's transaction: what its steps share, from the lock to the report.
struct Tx<'a> {
    /// The lock, the repository, its root.
    session: Session,
    options: &'a ApplyOptions,
    /// The repository's root as the model sees it.
    root: PathBuf,
    /// The loaf.yml that governs (the one the user accepted, docs/apply.md).
    config: Config,
    /// The working tree's loaf.yml when the apply began (`None`: no file).
    loaf_yml: Option<String>,
    /// A wider loaf.yml waiting for the user: what the report says of it.
    config_pending: Option<String>,
    /// The apply's id.
    id: String,
    /// The ref the commit moves and where it was (`None`: unborn).
    ref_name: String,
    old_head: Option<Oid>,
    /// Things to tell the user on stderr.
    notices: Vec<Notice>,
}

impl Tx<'_> {
    fn repo(&self) -> &crate::git::Repository {
        &self.session.repo
    }

    /// The report's git part before anything is committed.
    fn git_info(&self) -> GitInfo {
        GitInfo {
            apply: self.id.clone(),
            base: self.old_head.map(|o| o.to_string()),
            config_pending: self.config_pending.clone(),
            ..GitInfo::default()
        }
    }

    /// Where the repository's git hooks run: in the stage, on the user's branch.
    fn place<'p>(&'p self, env: &'p RunEnv) -> Place<'p> {
        Place {
            root: &self.root,
            paths: &env.paths,
            sandbox: env.sandbox.as_ref(),
            head: self.old_head,
            branch: Some(&self.ref_name),
        }
    }
}

/// What the run may have changed in the stage: the targets of write actions, unless `exec`
/// ran or hooks are configured (they can change anything), or a target's path passes
/// through a symlink in the stage (the action changed the link's target, not the path it
/// named).
fn touched(result: &ExecutionResult, config: &Config, root: &Path, stage: &Path) -> Touched {
    let hooks = !config.hooks.before.is_empty() || !config.hooks.after.is_empty();
    if hooks || result.results.iter().any(|r| r.action == "exec") {
        return Touched::Anything;
    }
    let paths = write_targets(result, root, stage);
    if paths.iter().any(|path| through_symlink(stage, path))
        || result
            .results
            .iter()
            .any(|r| writes_unplaced(r, root, stage))
    {
        return Touched::Anything;
    }
    Touched::Paths(paths)
}

/// The targets of the write actions, relative to the root, sorted: never a path through a
/// `.git` (git cannot record one; the guard refuses them, and the stage's `.git` is a file).
fn write_targets(result: &ExecutionResult, root: &Path, stage: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = result
        .results
        .iter()
        .flat_map(|r| action_targets(r, root, stage))
        .collect();
    paths.sort();
    paths.dedup();
    paths
}
