//! `git loaf step-back` and `git loaf step-forward` (DESIGN §3): walking back through a
//! branch's commits and forward again, one commit at a time, with the uncommitted changes
//! of each commit kept for it.
//!
//! step-back: lock → checkpoint the uncommitted work (untracked files included, staged and
//! unstaged apart) → HEAD detached at the first parent, files and index that commit's with
//! the user's work carried in every file the step does not touch (as `git switch` carries
//! local changes) → log the step, whose before state holds the work → the work in files the
//! step does touch saved under `refs/loaf/saved/<step id>` for `git loaf restore`. The branch
//! is never moved: it stays at the tip, which the step records.
//!
//! step-forward: lock → find the step-back that left HEAD here → refuse if the branch moved
//! or HEAD left the chain → carry the user's edits made meanwhile into the kept work →
//! HEAD on the child, files and index as carried → at the tip, HEAD re-attached to the branch.
//!
//! Both are ordinary operations of the log: `git loaf undo` takes a step back exactly.
//! `kept` saves the work the steps keep aside for `git loaf restore`; `position` says
//! where a walk left HEAD, for `git loaf status`.

use std::collections::BTreeSet;
use std::path::Path;

mod kept;
mod position;

pub use position::{SteppedBack, stepped_back};

use super::undo::{display_ref, short};
use super::{new_id, now_secs};
use crate::git::{Oid, refs};
use crate::tx::carry::{self, Work};
use crate::tx::checkpoint::{self, Checkpoint};
use crate::tx::commits::CommitInfo;
use crate::tx::oplog::{self, OpEntry, OpKind, UserState};
use crate::tx::publish::{PublishError, Transition, differing, left_alone_notice};
use crate::tx::session::{Session, TxError};
use crate::tx::{commits, head, saved};
use kept::{diverged, kept_aside_by, save_kept_aside, save_unmerged};

/// What a step did.
#[derive(Debug)]
pub struct Stepped {
    /// The step's id in the operation log.
    pub id: String,
    /// The commit HEAD is on now, and its subject.
    pub at: (Oid, String),
    /// The branch walked (`refs/heads/<name>`, or `HEAD` when the walk began detached).
    pub branch: String,
    /// Its tip.
    pub tip: Oid,
    /// How many commits back from the tip HEAD is now (0: at the tip).
    pub back: usize,
    /// step-back: the paths whose changes were kept aside (the step changes those files).
    /// step-forward: the paths brought back.
    pub paths: Vec<String>,
    /// step-back: the paths whose changes stay in place (the step does not touch them).
    pub carried: Vec<String>,
    /// step-forward: paths where the user's edits and the kept ones could not both stay.
    pub conflicts: Vec<String>,
    /// step-forward: the conflicts written with conflict markers (both sides in the file).
    pub marked: Vec<String>,
    /// The id of the saved work `git loaf restore` puts back: step-back's work kept aside,
    /// or step-forward's kept version of the files where the user's version stayed.
    pub saved: Option<String>,
    /// Whether HEAD is attached to the branch again.
    pub attached: bool,
    /// Things to tell the user on stderr.
    pub notices: Vec<String>,
}

