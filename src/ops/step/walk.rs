//! The walk a step-forward continues ([`Walk`]): which step-back left HEAD where it is, on
//! which branch, and whether the user moved HEAD or the branch since; and the walk forward
//! itself, with the edits made meanwhile carried into the kept work. The commands are
//! [`super::step_back`] and [`super::step_forward`]; see docs/history.md.

use super::kept::diverged;
use super::{state, walk_of};
use crate::git::Oid;
use crate::ops::now_secs;
use crate::ops::undo::{display_ref, short};
use crate::tx::carry::{self, Work};
use crate::tx::checkpoint::Checkpoint;
use crate::tx::commits::{self, CommitInfo};
use crate::tx::head;
use crate::tx::oplog::{self, OpEntry, OpKind, UserState};
use crate::tx::publish::Transition;
use crate::tx::session::{Session, TxError};

/// The walk a step-forward continues: the undo stack, oldest first, and the newest step of
/// the walk in it, with the branch it walks and that branch's tip.
pub(super) struct Walk {
    stack: Vec<OpEntry>,
    /// Where the walk's newest step is in `stack`.
    end: usize,
    /// The branch it walks (`HEAD` for a detached walk).
    pub(super) branch: String,
    /// That branch's tip, where the walk ends.
    pub(super) tip: Oid,
}

impl Walk {
    /// The walk in effect: the newest step, unless it ended at the tip. Operations made on
    /// top of it (an apply while stepped back) do not end it: its kept work is still owed.
    pub(super) fn in_effect(session: &Session) -> Result<Walk, TxError> {
        let workdir = session.root.display().to_string();
        // The undo stack, oldest first (read from the top down, then turned round).
        let mut stack = oplog::undoable(&session.repo, &workdir)?.collect::<Result<Vec<_>, _>>()?;
        stack.reverse();
        // A restore of saved work changed only files, as an edit would: the walk goes on.
        stack.retain(|e| e.kind != OpKind::Restore);
        let end = stack
            .iter()
            .rposition(|e| matches!(e.kind, OpKind::StepBack | OpKind::StepForward))
            .filter(|&at| !walk_finished(&stack[at]));
        let Some(end) = end else {
            return Err(not_back(
                "no `git loaf step-back` is in effect in this working tree".into(),
            ));
        };
        let (branch, tip) = walk_of(&stack[end])?;
        Ok(Walk {
            stack,
            end,
            branch,
            tip,
        })
    }

    /// The walk's newest step.
    fn last(&self) -> &OpEntry {
        &self.stack[self.end]
    }

    /// HEAD, where the walk's last step left it; a refusal (the kept work saved) when an
    /// operation or git moved HEAD, or the branch, since.
    pub(super) fn refuse_moved(
        &self,
        session: &Session,
        ref_name: &str,
        head: Option<Oid>,
    ) -> Result<Oid, TxError> {
        let last = self.last();
        if let Some(since) = self.stack.get(self.end + 1..).and_then(<[OpEntry]>::last) {
            let why = format!(
                "`git loaf {}` ran while stepped back ({}), so HEAD is no longer where the last step left it",
                since.kind.command(),
                since.summary
            );
            return Err(diverged(
                session,
                &self.stack[..=self.end],
                &self.branch,
                why,
            )?);
        }
        let Some(head) = head else {
            return Err(not_back("HEAD has no commit".into()));
        };
        if ref_name != "HEAD" {
            let why = format!(
                "HEAD is on {} again (moved by git, not by `git loaf step-forward`)",
                display_ref(ref_name)
            );
            return Err(self.diverged(session, why)?);
        }
        let last_at = last.after.head.as_deref().map(Oid::from_str).transpose()?;
        if last_at != Some(head) {
            let why = head_moved(session, last, last_at, head, &self.branch);
            return Err(self.diverged(session, why)?);
        }
        if self.branch != "HEAD"
            && let Some(now) = repo_ref(session, &self.branch)
            && now != self.tip
        {
            let why = format!(
                "{} moved since you stepped back (from {} to {})",
                display_ref(&self.branch),
                short(Some(&self.tip.to_string())),
                short(Some(&now.to_string()))
            );
            return Err(self.diverged(session, why)?);
        }
        Ok(head)
    }

    /// The step-back that left HEAD here, which holds the child and the work kept for it;
    /// the child, and how many commits back from the tip it is.
    pub(super) fn kept_for(
        &self,
        session: &Session,
        head: Oid,
    ) -> Result<(&OpEntry, Oid, usize), TxError> {
        let last = self.last();
        let Some(kept) = self.stack.iter().rev().find(|e| {
            e.kind == OpKind::StepBack
                && (&e.ref_name, &e.target) == (&last.ref_name, &last.target)
                && last_at_is(e, head)
        }) else {
            return Err(not_back(format!(
                "already at {}'s tip",
                display_ref(&self.branch)
            )));
        };
        let child = Oid::from_str(kept.before.head.as_deref().unwrap_or_default())?;
        let back = head::first_parent_distance(&session.repo, self.tip, child)?;
        let Some(back) = back else {
            let why = format!(
                "{} is no longer on the history of {}'s tip {}",
                short(kept.before.head.as_deref()),
                display_ref(&self.branch),
                short(Some(&self.tip.to_string()))
            );
            return Err(self.diverged(session, why)?);
        };
        Ok((kept, child, back))
    }

