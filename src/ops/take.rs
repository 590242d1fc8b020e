//! Commits an apply could not publish (the branch moved, or the user's edits overlapped the
//! reply's), kept as `refs/loaf/<apply id>`: listed by `git loaf log`, applied later by
//! `git loaf take` — onto the current HEAD, merged with the user's uncommitted edits, which
//! stay uncommitted — or discarded by `git loaf drop`.

use std::path::{Path, PathBuf};

use super::now_secs;
use crate::git::notes::{read_note, read_report, write_note, write_report};
use crate::git::refs::{self, KeptCommit};
use crate::git::{Oid, treediff};
use crate::notice::{Notice, NoticeKind};
use crate::tx::checkpoint;
use crate::tx::commits;
use crate::tx::merge::{self, Overlap};
use crate::tx::oplog::{OpEntry, OpKind, UserState};
use crate::tx::publish::{self, Transition};
use crate::tx::session::{Session, TxError};

/// The kept commit `id`.
fn find(session: &Session, id: &str) -> Result<KeptCommit, TxError> {
    refs::kept(&session.repo)?
        .into_iter()
        .find(|k| k.id == id)
        .ok_or_else(|| TxError::Invalid {
            message: format!("no kept apply '{id}'"),
            hint: "`git loaf log` lists the kept applies (marked kept)".into(),
        })
}

/// `git loaf drop <id>`: deletes the kept commit's ref.
pub(crate) fn drop_kept(cwd: &Path, id: &str) -> Result<KeptCommit, TxError> {
    let session = Session::begin(cwd, "drop")?;
    let kept = find(&session, id)?;
    refs::drop_kept(&session.repo, id)?;
    Ok(kept)
}

/// What `take` did.
#[derive(Debug)]
pub struct Taken {
    /// The commit now on the branch.
    pub commit: Oid,
    /// Paths whose working file merged the user's uncommitted edits.
    pub merged: Vec<PathBuf>,
    /// Things to tell the user.
    pub notices: Vec<Notice>,
}

/// `git loaf take <id>`: the kept commit, rebased onto HEAD when HEAD moved, is published
/// like an apply: only its paths change; the user's uncommitted edits to them are merged and
/// stay uncommitted. Undo takes it back.
pub fn take(cwd: &Path, id: &str) -> Result<Taken, TxError> {
    let mut session = Session::begin(cwd, "take")?;
    let repo = &session.repo;
    let kept = find(&session, id)?;
    let (ref_name, head) = refs::head_ref(repo)?;
    let commit = commits::read(repo, kept.commit)?;
    let refuse = |reason: String| TxError::Refused {
        message: format!("cannot take {id}: {reason}"),
        hint: format!(
            "resolve it by hand (`git cherry-pick refs/loaf/{id}`), or `git loaf drop {id}` and apply the reply again"
        ),
    };
    // On the current HEAD: the commit itself, or the same change replayed onto HEAD.
    let landed = if commit.parent == head {
        kept.commit
    } else {
        let Some(head) = head else {
            return Err(refuse("the branch has no commit to take it onto".into()));
        };
        match merge::replay(repo, kept.commit, head)? {
            Ok(replayed) => replayed,
            Err(paths) => {
                return Err(refuse(format!(
                    "it conflicts with commits made since in {}",
                    paths.join(", ")
                )));
            }
        }
    };
    // The record follows the commit: the note, and the full report kept locally.
    let taken = |text: String| text.replace("NOT APPLIED", "taken later; was not applied");
    if let Some(note) = read_note(repo, kept.commit) {
        write_note(repo, landed, &taken(note))?;
    }
    if let Some(report) = read_report(repo, kept.commit) {
        write_report(repo, landed, &taken(report))?;
    }
    let target_tree = commits::read(repo, landed)?.tree;
    let cp = checkpoint::take(repo)?;
    let head_tree = cp.head_tree;
    let changed: Vec<PathBuf> = treediff::changed_paths(repo, Some(head_tree), Some(target_tree))?
        .into_iter()
        .collect();
    let (work, index, merged) = match merge::land(repo, &cp, head_tree, target_tree, &changed)? {
        Ok(landing) => landing,
        Err(Overlap(reason)) => return Err(refuse(reason)),
    };
    let summary = commit.summary;
    let transition = Transition {
        workdir: session.root.clone(),
        ref_name: ref_name.clone(),
        old: head.map(|o| o.to_string()),
        new: Some(landed.to_string()),
        from_work: cp.work_tree.to_string(),
        from_index: cp.index_tree.to_string(),
        to_work: work.to_string(),
        to_index: index.to_string(),
        message: format!("git-loaf take {id}: {summary}"),
        op: OpEntry {
            id: id.to_owned(),
            kind: OpKind::Apply,
            // The kept commit it landed: undoing the take keeps it again.
            target: Some(kept.commit.to_string()),
            time: now_secs(),
            workdir: session.root.display().to_string(),
            ref_name,
            summary,
            before: UserState {
                head: head.map(|o| o.to_string()),
                work: cp.work_tree.to_string(),
                index: cp.index_tree.to_string(),
            },
            after: UserState {
                head: Some(landed.to_string()),
                work: work.to_string(),
                index: index.to_string(),
            },
            extras: Default::default(),
            reply_key: None,
        },
    };
    let skipped = publish::publish(repo, &transition, true).map_err(|e| match e {
        publish::PublishError::Changed(_) | publish::PublishError::Moved { .. } => {
            refuse(e.to_string())
        }
        other => TxError::Publish(other),
    })?;
    let pending = config_taken(repo, &session.root, &changed);
    let mut notices = std::mem::take(&mut session.notices);
    notices.extend(publish::left_alone_notice(&skipped));
    notices.extend(pending);
    Ok(Taken {
        commit: landed,
        merged,
        notices,
    })
}

/// When the taken commit changed loaf.yml: the text in the working tree is the reply's
/// (merged with the user's edits or not), and waits for the user if it widens anything; the
/// notice saying so. Taken already: a failure here is only a lost notice, and the commit's
/// trailers mark the text as the reply's while it is HEAD's.
fn config_taken(repo: &crate::git::Repository, root: &Path, changed: &[PathBuf]) -> Option<Notice> {
    if !changed
        .iter()
        .any(|p| p == Path::new(crate::config::FILE_NAME))
    {
        return None;
    }
    let _ = crate::ops::config::note_written_now(repo, root);
    crate::ops::config::governing(repo, root)
        .ok()
        .and_then(|g| g.pending)
        .map(|p| Notice::new(NoticeKind::ConfigWaiting, p.message()))
}
