//! The operation log: every loaf operation (apply, undo, redo) that changed something, newest
//! last, so that undo can restore exactly the state before one and redo can re-do it.
//!
//! It lives in the git dir as a chain of commits under `refs/loaf/oplog` rather than as a
//! file: appending is one compare-and-swap of that ref (a crash cannot leave half an entry),
//! and the chain keeps every object an entry needs alive against `git gc` — the commits
//! before and after (as extra parents) and the trees of the user's working tree and index (in
//! the entry commit's tree). Only the first-parent chain is the log.
//!
//! Undo and redo need the top of a working tree's undo or redo stack, not the whole log:
//! each entry commit also records, in `stacks.json`, where every working tree's two stacks
//! stand after it, as persistent linked lists of small node blobs (the `stacks` module), so that
//! undo reads a handful of objects whatever the log's length. A log written before that
//! (no `stacks.json` at its tip) is read by replaying it whole, and rewritten once, with the
//! stacks, by the next append.

pub mod gc;
mod stacks;

pub use stacks::{StackWalk, redoable, undoable};

use git2::{Oid, Repository, Signature};
use serde::{Deserialize, Serialize};

use crate::tx::ignored_changes::Extras;

/// The ref holding the newest entry.
pub(crate) const OPLOG_REF: &str = "refs/loaf/oplog";
/// The file in an entry commit's tree holding the entry as JSON.
const ENTRY_FILE: &str = "entry.json";
/// What starts the names of the trees an entry commit keeps alive (the user's states).
const KEEP_PREFIX: &str = "keep-";

/// What an operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    /// `git loaf apply`.
    Apply,
    /// `git loaf undo` of the operation named by `target`.
    Undo,
    /// `git loaf redo` of the operation named by `target`.
    Redo,
    /// `git loaf step-back`: HEAD detached at the first parent, the uncommitted changes kept
    /// as the before state. `ref_name` is the branch whose history is walked (`HEAD` when
    /// none) and `target` its tip when the walk began: HEAD is attached to that branch in a
    /// state exactly when the state's head is the tip.
    StepBack,
    /// `git loaf step-forward`: one commit toward the tip, the changes kept for it brought
    /// back; `ref_name` and `target` as for [`OpKind::StepBack`].
    StepForward,
    /// `git loaf undo --to`: every operation back to and including `target` undone in one
    /// step (its after state is `target`'s before state); undoing it re-does them all.
    UndoTo,
    /// `git loaf squash`: the branch moved to one commit holding a run of others; the
    /// working tree and index are the same before and after.
    Squash,
    /// `git loaf restore`: saved work (`refs/loaf/saved/<target>`) put back into the files
    /// and index; HEAD is the same before and after.
    Restore,
    /// `git loaf review`: hunks of an AI commit rejected (`target`), the branch rewritten or
    /// given a revert commit, the working tree following.
    Review,
}

impl OpKind {
    /// The command that made an entry of this kind, for messages (`undo --to`).
    pub fn command(self) -> &'static str {
        match self {
            OpKind::Apply => "apply",
            OpKind::Undo => "undo",
            OpKind::Redo => "redo",
            OpKind::StepBack => "step-back",
            OpKind::StepForward => "step-forward",
            OpKind::UndoTo => "undo --to",
            OpKind::Squash => "squash",
            OpKind::Restore => "restore",
            OpKind::Review => "review",
        }
    }
}

/// The user's state on one side of an operation: HEAD (absent on an unborn branch) and the
/// trees of the working tree and the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserState {
    /// The commit the branch (or detached HEAD) points at.
    pub head: Option<String>,
    /// The working tree (untracked, non-ignored files included).
    pub work: String,
    /// The index.
    pub index: String,
}

