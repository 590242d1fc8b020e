//! `git loaf undo` and `git loaf redo` (DESIGN §3): walk the operation log back and forth,
//! restoring HEAD, the index and the working tree exactly, untracked files included.
//!
//! Undo refuses when anything changed since the operation (HEAD moved, files or index
//! edited) or when a commit it would remove is reachable from a remote-tracking ref; `--force`
//! overrides both, and then first saves the user's uncommitted work under
//! `refs/loaf/saved/<id>` so that even a forced undo loses nothing.

use std::path::Path;

use super::{new_id, now_secs};
use crate::git::checkpoint;
use crate::git::oplog::{self, OpEntry, OpKind, UserState};
use crate::git::publish::{self, Transition, crash_point, differing};
use crate::git::session::{Session, TxError};
use crate::git::{Oid, refs};

/// What undo or redo did.
#[derive(Debug)]
pub struct Walked {
    /// The operation undone or re-done.
    pub target: OpEntry,
    /// The new log entry's id.
    pub id: String,
    /// The ref moved, and from/to which commit (`None`: unborn).
    pub ref_name: String,
    /// HEAD before.
    pub from: Option<String>,
    /// HEAD after.
    pub to: Option<String>,
    /// Working tree paths that changed.
    pub paths: Vec<String>,
    /// Whether uncommitted work (a checkpoint) was put back.
    pub restored_uncommitted: bool,
    /// Where forced undo saved the user's uncommitted work, if there was any.
    pub saved: Option<String>,
    /// Things to tell the user on stderr.
    pub notices: Vec<String>,
}

/// Undoes the most recent operation not yet undone in the working tree containing `cwd`.
pub fn undo(cwd: &Path, force: bool) -> Result<Walked, TxError> {
    let session = Session::begin(cwd, "undo")?;
    crash_point("locked");
    let workdir = session.root.display().to_string();
    let entries = oplog::entries(&session.repo)?;
    let Some(target) = oplog::stacks(&entries, &workdir).undoable.pop() else {
        return Err(TxError::Invalid {
            message: "nothing to undo: no git-loaf operation in this working tree is left to undo"
                .into(),
            hint:
                "`git loaf log` lists the AI commits; `git revert` or `git reset` undo other work"
                    .into(),
        });
    };
    crash_point("logged");
    if !force {
        refuse_if_pushed(&session, &target)?;
    }
    crash_point("pushed-checked");
    walk(session, target, OpKind::Undo, force)
}

/// Re-does the most recently undone operation.
pub fn redo(cwd: &Path) -> Result<Walked, TxError> {
    let session = Session::begin(cwd, "redo")?;
    let workdir = session.root.display().to_string();
    let entries = oplog::entries(&session.repo)?;
    let Some(target) = oplog::stacks(&entries, &workdir).redoable.pop() else {
        return Err(TxError::Invalid {
            message: "nothing to redo: no undone git-loaf operation in this working tree (a new apply forgets what was undone before it)".into(),
            hint: "`git loaf undo` undoes the last operation; `git loaf log` lists the AI commits".into(),
        });
    };
    walk(session, target, OpKind::Redo, false)
}

