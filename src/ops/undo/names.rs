//! How undo and the other history operations name what they walk: an operation's kind, a
//! ref, a short commit id, the ref HEAD is on in a state.

use crate::tx::oplog::{OpEntry, OpKind, UserState};

/// Whether `kind` is a step, which moves HEAD along a branch's history without moving the
/// branch: undoing one removes no commit from anything, so there is nothing pushed to check.
pub(super) fn is_step(kind: OpKind) -> bool {
    matches!(kind, OpKind::StepBack | OpKind::StepForward)
}

/// The ref HEAD is on in `state`, one of `entry`'s two states: the ref the entry moved; for
/// a step, its branch when the state is at the branch's tip (HEAD attached), else `HEAD`.
pub fn state_ref(entry: &OpEntry, state: &UserState) -> String {
    if is_step(entry.kind) && (entry.ref_name == "HEAD" || state.head != entry.target) {
        "HEAD".to_owned()
    } else {
        entry.ref_name.clone()
    }
}

pub(super) fn describe(entry: &OpEntry) -> &'static str {
    match entry.kind {
        OpKind::Apply => "apply",
        OpKind::Undo => "undo",
        OpKind::Redo => "redo",
        OpKind::StepBack => "step-back",
        OpKind::StepForward => "step-forward",
        OpKind::UndoTo => "the operations back to",
        OpKind::Squash => "squash",
        OpKind::Restore => "restore",
        OpKind::Review => "review",
    }
}

/// `main` for `refs/heads/main`; `detached HEAD` for `HEAD`.
pub fn display_ref(name: &str) -> String {
    match name.strip_prefix("refs/heads/") {
        Some(branch) => branch.to_owned(),
        None if name == "HEAD" => "detached HEAD".to_owned(),
        None => name.to_owned(),
    }
}

/// The first 7 digits of a commit id, or `(unborn)`.
pub fn short(oid: Option<&str>) -> String {
    oid.map_or_else(
        || "(unborn)".to_owned(),
        |o| crate::git::short_id(o).to_owned(),
    )
}
