//! A transition, the move of the user's ref, working tree and index from one state to another
//! that [`super::publish`] makes as one step, and its journal (`<git dir>/loaf/journal.json`):
//! written whole and durably before the ref moves, dropped once the move is finished, read
//! by [`super::recovery`] when a crash came in between. Also the named moments of an
//! operation ([`crash_point`]) at which the crash-safety tests stop it.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use super::oplog::OpEntry;
use crate::git::durable;

/// The journal's file name in `<common git dir>/loaf/`.
pub(crate) const JOURNAL: &str = "journal.json";
/// Folders in `<common git dir>/loaf/` where files are checked out before being renamed into
/// the working tree; one a crash left is removed by [`recover`].
pub(crate) const STAGING_PREFIX: &str = "publish-";

pub(crate) fn io_error(what: &str, path: &Path, error: std::io::Error) -> git2::Error {
    git2::Error::from_str(&format!("{what} {}: {error}", path.display()))
}

/// A move of the user's ref, working tree and index from one state to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    /// The working tree (linked worktrees share the git dir, so the journal names it).
    pub workdir: PathBuf,
    /// `refs/heads/<branch>`, or `HEAD` when detached.
    pub ref_name: String,
    /// What the ref holds before (`None`: unborn branch).
    pub old: Option<String>,
    /// What it holds after (`None`: back to unborn, the ref is deleted).
    pub new: Option<String>,
    /// Working tree before.
    pub from_work: String,
    /// Index before.
    pub from_index: String,
    /// Working tree after.
    pub to_work: String,
    /// Index after.
    pub to_index: String,
    /// The reflog message.
    pub message: String,
    /// Logged once the files are written.
    pub op: OpEntry,
}

/// A change of HEAD's attachment that goes with a move of HEAD itself (`step-back` from a
/// branch detaches it, `step-forward` to the tip attaches it again). It is recorded in the
/// journal with the transition, so that a crash between the detach and the move, or between
/// the move and the attach, is rolled back or finished like the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// The branch (`refs/heads/<name>`) HEAD is on, at `old`, and leaves: detached first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detach_from: Option<String>,
    /// The branch HEAD is attached to at the end, if it then holds `new`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach_to: Option<String>,
}

/// What the journal holds: the transition, and the change of HEAD's attachment with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Journal {
    #[serde(flatten)]
    pub(crate) transition: Transition,
    #[serde(flatten)]
    pub(crate) attachment: Attachment,
}

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

/// Paths for a message: the first five, then how many more.
pub(crate) fn list(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths
        .iter()
        .take(5)
        .map(|p| p.display().to_string())
        .collect();
    let more = paths.len().saturating_sub(shown.len());
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// When the process started its work (the first call of [`mark_start`]): `LOAF_LOG=debug`
/// shows how long each moment took to reach, to see where an operation spends its time.
static STARTED: std::sync::LazyLock<std::time::Instant> =
    std::sync::LazyLock::new(std::time::Instant::now);

/// Starts the clock [`crash_point`] reports against.
pub fn mark_start() {
    std::sync::LazyLock::force(&STARTED);
}

/// A named moment of an operation, for the crash-safety tests: when `LOAF_CRASH_AT` names it
/// the process aborts there; when `LOAF_PAUSE_AT` names it, it sleeps there
/// (`LOAF_PAUSE_MS`, default 3000) so that a test can SIGKILL it at exactly that moment, or,
/// with `LOAF_PAUSE_FILE`, writes that file and waits until the test removes it (to act in
/// the user's repository at exactly that moment).
/// Without those variables it does nothing.
pub fn crash_point(name: &str) {
    tracing::debug!(
        "{name} reached after {:.1} ms",
        STARTED.elapsed().as_secs_f64() * 1000.0
    );
    if std::env::var_os("LOAF_PAUSE_AT").is_some_and(|v| v == name) {
        match std::env::var_os("LOAF_PAUSE_FILE") {
            // A test's handshake: say we are here, then wait until the test removes the file.
            Some(handshake) => {
                let handshake = std::path::PathBuf::from(handshake);
                let _ = std::fs::write(&handshake, name);
                let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
                while handshake.exists() && std::time::Instant::now() < until {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
            None => {
                let ms = std::env::var("LOAF_PAUSE_MS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(3000);
                std::thread::sleep(std::time::Duration::from_millis(ms));
            }
        }
    }
    if std::env::var_os("LOAF_CRASH_AT").is_some_and(|v| v == name) {
        std::process::abort();
    }
}

pub(crate) fn journal_path(repo: &Repository) -> PathBuf {
    repo.commondir().join("loaf").join(JOURNAL)
}

/// Writes the journal whole or not at all, and durably before the ref moves: a temporary
/// file, fsynced, renamed into place, and its folder fsynced. After a power loss the
/// journal is then either absent (the ref cannot have moved) or complete.
pub(crate) fn write_journal(path: &Path, journal: &Journal) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(path);
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_vec(journal).map_err(std::io::Error::other)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(&json)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    durable::sync_dir(dir)
}

/// Removes the journal: the operation is complete.
pub(crate) fn drop_journal(repo: &Repository) -> std::io::Result<()> {
    let path = journal_path(repo);
    std::fs::remove_file(&path)?;
    durable::sync_dir(path.parent().unwrap_or(&path))
}

/// Removes the journal of an operation whose log entry is durable, without syncing its
/// folder (one device flush less): a power loss may bring the journal back, and recovery
/// then finds its entry the log's newest and only finishes what follows the log (HEAD's
/// attachment), touching no file. Another publish cannot come in between: writing its own
/// journal syncs the folder, and this removal with it.
pub(crate) fn drop_logged_journal(repo: &Repository) -> std::io::Result<()> {
    std::fs::remove_file(journal_path(repo))
}

/// What `ref_name` holds now (`None` when it does not exist: unborn).
pub fn current(repo: &Repository, ref_name: &str) -> Option<String> {
    repo.refname_to_id(ref_name).ok().map(|o| o.to_string())
}

pub(crate) fn oid(s: &str) -> Result<Oid, git2::Error> {
    Oid::from_str(s)
}

/// The paths a transition changes: in the working tree, and in the index (a superset).
pub(crate) struct Paths {
    /// In the working tree.
    pub(crate) work: Vec<PathBuf>,
    /// In the index.
    pub(crate) index: Vec<PathBuf>,
}

impl Paths {
    pub(crate) fn of(repo: &Repository, t: &Transition) -> Result<Paths, git2::Error> {
        let work = differing(repo, &t.from_work, &t.to_work)?;
        let mut index = differing(repo, &t.from_index, &t.to_index)?;
        index.extend(work.iter().cloned());
        Ok(Paths {
            work: work.into_iter().collect(),
            index: index.into_iter().collect(),
        })
    }
}

/// Paths whose entry differs between two trees (ids in hex).
pub fn differing(repo: &Repository, a: &str, b: &str) -> Result<BTreeSet<PathBuf>, git2::Error> {
    crate::git::treediff::changed_paths(repo, Some(oid(a)?), Some(oid(b)?))
}
