//! The apply's last steps (docs/apply.md): publish — the branch moved by compare-and-swap, the
//! changed files written, the user's edits made meanwhile merged — then the report, or,
//! when the user's branch or files moved, the commit kept under `refs/loaf/`.

use std::path::PathBuf;

use super::running::RunEnv;
use super::{Applied, Kept, Tx, record};
use crate::git::commit::write_commit;
use crate::git::{Oid, refs};
use crate::notice::{Notice, NoticeKind};
use crate::ops::now_secs;
use crate::report::{ExecutionResult, GitInfo};
use crate::tx::checkpoint::Checkpoint;
use crate::tx::githooks;
use crate::tx::merge;
use crate::tx::oplog::{OpEntry, OpKind, UserState};
use crate::tx::publish::{self, PublishError, Transition};
use crate::tx::session::TxError;
use crate::tx::visible_ignored::Extras;

/// How publish ended: the paths left alone (the user's, changed meanwhile), or why the
/// commit could not be published.
type Outcome = Result<Vec<PathBuf>, String>;

impl Tx<'_> {
    /// The move publish makes, recorded in the operation log: HEAD to the commit (or where
    /// it was, when nothing was committed), the user's files and index from the
    /// checkpoint's to `(staged, to_index)`.
    pub(super) fn transition(
        &self,
        checkpoint: &Checkpoint,
        (staged, to_index): (Oid, Oid),
        commit: Option<Oid>,
        subject: String,
        extras: Extras,
    ) -> Transition {
        let (from_work, from_index) = (checkpoint.work_tree, checkpoint.index_tree);
        let old_head = self.old_head.map(|o| o.to_string());
        let new_head = commit.or(self.old_head).map(|o| o.to_string());
        let (staged, to_index) = (staged.to_string(), to_index.to_string());
        Transition {
            workdir: self.root.clone(),
            ref_name: self.ref_name.clone(),
            old: old_head.clone(),
            new: new_head.clone(),
            from_work: from_work.to_string(),
            from_index: from_index.to_string(),
            to_work: staged.clone(),
            to_index: to_index.clone(),
            message: format!("git-loaf apply {}: {subject}", self.id),
            op: OpEntry {
                id: self.id.clone(),
                kind: OpKind::Apply,
                target: None,
                time: now_secs(),
                workdir: self.root.display().to_string(),
                ref_name: self.ref_name.clone(),
                summary: subject,
                before: UserState {
                    head: old_head,
                    work: from_work.to_string(),
                    index: from_index.to_string(),
                },
                after: UserState {
                    head: new_head,
                    work: staged,
                    index: to_index,
                },
                extras,
                reply_key: self.options.reply_key.clone(),
            },
        }
    }

    /// Publish: the branch and the user's files move, unless the user moved them meanwhile.
    pub(super) fn publish(&mut self, mut transition: Transition) -> Result<Outcome, TxError> {
        let repo = &self.session.repo;
        let mut attempts = 0;
        // Said only once the publish went through: a later refusal makes them untrue.
        let mut merges = Vec::new();
        loop {
            match publish::publish(repo, &transition, true) {
                Ok(skipped) => {
                    self.notices.append(&mut merges);
                    return Ok(Ok(skipped));
                }
                // The user saved a file the apply changed while it ran: merge and try again
                // (a few times: they may still be saving).
                Err(PublishError::Changed(paths)) if attempts < 3 => {
                    attempts += 1;
                    match merge::merge_users_edits(repo, &mut transition, &paths)? {
                        Ok(merged) => merges.push(Notice::new(
                            NoticeKind::YourWork,
                            format!(
                                "you changed {} while git-loaf ran: merged with the reply's change (your edit stays uncommitted)",
                                publish::list(&merged)
                            ),
                        )),
                        Err(merge::Overlap(reason)) => return Ok(Err(reason)),
                    }
                }
                Err(
                    error @ (PublishError::Moved { .. }
                    | PublishError::Changed(_)
                    | PublishError::InTheWay(_)
                    | PublishError::IndexLocked(_)),
                ) => return Ok(Err(error.to_string())),
                Err(other) => return Err(other.into()),
            }
        }
    }

    /// Report: what ran, and where the commit went.
    pub(super) fn report(
        mut self,
        mut result: ExecutionResult,
        outcome: Outcome,
        commit: Option<Oid>,
        checkpoint: &Checkpoint,
        env: &RunEnv,
    ) -> Result<Applied, TxError> {
        let kept = match outcome {
            Ok(skipped) => {
                self.published(&mut result, &skipped, commit, env)?;
                None
            }
            Err(reason) => Some(self.keep(&mut result, reason, commit, checkpoint)?),
        };
        self.config_after(&mut result);
        Ok(Applied {
            result,
            kept,
            notices: self.notices,
        })
    }

    /// loaf.yml after the apply: if the apply changed it, the new text is the reply's (it
    /// waits for the user if it widens anything), and the report says whether a change
    /// waits now. The apply is done: a failure here is a notice, not an error.
    fn config_after(&mut self, result: &mut ExecutionResult) {
        let repo = &self.session.repo;
        let pending = crate::ops::config::note_written(repo, &self.root, self.loaf_yml.as_deref())
            .and_then(|()| crate::ops::config::governing(repo, &self.root));
        match pending {
            Ok(governing) => {
                let pending = governing.pending.map(|p| p.message());
                // The user reads stderr; the model, the report.
                self.notices.extend(
                    pending
                        .iter()
                        .map(|p| Notice::new(NoticeKind::ConfigWaiting, p.as_str())),
                );
                result
                    .git
                    .get_or_insert_with(GitInfo::default)
                    .config_pending = pending;
            }
            Err(error) => self.notices.push(Notice::new(
                NoticeKind::ConfigWaiting,
                format!("could not tell whether loaf.yml changes wait for you: {error}"),
            )),
        }
    }

    /// Published: files the user changed meanwhile were left alone (the record says so),
    /// and the repository's post-commit hook runs, as after `git commit`.
    fn published(
        &mut self,
        result: &mut ExecutionResult,
        skipped: &[PathBuf],
        commit: Option<Oid>,
        env: &RunEnv,
    ) -> Result<(), TxError> {
        if !skipped.is_empty() {
            let git = result.git.get_or_insert_with(GitInfo::default);
            git.not_written = skipped.iter().map(|p| p.display().to_string()).collect();
            if let Some(commit) = commit {
                record(
                    self.repo(),
                    commit,
                    &self.root,
                    result,
                    self.config.notes_outputs,
                )?;
            }
        }
        if commit.is_some() {
            self.notices
                .extend(githooks::post_commit(&env.git_hooks, &self.root));
        }
        Ok(())
    }

    /// Not published: the commit is kept under `refs/loaf/`, and the report's first line
    /// says so, with how to take it.
    fn keep(
        &self,
        result: &mut ExecutionResult,
        reason: String,
        commit: Option<Oid>,
        checkpoint: &Checkpoint,
    ) -> Result<Kept, TxError> {
        let repo = self.repo();
        let kept_commit = match commit {
            Some(commit) => commit,
            // Only ignored files changed: keep a commit holding the stage's state so the
            // kept ref names something (take then replays nothing but is harmless).
            None => write_commit(repo, checkpoint.head_tree, &self.parents(), "loaf: kept")?,
        };
        let id = &self.id;
        let refname = refs::keep(repo, id, kept_commit)?;
        if let Some(git) = result.git.as_mut() {
            git.not_applied = Some(format!(
                "{reason}; the commit is kept as {refname}: `git loaf take {id}` applies it, `git loaf drop {id}` discards it"
            ));
        }
        record(
            repo,
            kept_commit,
            &self.root,
            result,
            self.config.notes_outputs,
        )?;
        Ok(Kept { refname, reason })
    }
}
