//! The apply's commit (docs/apply.md): snapshot the stage → the commit's tree (HEAD's plus the
//! paths the apply changed) → the repository's pre-commit hook → the commit with trailers,
//! through commit-msg and signing → its note and report.

use std::path::PathBuf;

use super::running::RunEnv;
use super::staging::Staging;
use super::{Tx, record, write_targets};
use crate::git::commit::{Trailers, message, write_commit};
use crate::git::sign::{self, SignError};
use crate::git::{Oid, treediff};
use crate::notice::{Notice, NoticeKind};
use crate::ops::exec_changes::StageWatch;
use crate::report::ExecutionResult;
use crate::tx::checkpoint::Checkpoint;
use crate::tx::githooks::{self, Planned, Refusal};
use crate::tx::ownership::{self, Sides, UserAfter};
use crate::tx::publish::crash_point;
use crate::tx::session::TxError;
use crate::tx::stage::Stage;
use crate::tx::visible_ignored::{self, Extras};

impl Tx<'_> {
    /// The stage as the run left it, and the commit's tree: HEAD's, with the reply's change
    /// of each path it changed laid on the committed version (docs/apply.md, "What an apply
    /// commits, and what it leaves alone"); the user's uncommitted work stays uncommitted. Also the
    /// files whose own uncommitted lines the reply changed, which the commit carries (named with
    /// the lines).
    pub(super) fn snapshot(
        &self,
        staging: &Staging,
        checkpoint: &Checkpoint,
        result: &ExecutionResult,
        watch: &StageWatch<'_>,
    ) -> Result<(Planned, Vec<String>), TxError> {
        let repo = self.repo();
        let stage = &staging.stage;
        let touched = super::touched(result, &self.config, &self.root, stage.path());
        // The scan after the last exec, when nothing wrote since, is the stage as it is now.
        let files = match watch.last_scan() {
            Some(scanned) => scanned,
            None => stage.snapshot(&touched, repo)?,
        };
        let staged = match staging.partial {
            // The stage held the user's work only where the reply looked: what the run
            // changed there, laid on the user's whole working tree.
            Some(start) if start != files => {
                staging.files.set(Some(files));
                let changed: Vec<PathBuf> =
                    treediff::changed_paths(repo, Some(start), Some(files))?
                        .into_iter()
                        .collect();
                crate::git::treebuild::tree_with_entries(
                    repo,
                    checkpoint.work_tree,
                    files,
                    &changed,
                )?
            }
            Some(_) => checkpoint.work_tree,
            None => files,
        };
        crash_point("snapshot");
        let changed: Vec<PathBuf> =
            treediff::changed_paths(repo, Some(checkpoint.work_tree), Some(staged))?
                .into_iter()
                .collect();
        let committed = ownership::commit_tree(repo, sides(checkpoint, staged), &changed)?;
        Ok((
            Planned {
                tree: committed.tree,
                staged,
                changed: committed.changed,
            },
            committed.carried,
        ))
    }

    /// pre-commit runs against exactly this commit, as `git commit` runs it; what it
    /// rewrites is committed too. A refusal publishes nothing (the run stays in flight: the next
    /// reset scans).
    pub(super) fn pre_commit(
        &self,
        stage: &Stage,
        env: &RunEnv,
        planned: Planned,
    ) -> Result<Result<Planned, Refusal>, TxError> {
        let place = self.place(env);
        Ok(githooks::pre_commit(
            &env.git_hooks,
            self.repo(),
            stage,
            place,
            planned,
        )?)
    }

    /// What git will not commit but the user's tree gets at publish: ignored files the
    /// actions wrote, folders dir_create made.
    pub(super) fn extras(
        &self,
        stage: &Stage,
        env: &RunEnv,
        result: &ExecutionResult,
        tree: Oid,
    ) -> Result<Extras, TxError> {
        Ok(visible_ignored::extras(
            self.repo(),
            stage.path(),
            tree,
            &write_targets(result, &self.root, stage.path()),
            &env.view.copied(),
        )?)
    }

    /// The user's working tree and index after the apply: the commit with their
    /// uncommitted and staged changes laid back on it, and the files where that kept work
    /// the reply's code had reverted or deleted (told to the model and the user).
    pub(super) fn user_after(
        &mut self,
        checkpoint: &Checkpoint,
        planned: &Planned,
    ) -> Result<UserAfter, TxError> {
        let after =
            ownership::user_after(self.repo(), sides(checkpoint, planned.staged), planned.tree)?;
        if !after.kept.is_empty() {
            self.notices.push(Notice::new(
                NoticeKind::YourWork,
                format!(
                    "kept your uncommitted changes in {}: the reply's code reverted or deleted them; they stay in your working tree, uncommitted",
                    list(&after.kept)
                ),
            ));
        }
        Ok(after)
    }

    /// The files whose own uncommitted lines the reply changed, which the commit takes
    /// along: the report tells the model; the user, at the terminal, is told too.
    pub(super) fn carried_uncommitted(&mut self, carried: Vec<String>) -> Vec<String> {
        if !carried.is_empty() {
            self.notices.push(Notice::new(
                NoticeKind::YourWork,
                format!(
                    "the commit includes uncommitted lines of yours that the reply changed: {}; `git loaf undo` gives them back uncommitted",
                    carried.join(", ")
                ),
            ));
        }
        carried
    }

    /// The commit's subject: loaf.yml's `commit_message_format` with what the change is for
    /// in it (the caller's `message`, else the reply's opening sentence, else the summary
    /// of what its actions did), fitted to git's 72 characters.
    pub(super) fn subject(
        &self,
        reply: &str,
        result: &ExecutionResult,
        changed: &[PathBuf],
    ) -> String {
        let intent = self
            .options
            .message
            .clone()
            .or_else(|| crate::report::intent::opening_sentence(reply));
        crate::report::subject::subject_line(
            &self.config.commit_message_format,
            intent.as_deref(),
            result,
            &self.root,
            changed,
        )
    }

    /// The commit's parents: HEAD (none on an unborn branch).
    pub(super) fn parents(&self) -> Vec<Oid> {
        self.old_head.into_iter().collect()
    }

    /// Commit with trailers, through the commit-msg hooks and signing (either may refuse);
    /// the stage's HEAD moves to it. Only ignored files or empty folders changed: nothing to
    /// commit, the branch stays (`None`).
    pub(super) fn commit(
        &self,
        staging: &Staging,
        env: &RunEnv,
        planned: &Planned,
        subject: &str,
        result: &ExecutionResult,
    ) -> Result<Result<Option<Oid>, Refusal>, TxError> {
        if planned.changed.is_empty() {
            staging.reset_head()?;
            return Ok(Ok(None));
        }
        let repo = self.repo();
        let trailers = Trailers {
            apply: Some(self.id.clone()),
            base: self.old_head,
            result: Some(result.to_trailer_json(&self.root)),
            assisted_by: self.options.model.clone(),
        };
        let text = message(subject, &trailers);
        let place = self.place(env);
        let hooked = (planned.tree, planned.staged);
        let text =
            match githooks::commit_message(&env.git_hooks, &staging.stage, place, hooked, text)? {
                Ok(text) => text,
                Err(refusal) => return Ok(Err(refusal)),
            };
        let signed = sign::write_commit(
            repo,
            planned.tree,
            &self.parents(),
            &text,
            &self.options.sign,
        );
        let commit = match signed {
            Ok(commit) => commit,
            Err(SignError::Git(error)) => return Err(error.into()),
            Err(error) => return Ok(Err(Refusal::signing(&error.to_string()))),
        };
        crash_point("commit");
        // The stage holds the user's work (or the part of it the reply needed) plus the
        // apply's: record that as its HEAD, so the next apply moves it by the difference.
        let files = staging.files.get().unwrap_or(planned.staged);
        let stage_head = if files == planned.tree {
            commit
        } else {
            write_commit(repo, files, &[commit], "loaf: stage")?
        };
        staging.stage.set_head(stage_head)?;
        Ok(Ok(Some(commit)))
    }

    /// The commit's note and local report ([`record`]), and the config that keeps the note
    /// with it.
    pub(super) fn note(
        &mut self,
        commit: Option<Oid>,
        result: &ExecutionResult,
    ) -> Result<(), TxError> {
        let Some(commit) = commit else {
            return Ok(());
        };
        record(
            self.repo(),
            commit,
            &self.root,
            result,
            self.config.notes_outputs,
        )?;
        // The note must follow the commit through `git commit --amend` and `git rebase`.
        // A config that cannot be written costs the note's survival, not the apply.
        if let Ok(true) = crate::git::commit::ensure_notes_rewrite(self.repo()) {
            self.notices.push(Notice::new(
                NoticeKind::Notes,
                "set notes.rewriteRef = refs/notes/loaf in this repository's config, so `git commit --amend` and `git rebase` keep the git-loaf records",
            ));
        }
        Ok(())
    }
}

/// The user's state in `checkpoint` and the stage's result `staged`, as ownership weighs them.
fn sides(checkpoint: &Checkpoint, staged: Oid) -> Sides {
    Sides {
        head: checkpoint.head_tree,
        work: checkpoint.work_tree,
        index: checkpoint.index_tree,
        staged,
    }
}

/// Paths as a message lists them.
fn list(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    names.join(", ")
}
