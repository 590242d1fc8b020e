//! `git loaf apply` as one git transaction (DESIGN §2): lock → checkpoint → stage → hooks and
//! actions → commit with trailers and note → publish → report.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::targets::{action_targets, through_symlink};
use super::{new_id, now_secs};
use crate::config::Config;
use crate::config::NotesOutputs;
use crate::exec::PathMap;
use crate::exec::sandbox::Sandbox;
use crate::git::checkpoint::{self, Checkpoint};
use crate::git::commit::{Trailers, message, write_commit, write_note_value, write_report_value};
use crate::git::githooks::{self, GitHooks, Place, Planned, Refusal, Verify};
use crate::git::oplog::{OpEntry, OpKind, UserState};
use crate::git::publish::{self, PublishError, Transition, crash_point};
use crate::git::session::{Session, TxError};
use crate::git::sign::{self, SignError, SignRequest};
use crate::git::stage::{self, Stage, Touched};
use crate::git::{merge, refs, states, treebuild, treediff, visible};
use crate::report::{ExecutionResult, GitInfo, redact};

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
}

/// How an apply ended.
#[derive(Debug)]
pub struct Applied {
    /// What ran, with the git transaction's ids.
    pub result: ExecutionResult,
    /// When the user's branch or files moved meanwhile: where the commit was kept instead.
    pub kept: Option<Kept>,
    /// Things to tell the user on stderr.
    pub notices: Vec<String>,
}