/// One operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpEntry {
    /// The operation's id (an apply's id is its `Loaf-Apply`).
    pub id: String,
    /// What it was.
    pub kind: OpKind,
    /// For undo and redo: the operation undone or re-done; for a step, the branch's tip; for
    /// an apply that `git loaf take` landed, the kept commit it took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Seconds since the Unix epoch.
    pub time: i64,
    /// The working tree it ran in (linked worktrees share one log).
    pub workdir: String,
    /// The ref it moved: `refs/heads/<branch>`, or `HEAD` when detached.
    pub ref_name: String,
    /// One line for people: the commit subject.
    pub summary: String,
    /// The state before.
    pub before: UserState,
    /// The state after.
    pub after: UserState,
    /// What it changed besides HEAD, index and tracked files: ignored files the actions
    /// wrote, folders they made (undo inverts them).
    #[serde(default, skip_serializing_if = "Extras::is_empty")]
    pub extras: Extras,
    /// For an apply started by `git loaf watch`: the key of the reply's blocks, so that the
    /// watcher never runs the same reply twice, across restarts too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_key: Option<String>,
}

/// The entries, newest first.
pub fn entries(repo: &Repository) -> Result<Vec<OpEntry>, git2::Error> {
    walk(repo).collect()
}

/// The entries, newest first, read one by one as they are asked for: finding a recent entry
/// costs what lies between it and the newest, not the whole log.
pub fn walk(repo: &Repository) -> Walk<'_> {
    Walk {
        repo,
        next: repo.refname_to_id(OPLOG_REF).ok(),
    }
}

/// The iterator [`walk`] returns.
pub struct Walk<'r> {
    repo: &'r Repository,
    next: Option<Oid>,
}

impl Iterator for Walk<'_> {
    type Item = Result<OpEntry, git2::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let id = self.next.take()?;
            let commit = match self.repo.find_commit(id) {
                Ok(commit) => commit,
                Err(e) => return Some(Err(e)),
            };
            let file = match commit.tree() {
                Ok(tree) => tree.get_name(ENTRY_FILE).map(|e| e.id()),
                Err(e) => return Some(Err(e)),
            };
            // No entry file: the root that starts the chain.
            let file = file?;
            self.next = commit.parent_id(0).ok();
            // An entry this version cannot read (written by a newer one) is skipped, not
            // fatal.
            if let Some(entry) = read_entry(self.repo, file) {
                return Some(Ok(entry));
            }
        }
    }
}

/// The entry stored in blob `file`, if this version can read it.
fn read_entry(repo: &Repository, file: Oid) -> Option<OpEntry> {
    let blob = repo.find_blob(file).ok()?;
    serde_json::from_slice::<OpEntry>(blob.content()).ok()
}

/// The newest entry's id, if any (to tell whether a crashed operation got as far as logging).
pub(crate) fn newest_id(repo: &Repository) -> Result<Option<String>, git2::Error> {
    let Ok(id) = repo.refname_to_id(OPLOG_REF) else {
        return Ok(None);
    };
    let commit = repo.find_commit(id)?;
    let tree = commit.tree()?;
    Ok(tree
        .get_name(ENTRY_FILE)
        .and_then(|e| repo.find_blob(e.id()).ok())
        .and_then(|blob| serde_json::from_slice::<OpEntry>(blob.content()).ok())
        .map(|e| e.id))
}

/// Why the operation log cannot be used: its ref names something that is not an entry.
#[derive(Debug, thiserror::Error)]
#[error("git-loaf's operation log ({OPLOG_REF}) is damaged: it points at {target}, {why}")]
pub struct Damaged {
    /// What the ref names.
    pub target: String,
    /// What is wrong with it.
    pub why: String,
}

