//! `git loaf undo` and `git loaf redo` (docs/history.md): walk the operation log back and forth,
//! restoring HEAD, the index and the working tree exactly, untracked files included.
//!
//! Undo refuses when anything changed since the operation (HEAD moved, files or index
//! edited) or when a commit it would remove is reachable from a remote-tracking ref; `--force`
//! overrides both, and then first saves the user's uncommitted work under
//! `refs/loaf/saved/<id>` so that even a forced undo loses nothing.

pub mod answer;
mod names;
mod refusals;
mod restore;
mod since;

use crate::notice::Notice;
use std::path::Path;

use names::is_step;
pub use names::{display_ref, short, state_ref};
use refusals::{refuse_if_pushed, save_between};
use restore::Move;
pub use since::{Between, name_paths};

use super::new_id;
use crate::git::refs;
use crate::tx::checkpoint;
use crate::tx::oplog::{self, OpEntry, OpKind, UserState};
use crate::tx::publish::{self, crash_point, differing};
use crate::tx::saved;
use crate::tx::session::{Session, TxError};
use crate::tx::visible_ignored::Extras;

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
    /// Where forced undo saved what it moved away from, if there was anything.
    pub saved: Option<SavedBy>,
    /// Things to tell the user on stderr.
    pub notices: Vec<Notice>,
    /// For `undo --to`: the operations undone, oldest first.
    pub run: Vec<OpEntry>,
    /// The branch HEAD was attached to afterwards, when the move re-attached it.
    pub attached: Option<String>,
    /// Whether the move left HEAD detached from the branch it was on (undoing a step
    /// forward that had reached the tip): `ref_name` is where it was, and stays.
    pub detached: bool,
    /// For a forced `undo --to`: what the user did between the operations it undid (now
    /// saved under `refs/loaf/saved/`).
    pub between: Vec<Between>,
}

/// What a forced undo saved.
#[derive(Debug)]
pub enum SavedBy {
    /// The user's uncommitted work (and HEAD, when it moved): `git loaf restore <id>` puts
    /// back what changed since the operation.
    Work {
        /// The id `git loaf restore` takes.
        id: String,
    },
    /// Commits made since, with a clean tree: kept reachable under the ref.
    Commits {
        /// The ref (`refs/loaf/saved/<id>`).
        name: String,
    },
}

/// The ref it is under (`refs/loaf/saved/<id>`).
impl std::fmt::Display for SavedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SavedBy::Work { id } => write!(f, "{}{id}", saved::SAVED_PREFIX),
            SavedBy::Commits { name } => f.write_str(name),
        }
    }
}

/// Undoes the most recent operation not yet undone in the working tree containing `cwd`.
pub fn undo(cwd: &Path, force: bool) -> Result<Walked, TxError> {
    let session = Session::begin(cwd, "undo")?;
    crash_point("locked");
    let workdir = session.root.display().to_string();
    // Only the top of the stack is read: the cost does not grow with the log.
    let next = oplog::undoable(&session.repo, &workdir)?
        .next()
        .transpose()?;
    let Some(target) = next else {
        return Err(TxError::Invalid {
            message: "nothing to undo: no git-loaf operation in this working tree is left to undo"
                .into(),
            hint:
                "`git loaf log` lists the AI commits; `git revert` or `git reset` undo other work"
                    .into(),
        });
    };
    crash_point("logged");
    if !force && !is_step(target.kind) {
        refuse_if_pushed(&session, &target)?;
    }
    crash_point("pushed-checked");
    walk(session, target, OpKind::Undo, force, Run::default())
}

/// The newest operation of `stack` that made the commit `rev` names (an apply's or a
/// squash's commit, as `git log` and `git loaf log` show it).
fn made_commit(repo: &crate::git::Repository, stack: &[OpEntry], rev: &str) -> Option<usize> {
    let commit = crate::tx::commits::resolve(repo, rev).ok()??.id.to_string();
    stack.iter().rposition(|e| {
        e.after.head.as_deref() == Some(commit.as_str()) && e.before.head != e.after.head
    })
}

