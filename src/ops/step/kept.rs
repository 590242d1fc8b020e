//! The work the steps keep aside, saved under `refs/loaf/saved/<id>` for `git loaf restore`:
//! a step-back's work in the files it changes, a step-forward's kept version where the user's
//! stayed, and a walk's kept work when it cannot step forward.

use crate::git::{Oid, treebuild};
use crate::ops::undo::display_ref;
use crate::tx::carry::{self, Work};
use crate::tx::oplog::{OpEntry, OpKind, UserState};
use crate::tx::session::{Session, TxError};
use crate::tx::{commits, saved};

/// Nothing may be lost when the two could not be merged: where the user's version stayed in
/// the file (no conflict markers), the kept version (`theirs`) is saved for `git loaf
/// restore` under the step's id, which is returned.
pub(super) fn save_unmerged(
    repo: &crate::git::Repository,
    id: &str,
    kept: &OpEntry,
    (child, child_tree, theirs): (Oid, Oid, Work),
    carried: &carry::Carried,
) -> Result<Option<String>, TxError> {
    let unmarked: Vec<_> = carried
        .conflicts
        .iter()
        .filter(|p| !carried.marked.contains(p))
        .cloned()
        .collect();
    if unmarked.is_empty() {
        return Ok(None);
    }
    let with = |tree: Oid| treebuild::tree_with_entries(repo, child_tree, tree, &unmarked);
    let work = Work {
        work: with(theirs.work)?,
        index: with(theirs.index)?,
    };
    let base = Work {
        work: child_tree,
        index: child_tree,
    };
    let why = format!(
        "loaf: changes kept by step-back {} that step-forward {id} could not merge with yours",
        kept.id
    );
    saved::save_work(repo, id, &why, Some(child), base, work)?;
    Ok(Some(id.to_owned()))
}

/// After a step-back: the work it kept aside (in the files it changes), saved for `git loaf
/// restore` under the step's id; whether there was any.
pub(super) fn save_kept_aside(
    repo: &crate::git::Repository,
    step: &OpEntry,
    head_tree: Oid,
) -> Result<bool, TxError> {
    let Some(kept) = kept_aside_by(repo, step, head_tree)? else {
        return Ok(false);
    };
    let base = Work {
        work: head_tree,
        index: head_tree,
    };
    let head = step.before.head.as_deref().map(Oid::from_str).transpose()?;
    let why = format!("loaf: your work in files step-back {} changed", step.id);
    saved::save_work(repo, &step.id, &why, head, base, kept)?;
    Ok(true)
}

/// The work `step` (a step-back off a commit whose tree is `head_tree`) kept aside.
pub(super) fn kept_aside_by(
    repo: &crate::git::Repository,
    step: &OpEntry,
    head_tree: Oid,
) -> Result<Option<Work>, TxError> {
    let work = |state: &UserState| -> Result<Work, TxError> {
        Ok(Work {
            work: Oid::from_str(&state.work)?,
            index: Oid::from_str(&state.index)?,
        })
    };
    Ok(carry::kept_aside(
        repo,
        head_tree,
        work(&step.before)?,
        work(&step.after)?,
    )?)
}

/// The refusal when the walk's history changed: the changes kept aside by the walk's
/// step-backs are saved under `refs/loaf/saved/<step id>` (the log keeps them too) and the
/// message names the `git loaf restore` that puts them back.
pub(super) fn diverged(
    session: &Session,
    stack: &[OpEntry],
    branch: &str,
    why: String,
) -> Result<TxError, TxError> {
    let mut saved = Vec::new();
    for step in stack.iter().rev() {
        if !matches!(step.kind, OpKind::StepBack | OpKind::StepForward) {
            break;
        }
        let (Some(at), true) = (step.before.head.as_deref(), step.kind == OpKind::StepBack) else {
            continue;
        };
        let head_tree = commits::read(&session.repo, Oid::from_str(at)?)?.tree;
        // Saved when the step was made (a log from before that: saved now).
        if saved::read(&session.repo, &step.id)?.is_some()
            || save_kept_aside(&session.repo, step, head_tree)?
        {
            saved.push(format!("`git loaf restore {}`", step.id));
        }
    }
    let mut hint = if branch == "HEAD" {
        "nothing was changed; carry on from here with git as usual".to_owned()
    } else {
        format!(
            "nothing was changed; `git switch {}` goes back to the branch as it is now (a commit you made here: `git switch -c <new-branch>` first keeps it)",
            display_ref(branch)
        )
    };
    if !saved.is_empty() {
        hint.push_str(&format!(
            "; the changes step-back kept aside are saved: {} puts them back into your files (`git loaf saved` lists them)",
            saved.join(", ")
        ));
    }
    Ok(TxError::Refused {
        message: format!("cannot step forward: {why}"),
        hint,
    })
}