/// Checks that the log can take an entry: `refs/loaf/oplog` is absent (no log yet) or names
/// a commit whose tree and stacks can be read. Called before anything is published, so that
/// a damaged log is refused up front rather than found after the user's branch moved.
pub fn check(repo: &Repository) -> Result<(), Damaged> {
    let Ok(reference) = repo.find_reference(OPLOG_REF) else {
        return Ok(());
    };
    let damaged = |target: String, why: &str| Damaged {
        target,
        why: why.to_owned(),
    };
    let Some(tip) = reference.resolve().ok().and_then(|r| r.target()) else {
        return Err(damaged(
            "nothing".into(),
            "a ref that resolves to no object",
        ));
    };
    let object = repo
        .find_object(tip, None)
        .map_err(|_| damaged(tip.to_string(), "an object missing from the repository"))?;
    if object.kind() != Some(git2::ObjectType::Commit) {
        let kind = object.kind().map_or("unknown", |k| k.str());
        return Err(damaged(
            tip.to_string(),
            &format!("a {kind}, not a log entry commit"),
        ));
    }
    let readable = repo
        .find_commit(tip)
        .and_then(|c| c.tree().map(drop))
        .and_then(|()| stacks::State::at(repo, tip).map(drop));
    readable.map_err(|e| {
        damaged(
            tip.to_string(),
            &format!("an entry that cannot be read ({})", e.message()),
        )
    })
}

/// Appends `entry`. The caller holds the repository lock; the ref is still moved by
/// compare-and-swap so that a bug cannot drop an entry silently.
pub fn append(repo: &Repository, entry: &OpEntry) -> Result<Oid, git2::Error> {
    let prepared = prepare(repo, entry)?;
    record(repo, &prepared, entry)
}

/// An entry's commit written ahead of its operation's commit point, on the log's tip of that
/// moment, that no ref names yet: its objects are then made durable with the operation's
/// own, before the journal, and logging it later is only the move of the log's ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prepared {
    /// The log's tip it was written on (`None`: no log yet).
    previous: Option<Oid>,
    /// The entry's commit.
    commit: Oid,
}

/// Writes the commit of `entry` on the log's tip without moving the ref: [`record`] does.
pub(crate) fn prepare(repo: &Repository, entry: &OpEntry) -> Result<Prepared, git2::Error> {
    let previous = repo.refname_to_id(OPLOG_REF).ok();
    let stored = match previous {
        Some(tip) => stacks::State::at(repo, tip)?,
        None => Some(stacks::State::default()),
    };
    let (base, mut state) = match stored {
        Some(state) => (previous, state),
        None => {
            // A log written before the stacks were recorded: rewrite it once with them.
            let mut all = entries(repo)?;
            all.reverse();
            rebuild(repo, &all)?
        }
    };
    let commit = write_entry(repo, base, &mut state, entry)?;
    Ok(Prepared { previous, commit })
}

impl Prepared {
    /// The entry's commit.
    pub(crate) fn commit(&self) -> Oid {
        self.commit
    }
}

/// Logs `entry`, written as `prepared`: the ref moves by compare-and-swap from the tip the
/// commit was written on. When the log moved since (nothing does while the repository lock
/// is held, but a bug must not drop an entry), the entry is written again on the new tip.
/// Returns the entry's commit: another than the prepared one has objects not yet durable.
pub(crate) fn record(
    repo: &Repository,
    prepared: &Prepared,
    entry: &OpEntry,
) -> Result<Oid, git2::Error> {
    let log = format!("git-loaf: {:?} {}", entry.kind, entry.id);
    let moved = match prepared.previous {
        Some(old) => repo.reference_matching(OPLOG_REF, prepared.commit, true, old, &log),
        None => repo.reference(OPLOG_REF, prepared.commit, false, &log),
    };
    match moved {
        Ok(_) => Ok(prepared.commit),
        Err(e)
            if matches!(
                e.code(),
                git2::ErrorCode::Modified | git2::ErrorCode::Exists
            ) =>
        {
            let again = prepare(repo, entry)?;
            if again.previous == prepared.previous {
                return Err(e);
            }
            record(repo, &again, entry)
        }
        Err(e) => Err(e),
    }
}

/// What [`prune`] dropped and kept.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pruned {
    /// The entries dropped, oldest first.
    pub dropped: Vec<OpEntry>,
    /// How many entries are left.
    pub kept: usize,
}

