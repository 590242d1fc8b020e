//! `git loaf gc`: keeps git-loaf's storage bounded. Lock → drop the operation-log entries
//! older than the limit (the log is written again from the others, so undo and redo of
//! every kept entry still work) → drop the refs the forced undos among them saved → pack
//! the loose objects only git-loaf's refs reach.
//!
//! Kept commits (`refs/loaf/<id>`, an apply that could not publish) are never dropped: they
//! wait for the user's `git loaf take` or `git loaf drop`, however old. Nor are the entries
//! a pending operation needs (see [`held`]): the steps of a step-back walk in effect hold the
//! user's uncommitted work, which exists nowhere else until step-forward brings it back; they
//! stay in the log, so their objects stay reachable from `refs/loaf/oplog` even for git's
//! own `gc --prune=now`. A saved ref
//! (`refs/loaf/saved/<id>`, what a forced undo moved away from) lives as long as its undo's
//! entry: it goes with the entry, or, when the log no longer names it, once its commit is
//! older than the limit. Nothing reachable from the user's refs is packed or removed.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::now_secs;
use crate::git::{Oid, refs, reports};
use crate::tx::oplog::{self, OpEntry, OpKind, gc::Packed};
use crate::tx::session::{self, Session, TxError};

/// Seconds in a day.
const DAY: i64 = 24 * 60 * 60;

/// The file whose modification time says when git-loaf last pruned on its own.
const AUTO_STAMP: &str = "loaf/gc-stamp";

/// What gc did (or, with `dry_run`, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// The limit: entries older than this many days go.
    pub keep_days: u64,
    /// The entries dropped, oldest first.
    pub dropped: Vec<OpEntry>,
    /// How many entries are left.
    pub kept: usize,
    /// The entries older than the limit kept because a pending operation needs them,
    /// oldest first.
    pub held: Vec<Held>,
    /// The saved refs dropped.
    pub saved_dropped: Vec<String>,
    /// The full reports dropped (kept locally for `git loaf show`): those of commits no
    /// remaining entry made and no kept apply holds.
    pub reports_dropped: usize,
    /// The loose objects packed.
    pub packed: Packed,
}

/// `git loaf gc`: entries older than `keep_days` days (loaf.yml's `gc.keep-days` when
/// `None`) are dropped, then git-loaf's loose objects packed.
pub fn gc(cwd: &Path, keep_days: Option<u64>, dry_run: bool) -> Result<Collected, TxError> {
    let session = Session::begin(cwd, "gc")?;
    let keep_days = match keep_days {
        Some(days) => days,
        None => {
            crate::ops::config::governing(&session.repo, &session.root)?
                .config
                .gc
                .keep_days
        }
    };
    collect(&session, keep_days, now_secs(), dry_run)
}

/// [`gc`] in a session, with `now` (seconds since the epoch) as the present.
pub fn collect(
    session: &Session,
    keep_days: u64,
    now: i64,
    dry_run: bool,
) -> Result<Collected, TxError> {
    let repo = &session.repo;
    let cutoff = now.saturating_sub((keep_days as i64).saturating_mul(DAY));
    let held: Vec<Held> = held(&oplog::entries(repo)?)
        .into_iter()
        .filter(|h| h.entry.time < cutoff)
        .collect();
    let held_ids: HashSet<&str> = held.iter().map(|h| h.entry.id.as_str()).collect();
    let pruned = oplog::prune(
        repo,
        |e| e.time < cutoff && !held_ids.contains(e.id.as_str()),
        dry_run,
    )?;
    let dropped_ids: HashSet<&str> = pruned.dropped.iter().map(|e| e.id.as_str()).collect();
    // What is left (after a dry run, what would be).
    let left: Vec<OpEntry> = oplog::walk(repo)
        .filter(|e| {
            e.as_ref()
                .map_or(true, |e| !dropped_ids.contains(e.id.as_str()))
        })
        .collect::<Result<_, _>>()?;
    let kept_ids: HashSet<String> = left.iter().map(|e| e.id.clone()).collect();
    let mut saved_dropped = Vec::new();
    for saved in oplog::gc::saved(repo)? {
        let with_its_entry = dropped_ids.contains(saved.id.as_str());
        let orphaned_and_old = !kept_ids.contains(&saved.id) && saved.time < cutoff;
        if with_its_entry || orphaned_and_old {
            if !dry_run {
                oplog::gc::drop_saved(repo, &saved.name)?;
            }
            saved_dropped.push(saved.name);
        }
    }
    let reports_dropped = reports::prune(repo, &reported(repo, &left)?, dry_run)?;
    let packed = oplog::gc::pack(repo, dry_run)?;
    Ok(Collected {
        dry_run,
        keep_days,
        kept: pruned.kept,
        held,
        dropped: pruned.dropped,
        saved_dropped,
        reports_dropped,
        packed,
    })
}