/// `git loaf step-back`: keeps the uncommitted changes for the current commit and moves
/// HEAD, detached, to its first parent.
pub fn step_back(cwd: &Path) -> Result<Stepped, TxError> {
    let mut session = Session::begin(cwd, "step-back")?;
    let repo = &session.repo;
    let (ref_name, head) = refs::head_ref(repo)?;
    let Some(head) = head else {
        return Err(TxError::Invalid {
            message: "there is no commit to step back from (the branch has no commit yet)".into(),
            hint: "commit something first".into(),
        });
    };
    let commit = commits::read(repo, head)?;
    let Some(parent) = commit.parent else {
        return Err(TxError::Invalid {
            message: format!(
                "{} {} is the first commit: there is nothing before it to step back to",
                short(Some(&head.to_string())),
                commit.summary
            ),
            // Detached HEAD is where earlier steps leave the user: the way back is forward.
            hint: if ref_name == "HEAD" {
                "`git loaf step-forward` goes back toward the tip".into()
            } else {
                "the branch has only this commit; nothing to step back through".into()
            },
        });
    };
    checkpoint::refuse_intent_to_add(repo)
        .map_err(|paths| TxError::intent_to_add(&paths, "step-back"))?;
    // Carry on a walk already begun (HEAD where the last step left it), or begin one here.
    let workdir = session.root.display().to_string();
    // Only the top of the undo stack matters here (past restores, which change only files):
    // read just it, whatever the log's length.
    let stack: Vec<OpEntry> = oplog::undoable(repo, &workdir)?
        .find(|e| !e.as_ref().is_ok_and(|e| e.kind == OpKind::Restore))
        .transpose()?
        .into_iter()
        .collect();
    let (branch, tip) = match last_step(&stack) {
        Some(last) if ref_name == "HEAD" && last.after.head == Some(head.to_string()) => {
            walk_of(last)?
        }
        _ => (ref_name.clone(), head),
    };
    let cp = checkpoint::take(repo).map_err(TxError::from_checkpoint)?;
    let parent_tree = commits::read(repo, parent)?.tree;
    let across = carry::across(repo, work_of(&cp), cp.head_tree, parent_tree)?;
    let (parent_work, parent_index) = (across.into.work, across.into.index);
    let id = new_id(&format!("step-back {head}"));
    let transition = Transition {
        workdir: session.root.clone(),
        ref_name: "HEAD".to_owned(),
        old: Some(head.to_string()),
        new: Some(parent.to_string()),
        from_work: cp.work_tree.to_string(),
        from_index: cp.index_tree.to_string(),
        to_work: parent_work.to_string(),
        to_index: parent_index.to_string(),
        message: format!("git-loaf step-back {id}"),
        op: OpEntry {
            id: id.clone(),
            kind: OpKind::StepBack,
            target: Some(tip.to_string()),
            time: now_secs(),
            workdir,
            ref_name: branch.clone(),
            summary: format!(
                "step back from {} {}",
                short(Some(&head.to_string())),
                commit.summary
            ),
            before: state(&cp),
            after: UserState {
                head: Some(parent.to_string()),
                work: parent_work.to_string(),
                index: parent_index.to_string(),
            },
            extras: Default::default(),
            reply_key: None,
        },
    };
    let detach_from = (ref_name != "HEAD").then_some(ref_name.as_str());
    let (skipped, _) = head::publish_across(repo, &transition, true, detach_from, None)
        .map_err(|e| refuse_publish(e, "step-back"))?;
    let mut notices = std::mem::take(&mut session.notices);
    notices.extend(left_alone_notice(&skipped));
    let back = head::first_parent_distance(repo, tip, parent)?.unwrap_or(0);
    let saved = save_kept_aside(repo, &transition.op, cp.head_tree)?;
    Ok(Stepped {
        at: (parent, commits::read(repo, parent)?.summary),
        branch,
        tip,
        back,
        paths: shown(&across.kept),
        carried: shown(&across.carried),
        conflicts: Vec::new(),
        marked: Vec::new(),
        saved: saved.then_some(id.clone()),
        attached: false,
        notices,
        id,
    })
}

/// `git loaf step-forward`: moves HEAD one commit toward the tip the last step-back
/// remembered, bringing back the changes kept for that commit.
pub fn step_forward(cwd: &Path) -> Result<Stepped, TxError> {
    let mut session = Session::begin(cwd, "step-forward")?;
    let (ref_name, head) = refs::head_ref(&session.repo)?;
    let walk = Walk::in_effect(&session)?;
    let head = walk.refuse_moved(&session, &ref_name, head)?;
    let (kept, child, back) = walk.kept_for(&session, head)?;
    let repo = &session.repo;
    checkpoint::refuse_intent_to_add(repo)
        .map_err(|paths| TxError::intent_to_add(&paths, "step-forward"))?;
    let cp = checkpoint::take(repo).map_err(TxError::from_checkpoint)?;
    let (theirs, carried) = walk.carry(repo, head, kept, &cp)?;
    let id = new_id(&format!("step-forward {head}"));
    let child_info = commits::read(repo, child)?;
    let transition = walk.forward(&session, &id, &cp, (head, &child_info), &carried.into);
    let attach_to = (back == 0 && walk.branch != "HEAD").then_some(walk.branch.as_str());
    let (skipped, attached) = head::publish_across(repo, &transition, true, None, attach_to)
        .map_err(|e| refuse_publish(e, "step-forward"))?;
    let mut notices = std::mem::take(&mut session.notices);
    notices.extend(left_alone_notice(&skipped));
    // The work kept aside for the child is back in its files: nothing left to restore,
    // but the kept version of a file where the user's stayed (saved once the step is made,
    // so that a refused step leaves nothing listed).
    saved::put_away(repo, &kept.id)?;
    let saved = save_unmerged(repo, &id, kept, (child, child_info.tree, theirs), &carried)?;
    // What step-back kept aside for the child is what comes back (the rest stayed in place).
    let brought = match kept_aside_by(repo, kept, child_info.tree)? {
        Some(kept_aside) => kept_paths(
            &session,
            &Checkpoint {
                head: Some(child),
                head_tree: child_info.tree,
                work_tree: kept_aside.work,
                index_tree: kept_aside.index,
            },
        )?,
        None => Vec::new(),
    };
    Ok(Stepped {
        id,
        at: (child, child_info.summary),
        branch: walk.branch,
        tip: walk.tip,
        back,
        paths: brought,
        carried: Vec::new(),
        conflicts: shown(&carried.conflicts),
        marked: shown(&carried.marked),
        saved,
        attached,
        notices,
    })
}