/// Drops the entries `drop` selects, writing the log again from the others (their stacks
/// replayed without the dropped ones: an undo whose target is gone no longer counts) and
/// moving the ref by compare-and-swap. The caller holds the repository lock. With
/// `dry_run`, only says what would go.
pub fn prune(
    repo: &Repository,
    drop: impl Fn(&OpEntry) -> bool,
    dry_run: bool,
) -> Result<Pruned, git2::Error> {
    let Ok(tip) = repo.refname_to_id(OPLOG_REF) else {
        return Ok(Pruned::default());
    };
    let mut all = entries(repo)?;
    all.reverse();
    let (dropped, kept): (Vec<OpEntry>, Vec<OpEntry>) = all.into_iter().partition(|e| drop(e));
    let pruned = Pruned {
        kept: kept.len(),
        dropped,
    };
    if dry_run || pruned.dropped.is_empty() {
        return Ok(pruned);
    }
    let log = format!("git-loaf: gc dropped {} entries", pruned.dropped.len());
    match rebuild(repo, &kept)?.0 {
        Some(new) => {
            repo.reference_matching(OPLOG_REF, new, true, tip, &log)?;
        }
        None => {
            // Nothing left: no log at all, as before the first operation.
            let mut reference = repo.find_reference(OPLOG_REF)?;
            if reference.target() != Some(tip) {
                return Err(git2::Error::from_str("the operation log moved during gc"));
            }
            reference.delete()?;
        }
    }
    Ok(pruned)
}

/// Writes `entries` (oldest first) as a new chain, stacks included; its tip (`None` when
/// there are none) and the stacks after it. No ref moves.
fn rebuild(
    repo: &Repository,
    entries: &[OpEntry],
) -> Result<(Option<Oid>, stacks::State), git2::Error> {
    let mut tip = None;
    let mut state = stacks::State::default();
    for entry in entries {
        tip = Some(write_entry(repo, tip, &mut state, entry)?);
    }
    Ok((tip, state))
}

/// Writes the commit of `entry` on `previous` (the log's tip; `None`: a new log), `state`
/// being the stacks there (moved on to the stacks after `entry`), and returns it, moving no
/// ref.
fn write_entry(
    repo: &Repository,
    previous: Option<Oid>,
    state: &mut stacks::State,
    entry: &OpEntry,
) -> Result<Oid, git2::Error> {
    let json = serde_json::to_vec_pretty(entry)
        .map_err(|e| git2::Error::from_str(&format!("operation log entry: {e}")))?;
    let entry_blob = crate::git::repo::write_blob(repo, &json)?;
    let mut tree = repo.treebuilder(None)?;
    tree.insert(ENTRY_FILE, entry_blob, 0o100644)?;
    // Keep the trees undo and redo restore from, named in the entry's own tree (not in a
    // folder of their own: one object fewer to write and make durable per entry; logs
    // written before hold them under `keep/`, which nothing reads either).
    for (name, state) in [("before", &entry.before), ("after", &entry.after)] {
        for (part, oid) in [("work", &state.work), ("index", &state.index)] {
            if let Ok(oid) = Oid::from_str(oid)
                && repo.find_tree(oid).is_ok()
            {
                tree.insert(format!("{KEEP_PREFIX}{name}-{part}"), oid, 0o040000)?;
            }
        }
    }
    if !entry.extras.is_empty() {
        let extras = entry
            .extras
            .keep_tree(repo)
            .map_err(|e| git2::Error::from_str(&e.to_string()))?;
        tree.insert(format!("{KEEP_PREFIX}extras"), extras, 0o040000)?;
    }
    // Where every working tree's stacks stand after this entry.
    let nodes = state.apply(repo, entry, entry_blob)?;
    state.write(repo, &mut tree, &nodes)?;
    let tree = repo.find_tree(tree.write()?)?;
    let signature = crate::git::identity::identity(repo, "COMMITTER")
        .or_else(|_| Signature::now("git-loaf", "git-loaf@localhost"))?;
    // The first parent is always the previous entry, so the log is the first-parent chain;
    // the very first entry gets an empty root commit there, which ends the chain.
    let first = match previous {
        Some(previous) => previous,
        None => {
            let empty = repo.find_tree(repo.treebuilder(None)?.write()?)?;
            repo.commit(
                None,
                &signature,
                &signature,
                "loaf operation log",
                &empty,
                &[],
            )?
        }
    };
    let mut parents: Vec<Oid> = vec![first];
    for head in [&entry.before.head, &entry.after.head]
        .into_iter()
        .flatten()
    {
        if let Ok(oid) = Oid::from_str(head)
            && !parents.contains(&oid)
            && repo.find_commit(oid).is_ok()
        {
            parents.push(oid);
        }
    }
    let parents = parents
        .iter()
        .map(|p| repo.find_commit(*p))
        .collect::<Result<Vec<_>, _>>()?;
    let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
    let subject = format!("loaf op {} {:?}: {}", entry.id, entry.kind, entry.summary);
    repo.commit(None, &signature, &signature, &subject, &tree, &parents)
}