impl Applied {
    /// An apply that recorded nothing (no commit, no operation-log entry): the report shows
    /// no id, since `show` and `undo` could not find one.
    fn unrecorded(mut result: ExecutionResult, mut git: GitInfo, notices: Vec<String>) -> Self {
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
        notices: Vec<String>,
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

/// Records `result` on `commit` (DESIGN §2 "Secrets"): the full report locally, for `git loaf
/// show`, and the note that can be pushed, whose outputs are sizes and hashes unless loaf.yml
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
    apply_locked(session, reply, options)
}

/// [`apply`], unless the operation log records an apply of the same reply
/// (`options.reply_key`). The log is read with the lock held, so a reply another process
/// applied a moment ago (`git loaf apply` by hand while `git loaf watch` runs) is seen, and
/// the same reply never runs twice (DESIGN §3, `watch`).
pub fn apply_once(cwd: &Path, reply: &str, options: &ApplyOptions) -> Result<Once, TxError> {
    let session = Session::begin(cwd, "apply")?;
    if let Some(key) = &options.reply_key
        && let Some(apply) = applied_as(&session.repo, key)?
    {
        return Ok(Once::AlreadyApplied { apply });
    }
    apply_locked(session, reply, options).map(|applied| Once::Applied(Box::new(applied)))
}

/// The id of the newest apply in the operation log that ran the reply with `key`.
fn applied_as(repo: &crate::git::Repository, key: &str) -> Result<Option<String>, TxError> {
    for entry in crate::git::oplog::walk(repo) {
        let entry = entry?;
        if entry.kind == OpKind::Apply && entry.reply_key.as_deref() == Some(key) {
            return Ok(Some(entry.id));
        }
    }
    Ok(None)
}

/// [`apply`] with the operation lock held (by `session`, released when it ends).
fn apply_locked(session: Session, reply: &str, options: &ApplyOptions) -> Result<Applied, TxError> {
    crash_point("locked");
    // Every look at the reply (is there code to sandbox? which blocks run?) sees the same
    // text: a byte order mark is not part of it.
    let reply = crate::input::without_bom(reply);
    let mut session_notices = session.notices.clone();
    let repo = &session.repo;
    let root = session.root.clone();
    let config = Config::load(&root)?;
    session_notices.extend(config.notices.iter().cloned());
    let id = new_id(reply);
    let (ref_name, old_head) = refs::head_ref(repo)?;
    checkpoint::refuse_intent_to_add(repo)
        .map_err(|paths| TxError::intent_to_add(&paths, "apply"))?;

    let checkpoint = checkpoint::take(repo).map_err(TxError::from_checkpoint)?;
    crash_point("checkpoint");
    // The stage starts from what the user has (HEAD plus uncommitted work, as a commit that
    // only the stage's HEAD refers to); an unborn branch with nothing gets an empty root.
    let from_work = checkpoint.work_tree;
    let from_index = checkpoint.index_tree;
    let start = match old_head {
        None if checkpoint.is_clean() => {
            write_commit(repo, checkpoint.head_tree, &[], "loaf: empty start")?
        }
        _ => checkpoint.as_commit(repo, "loaf: stage start")?,
    };
    let stage = Stage::open_or_create(repo, start)?;
    let marker = stage::in_flight_marker(repo);
    let crashed = marker.exists();
    if crashed {
        // A crashed apply's exec may have left processes behind (without namespaces).
        let _ = crate::exec::sandbox::kill_recorded(session.common_dir());
    }
    // Written before the reset, so that one a crash interrupts is scanned next time too.
    std::fs::write(&marker, &id).map_err(stage::StageError::from)?;
    stage.reset_to(start, crashed)?;
    crash_point("stage");
    // Ignored files (a virtualenv, node_modules, .env) are seen as in the user's tree: fs
    // actions read through to them; exec and hooks get them mounted in place, which needs
    // the list of them (a walk of the tree's folders: only when code will run).
    let isolate = visible::isolate_set(&config.stage.isolate)?;
    let runs_code = crate::run::runs_code(reply, &config, &root);
    // The repository's own git hooks (a config read and a few stats); they are code too.
    let verify = match (config.git_hooks, options.no_verify) {
        (false, _) => Verify::None,
        (true, true) => Verify::NoVerify,
        (true, false) => Verify::All,
    };
    let git_hooks = GitHooks::take(repo, &root, verify).map_err(stage::StageError::from)?;
    let runs_code = runs_code || git_hooks.any_before_commit();
    let view = Rc::new(visible::Visibility::new(&root, isolate.clone()));
    let paths = PathMap::redirect(&root, stage.path())
        .scratch()
        .showing(view.clone());
    let sandbox = if runs_code {
        let entries = visible::ignored_entries(repo, &isolate)?;
        let sandbox = Sandbox::new(
            &root,
            stage.path(),
            session.common_dir(),
            entries.into_iter().map(|e| e.path).collect(),
        )
        .with_policy(crate::run::sandbox_policy(&config));
        if let Some(notice) = crate::exec::sandbox::fallback_notice() {
            session_notices.push(notice);
        }
        Some(sandbox)
    } else {
        None
    };
    crash_point("sandbox");
    let mut fences = states::submodule_fences(repo, stage.path());
    fences.extend(states::sparse_fences(repo, stage.path()));
    crash_point("fences");
    let watch = super::exec_changes::StageWatch::new(&stage, repo, from_work, &root);
    let mut result = crate::run::execute_fenced(
        reply,
        &config,
        &paths,
        fences,
        sandbox.as_ref(),
        Some(&watch),
    );
    crash_point("executed");
    if sandbox.as_ref().is_some_and(|s| !s.isolated()) {
        report_escapes(&session, &checkpoint, &root, &mut result)?;
    }
    let mut git = GitInfo {
        apply: id.clone(),
        base: old_head.map(|o| o.to_string()),
        ..GitInfo::default()
    };
    if result.fatal_error.is_some() {
        // Before hooks failed (or loaf.yml's guard is unusable): nothing is committed, and
        // the marker stays so that the next apply scans what the hooks may have left.
        return Ok(Applied::unrecorded(result, git, session_notices));
    }
    let touched = touched(&result, &config, &root, stage.path());
    // The scan after the last exec, when nothing wrote since, is the stage as it is now.
    let staged = match watch.last_scan() {
        Some(scanned) => scanned,
        None => stage.snapshot(&touched, repo)?,
    };
    crash_point("snapshot");
    // What the apply changed: the stage against the user's working tree. Only those paths
    // go into the commit (on HEAD's tree) and into the index; everything else the user had
    // uncommitted stays uncommitted.
    let changed: Vec<PathBuf> = treediff::changed_paths(repo, Some(from_work), Some(staged))?
        .into_iter()
        .collect();
    // With nothing uncommitted the stage started from HEAD's tree, so what it holds is
    // already that tree with the apply's changes.
    let tree = if changed.is_empty() {
        checkpoint.head_tree
    } else if from_work == checkpoint.head_tree {
        staged
    } else {
        treebuild::tree_with_entries(repo, checkpoint.head_tree, staged, &changed)?
    };
    // pre-commit runs against exactly this commit, as `git commit` runs it; what it rewrites
    // is committed too. A refusal publishes nothing (the marker stays: the next reset scans).
    let place = Place {
        root: &root,
        paths: &paths,
        sandbox: sandbox.as_ref(),
        head: old_head,
        branch: Some(&ref_name),
    };
    let planned = Planned {
        tree,
        staged,
        changed,
    };
    let Planned {
        tree,
        staged,
        changed,
    } = match githooks::pre_commit(&git_hooks, repo, &stage, place, planned)? {
        Ok(planned) => planned,
        Err(refusal) => return Ok(Applied::refused(result, git, session_notices, refusal)),
    };
    // What git will not commit but the user's tree gets at publish: ignored files the
    // actions wrote, folders dir_create made.
    let extras = visible::extras(
        repo,
        stage.path(),
        tree,
        &write_targets(&result, &root, stage.path()),
        &view.copied(),
    )?;
    if changed.is_empty() && extras.is_empty() {
        // Nothing changed (reads only, or writes that changed nothing): no commit.
        stage.set_head(start)?;
        let _ = std::fs::remove_file(&marker);
        return Ok(Applied::unrecorded(result, git, session_notices));
    }
    let to_index = if from_index == from_work {
        staged
    } else {
        treebuild::tree_with_entries(repo, from_index, staged, &changed)?
    };
    git.uncommitted = checkpoint::carried_uncommitted(repo, &checkpoint, &changed)?;
    if !git.uncommitted.is_empty() {
        // The report tells the model; the user, at the terminal, is told too.
        session_notices.push(format!(
            "the commit includes the uncommitted changes you had in {} (the reply changed {}); `git loaf undo` gives them back uncommitted",
            git.uncommitted.join(", "),
            if git.uncommitted.len() == 1 { "that file" } else { "those files" }
        ));
    }
    let summary = crate::report::subject::subject_summary(&result, &root, &changed);
    let subject = config
        .commit_message_format
        .replace("{operation_summary}", &summary);
    let parents: Vec<_> = old_head.into_iter().collect();
    // Only ignored files or empty folders changed: nothing to commit, the branch stays.
    let commit = if changed.is_empty() {
        stage.set_head(start)?;
        None
    } else {
        let trailers = Trailers {
            apply: Some(id.clone()),
            base: old_head,
            result: Some(result.to_trailer_json()),
            assisted_by: options.model.clone(),
        };
        let text = message(&subject, &trailers);
        let text = match githooks::commit_message(&git_hooks, &stage, place, (tree, staged), text)?
        {
            Ok(text) => text,
            Err(refusal) => return Ok(Applied::refused(result, git, session_notices, refusal)),
        };
        let commit = match sign::write_commit(repo, tree, &parents, &text, &options.sign) {
            Ok(commit) => commit,
            Err(SignError::Git(error)) => return Err(error.into()),
            Err(error) => {
                let refusal = Refusal::signing(&error.to_string());
                return Ok(Applied::refused(result, git, session_notices, refusal));
            }
        };
        crash_point("commit");
        // The stage holds the user's work plus the apply's: record that as its HEAD, so the
        // next apply moves it by the difference.
        let stage_head = if staged == tree {
            commit
        } else {
            write_commit(repo, staged, &[commit], "loaf: stage")?
        };
        stage.set_head(stage_head)?;
        Some(commit)
    };
    let _ = std::fs::remove_file(&marker);
    git.commit = commit.map(|c| c.to_string());
    git.checkpoint = (!checkpoint.is_clean()).then(|| from_work.to_string());
    result.git = Some(git);
    if let Some(commit) = commit {
        record(repo, commit, &root, &result, config.notes_outputs)?;
        // The note must follow the commit through `git commit --amend` and `git rebase`.
        // A config that cannot be written costs the note's survival, not the apply.
        if let Ok(true) = crate::git::commit::ensure_notes_rewrite(repo) {
            session_notices.push(
                "set notes.rewriteRef = refs/notes/loaf in this repository's config, so `git commit --amend` and `git rebase` keep the git-loaf records".to_owned(),
            );
        }
    }
    crash_point("committed");
    let new_head = commit.or(old_head).map(|o| o.to_string());
    let (staged, to_index) = (staged.to_string(), to_index.to_string());
    let transition = Transition {
        workdir: root.clone(),
        ref_name: ref_name.clone(),
        old: old_head.map(|o| o.to_string()),
        new: new_head.clone(),
        from_work: from_work.to_string(),
        from_index: from_index.to_string(),
        to_work: staged.clone(),
        to_index: to_index.clone(),
        message: format!("git-loaf apply {id}: {subject}"),
        op: OpEntry {
            id: id.clone(),
            kind: OpKind::Apply,
            target: None,
            time: now_secs(),
            workdir: root.display().to_string(),
            ref_name: ref_name.clone(),
            summary: subject,
            before: UserState {
                head: old_head.map(|o| o.to_string()),
                work: from_work.to_string(),
                index: from_index.to_string(),
            },
            after: UserState {
                head: new_head,
                work: staged,
                index: to_index,
            },
            extras,
            reply_key: options.reply_key.clone(),
        },
    };
    let mut transition = transition;
    let mut notices = session_notices;
    let mut attempts = 0;
    let outcome = loop {
        match publish::publish(repo, &transition, true) {
            Ok(skipped) => break Ok(skipped),
            // The user saved a file the apply changed while it ran: merge and try again (a
            // few times: they may still be saving).
            Err(PublishError::Changed(paths)) if attempts < 3 => {
                attempts += 1;
                match merge::merge_users_edits(repo, &mut transition, &paths)? {
                    Ok(merged) => notices.push(format!(
                        "you changed {} while git-loaf ran: merged with the reply's change (your edit stays uncommitted)",
                        publish::list(&merged)
                    )),
                    Err(merge::Overlap(reason)) => break Err(reason),
                }
            }
            Err(
                error @ (PublishError::Moved { .. }
                | PublishError::Changed(_)
                | PublishError::IndexLocked(_)),
            ) => break Err(error.to_string()),
            Err(other) => return Err(other.into()),
        }
    };
    let kept = match outcome {
        Ok(skipped) => {
            if !skipped.is_empty() {
                let git = result.git.get_or_insert_with(GitInfo::default);
                git.not_written = skipped.iter().map(|p| p.display().to_string()).collect();
                if let Some(commit) = commit {
                    record(repo, commit, &root, &result, config.notes_outputs)?;
                }
            }
            if commit.is_some() {
                notices.extend(githooks::post_commit(&git_hooks, &root));
            }
            None
        }
        Err(reason) => {
            let kept_commit = match commit {
                Some(commit) => commit,
                // Only ignored files changed: keep a commit holding the stage's state so the
                // kept ref names something (take then replays nothing but is harmless).
                None => write_commit(repo, checkpoint.head_tree, &parents, "loaf: kept")?,
            };
            let refname = refs::keep(repo, &id, kept_commit)?;
            if let Some(git) = result.git.as_mut() {
                git.not_applied = Some(format!(
                    "{reason}; the commit is kept as {refname}: `git loaf take {id}` applies it, `git loaf drop {id}` discards it"
                ));
            }
            record(repo, kept_commit, &root, &result, config.notes_outputs)?;
            Some(Kept { refname, reason })
        }
    };
    Ok(Applied {
        result,
        kept,
        notices,
    })
}

/// Without namespaces, code could change the user's tree directly (the model knows its real
/// path): compare the user's tree with the checkpoint taken before the run, and turn every
/// code-running result into a failure naming what it changed, so nothing claims success for
/// changes that are neither committed nor undoable.
fn report_escapes(
    session: &Session,
    before: &Checkpoint,
    root: &Path,
    result: &mut ExecutionResult,
) -> Result<(), TxError> {
    let repo = &session.repo;
    let now = checkpoint::take(repo)?;
    if now.work_tree == before.work_tree && now.index_tree == before.index_tree {
        return Ok(());
    }
    let mut paths: Vec<String> =
        treediff::changed_paths(repo, Some(before.work_tree), Some(now.work_tree))?
            .into_iter()
            .map(|p| root.join(p).display().to_string())
            .collect();
    if paths.is_empty() {
        paths.push("the index".to_owned());
    }
    let message = format!(
        "changed the user's files directly, outside the transaction (not committed, not undoable by git loaf): {}",
        paths.join(", ")
    );
    for r in result.results.iter_mut().filter(|r| r.action == "exec") {
        r.success = false;
        r.error = Some(match &r.error {
            Some(e) => format!("{e}; {message}"),
            None => message.clone(),
        });
    }
    result.success = false;
    let hooks = result.hook_errors.get_or_insert_with(Default::default);
    hooks
        .after
        .push(format!("code run by this apply {message}"));
    Ok(())
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
    if paths.iter().any(|path| through_symlink(stage, path)) {
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