/// Moves from `target`'s after state to its before state (undo) or back (redo).
fn walk(
    mut session: Session,
    target: OpEntry,
    kind: OpKind,
    force: bool,
) -> Result<Walked, TxError> {
    let repo = &session.repo;
    let (expected, wanted) = match kind {
        OpKind::Undo => (target.after.clone(), target.before.clone()),
        _ => (target.before.clone(), target.after.clone()),
    };
    let verb = if kind == OpKind::Undo { "undo" } else { "redo" };
    let (ref_name, head) = refs::head_ref(repo)?;
    if ref_name != target.ref_name {
        return Err(TxError::Refused {
            message: format!(
                "the operation to {verb} ({}) moved {}, but you are now on {}",
                target.id,
                display_ref(&target.ref_name),
                display_ref(&ref_name)
            ),
            hint: format!(
                "switch back (`git switch {}`), then run `git loaf {verb}` again",
                display_ref(&target.ref_name)
            ),
        });
    }
    let head = head.map(|o| o.to_string());
    checkpoint::refuse_intent_to_add(repo).map_err(|paths| TxError::intent_to_add(&paths, verb))?;

    let id = new_id(&target.id);
    let current = checkpoint::take(repo)?;
    let (work, index) = (
        current.work_tree.to_string(),
        current.index_tree.to_string(),
    );
    crash_point("scanned");
    let changed = head != expected.head || work != expected.work || index != expected.index;
    let mut saved = None;
    if changed {
        if !force {
            return Err(refuse_changed(
                &session,
                &target,
                kind,
                head.as_deref(),
                &expected,
            ));
        }
        // Keep what the forced undo moves away from: uncommitted work (as a commit whose
        // parent is HEAD, referenced only from refs/loaf/saved/) or commits made on top of
        // the operation.
        let uncommitted = if current.is_clean() {
            None
        } else {
            Some(current.as_commit(repo, &format!("loaf: uncommitted work saved by {id}"))?)
        };
        let keep = uncommitted.or(match &head {
            Some(h) if head != expected.head => Some(Oid::from_str(h)?),
            _ => None,
        });
        if let Some(commit) = keep {
            saved = Some(refs::save(repo, &id, commit)?);
        }
    }
    let transition = Transition {
        workdir: session.root.clone(),
        ref_name: ref_name.clone(),
        old: head.clone(),
        new: wanted.head.clone(),
        from_work: work.clone(),
        from_index: index.clone(),
        to_work: wanted.work.clone(),
        to_index: wanted.index.clone(),
        message: format!("git-loaf {verb} {}", target.id),
        op: OpEntry {
            id: id.clone(),
            kind,
            target: Some(target.id.clone()),
            time: now_secs(),
            workdir: session.root.display().to_string(),
            ref_name: ref_name.clone(),
            summary: format!("{verb} {}: {}", target.id, target.summary),
            before: UserState {
                head: head.clone(),
                work: work.clone(),
                index: index.clone(),
            },
            after: wanted.clone(),
            // Undo takes back what the operation wrote outside git; redo writes it again.
            extras: if kind == OpKind::Undo {
                target.extras.inverted()
            } else {
                target.extras.clone()
            },
        },
    };
    let skipped = publish::publish(repo, &transition, false)?;
    let mut notices = std::mem::take(&mut session.notices);
    notices.extend(publish::left_alone_notice(&skipped));
    let paths = differing(repo, &work, &wanted.work)?
        .into_iter()
        .map(|p| p.display().to_string())
        .collect();
    let head_tree = checkpoint::commit_tree(repo, wanted.head.as_deref())?;
    Ok(Walked {
        restored_uncommitted: wanted.work != head_tree || wanted.index != head_tree,
        target,
        id,
        ref_name,
        from: head,
        to: wanted.head.clone(),
        paths,
        saved,
        notices,
    })
}

/// Why an undo or redo cannot go ahead when the repository is not as the operation left it,
/// with a next step that fits what changed: commits made since are not "uncommitted
/// changes", and redo has no `--force`.
fn refuse_changed(
    session: &Session,
    target: &OpEntry,
    kind: OpKind,
    head: Option<&str>,
    expected: &UserState,
) -> TxError {
    let (verb, op) = (
        if kind == OpKind::Undo { "undo" } else { "redo" },
        describe(target),
    );
    let head_moved = head != expected.head.as_deref();
    let what = if head_moved {
        format!("HEAD moved (now {}) since", short(head))
    } else {
        "files or the index changed since".to_owned()
    };
    let message = format!("{what} {op} {}; refusing to {verb} it", target.id);
    // Commits made on top of what the operation left: the user committed since.
    let committed_on_top = head_moved
        && match (head, expected.head.as_deref()) {
            (Some(now), Some(then)) => crate::git::commits::descends_from(&session.repo, now, then),
            (Some(_), None) => true,
            _ => false,
        };
    let made_a_commit = target.after.head != target.before.head;
    let hint = match (kind, head_moved) {
        (OpKind::Undo, true) if committed_on_top && made_a_commit => format!(
            "you committed since: `git revert {}` takes back only the AI's commit and keeps yours; or `git loaf undo --force` goes back to before it (your newer commits are saved under refs/loaf/saved/ first)",
            short(target.after.head.as_deref())
        ),
        (OpKind::Undo, true) => format!(
            "go back to {0} (`git reset --keep {0}`) and run `git loaf undo` again, or `git loaf undo --force` (what HEAD points at now is saved under refs/loaf/saved/ first)",
            short(expected.head.as_deref()),
        ),
        (OpKind::Undo, false) => "commit or stash your changes first, or run `git loaf undo --force` (it saves your uncommitted work under refs/loaf/saved/ first)".to_owned(),
        (_, true) if made_a_commit => format!(
            "to bring the AI's commit back on top of where you are now, `git cherry-pick {}`",
            short(target.after.head.as_deref())
        ),
        _ => "put the repository back as undo left it (`git stash -u`), then run `git loaf redo` again".to_owned(),
    };
    TxError::Refused { message, hint }
}

/// Refuses to undo commits that a remote-tracking ref already has: others may have them.
fn refuse_if_pushed(session: &Session, target: &OpEntry) -> Result<(), TxError> {
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

fn describe(entry: &OpEntry) -> &'static str {
    match entry.kind {
        OpKind::Apply => "apply",
        OpKind::Undo => "undo",
        OpKind::Redo => "redo",
        OpKind::Squash => "squash",
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
    oid.map(|o| o.chars().take(7).collect())
        .unwrap_or_else(|| "(unborn)".to_owned())
}