    /// The user's work `cp` on `head` carried into the work `kept` holds for the child: the
    /// kept work, and what the child gets.
    pub(super) fn carry(
        &self,
        repo: &crate::git::Repository,
        head: Oid,
        kept: &OpEntry,
        cp: &Checkpoint,
    ) -> Result<(Work, carry::Carried), TxError> {
        let theirs = Work {
            work: Oid::from_str(&kept.before.work)?,
            index: Oid::from_str(&kept.before.index)?,
        };
        let left = self.left_behind(head)?;
        let ours = Work {
            work: cp.work_tree,
            index: cp.index_tree,
        };
        let carried = if ours == left {
            carry::Carried {
                into: theirs,
                conflicts: Vec::new(),
                marked: Vec::new(),
            }
        } else {
            carry::carry(
                repo,
                left,
                ours,
                theirs,
                ("your edits", "kept by step-back"),
            )?
        };
        Ok((theirs, carried))
    }

    /// The changes kept for this commit (none after a step-back onto it; what step-back
    /// kept after a step-forward onto it) stay behind with it, recorded in the log;
    /// everything else, edits made here and edits carried here, goes on to the child.
    fn left_behind(&self, head: Oid) -> Result<Work, TxError> {
        let last = self.last();
        let own = match last.kind {
            OpKind::StepForward => self
                .stack
                .iter()
                .rev()
                .find(|e| {
                    e.kind == OpKind::StepBack
                        && (&e.ref_name, &e.target) == (&last.ref_name, &last.target)
                        && e.before.head.as_deref() == Some(head.to_string().as_str())
                })
                .map_or(&last.after, |e| &e.before),
            _ => &last.after,
        };
        Ok(Work {
            work: Oid::from_str(&own.work)?,
            index: Oid::from_str(&own.index)?,
        })
    }

    /// The move onto `child`, with the files and index `to`, as the log records it.
    pub(super) fn forward(
        &self,
        session: &Session,
        id: &str,
        cp: &Checkpoint,
        (head, child): (Oid, &CommitInfo),
        to: &Work,
    ) -> Transition {
        Transition {
            workdir: session.root.clone(),
            ref_name: "HEAD".to_owned(),
            old: Some(head.to_string()),
            new: Some(child.id.to_string()),
            from_work: cp.work_tree.to_string(),
            from_index: cp.index_tree.to_string(),
            to_work: to.work.to_string(),
            to_index: to.index.to_string(),
            message: format!("git-loaf step-forward {id}"),
            op: OpEntry {
                id: id.to_owned(),
                kind: OpKind::StepForward,
                target: Some(self.tip.to_string()),
                time: now_secs(),
                workdir: session.root.display().to_string(),
                ref_name: self.branch.clone(),
                summary: format!(
                    "step forward to {} {}",
                    short(Some(&child.id.to_string())),
                    child.summary
                ),
                before: state(cp),
                after: UserState {
                    head: Some(child.id.to_string()),
                    work: to.work.to_string(),
                    index: to.index.to_string(),
                },
                extras: Default::default(),
                reply_key: None,
            },
        }
    }

    /// [`diverged`] for this walk.
    fn diverged(&self, session: &Session, why: String) -> Result<TxError, TxError> {
        diverged(session, &self.stack, &self.branch, why)
    }
}

/// The refusal when no walk can be stepped forward.
fn not_back(why: String) -> TxError {
    TxError::Invalid {
        message: format!("nothing to step forward to: {why}"),
        hint: "`git loaf step-back` walks back through the branch's commits; step-forward returns"
            .into(),
    }
}

/// Why HEAD is not where the walk's `last` step left it (`last_at`): a commit made on top,
/// or HEAD moved elsewhere.
fn head_moved(
    session: &Session,
    last: &OpEntry,
    last_at: Option<Oid>,
    head: Oid,
    branch: &str,
) -> String {
    let committed = last_at.is_some_and(|at| {
        commits::descends_from(&session.repo, &head.to_string(), &at.to_string())
    });
    if committed {
        format!(
            "a commit was made on top of {} while stepped back (HEAD is now {}), so HEAD is no longer on {}'s history",
            short(last.after.head.as_deref()),
            short(Some(&head.to_string())),
            display_ref(branch)
        )
    } else {
        format!(
            "HEAD moved (now {}) since the last step left it at {}",
            short(Some(&head.to_string())),
            short(last.after.head.as_deref())
        )
    }
}

/// Whether a step ended its walk: a step-forward onto the tip.
pub(super) fn walk_finished(step: &OpEntry) -> bool {
    step.kind == OpKind::StepForward && step.after.head.is_some() && step.after.head == step.target
}

pub(super) fn last_at_is(entry: &OpEntry, head: Oid) -> bool {
    entry.after.head.as_deref() == Some(head.to_string().as_str())
}

fn repo_ref(session: &Session, name: &str) -> Option<Oid> {
    crate::tx::publish::current(&session.repo, name).and_then(|o| Oid::from_str(&o).ok())
}
