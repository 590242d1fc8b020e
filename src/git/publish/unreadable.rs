//! Recovery when a crashed operation's journal cannot be read (empty or cut short: a power
//! loss before it reached the disk, a disk error). The journal is made durable before the
//! ref moves, so this should mean the ref never moved; but it is not taken on trust: what
//! the refs say decides.
//!
//! - HEAD is where git-loaf's last recorded operation of this working tree left it: the
//!   interrupted one did not move it (or got as far as its log entry); nothing to do.
//! - HEAD's last move (its reflog) was git-loaf's and HEAD still holds what it moved to:
//!   that operation passed its commit point and is not recorded. Its files and index are
//!   written, from the commit before to the commit after, each only where it still holds
//!   its before content (the user's edits are left alone), and the message says so and how
//!   to take it back (the log cannot: the user's state before it is unknown).
//! - HEAD's last move was not git-loaf's: the interrupted operation did not move it.
//! - No reflog to tell: refused, the journal kept, with how to check and repair.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::{
    Checker, IndexLock, Paths, PublishError, Recovered, Transition, drop_journal, write_files,
};
use crate::git::oplog::{self, OpEntry, OpKind, UserState};

/// How many of the log's newest entries are searched for this working tree's last one.
const LOOK_BACK: usize = 64;

/// A journal that cannot be read, and refs that cannot tell what its operation did.
#[derive(Debug, thiserror::Error)]
#[error(
    "the journal of an interrupted git-loaf operation ({}) is {what}, and HEAD has no reflog to tell whether that operation moved it",
    .path.display()
)]
pub struct Undecided {
    /// The journal.
    pub path: PathBuf,
    /// `empty` or `unreadable`.
    pub what: &'static str,
}

/// See the module documentation.
pub(super) fn recover(
    repo: &Repository,
    journal: &Path,
    empty: bool,
) -> Result<Recovered, PublishError> {
    let what = if empty { "empty" } else { "unreadable" };
    let Some(head) = repo.head().ok().and_then(|h| h.target()) else {
        // Unborn: no operation left HEAD on a commit.
        drop_journal(repo)?;
        return Ok(Recovered::Unmoved {
            what,
            why: "HEAD has no commit".into(),
        });
    };
    let root: PathBuf = repo.workdir().unwrap_or(repo.path()).components().collect();
    let workdir = root.display().to_string();
    let last_logged = oplog::walk(repo)
        .take(LOOK_BACK)
        .filter_map(Result::ok)
        .find(|e| e.workdir == workdir);
    if last_logged.and_then(|e| e.after.head) == Some(head.to_string()) {
        drop_journal(repo)?;
        return Ok(Recovered::Unmoved {
            what,
            why: "HEAD is where git-loaf's last recorded operation left it".into(),
        });
    }
    let last_move = repo.reflog("HEAD").ok().and_then(|log| {
        log.get(0).map(|e| {
            (
                e.message().ok().flatten().unwrap_or("").to_owned(),
                e.id_old(),
                e.id_new(),
            )
        })
    });
    let Some((message, old, new)) = last_move else {
        return Err(PublishError::DamagedJournal(Undecided {
            path: journal.to_path_buf(),
            what,
        }));
    };
    if !message.starts_with("git-loaf ") || new != head {
        drop_journal(repo)?;
        return Ok(Recovered::Unmoved {
            what,
            why: format!("HEAD's last move was not git-loaf's ({message})"),
        });
    }
    let skipped = write_between(repo, &root, old, new)?;
    drop_journal(repo)?;
    Ok(Recovered::Unrecorded {
        what,
        message,
        old: old.to_string(),
        new: new.to_string(),
        skipped,
    })
}

/// Writes the files and index entries that differ between commits `old` and `new`, each
/// only where it still holds `old`'s version (see [`write_files`]).
fn write_between(
    repo: &Repository,
    root: &Path,
    old: Oid,
    new: Oid,
) -> Result<Vec<PathBuf>, PublishError> {
    let tree_of = |commit: Oid| -> Result<String, git2::Error> {
        if commit.is_zero() {
            return Ok(repo.treebuilder(None)?.write()?.to_string());
        }
        Ok(repo.find_commit(commit)?.tree_id().to_string())
    };
    let (from, to) = (tree_of(old)?, tree_of(new)?);
    let state = |tree: &str, head: Oid| UserState {
        head: Some(head.to_string()),
        work: tree.to_owned(),
        index: tree.to_owned(),
    };
    let t = Transition {
        workdir: root.to_path_buf(),
        ref_name: "HEAD".into(),
        old: Some(old.to_string()),
        new: Some(new.to_string()),
        from_work: from.clone(),
        from_index: from.clone(),
        to_work: to.clone(),
        to_index: to.clone(),
        message: String::new(),
        // Never logged: only names the files written on the way.
        op: OpEntry {
            id: format!("recovered-{new}"),
            kind: OpKind::Apply,
            target: None,
            time: 0,
            workdir: root.display().to_string(),
            ref_name: "HEAD".into(),
            summary: String::new(),
            before: state(&from, old),
            after: state(&to, new),
            extras: Default::default(),
            reply_key: None,
        },
    };
    let paths = Paths::of(repo, &t)?;
    let lock = IndexLock::acquire(repo)?;
    let mut index = lock.read(repo)?;
    let checker = Checker::new(repo, root)?;
    let skipped = write_files(repo, &t, &paths, &mut index, &checker, None)?;
    lock.commit(&mut index)?;
    Ok(skipped)
}