/// Which operations can be undone and re-done now in `workdir`: replaying the log, an apply
/// is pushed on the undo stack and clears the redo stack; an undo moves its target to the
/// redo stack; a redo moves it back, or pops it from the undo stack when it is the `undo --to`
/// on top there (redo re-did its walk).
#[derive(Debug, Default)]
pub(crate) struct Stacks {
    /// Operations undo would undo, the next one last.
    pub undoable: Vec<OpEntry>,
    /// Operations redo would re-do, the next one last.
    pub redoable: Vec<OpEntry>,
}

/// The stacks for `workdir`, from the log's entries (newest first, as [`entries`] returns):
/// the whole log replayed. [`undoable`] and [`redoable`] read only the top of each.
pub(crate) fn stacks(entries: &[OpEntry], workdir: &str) -> Stacks {
    let mut stacks = Stacks::default();
    for entry in entries.iter().rev().filter(|e| e.workdir == workdir) {
        match entry.kind {
            OpKind::Apply => {
                stacks.undoable.push(entry.clone());
                stacks.redoable.clear();
            }
            // Operations of their own, undone and re-done like an apply.
            OpKind::StepBack
            | OpKind::StepForward
            | OpKind::UndoTo
            | OpKind::Squash
            | OpKind::Restore
            | OpKind::Review => {
                stacks.undoable.push(entry.clone());
                stacks.redoable.clear();
            }
            OpKind::Undo => {
                if let Some(i) = find(&stacks.undoable, entry.target.as_deref()) {
                    let undone = stacks.undoable.remove(i);
                    stacks.redoable.push(undone);
                }
            }
            OpKind::Redo => {
                if let Some(i) = find(&stacks.redoable, entry.target.as_deref()) {
                    let redone = stacks.redoable.remove(i);
                    stacks.undoable.push(redone);
                } else if stacks.undoable.last().is_some_and(|top| {
                    Some(top.id.as_str()) == entry.target.as_deref() && walks_back(entry, top)
                }) {
                    // The redo of an `undo --to`: its walk re-done, it leaves the stack.
                    stacks.undoable.pop();
                }
            }
        }
    }
    stacks
}

/// Whether `redo` went from the state `target` left back to the one it found: the redo of an
/// `undo --to`, which re-does its walk (a plain redo goes the other way).
fn walks_back(redo: &OpEntry, target: &OpEntry) -> bool {
    redo.after == target.before && redo.before == target.after
}

fn find(stack: &[OpEntry], id: Option<&str>) -> Option<usize> {
    stack.iter().rposition(|e| Some(e.id.as_str()) == id)
}

#[cfg(test)]
mod tests;
