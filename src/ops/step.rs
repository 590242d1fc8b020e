//! `git loaf step-back` and `git loaf step-forward` (docs/history.md): walking back through a
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
mod walk;

pub use position::{SteppedBack, stepped_back};

use super::undo::short;
use super::{new_id, now_secs};
use crate::git::{Oid, refs};
use crate::notice::Notice;
use crate::tx::carry::{self, Work};
use crate::tx::checkpoint::{self, Checkpoint};
use crate::tx::oplog::{self, OpEntry, OpKind, UserState};
use crate::tx::publish::{PublishError, Transition, differing, left_alone_notice};
use crate::tx::session::{Session, TxError};
use crate::tx::{commits, head, saved};
use kept::{kept_aside_by, save_kept_aside, save_unmerged};
use walk::Walk;

/// What a step did.
#[derive(Debug)]
pub struct Stepped {
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
    pub notices: Vec<Notice>,
}

/// `git loaf step-back`: keeps the uncommitted changes for the current commit and moves
/// HEAD, detached, to its first parent.
pub(crate) fn step_back(cwd: &Path) -> Result<Stepped, TxError> {
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
    })
}

/// `git loaf step-forward`: moves HEAD one commit toward the tip the last step-back
/// remembered, bringing back the changes kept for that commit.
pub(crate) fn step_forward(cwd: &Path) -> Result<Stepped, TxError> {
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

/// The newest step in effect (not undone), if the last operation was one.
fn last_step(stack: &[OpEntry]) -> Option<&OpEntry> {
    stack
        .last()
        .filter(|e| matches!(e.kind, OpKind::StepBack | OpKind::StepForward))
}

/// The branch a step walks and its tip.
fn walk_of(step: &OpEntry) -> Result<(String, Oid), TxError> {
    let tip = step.target.as_deref().unwrap_or_default();
    Ok((step.ref_name.clone(), Oid::from_str(tip)?))
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
