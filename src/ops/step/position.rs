//! Where a walk of step-backs left HEAD, as `git loaf status` shows it.

use std::path::Path;

use super::walk::{last_at_is, walk_finished};
use super::walk_of;
use crate::git::refs;
use crate::tx::oplog::{self, OpKind};
use crate::tx::session::TxError;
use crate::tx::{commits, head};

/// Where a walk of step-backs left HEAD, for `git loaf status`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SteppedBack {
    /// The branch walked (`refs/heads/<name>`, or `HEAD` when the walk began detached).
    pub branch: String,
    /// Its tip when the walk began.
    pub tip: String,
    /// The commit HEAD is on.
    pub at: String,
    /// Its subject.
    pub subject: String,
    /// How many commits back from the tip HEAD is (`None`: HEAD left the tip's history).
    pub back: Option<usize>,
    /// Whether HEAD is where the last step left it (else step-forward refuses).
    pub in_place: bool,
}

/// The walk in effect in the working tree `root` of `repo`, with HEAD detached; `None` when
/// no walk is in effect or HEAD is on a branch again.
pub fn stepped_back(
    repo: &crate::git::Repository,
    root: &Path,
) -> Result<Option<SteppedBack>, TxError> {
    let (ref_name, Some(head)) = refs::head_ref(repo)? else {
        return Ok(None);
    };
    if ref_name != "HEAD" {
        return Ok(None);
    }
    let workdir = root.display().to_string();
    // The newest step is found from the top of the stack down, past restores only.
    let Some(last) = oplog::undoable(repo, &workdir)?
        .find(|e| !e.as_ref().is_ok_and(|e| e.kind == OpKind::Restore))
        .transpose()?
    else {
        return Ok(None);
    };
    if !matches!(last.kind, OpKind::StepBack | OpKind::StepForward) || walk_finished(&last) {
        return Ok(None);
    }
    let (branch, tip) = walk_of(&last)?;
    Ok(Some(SteppedBack {
        back: head::first_parent_distance(repo, tip, head)?,
        in_place: last_at_is(&last, head),
        branch,
        tip: tip.to_string(),
        at: head.to_string(),
        subject: commits::read(repo, head)?.summary,
    }))
}