/// The walk a step-forward continues: the undo stack, oldest first, and the newest step of
/// the walk in it, with the branch it walks and that branch's tip.
struct Walk {
    stack: Vec<OpEntry>,
    /// Where the walk's newest step is in `stack`.
    end: usize,
    branch: String,
    tip: Oid,
}

impl Walk {
    /// The walk in effect: the newest step, unless it ended at the tip. Operations made on
    /// top of it (an apply while stepped back) do not end it: its kept work is still owed.
    fn in_effect(session: &Session) -> Result<Walk, TxError> {
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
    fn refuse_moved(
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
    fn kept_for(&self, session: &Session, head: Oid) -> Result<(&OpEntry, Oid, usize), TxError> {
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
    fn carry(
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
    fn forward(
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

/// The newest step in effect (not undone), if the last operation was one.
fn last_step(stack: &[OpEntry]) -> Option<&OpEntry> {
    stack
        .last()
        .filter(|e| matches!(e.kind, OpKind::StepBack | OpKind::StepForward))
}

/// Whether a step ended its walk: a step-forward onto the tip.
fn walk_finished(step: &OpEntry) -> bool {
    step.kind == OpKind::StepForward && step.after.head.is_some() && step.after.head == step.target
}

/// The branch a step walks and its tip.
fn walk_of(step: &OpEntry) -> Result<(String, Oid), TxError> {
    let tip = step.target.as_deref().unwrap_or_default();
    Ok((step.ref_name.clone(), Oid::from_str(tip)?))
}

fn last_at_is(entry: &OpEntry, head: Oid) -> bool {
    entry.after.head.as_deref() == Some(head.to_string().as_str())
}

fn repo_ref(session: &Session, name: &str) -> Option<Oid> {
    crate::tx::publish::current(&session.repo, name).and_then(|o| Oid::from_str(&o).ok())
}

fn work_of(cp: &Checkpoint) -> Work {
    Work {
        work: cp.work_tree,
        index: cp.index_tree,
    }
}

fn shown(paths: &[std::path::PathBuf]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

fn state(cp: &Checkpoint) -> UserState {
    UserState {
        head: cp.head.map(|h| h.to_string()),
        work: cp.work_tree.to_string(),
        index: cp.index_tree.to_string(),
    }
}

/// The paths where `cp` differs from its HEAD, in the files or staged.
fn kept_paths(session: &Session, cp: &Checkpoint) -> Result<Vec<String>, TxError> {
    let repo = &session.repo;
    let tree = cp.head_tree.to_string();
    let mut paths: BTreeSet<String> = BTreeSet::new();
    for other in [cp.work_tree, cp.index_tree] {
        paths.extend(
            differing(repo, &tree, &other.to_string())?
                .into_iter()
                .map(|p| p.display().to_string()),
        );
    }
    Ok(paths.into_iter().collect())
}

/// A publish that found the user changing things meanwhile is a refusal (nothing changed).
fn refuse_publish(error: PublishError, command: &str) -> TxError {
    match error {
        PublishError::Changed(_) | PublishError::Moved { .. } => TxError::Refused {
            message: format!("{error}; nothing was changed"),
            hint: format!("run `git loaf {command}` again"),
        },
        other => TxError::Publish(other),
    }
}
