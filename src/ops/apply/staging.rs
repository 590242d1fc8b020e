//! The apply's first steps (docs/apply.md): with the lock held, load the loaf.yml that governs and
//! note where HEAD is → checkpoint the user's uncommitted work → bring the stage to it.

use std::cell::Cell;

use super::{ApplyOptions, Tx, placing};
use crate::git::commit::write_commit;
use crate::git::{Oid, refs};
use crate::ops::check::CheckedReply;
use crate::ops::new_id;
use crate::tx::checkpoint::{self, Checkpoint};
use crate::tx::publish::crash_point;
use crate::tx::session::{Session, TxError};
use crate::tx::stage::Stage;

/// The stage, brought to the user's state for this apply.
pub(super) struct Staging {
    pub(super) stage: Stage,
    /// The commit it started from (the user's HEAD plus uncommitted work, or, for file
    /// actions alone, the part of it they need: [`placing`]).
    start: Oid,
    /// When the stage holds only part of the user's work: the tree of `start`, which the run's
    /// changes are measured from before they are laid on the user's working tree.
    pub(super) partial: Option<Oid>,
    /// What the stage's files hold after the snapshot, when that differs from the tree the
    /// commit's changes were measured on (a partial stage): its next HEAD.
    pub(super) files: Cell<Option<Oid>>,
}

impl<'a> Tx<'a> {
    /// The transaction, begun under `session`'s lock: loaf.yml read, an id drawn, HEAD noted.
    pub(super) fn begin(
        session: Session,
        reply: &str,
        options: &'a ApplyOptions,
    ) -> Result<Self, TxError> {
        // A commit needs an author: without one, say so before any code runs.
        crate::git::identity::known(&session.repo).map_err(|missing| TxError::Invalid {
            message: missing.message(),
            hint: missing.hint(),
        })?;
        let mut notices = session.notices.clone();
        let root = session.root.clone();
        // The loaf.yml the user accepted, not a wider one a reply wrote (docs/apply.md).
        let governing = crate::ops::config::governing(&session.repo, &root)?;
        let config = governing.config;
        notices.extend(config.notices.iter().cloned());
        let config_pending = governing.pending.map(|p| p.message());
        let id = new_id(reply);
        let (ref_name, old_head) = refs::head_ref(&session.repo)?;
        Ok(Tx {
            session,
            options,
            root,
            config,
            loaf_yml: governing.working,
            config_pending,
            id,
            ref_name,
            old_head,
            notices,
        })
    }

    /// Checkpoint: the user's uncommitted state, recorded as objects (never as a commit on
    /// the branch), so that actions apply to exactly what the model saw.
    pub(super) fn checkpoint(&self) -> Result<Checkpoint, TxError> {
        let repo = self.repo();
        checkpoint::refuse_intent_to_add(repo)
            .map_err(|paths| TxError::intent_to_add(&paths, "apply"))?;
        let checkpoint = checkpoint::take(repo).map_err(TxError::from_checkpoint)?;
        crash_point("checkpoint");
        Ok(checkpoint)
    }

    /// Stage: the linked worktree, reset to what the user has: all of it when code runs
    /// (`runs_code`), else what the reply's file actions need of it ([`placing`]).
    pub(super) fn stage(
        &self,
        checkpoint: &Checkpoint,
        reply: &CheckedReply<'_>,
        runs_code: bool,
    ) -> Result<Staging, TxError> {
        let repo = self.repo();
        // The stage starts from what the user has (HEAD plus uncommitted work, as a commit
        // that only the stage's HEAD refers to); an unborn branch with nothing gets an empty
        // root.
        let start = match self.old_head {
            None if checkpoint.is_clean() => {
                write_commit(repo, checkpoint.head_tree, &[], "loaf: empty start")?
            }
            _ => checkpoint.as_commit(repo, "loaf: stage start")?,
        };
        // Made for file actions alone, the stage is made at HEAD: they need of the user's
        // work only what they name, placed below.
        let made_at = match self.old_head {
            Some(head) if !runs_code => head,
            _ => start,
        };
        let stage = Stage::open_or_create(repo, made_at)?;
        let crashed = stage.begin_run();
        if crashed {
            // A crashed apply's exec may have left processes behind (without namespaces).
            let _ = crate::exec::sandbox::kill_recorded(self.session.common_dir());
        }
        let (start, partial) = if runs_code {
            (start, None)
        } else {
            self.partial_start(&stage, checkpoint, reply, start)?
        };
        // The reset records the run as in flight before it moves anything, so that one a
        // crash interrupts is scanned next time too.
        stage.reset_to(start, crashed)?;
        crash_point("stage");
        Ok(Staging {
            stage,
            start,
            partial,
            files: Cell::new(None),
        })
    }

    /// For file actions alone: the commit the stage starts from (where it is, with the user's
    /// work at the paths the reply names) and its tree, when it is not `full` (the whole of
    /// the user's work).
    fn partial_start(
        &self,
        stage: &Stage,
        checkpoint: &Checkpoint,
        reply: &CheckedReply<'_>,
        full: Oid,
    ) -> Result<(Oid, Option<Oid>), TxError> {
        let repo = self.repo();
        let current = stage.head()?;
        let current_tree = repo.find_commit(current)?.tree_id();
        let work = checkpoint.work_tree;
        let tree = placing::partial_start(repo, &self.root, reply, current_tree, work)?;
        Ok(match tree {
            None => (full, None),
            Some(tree) if tree == work => (full, None),
            Some(tree) if tree == current_tree => (current, Some(tree)),
            Some(tree) => {
                let parents: Vec<Oid> = self.old_head.into_iter().collect();
                let commit = write_commit(repo, tree, &parents, "loaf: stage start")?;
                (commit, Some(tree))
            }
        })
    }
}

impl Staging {
    /// Nothing to commit: the stage's HEAD goes back to its start, and the run is over.
    /// When its files are not that start (`same_files` false: code reverted the user's work
    /// there, which the user keeps), the run stays in flight, so the next apply scans them.
    pub(super) fn unchanged(&self, same_files: bool) -> Result<(), TxError> {
        self.reset_head()?;
        if same_files {
            self.finish();
        }
        Ok(())
    }

    /// The stage's HEAD back to its start (no commit is made).
    pub(super) fn reset_head(&self) -> Result<(), TxError> {
        Ok(self.stage.set_head(self.start)?)
    }

    /// The stage holds what was committed: the next apply need not scan it fully.
    pub(super) fn finish(&self) {
        // Failing, the run stays in flight: the next apply scans the stage (slower, never
        // wrong).
        let _ = self.stage.end_run();
    }
}