/// An entry gc keeps whatever its age, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The entry.
    pub entry: OpEntry,
    /// Which pending operation needs it, for people.
    pub why: String,
}

/// The entries of `entries` (the whole log, newest first) that a pending operation needs,
/// oldest first: in every working tree stepped back (a step on top of its undo stack), the
/// steps of that walk on its undo and redo stacks (step-forward, undo and redo read them, and
/// a step-back's before state is the only copy of the work it kept), and the undos and redos
/// of those steps, without which the log, replayed after the others go, would put a step on
/// the wrong stack.
pub fn held(entries: &[OpEntry]) -> Vec<Held> {
    let workdirs: std::collections::BTreeSet<&str> =
        entries.iter().map(|e| e.workdir.as_str()).collect();
    let mut held: Vec<(&OpEntry, String)> = Vec::new();
    for workdir in workdirs {
        let stacks = oplog::stacks(entries, workdir);
        let Some(top) = stacks.undoable.last().filter(|e| is_step(e.kind)) else {
            continue;
        };
        let walk = (&top.ref_name, &top.target);
        let why = format!(
            "step-forward, undo and redo need it (stepped back from {} in {workdir})",
            super::undo::display_ref(&top.ref_name)
        );
        let steps: HashSet<&str> = stacks
            .undoable
            .iter()
            .chain(&stacks.redoable)
            .filter(|e| is_step(e.kind) && (&e.ref_name, &e.target) == walk)
            .map(|e| e.id.as_str())
            .collect();
        for entry in entries.iter().filter(|e| e.workdir == workdir) {
            let needed = steps.contains(entry.id.as_str())
                || (matches!(entry.kind, OpKind::Undo | OpKind::Redo)
                    && entry.target.as_deref().is_some_and(|t| steps.contains(t)));
            if needed {
                held.push((entry, why.clone()));
            }
        }
    }
    held.reverse();
    held.into_iter()
        .map(|(entry, why)| Held {
            entry: entry.clone(),
            why,
        })
        .collect()
}

fn is_step(kind: OpKind) -> bool {
    matches!(kind, OpKind::StepBack | OpKind::StepForward)
}

/// The commits whose full reports stay: those the remaining applies and squashes made, and
/// the kept applies' commits.
fn reported(repo: &crate::git::Repository, left: &[OpEntry]) -> Result<HashSet<Oid>, TxError> {
    let mut keep: HashSet<Oid> = left
        .iter()
        .filter(|e| matches!(e.kind, OpKind::Apply | OpKind::Squash))
        .filter_map(|e| e.after.head.as_deref())
        .filter_map(|head| Oid::from_str(head).ok())
        .collect();
    keep.extend(refs::kept(repo)?.into_iter().map(|k| k.commit));
    Ok(keep)
}

/// Automatic pruning, when loaf.yml has a `gc` section: at most once a day (the stamp
/// file's time says when it last ran), [`gc`] with its `keep-days`. Meant to run after an
/// operation has released the lock; `None` when it did not run or dropped nothing. Until
/// it is due it costs a config read and a stat, not a session (lock, recovery, index).
pub fn auto(cwd: &Path) -> Result<Option<Collected>, TxError> {
    let (config, stamp) = {
        let repo = session::open(cwd, "gc")?;
        let Some(root) = repo.workdir() else {
            return Ok(None);
        };
        (
            crate::ops::config::peek(&repo, root)?.config,
            repo.commondir().join(AUTO_STAMP),
        )
    };
    if !config.gc.auto {
        return Ok(None);
    }
    let recent = std::fs::metadata(&stamp)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < Duration::from_secs(DAY as u64));
    if recent {
        return Ok(None);
    }
    let session = Session::begin(cwd, "gc")?;
    let collected = collect(&session, config.gc.keep_days, now_secs(), false)?;
    // A stamp that cannot be written only means pruning runs again next time.
    if let Some(folder) = stamp.parent() {
        let _ = std::fs::create_dir_all(folder);
    }
    let _ = std::fs::write(&stamp, b"");
    Ok((!collected.dropped.is_empty()).then_some(collected))
}
