//! The restore engine of undo and redo: one walk over an operation, from the state it
//! left to the state it found (or back), as a publish of HEAD, the index and the files
//! (docs/history.md).

use std::path::PathBuf;

use super::names::{display_ref, short, state_ref};
use super::refusals::{refuse_between, refuse_changed};
use super::since;
use super::{Run, SavedBy};
use crate::git::{Oid, refs};
use crate::notice::{Notice, NoticeKind};
use crate::ops::now_secs;
use crate::tx::carry::Work;
use crate::tx::checkpoint::{self, Checkpoint};
use crate::tx::oplog::{OpEntry, OpKind, UserState};
use crate::tx::publish::{self, Transition};
use crate::tx::session::{Session, TxError};
use crate::tx::{head, saved};

/// One walk over `target` (an operation, or the entry standing for an `undo --to` run):
/// from the state it left to the state it found (undo), or back (redo).
pub(super) struct Move {
    pub(super) target: OpEntry,
    pub(super) kind: OpKind,
    pub(super) undoing: bool,
    /// `undo` or `redo`, as the messages say it.
    pub(super) verb: &'static str,
    /// The state the walk starts from, and the ref HEAD is on there.
    pub(super) expected: UserState,
    pub(super) expected_ref: String,
    /// The state the walk ends in, and the ref HEAD is on there.
    pub(super) wanted: UserState,
    pub(super) wanted_ref: String,
}

impl Move {
    pub(super) fn over(target: OpEntry, kind: OpKind) -> Move {
        let undoing = kind != OpKind::Redo;
        let (expected, wanted) = if undoing {
            (target.after.clone(), target.before.clone())
        } else {
            (target.before.clone(), target.after.clone())
        };
        let (expected_ref, wanted_ref) =
            (state_ref(&target, &expected), state_ref(&target, &wanted));
        Move {
            target,
            kind,
            undoing,
            verb: if undoing { "undo" } else { "redo" },
            expected,
            expected_ref,
            wanted,
            wanted_ref,
        }
    }

    /// An apply `git loaf take` landed goes back to being kept when its take is undone (so
    /// that `take` and `drop` work on it again), and is no longer kept when it is re-done.
    pub(super) fn keep_taken(&self, repo: &crate::git::Repository) -> Result<(), TxError> {
        let kept = (self.target.kind == OpKind::Apply)
            .then_some(self.target.target.as_deref())
            .flatten()
            .and_then(|commit| Oid::from_str(commit).ok());
        match kept {
            Some(kept) if self.undoing => {
                refs::keep(repo, &self.target.id, kept)?;
            }
            Some(_) => refs::drop_kept_if_any(repo, &self.target.id)?,
            None => {}
        }
        Ok(())
    }

    /// Whether the walk changes what HEAD is attached to (a step's): HEAD itself moves,
    /// detached, and is attached to the branch afterwards.
    pub(super) fn across(&self) -> bool {
        self.expected_ref != self.wanted_ref
    }

    /// The refusal when HEAD is on another ref than the operation left it on.
    pub(super) fn refuse_other_ref(&self, ref_name: &str) -> Result<(), TxError> {
        if ref_name == self.expected_ref {
            return Ok(());
        }
        let (verb, expected_ref) = (self.verb, &self.expected_ref);
        Err(TxError::Refused {
            message: format!(
                "the operation to {verb} ({}) left you on {}, but you are now on {}",
                self.target.id,
                display_ref(expected_ref),
                display_ref(ref_name)
            ),
            hint: if expected_ref == "HEAD" {
                format!(
                    "go back (`git switch --detach {}`), then run `git loaf {verb}` again",
                    short(self.expected.head.as_deref())
                )
            } else {
                format!(
                    "switch back (`git switch {}`), then run `git loaf {verb}` again",
                    display_ref(expected_ref)
                )
            },
        })
    }

    /// When anything changed since the operation (`now` is not the state it left), or the
    /// user worked between the operations of a run: refused, unless `force`; then what the
    /// walk moves away from is saved first, and where is returned.
    pub(super) fn refuse_or_save(
        &self,
        session: &Session,
        run: &Run,
        force: bool,
        id: &str,
        current: &Checkpoint,
        now: &UserState,
    ) -> Result<Option<SavedBy>, TxError> {
        let (repo, expected) = (&session.repo, &self.expected);
        let changed_now =
            now.head != expected.head || now.work != expected.work || now.index != expected.index;
        if !changed_now && run.between.is_empty() {
            return Ok(None);
        }
        if !force && changed_now {
            let paths = since::changed_paths(repo, expected, &now.work, &now.index);
            let head = now.head.as_deref();
            return Err(refuse_changed(
                session,
                &self.target,
                self.kind,
                head,
                expected,
                &paths,
            ));
        }
        if !force {
            return Err(refuse_between(&self.target, &run.between));
        }
        // Keep what the forced undo moves away from: uncommitted work (saved work on HEAD,
        // made on the state the operation left, for `git loaf restore`) or commits made on
        // top of the operation.
        let head = now.head.as_deref().map(Oid::from_str).transpose()?;
        // What the user changed since (the work between the operations is saved apart).
        let changed_files = now.work != expected.work || now.index != expected.index;
        if changed_files && !current.is_clean() {
            saved::save_work(
                repo,
                id,
                &format!("loaf: uncommitted work saved by {} --force {id}", self.verb),
                head,
                work_of(expected)?,
                Work {
                    work: current.work_tree,
                    index: current.index_tree,
                },
            )?;
            return Ok(Some(SavedBy::Work { id: id.to_owned() }));
        }
        // HEAD holds the commits made since, or between the operations of a run.
        match head {
            Some(h) if now.head != expected.head || run.between.iter().any(|b| b.head_moved) => {
                Ok(Some(SavedBy::Commits {
                    name: refs::save(repo, id, h)?,
                }))
            }
            _ => Ok(None),
        }
    }