/// `git loaf undo --to <id|N|commit>`: undoes, in one step, every operation back to and including
/// the one with apply id `to` (or the last `to` operations): one log entry from the current
/// state to the state before that operation, itself undoable (a plain `git loaf undo`
/// afterwards re-does them all). The refusals are undo's: anything changed since, or a
/// commit it would remove already pushed, unless `force`.
pub fn undo_to(cwd: &Path, to: &str, force: bool) -> Result<Walked, TxError> {
    let session = Session::begin(cwd, "undo")?;
    let workdir = session.root.display().to_string();
    let stack = down_to(&session.repo, &workdir, to)?;
    let start = match stack.iter().rposition(|e| e.id == to) {
        Some(i) => i,
        None => match to.parse::<usize>() {
            Ok(n) if (1..=stack.len()).contains(&n) => stack.len() - n,
            _ if let Some(i) = made_commit(&session.repo, &stack, to) => i,
            Ok(n) => {
                return Err(TxError::Invalid {
                    message: format!(
                        "cannot undo {n} operations: {} can be undone in this working tree",
                        stack.len()
                    ),
                    hint: "`git loaf log` lists the AI commits; `--to` takes an apply id, a commit of one, or a count from 1".into(),
                });
            }
            Err(_) => {
                return Err(TxError::Invalid {
                    message: format!("no operation '{to}' is left to undo in this working tree"),
                    hint: "`git loaf log` lists the AI commits and their apply ids (either works); `--to N` undoes the last N operations".into(),
                });
            }
        },
    };
    let run = stack[start..].to_vec();
    let (first, last) = (&run[0], &run[run.len() - 1]);
    let (before_ref, after_ref) = (
        state_ref(first, &first.before),
        state_ref(last, &last.after),
    );
    if before_ref != after_ref {
        return Err(TxError::Refused {
            message: format!(
                "the operations back to {} start on {} and end on {}: undo --to moves one of them only",
                first.id,
                display_ref(&before_ref),
                display_ref(&after_ref)
            ),
            hint: "go back to the branch's tip first (`git loaf step-forward` until it says so), or undo the steps one at a time with `git loaf undo`".into(),
        });
    }
    // The whole run as one operation: what the first found and what the last left, and
    // every extra change in order (undo takes them back newest first).
    let combined = OpEntry {
        id: first.id.clone(),
        kind: OpKind::UndoTo,
        target: None,
        time: last.time,
        workdir: workdir.clone(),
        ref_name: after_ref,
        summary: if run.len() == 1 {
            first.summary.clone()
        } else {
            format!("{} operations, back to: {}", run.len(), first.summary)
        },
        before: first.before.clone(),
        after: last.after.clone(),
        extras: Extras {
            changes: run
                .iter()
                .flat_map(|e| e.extras.changes.iter().cloned())
                .collect(),
        },
        reply_key: None,
    };
    if !force && run.iter().any(|e| !is_step(e.kind)) {
        refuse_if_pushed(&session, &combined)?;
    }
    // Work made between the operations was carried along by the later ones: going back
    // past them drops it, so it counts as changed since, as a plain undo one step
    // earlier would find.
    let between = since::between(&session.repo, &run);
    walk(
        session,
        combined,
        OpKind::UndoTo,
        force,
        Run { ops: run, between },
    )
}

/// Re-does the most recently undone operation.
pub fn redo(cwd: &Path) -> Result<Walked, TxError> {
    let session = Session::begin(cwd, "redo")?;
    let workdir = session.root.display().to_string();
    let next = oplog::redoable(&session.repo, &workdir)?
        .next()
        .transpose()?;
    if let Some(target) = next {
        return walk(session, target, OpKind::Redo, false, Run::default());
    }
    let mut undoable = oplog::undoable(&session.repo, &workdir)?;
    match undoable.next().transpose()? {
        Some(walked) if walked.kind == OpKind::UndoTo => {
            let run = redone_by(undoable, &walked)?;
            walk(session, reversed(walked, &run), OpKind::Redo, false, Run { ops: run, between: Vec::new() })
        }
        _ => Err(TxError::Invalid {
            message: "nothing to redo: no undone git-loaf operation in this working tree (a new apply forgets what was undone before it)".into(),
            hint: "`git loaf undo` undoes the last operation; `git loaf log` lists the AI commits".into(),
        }),
    }
}

/// The operations an `undo --to` (`walked`, the top of the undo stack) undid, oldest first:
/// they lie under it on the undo stack, down to the one it went back to. None when that one
/// is no longer there (a gc dropped it): the walk itself is recorded in `walked`.
fn redone_by(stack: oplog::StackWalk<'_>, walked: &OpEntry) -> Result<Vec<OpEntry>, TxError> {
    let mut run = Vec::new();
    for entry in stack {
        let entry = entry?;
        let last = Some(&entry.id) == walked.target.as_ref();
        run.push(entry);
        if last {
            run.reverse();
            return Ok(run);
        }
    }
    Ok(Vec::new())
}

