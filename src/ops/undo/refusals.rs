//! When undo or redo must not go ahead, and what it says: the repository changed since the
//! operation, work in between that `undo --to` would pass over, commits already pushed
//! (docs/history.md).

use super::names::{describe, short};
use super::since::{Between, name_paths};
use crate::git::{Oid, refs};
use crate::tx::carry::Work;
use crate::tx::oplog::{OpEntry, OpKind, UserState};
use crate::tx::saved;
use crate::tx::session::{Session, TxError};

/// Why an undo or redo cannot go ahead when the repository is not as the operation left it,
/// with a next step that fits what changed: commits made since are not "uncommitted
/// changes", and redo has no `--force`.
pub(super) fn refuse_changed(
    session: &Session,
    target: &OpEntry,
    kind: OpKind,
    head: Option<&str>,
    expected: &UserState,
    paths: &[String],
) -> TxError {
    let (verb, op) = (
        if kind == OpKind::Redo { "redo" } else { "undo" },
        describe(target),
    );
    let head_moved = head != expected.head.as_deref();
    let what = match (head_moved, paths.is_empty()) {
        (true, true) => format!("HEAD moved (now {}) since", short(head)),
        (true, false) => format!(
            "HEAD moved (now {}) and {} changed since",
            short(head),
            name_paths(paths)
        ),
        (false, true) => "files or the index changed since".to_owned(),
        (false, false) => format!("{} changed since", name_paths(paths)),
    };
    let message = format!("{what} {op} {}; refusing to {verb} it", target.id);
    // Commits made on top of what the operation left: the user committed since.
    let committed_on_top = head_moved
        && match (head, expected.head.as_deref()) {
            (Some(now), Some(then)) => crate::tx::commits::descends_from(&session.repo, now, then),
            (Some(_), None) => true,
            _ => false,
        };
    let made_a_commit = target.after.head != target.before.head;
    // undo --to refuses as undo does.
    let kind = if kind == OpKind::UndoTo {
        OpKind::Undo
    } else {
        kind
    };
    let hint = match (kind, head_moved) {
        // The operation left the branch unborn: there is no commit to revert or go back to.
        (OpKind::Undo, true) if expected.head.is_none() => "you committed since on the branch it left empty: `git loaf undo --force` goes back to before it (your commits are saved under refs/loaf/saved/ first)".to_owned(),
        (OpKind::Undo, true) if committed_on_top && made_a_commit => format!(
            "you committed since: `git revert {}` takes back only the AI's commit and keeps yours; or `git loaf undo --force` goes back to before it (your newer commits are saved under refs/loaf/saved/ first)",
            short(target.after.head.as_deref())
        ),
        (OpKind::Undo, true) => format!(
            "go back to {0} (`git reset --keep {0}`) and run `git loaf undo` again, or `git loaf undo --force` (what HEAD points at now is saved under refs/loaf/saved/ first)",
            short(expected.head.as_deref()),
        ),
        (OpKind::Undo, false) => "commit or stash your changes first, or run `git loaf undo --force` (it saves your uncommitted work first, for `git loaf restore`)".to_owned(),
        (_, true) if made_a_commit => format!(
            "to bring the AI's commit back on top of where you are now, `git cherry-pick {}`",
            short(target.after.head.as_deref())
        ),
        _ => "put the repository back as undo left it (`git stash -u`), then run `git loaf redo` again".to_owned(),
    };
    TxError::Refused { message, hint }
}

/// Why `undo --to` cannot go back past work the user did between the operations it walks
/// back (the newest such change is named; going back only to the operation after it is
/// safe).
pub(super) fn refuse_between(target: &OpEntry, between: &[Between]) -> TxError {
    let all: Vec<String> = between.iter().flat_map(|b| b.paths.clone()).collect();
    let newest = between.last();
    let later = newest.map_or(target.id.as_str(), |b| b.later.as_str());
    let what = match (between.iter().any(|b| b.head_moved), all.is_empty()) {
        (true, true) => "you committed".to_owned(),
        (true, false) => format!("you committed and changed {}", name_paths(&all)),
        (false, _) => format!("you changed {}", name_paths(&all)),
    };
    TxError::Refused {
        message: format!(
            "{what} between the operations back to {}: undoing them all would drop it; refusing to undo them",
            target.id
        ),
        hint: format!(
            "`git loaf undo --to {later}` goes back only as far as that work allows; or `git loaf undo --to {} --force` (it saves your work first, for `git loaf restore`)",
            target.id
        ),
    }
}

/// Refuses to undo commits that a remote-tracking ref already has: others may have them.
pub(super) fn refuse_if_pushed(session: &Session, target: &OpEntry) -> Result<(), TxError> {
    let Some(after) = target.after.head.as_deref() else {
        return Ok(());
    };
    let before = target
        .before
        .head
        .as_deref()
        .map(Oid::from_str)
        .transpose()?;
    if let Some((commit, name)) = refs::first_pushed(&session.repo, Oid::from_str(after)?, before)?
    {
        return Err(TxError::Refused {
            message: format!(
                "commit {} of {} {} is already on {name}: undoing it would rewrite published history",
                short(Some(&commit.to_string())),
                describe(target),
                target.id
            ),
            hint: "use `git revert` to undo published work, or `git loaf undo --force` if you will force-push".into(),
        });
    }
    Ok(())
}

/// A forced `undo --to` goes back past what the user did between its operations: each such
/// change saved as `<id>-<n>`, for `git loaf restore`.
pub(super) fn save_between(
    repo: &crate::git::Repository,
    id: &str,
    between: &mut [Between],
) -> Result<(), TxError> {
    for (n, b) in between.iter_mut().enumerate() {
        let state = |work: &str, index: &str| -> Result<Work, TxError> {
            Ok(Work {
                work: Oid::from_str(work)?,
                index: Oid::from_str(index)?,
            })
        };
        let (from, to) = (
            state(&b.from_work, &b.from_index)?,
            state(&b.to_work, &b.to_index)?,
        );
        if from == to {
            continue; // only HEAD moved: the commits are saved with the undo itself
        }
        let saved_id = format!("{id}-{}", n + 1);
        let why = format!(
            "loaf: what you did between {} and {}, saved by undo --to --force {id}",
            b.earlier, b.later
        );
        saved::save_work(repo, &saved_id, &why, None, from, to)?;
        b.saved = Some(saved_id);
    }
    Ok(())
}