    /// The move publish makes from `now` (HEAD on `ref_name`) to the wanted state, as the
    /// operation log records it.
    pub(super) fn transition(
        &self,
        session: &Session,
        id: &str,
        ref_name: &str,
        now: &UserState,
    ) -> Transition {
        let (target, verb, kind) = (&self.target, self.verb, self.kind);
        Transition {
            workdir: session.root.clone(),
            ref_name: if self.across() {
                "HEAD".to_owned()
            } else {
                ref_name.to_owned()
            },
            old: now.head.clone(),
            new: self.wanted.head.clone(),
            from_work: now.work.clone(),
            from_index: now.index.clone(),
            to_work: self.wanted.work.clone(),
            to_index: self.wanted.index.clone(),
            message: format!("git-loaf {verb} {}", target.id),
            op: OpEntry {
                id: id.to_owned(),
                kind,
                target: Some(target.id.clone()),
                time: now_secs(),
                workdir: session.root.display().to_string(),
                ref_name: ref_name.to_owned(),
                summary: if kind == OpKind::UndoTo {
                    format!("undo --to {}: {}", target.id, target.summary)
                } else {
                    format!("{verb} {}: {}", target.id, target.summary)
                },
                before: now.clone(),
                after: self.wanted.clone(),
                // Undo takes back what the operation wrote outside git; redo writes it again.
                extras: if self.undoing {
                    target.extras.inverted()
                } else {
                    target.extras.clone()
                },
                reply_key: None,
            },
        }
    }

    /// Publish: the files left alone, and whether HEAD was attached to the wanted branch.
    pub(super) fn publish(
        &self,
        repo: &crate::git::Repository,
        transition: &Transition,
        ref_name: &str,
    ) -> Result<(Vec<PathBuf>, bool), TxError> {
        if !self.across() {
            return Ok((publish::publish(repo, transition, false)?, false));
        }
        let detach_from = (ref_name != "HEAD").then_some(ref_name);
        let attach_to = (self.wanted_ref != "HEAD").then_some(self.wanted_ref.as_str());
        Ok(head::publish_across(
            repo,
            transition,
            false,
            detach_from,
            attach_to,
        )?)
    }

    /// Saved work follows the operation that moved it: undoing a restore lists the work
    /// again, undoing a step-back (its kept work back in the files) puts it away; redoing
    /// either does the opposite.
    pub(super) fn follow_saved(&self, repo: &crate::git::Repository) -> Result<(), TxError> {
        let target = &self.target;
        let restored = target.target.as_deref();
        match (target.kind, self.undoing, restored) {
            (OpKind::Restore, true, Some(id)) => saved::bring_back(repo, id)?,
            (OpKind::Restore, false, Some(id)) => saved::put_away(repo, id)?,
            (OpKind::StepBack, true, _) => saved::put_away(repo, &target.id)?,
            (OpKind::StepBack, false, _) => saved::bring_back(repo, &target.id)?,
            _ => {}
        }
        Ok(())
    }

    /// The notice when HEAD should have been attached to the wanted branch but the branch
    /// moved meanwhile.
    pub(super) fn left_detached(&self, attached: bool) -> Option<Notice> {
        let wanted_ref = &self.wanted_ref;
        (self.across() && wanted_ref != "HEAD" && !attached).then(|| {
            Notice::new(
                NoticeKind::Head,
                format!(
                    "{} moved since, so HEAD stays detached at {}: `git switch {}` goes to where it is now",
                    display_ref(wanted_ref),
                    short(self.wanted.head.as_deref()),
                    display_ref(wanted_ref)
                ),
            )
        })
    }

    /// Uncommitted work came back only if the files or index actually changed: undoing a
    /// squash with a dirty tree moves HEAD alone.
    pub(super) fn restored_uncommitted(
        &self,
        repo: &crate::git::Repository,
        now: &UserState,
    ) -> Result<bool, TxError> {
        let wanted = &self.wanted;
        let head_tree = checkpoint::commit_tree(repo, wanted.head.as_deref())?;
        Ok((wanted.work != head_tree || wanted.index != head_tree)
            && (wanted.work != now.work || wanted.index != now.index))
    }
}

/// A state's files and index as trees.
pub(super) fn work_of(state: &UserState) -> Result<Work, TxError> {
    Ok(Work {
        work: Oid::from_str(&state.work)?,
        index: Oid::from_str(&state.index)?,
    })
}