/// `walked`, an `undo --to`, turned around, so that re-doing it goes from the state it
/// left back to the state it found: redo after `undo --to` re-does the whole walk. It keeps
/// the id, which the log's stacks use to take the `undo --to` off the undo stack.
fn reversed(walked: OpEntry, run: &[OpEntry]) -> OpEntry {
    let back_to = walked.target.clone().unwrap_or_default();
    OpEntry {
        summary: match run.len() {
            0 => format!("what `undo --to {back_to}` undid"),
            1 => format!("the operation `undo --to {back_to}` undid"),
            n => format!("the {n} operations `undo --to {back_to}` undid"),
        },
        before: walked.after.clone(),
        after: walked.before.clone(),
        extras: walked.extras.inverted(),
        ..walked
    }
}

/// For `undo --to` and the redo of one, the operations walked, oldest first, and what the
/// user did between them.
#[derive(Debug, Default)]
pub(super) struct Run {
    ops: Vec<OpEntry>,
    between: Vec<Between>,
}

/// The undo stack of `workdir`, oldest first, read from the top down to the operation with
/// id `to`, or as deep as the count `to` says; all of it when neither is found (the
/// caller then says what there is). Operation ids are six hex digits: anything else is
/// only a count, so `--to 3` reads three entries, not the whole stack.
fn down_to(
    repo: &crate::git::Repository,
    workdir: &str,
    to: &str,
) -> Result<Vec<OpEntry>, TxError> {
    let may_be_id = to.len() == 6 && to.chars().all(|c| c.is_ascii_hexdigit());
    let count = to.parse::<usize>().ok().filter(|_| !may_be_id);
    let mut stack = Vec::new();
    for entry in oplog::undoable(repo, workdir)? {
        let entry = entry?;
        let found = entry.id == to;
        stack.push(entry);
        if found || count == Some(stack.len()) {
            break;
        }
    }
    stack.reverse();
    Ok(stack)
}

/// Moves from `target`'s after state to its before state (undo, undo --to of the `run`) or
/// back (redo): refuse if HEAD is on another ref → checkpoint → refuse anything changed
/// since, or save it when forced → publish → report.
fn walk(
    mut session: Session,
    target: OpEntry,
    kind: OpKind,
    force: bool,
    run: Run,
) -> Result<Walked, TxError> {
    let way = Move::over(target, kind);
    let (ref_name, head) = refs::head_ref(&session.repo)?;
    way.refuse_other_ref(&ref_name)?;
    let repo = &session.repo;
    checkpoint::refuse_intent_to_add(repo)
        .map_err(|paths| TxError::intent_to_add(&paths, way.verb))?;
    let id = new_id(&way.target.id);
    let current = checkpoint::take(repo)?;
    let now = UserState {
        head: head.map(|o| o.to_string()),
        work: current.work_tree.to_string(),
        index: current.index_tree.to_string(),
    };
    crash_point("scanned");
    let saved = way.refuse_or_save(&session, &run, force, &id, &current, &now)?;
    let mut run = run;
    if force {
        save_between(&session.repo, &id, &mut run.between)?;
    }
    let transition = way.transition(&session, &id, &ref_name, &now);
    let (skipped, attached) = way.publish(repo, &transition, &ref_name)?;
    way.follow_saved(repo)?;
    way.keep_taken(repo)?;
    let mut notices = std::mem::take(&mut session.notices);
    notices.extend(publish::left_alone_notice(&skipped));
    notices.extend(way.left_detached(attached));
    let paths = differing(repo, &now.work, &way.wanted.work)?
        .into_iter()
        .map(|p| p.display().to_string())
        .collect();
    let restored_uncommitted = way.restored_uncommitted(repo, &now)?;
    let detached = way.wanted_ref == "HEAD" && ref_name != "HEAD";
    Ok(Walked {
        restored_uncommitted,
        target: way.target,
        id,
        ref_name,
        from: now.head,
        to: way.wanted.head,
        paths,
        saved,
        notices,
        run: run.ops,
        detached,
        attached: attached.then_some(way.wanted_ref),
        between: run.between,
    })
}
