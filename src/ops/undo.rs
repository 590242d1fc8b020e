//! `git loaf undo` and `git loaf redo` (docs/history.md): walk the operation log back and forth,
//! restoring HEAD, the index and the working tree exactly, untracked files included.
//!
//! Undo refuses when anything changed since the operation (HEAD moved, files or index
//! edited) or when a commit it would remove is reachable from a remote-tracking ref; `--force`
//! overrides both, and then first saves the user's uncommitted work under
//! `refs/loaf/saved/<id>` so that even a forced undo loses nothing.

pub mod answer;
mod since;

use std::path::{Path, PathBuf};

pub use since::{Between, name_paths};

use super::{new_id, now_secs};
use crate::git::{Oid, refs};
use crate::tx::carry::Work;
use crate::tx::checkpoint::{self, Checkpoint};
use crate::tx::oplog::{self, OpEntry, OpKind, UserState};
use crate::tx::publish::{self, Transition, crash_point, differing};
use crate::tx::session::{Session, TxError};
use crate::tx::visible_ignored::Extras;
use crate::tx::{head, saved};

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
    pub notices: Vec<String>,
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
struct Run {
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

/// Whether `kind` is a step, which moves HEAD along a branch's history without moving the
/// branch: undoing one removes no commit from anything, so there is nothing pushed to check.
fn is_step(kind: OpKind) -> bool {
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

/// One walk over `target` (an operation, or the entry standing for an `undo --to` run):
/// from the state it left to the state it found (undo), or back (redo).
struct Move {
    target: OpEntry,
    kind: OpKind,
    undoing: bool,
    /// `undo` or `redo`, as the messages say it.
    verb: &'static str,
    /// The state the walk starts from, and the ref HEAD is on there.
    expected: UserState,
    expected_ref: String,
    /// The state the walk ends in, and the ref HEAD is on there.
    wanted: UserState,
    wanted_ref: String,
}

impl Move {
    fn over(target: OpEntry, kind: OpKind) -> Move {
        let undoing = kind != OpKind::Redo;
        let (expected, wanted) = if undoing {
            (target.after.clone(), target.before.clone())
        } else {
            (target.before.clone(), target.after.clone())
        };
        let (expected_ref, wanted_ref) =
            (state_ref(&target, &expected), state_ref(&target, &wanted));
        Move {
            target,
            kind,
            undoing,
            verb: if undoing { "undo" } else { "redo" },
            expected,
            expected_ref,
            wanted,
            wanted_ref,
        }
    }

    /// An apply `git loaf take` landed goes back to being kept when its take is undone (so
    /// that `take` and `drop` work on it again), and is no longer kept when it is re-done.
    fn keep_taken(&self, repo: &crate::git::Repository) -> Result<(), TxError> {
        let kept = (self.target.kind == OpKind::Apply)
            .then_some(self.target.target.as_deref())
            .flatten()
            .and_then(|commit| Oid::from_str(commit).ok());
        match kept {
            Some(kept) if self.undoing => {
                refs::keep(repo, &self.target.id, kept)?;
            }
            Some(_) => refs::drop_kept_if_any(repo, &self.target.id)?,
            None => {}
        }
        Ok(())
    }

    /// Whether the walk changes what HEAD is attached to (a step's): HEAD itself moves,
    /// detached, and is attached to the branch afterwards.
    fn across(&self) -> bool {
        self.expected_ref != self.wanted_ref
    }

    /// The refusal when HEAD is on another ref than the operation left it on.
    fn refuse_other_ref(&self, ref_name: &str) -> Result<(), TxError> {
        if ref_name == self.expected_ref {
            return Ok(());
        }
        let (verb, expected_ref) = (self.verb, &self.expected_ref);
        Err(TxError::Refused {
            message: format!(
                "the operation to {verb} ({}) left you on {}, but you are now on {}",
                self.target.id,
                display_ref(expected_ref),
                display_ref(ref_name)
            ),
            hint: if expected_ref == "HEAD" {
                format!(
                    "go back (`git switch --detach {}`), then run `git loaf {verb}` again",
                    short(self.expected.head.as_deref())
                )
            } else {
                format!(
                    "switch back (`git switch {}`), then run `git loaf {verb}` again",
                    display_ref(expected_ref)
                )
            },
        })
    }

    /// When anything changed since the operation (`now` is not the state it left), or the
    /// user worked between the operations of a run: refused, unless `force`; then what the
    /// walk moves away from is saved first, and where is returned.
    fn refuse_or_save(
        &self,
        session: &Session,
        run: &Run,
        force: bool,
        id: &str,
        current: &Checkpoint,
        now: &UserState,
    ) -> Result<Option<SavedBy>, TxError> {
        let (repo, expected) = (&session.repo, &self.expected);
        let changed_now =
            now.head != expected.head || now.work != expected.work || now.index != expected.index;
        if !changed_now && run.between.is_empty() {
            return Ok(None);
        }
        if !force && changed_now {
            let paths = since::changed_paths(repo, expected, &now.work, &now.index);
            let head = now.head.as_deref();
            return Err(refuse_changed(
                session,
                &self.target,
                self.kind,
                head,
                expected,
                &paths,
            ));
        }
        if !force {
            return Err(refuse_between(&self.target, &run.between));
        }
        // Keep what the forced undo moves away from: uncommitted work (saved work on HEAD,
        // made on the state the operation left, for `git loaf restore`) or commits made on
        // top of the operation.
        let head = now.head.as_deref().map(Oid::from_str).transpose()?;
        // What the user changed since (the work between the operations is saved apart).
        let changed_files = now.work != expected.work || now.index != expected.index;
        if changed_files && !current.is_clean() {
            saved::save_work(
                repo,
                id,
                &format!("loaf: uncommitted work saved by {} --force {id}", self.verb),
                head,
                work_of(expected)?,
                Work {
                    work: current.work_tree,
                    index: current.index_tree,
                },
            )?;
            return Ok(Some(SavedBy::Work { id: id.to_owned() }));
        }
        // HEAD holds the commits made since, or between the operations of a run.
        match head {
            Some(h) if now.head != expected.head || run.between.iter().any(|b| b.head_moved) => {
                Ok(Some(SavedBy::Commits {
                    name: refs::save(repo, id, h)?,
                }))
            }
            _ => Ok(None),
        }
    }

    /// The move publish makes from `now` (HEAD on `ref_name`) to the wanted state, as the
    /// operation log records it.
    fn transition(
        &self,
        session: &Session,
        id: &str,
        ref_name: &str,
        now: &UserState,
    ) -> Transition {
        let (target, verb, kind) = (&self.target, self.verb, self.kind);
        Transition {
            workdir: session.root.clone(),
            ref_name: if self.across() {
                "HEAD".to_owned()
            } else {
                ref_name.to_owned()
            },
            old: now.head.clone(),
            new: self.wanted.head.clone(),
            from_work: now.work.clone(),
            from_index: now.index.clone(),
            to_work: self.wanted.work.clone(),
            to_index: self.wanted.index.clone(),
            message: format!("git-loaf {verb} {}", target.id),
            op: OpEntry {
                id: id.to_owned(),
                kind,
                target: Some(target.id.clone()),
                time: now_secs(),
                workdir: session.root.display().to_string(),
                ref_name: ref_name.to_owned(),
                summary: if kind == OpKind::UndoTo {
                    format!("undo --to {}: {}", target.id, target.summary)
                } else {
                    format!("{verb} {}: {}", target.id, target.summary)
                },
                before: now.clone(),
                after: self.wanted.clone(),
                // Undo takes back what the operation wrote outside git; redo writes it again.
                extras: if self.undoing {
                    target.extras.inverted()
                } else {
                    target.extras.clone()
                },
                reply_key: None,
            },
        }
    }

    /// Publish: the files left alone, and whether HEAD was attached to the wanted branch.
    fn publish(
        &self,
        repo: &crate::git::Repository,
        transition: &Transition,
        ref_name: &str,
    ) -> Result<(Vec<PathBuf>, bool), TxError> {
        if !self.across() {
            return Ok((publish::publish(repo, transition, false)?, false));
        }
        let detach_from = (ref_name != "HEAD").then_some(ref_name);
        let attach_to = (self.wanted_ref != "HEAD").then_some(self.wanted_ref.as_str());
        Ok(head::publish_across(
            repo,
            transition,
            false,
            detach_from,
            attach_to,
        )?)
    }

    /// Saved work follows the operation that moved it: undoing a restore lists the work
    /// again, undoing a step-back (its kept work back in the files) puts it away; redoing
    /// either does the opposite.
    fn follow_saved(&self, repo: &crate::git::Repository) -> Result<(), TxError> {
        let target = &self.target;
        let restored = target.target.as_deref();
        match (target.kind, self.undoing, restored) {
            (OpKind::Restore, true, Some(id)) => saved::bring_back(repo, id)?,
            (OpKind::Restore, false, Some(id)) => saved::put_away(repo, id)?,
            (OpKind::StepBack, true, _) => saved::put_away(repo, &target.id)?,
            (OpKind::StepBack, false, _) => saved::bring_back(repo, &target.id)?,
            _ => {}
        }
        Ok(())
    }

    /// The notice when HEAD should have been attached to the wanted branch but the branch
    /// moved meanwhile.
    fn left_detached(&self, attached: bool) -> Option<String> {
        let wanted_ref = &self.wanted_ref;
        (self.across() && wanted_ref != "HEAD" && !attached).then(|| {
            format!(
                "{} moved since, so HEAD stays detached at {}: `git switch {}` goes to where it is now",
                display_ref(wanted_ref),
                short(self.wanted.head.as_deref()),
                display_ref(wanted_ref)
            )
        })
    }

    /// Uncommitted work came back only if the files or index actually changed: undoing a
    /// squash with a dirty tree moves HEAD alone.
    fn restored_uncommitted(
        &self,
        repo: &crate::git::Repository,
        now: &UserState,
    ) -> Result<bool, TxError> {
        let wanted = &self.wanted;
        let head_tree = checkpoint::commit_tree(repo, wanted.head.as_deref())?;
        Ok((wanted.work != head_tree || wanted.index != head_tree)
            && (wanted.work != now.work || wanted.index != now.index))
    }
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
fn refuse_between(target: &OpEntry, between: &[Between]) -> TxError {
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

/// A state's files and index as trees.
fn work_of(state: &UserState) -> Result<Work, TxError> {
    Ok(Work {
        work: Oid::from_str(&state.work)?,
        index: Oid::from_str(&state.index)?,
    })
}

/// A forced `undo --to` goes back past what the user did between its operations: each such
/// change saved as `<id>-<n>`, for `git loaf restore`.
fn save_between(
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

fn describe(entry: &OpEntry) -> &'static str {
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
