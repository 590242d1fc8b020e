//! Publishing: moving the user's branch and files from one state to another as one step that
//! a crash cannot leave half done.
//!
//! A [`Transition`] names the ref to move (compare-and-swap from `old` to `new`) and the trees
//! of the working tree and index before and after. [`publish`]:
//! 1. checks the ref still holds `old` and, for an apply, that the user has not changed a path
//!    the transition changes (otherwise nothing is touched: [`PublishError::Moved`] /
//!    [`PublishError::Changed`]);
//! 2. writes a journal (`<git dir>/loaf/journal.json`, renamed into place whole);
//! 3. moves the ref by compare-and-swap — the commit point;
//! 4. writes only the paths that differ to the working tree and index;
//! 5. appends the operation log entry and deletes the journal.
//!
//! Killed before 3, the journal is dropped by the next command: all before. Killed after 3,
//! the next command finishes 4 and 5 ([`recover`]): all after. While rolling forward, a file is
//! written only if it still holds its before or after content, so a change the user made in
//! between is never overwritten.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{Index, ObjectType, Oid, Repository, Tree};
use serde::{Deserialize, Serialize};

use super::durable;
use super::index_lock::{self, IndexLock, IndexLockError};
use super::oplog::{self, OpEntry};
use super::stage_swap::StageSwap;

mod unreadable;

/// The journal's file name in `<common git dir>/loaf/`.
const JOURNAL: &str = "journal.json";
/// Folders in `<common git dir>/loaf/` where files are checked out before being renamed into
/// the working tree; one a crash left is removed by [`recover`].
const STAGING_PREFIX: &str = "publish-";

fn io_error(what: &str, path: &Path, error: std::io::Error) -> git2::Error {
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

/// Why a transition was not published. Nothing of the user's was changed, except with
/// [`PublishError::Unfinished`] (the change is published, the next command finishes it).
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The ref no longer holds `old`.
    #[error("{ref_name} moved while git-loaf ran (now {now})")]
    Moved {
        /// The ref.
        ref_name: String,
        /// What it holds now.
        now: String,
    },
    /// The user changed paths the transition also changes.
    #[error("you changed {} while git-loaf ran", list(.0))]
    Changed(Vec<PathBuf>),
    /// Another git command holds the index lock.
    #[error("another git command is using the index ({} exists)", .0.display())]
    IndexLocked(PathBuf),
    /// Writing the index failed.
    #[error("{0}")]
    Index(IndexLockError),
    /// Writing ignored files or folders failed.
    #[error("{0}")]
    Visible(#[from] super::visible::VisibleError),
    /// git failed.
    #[error("{0}")]
    Git(#[from] git2::Error),
    /// The journal could not be written.
    #[error("cannot write the journal: {0}")]
    Io(#[from] std::io::Error),
    /// The operation log cannot take an entry: refused before anything was published.
    #[error("{0}")]
    DamagedLog(oplog::Damaged),
    /// A crashed operation's journal cannot be read, and the refs cannot tell what it did.
    #[error("{0}")]
    DamagedJournal(unreadable::Undecided),
    /// Failed after the commit point: the change is published (the ref moved) but not
    /// finished; the journal stays, and the next git-loaf command finishes it.
    #[error("{0} (after the change was published: the branch or HEAD already moved)")]
    Unfinished(Box<PublishError>),
}

impl From<IndexLockError> for PublishError {
    fn from(error: IndexLockError) -> Self {
        match error {
            IndexLockError::Busy(path) => PublishError::IndexLocked(path),
            other => PublishError::Index(other),
        }
    }
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

/// Publishes `t`. With `check_user`, refuses when the user changed, since `from_*` was
/// recorded, a path this transition changes (apply); undo and redo check the whole state
/// themselves before calling. The user's `index.lock` is held from before that check until
/// the new index is in place. Returns the files left alone because the user changed them
/// between the check and the moment each would have been replaced (never overwritten).
pub fn publish(
    repo: &Repository,
    t: &Transition,
    check_user: bool,
) -> Result<Vec<PathBuf>, PublishError> {
    publish_attached(repo, t, check_user, &Attachment::default()).map(|(skipped, _)| skipped)
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
struct Journal {
    #[serde(flatten)]
    transition: Transition,
    #[serde(flatten)]
    attachment: Attachment,
}

/// [`publish`] with a change of HEAD's attachment (`t.ref_name` is `HEAD`). In order: the
/// journal (durable), the detach, the move of HEAD (the commit point), files, index, log,
/// the attach, and the journal dropped: a crash anywhere is rolled back (up to the move) or
/// finished (after it) by [`recover`]. Returns the files left alone and whether HEAD ended
/// on `attach_to`.
pub fn publish_attached(
    repo: &Repository,
    t: &Transition,
    check_user: bool,
    attachment: &Attachment,
) -> Result<(Vec<PathBuf>, bool), PublishError> {
    let now = current(repo, &t.ref_name);
    if now != t.old {
        return Err(PublishError::Moved {
            ref_name: t.ref_name.clone(),
            now: now.unwrap_or_else(|| "unborn".to_owned()),
        });
    }
    // A log that cannot take the entry is found now, not after the user's files changed.
    oplog::check(repo).map_err(PublishError::DamagedLog)?;
    let paths = Paths::of(repo, t)?;
    // Taken before the commit point, so that the index can always be written after it.
    let lock = IndexLock::acquire(repo)?;
    let mut index = lock.read(repo)?;
    let checker = Checker::new(repo, &t.workdir)?;
    checker.trust_index(&index, &paths.work);
    if check_user {
        let changed = changed_by_user(repo, t, &paths, &index, &checker)?;
        if !changed.is_empty() {
            return Err(PublishError::Changed(changed));
        }
    }
    // What the journal and the refs will name must outlast a power loss before they do.
    durable::sync_new_objects(repo)?;
    let journal = journal_path(repo);
    write_journal(
        &journal,
        &Journal {
            transition: t.clone(),
            attachment: attachment.clone(),
        },
    )?;
    crash_point("journal");
    if let Err(e) = detach_and_move(repo, t, attachment) {
        let _ = std::fs::remove_file(&journal);
        return Err(e);
    }
    crash_point("ref");
    finish(repo, t, attachment, &paths, &mut index, &checker, lock).map_err(|e| {
        // Past the commit point: the journal stays for the next command to finish with.
        PublishError::Unfinished(Box::new(e))
    })
}

/// Detaches HEAD if asked, then moves the ref; on failure HEAD is attached back (nothing
/// changed).
fn detach_and_move(
    repo: &Repository,
    t: &Transition,
    attachment: &Attachment,
) -> Result<(), PublishError> {
    let old = t.old.as_deref().map(oid).transpose()?;
    let detached = match (&attachment.detach_from, old) {
        (Some(branch), Some(old)) => {
            super::head::detach(repo, old)?;
            durable::sync_ref(repo, "HEAD")?;
            crash_point("detached");
            Some((branch, old))
        }
        _ => None,
    };
    let moved = move_ref(repo, t);
    if moved.is_err()
        && let Some((branch, old)) = detached
    {
        let _ = super::head::attach(repo, branch, old);
    }
    moved?;
    durable::sync_ref(repo, &t.ref_name)?;
    Ok(())
}

/// Everything after the commit point: files, index, what git does not track, the log entry,
/// HEAD attached, the journal dropped.
fn finish(
    repo: &Repository,
    t: &Transition,
    attachment: &Attachment,
    paths: &Paths,
    index: &mut Index,
    checker: &Checker<'_>,
    lock: IndexLock,
) -> Result<(Vec<PathBuf>, bool), PublishError> {
    let mut swap = if paths.work.len() >= StageSwap::WORTH_IT {
        StageSwap::of(repo)
    } else {
        None
    };
    let mut skipped = write_files(repo, t, paths, index, checker, swap.as_mut())?;
    if let Some(swap) = swap {
        // The user's files are in place: a stage whose HEAD cannot be set says so only in the
        // log (its moved paths are recorded, so the next reset rewrites them, and a file is
        // checked against the commit before it moves again).
        let from_work = repo.find_tree(oid(&t.from_work)?)?;
        if let Err(e) = swap.finish(repo, &from_work, oid(&t.to_work)?, &paths.work) {
            tracing::debug!("the stage's HEAD was not moved after its files moved: {e}");
        }
    }
    crash_point("index");
    lock.commit(index)?;
    super::checkpoint::note_index_tree(repo, oid(&t.to_index)?);
    skipped.extend(publish_extras(repo, t)?);
    crash_point("files");
    log_durably(repo, &t.op)?;
    crash_point("oplog");
    let attached = attach_after(repo, t, attachment)?;
    crash_point("attached");
    drop_journal(repo)?;
    Ok((skipped, attached))
}

/// Attaches HEAD to `attachment.attach_to` when that branch holds `t.new` and HEAD is
/// detached there; whether HEAD is on it now.
fn attach_after(
    repo: &Repository,
    t: &Transition,
    attachment: &Attachment,
) -> Result<bool, git2::Error> {
    let (Some(branch), Some(new)) = (&attachment.attach_to, &t.new) else {
        return Ok(false);
    };
    let on_branch = repo
        .find_reference("HEAD")
        .ok()
        .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_owned))
        .is_some_and(|b| &b == branch);
    if on_branch {
        return Ok(true);
    }
    let attached = super::head::attach(repo, branch, oid(new)?)?;
    durable::sync_ref(repo, "HEAD").map_err(|e| io_error("cannot sync", Path::new("HEAD"), e))?;
    Ok(attached)
}

/// Writes what git does not track (ignored files, empty folders) as the transition's log
/// entry says; a path the user changed meanwhile is left alone and returned. Repeating it
/// after a crash is harmless.
fn publish_extras(repo: &Repository, t: &Transition) -> Result<Vec<PathBuf>, PublishError> {
    if t.op.extras.is_empty() {
        return Ok(Vec::new());
    }
    Ok(t.op.extras.publish(repo, &t.workdir)?)
}

/// The notice for files a publish left alone because the user changed them just then.
pub fn left_alone_notice(skipped: &[PathBuf]) -> Option<String> {
    (!skipped.is_empty()).then(|| {
        format!(
            "left as you changed them just now (not overwritten): {}",
            list(skipped)
        )
    })
}

/// What a crashed operation left, and what [`recover`] did with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovered {
    /// No journal: nothing to do.
    Nothing,
    /// The crash came before the ref moved: the journal was dropped (all before).
    RolledBack,
    /// The ref had moved: the files, index and log were finished (all after). Paths the user
    /// changed in between were left as they are.
    RolledForward {
        /// Paths left alone because they held neither the before nor the after content.
        skipped: Vec<PathBuf>,
    },
    /// The ref had moved to the operation's commit and then on (a commit made before the
    /// next loaf command): its files and index were not all written; nothing was changed.
    Superseded {
        /// The operation's commit.
        commit: String,
        /// What the ref holds now.
        now: String,
    },
    /// The journal was empty or cut short, and HEAD shows the operation did not move it.
    Unmoved {
        /// `empty` or `unreadable`.
        what: &'static str,
        /// What showed it.
        why: String,
    },
    /// The journal was empty or cut short, and HEAD's reflog shows the operation moved it
    /// (from `old` to `new`) without being recorded: its files and index were written now.
    Unrecorded {
        /// `empty` or `unreadable`.
        what: &'static str,
        /// The reflog message of the move (`git-loaf apply <id>: …`).
        message: String,
        /// Where HEAD was.
        old: String,
        /// Where it is.
        new: String,
        /// Paths left alone because the user had changed them.
        skipped: Vec<PathBuf>,
    },
}

/// Finishes or drops a publish a crash interrupted. Call with the repository lock held,
/// before anything else.
pub fn recover(repo: &Repository) -> Result<Recovered, PublishError> {
    if let Ok(entries) = std::fs::read_dir(repo.commondir().join("loaf")) {
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(STAGING_PREFIX)
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let journal = journal_path(repo);
    let text = match std::fs::read(&journal) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Recovered::Nothing),
        Err(e) => return Err(e.into()),
    };
    let Ok(Journal {
        transition: t,
        attachment,
    }) = serde_json::from_slice::<Journal>(&text)
    else {
        return unreadable::recover(repo, &journal, text.is_empty());
    };
    let Ok(user) = Repository::open(&t.workdir) else {
        // The working tree is gone (a removed linked worktree): nothing to finish there.
        std::fs::remove_file(&journal)?;
        return Ok(Recovered::RolledBack);
    };
    // A crash while a file was being written left its new content beside it.
    if let Ok(paths) = Paths::of(&user, &t) {
        for path in &paths.work {
            let _ = std::fs::remove_file(temp_beside(&t, path));
        }
    }
    let now = current(&user, &t.ref_name);
    if now != t.new && now != t.old {
        // The ref moved since the crash (the user committed, after removing the index.lock
        // the crash left). If it moved on from the operation's commit, that commit was
        // published and its files were not all written: say so, change nothing.
        let after_new = match (&now, &t.new) {
            (Some(now), Some(new)) => user
                .graph_descendant_of(oid(now)?, oid(new)?)
                .unwrap_or(false),
            _ => false,
        };
        drop_journal(repo)?;
        return Ok(if after_new {
            Recovered::Superseded {
                commit: t.new.clone().unwrap_or_default(),
                now: now.unwrap_or_default(),
            }
        } else {
            Recovered::RolledBack
        });
    }
    // When the ref does not move (old == new: e.g. a forced undo whose HEAD is already
    // where it goes), its value cannot tell whether the crash came before the commit point;
    // rolling forward carefully is safe either way.
    if now != t.new || (now == t.old && t.old != t.new) {
        reattach(&user, &t, &attachment)?;
        drop_journal(repo)?;
        return Ok(Recovered::RolledBack);
    }
    let paths = Paths::of(&user, &t)?;
    let lock = IndexLock::acquire(&user)?;
    let mut index = lock.read(&user)?;
    let checker = Checker::new(&user, &t.workdir)?;
    let mut skipped = write_files(&user, &t, &paths, &mut index, &checker, None)?;
    lock.commit(&mut index)?;
    super::checkpoint::note_index_tree(&user, oid(&t.to_index)?);
    skipped.extend(publish_extras(&user, &t)?);
    if oplog::newest_id(&user)?.as_deref() != Some(t.op.id.as_str()) {
        log_durably(&user, &t.op)?;
    }
    attach_after(&user, &t, &attachment)?;
    drop_journal(repo)?;
    Ok(Recovered::RolledForward { skipped })
}

/// Rolling back a move of HEAD that detached it first: HEAD, still at `old`, goes back on
/// the branch it left (if that branch still holds `old`).
fn reattach(
    repo: &Repository,
    t: &Transition,
    attachment: &Attachment,
) -> Result<(), PublishError> {
    let (Some(branch), Some(old)) = (&attachment.detach_from, &t.old) else {
        return Ok(());
    };
    if repo.head_detached().unwrap_or(false) && current(repo, "HEAD").as_ref() == Some(old) {
        super::head::attach(repo, branch, oid(old)?)?;
        durable::sync_ref(repo, "HEAD")?;
    }
    Ok(())
}

fn journal_path(repo: &Repository) -> PathBuf {
    repo.commondir().join("loaf").join(JOURNAL)
}

/// Writes the journal whole or not at all, and durably before the ref moves: a temporary
/// file, fsynced, renamed into place, and its folder fsynced. After a power loss the
/// journal is then either absent (the ref cannot have moved) or complete.
fn write_journal(path: &Path, journal: &Journal) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(path);
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_vec(journal).map_err(std::io::Error::other)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(&json)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    durable::sync_dir(dir)
}

/// Appends the log entry and makes it durable (its objects, then the log's ref), so that
/// the journal is dropped only once the entry outlasts a power loss.
fn log_durably(repo: &Repository, entry: &OpEntry) -> Result<(), PublishError> {
    oplog::append(repo, entry)?;
    durable::sync_new_objects(repo)?;
    durable::sync_ref(repo, oplog::OPLOG_REF)?;
    Ok(())
}

/// Removes the journal: the operation is complete.
fn drop_journal(repo: &Repository) -> std::io::Result<()> {
    let path = journal_path(repo);
    std::fs::remove_file(&path)?;
    durable::sync_dir(path.parent().unwrap_or(&path))
}

/// What `ref_name` holds now (`None` when it does not exist: unborn).
pub fn current(repo: &Repository, ref_name: &str) -> Option<String> {
    repo.refname_to_id(ref_name).ok().map(|o| o.to_string())
}

fn oid(s: &str) -> Result<Oid, git2::Error> {
    Oid::from_str(s)
}

fn move_ref(repo: &Repository, t: &Transition) -> Result<(), PublishError> {
    let moved = |e: git2::Error| {
        if e.code() == git2::ErrorCode::Modified || e.code() == git2::ErrorCode::Exists {
            PublishError::Moved {
                ref_name: t.ref_name.clone(),
                now: current(repo, &t.ref_name).unwrap_or_else(|| "unborn".to_owned()),
            }
        } else {
            PublishError::Git(e)
        }
    };
    match (&t.old, &t.new) {
        (Some(old), Some(new)) => repo
            .reference_matching(&t.ref_name, oid(new)?, true, oid(old)?, &t.message)
            .map(drop)
            .map_err(moved),
        (None, Some(new)) => repo
            .reference(&t.ref_name, oid(new)?, false, &t.message)
            .map(drop)
            .map_err(moved),
        (Some(old), None) => {
            let mut reference = repo.find_reference(&t.ref_name).map_err(moved)?;
            if reference.target().map(|o| o.to_string()).as_deref() != Some(old.as_str()) {
                return Err(moved(git2::Error::new(
                    git2::ErrorCode::Modified,
                    git2::ErrorClass::Reference,
                    "moved",
                )));
            }
            // libgit2 refuses the delete if the ref changed since it was read: still a CAS.
            reference.delete().map_err(moved)
        }
        (None, None) => Ok(()),
    }
}

/// The paths a transition changes: in the working tree, and in the index (a superset).
struct Paths {
    work: Vec<PathBuf>,
    index: Vec<PathBuf>,
}

impl Paths {
    fn of(repo: &Repository, t: &Transition) -> Result<Paths, git2::Error> {
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
    super::treediff::changed_paths(repo, Some(oid(a)?), Some(oid(b)?))
}

/// The blob id a tree holds at `path`.
pub(crate) fn blob_at(tree: &Tree<'_>, path: &Path) -> Option<(Oid, i32)> {
    tree.get_path(path)
        .ok()
        .map(|e| (e.id(), e.filemode()))
        .filter(|(_, mode)| *mode != 0o040000)
}

/// The blob the user's file at `path` would be if added (filters such as CRLF conversion
/// applied, the blob written), `None` when absent. A folder or unreadable file gives the null
/// id, which matches nothing, except a folder where `base` has one too (a folder the
/// transition replaces by a file, whose files are checked one by one): absent, as in `base`.
pub(crate) fn file_blob(
    repo: &Repository,
    workdir: &Path,
    path: &Path,
    base: &Tree<'_>,
) -> Option<Oid> {
    let conversions = super::filters::Conversions::of(repo).ok()?;
    current_id(workdir, path, base, &mut |path| {
        super::filters::file_blob(repo, &conversions, workdir, path).ok()
    })
}

/// How publish checks that a file still holds what it expects, up to three times per path:
/// [`file_blob`]'s id, without writing the blob when no conversion applies, and remembered
/// for a file whose stat data (change time included, which no tool can set back) show it
/// settled well before it was read: the same stat data later mean the same content.
struct Checker<'r> {
    repo: &'r Repository,
    conversions: super::filters::Conversions,
    workdir: PathBuf,
    known: std::cell::RefCell<std::collections::HashMap<PathBuf, (StatKey, Oid)>>,
}

/// What identifies a file's content version on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StatKey {
    ctime: (i64, i64),
    mtime: (i64, i64),
    size: u64,
    ino: u64,
    mode: u32,
}

impl StatKey {
    #[cfg(unix)]
    fn of(meta: &std::fs::Metadata) -> Option<StatKey> {
        use std::os::unix::fs::MetadataExt as _;
        Some(StatKey {
            ctime: (meta.ctime(), meta.ctime_nsec()),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            size: meta.size(),
            ino: meta.ino(),
            mode: meta.mode(),
        })
    }

    /// Elsewhere nothing is remembered.
    #[cfg(not(unix))]
    fn of(_meta: &std::fs::Metadata) -> Option<StatKey> {
        None
    }
}

impl<'r> Checker<'r> {
    fn new(repo: &'r Repository, workdir: &Path) -> Result<Checker<'r>, git2::Error> {
        Ok(Checker {
            repo,
            conversions: super::filters::Conversions::of(repo)?,
            workdir: workdir.to_path_buf(),
            known: Default::default(),
        })
    }

    /// Takes what the user's index knows: an entry whose stat data are the file's, and not
    /// racily clean (the file changed before the index was written), holds the file's
    /// content, as git itself judges (`git status` reads no such file).
    fn trust_index(&self, index: &Index, paths: &[PathBuf]) {
        let Some(index_time) = std::fs::metadata(self.repo.path().join("index"))
            .ok()
            .and_then(|m| StatKey::of(&m))
            .map(|k| k.mtime)
        else {
            return;
        };
        for path in paths {
            let Some(entry) = index.get_path(path, 0) else {
                continue;
            };
            let Some(key) = std::fs::symlink_metadata(self.workdir.join(path))
                .ok()
                .filter(|m| m.is_file())
                .and_then(|m| StatKey::of(&m))
            else {
                continue;
            };
            let mtime = (
                i64::from(entry.mtime.seconds()),
                i64::from(entry.mtime.nanoseconds()),
            );
            let same = (key.mtime.0 as i32, key.mtime.1 as u32)
                == (entry.mtime.seconds(), entry.mtime.nanoseconds())
                && (key.ctime.0 as i32, key.ctime.1 as u32)
                    == (entry.ctime.seconds(), entry.ctime.nanoseconds())
                && key.size as u32 == entry.file_size
                && key.ino as u32 == entry.ino
                && entry.file_size != 0;
            if same && mtime < index_time {
                self.known
                    .borrow_mut()
                    .insert(path.clone(), (key, entry.id));
            }
        }
    }

    /// The id of what the file at `path` holds now (see [`file_blob`] for `base`).
    fn id(&self, path: &Path, base: &Tree<'_>) -> Option<Oid> {
        current_id(&self.workdir, path, base, &mut |path| self.regular(path))
    }

    fn regular(&self, path: &Path) -> Option<Oid> {
        let full = self.workdir.join(path);
        let key = std::fs::symlink_metadata(&full)
            .ok()
            .and_then(|m| StatKey::of(&m));
        if let (Some(key), Some((known, id))) = (key, self.known.borrow().get(path))
            && key == *known
        {
            return Some(*id);
        }
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let id = super::filters::file_id(self.repo, &self.conversions, &self.workdir, path).ok()?;
        let after = std::fs::symlink_metadata(&full)
            .ok()
            .and_then(|m| StatKey::of(&m));
        // Changed two seconds or more before the read (the clock a filesystem stamps with
        // may lag the precise one by a tick) and not while it was read: any later write
        // gives it a newer change time.
        if let Some(key) = key
            && after == Some(key)
            && key.ctime.0 + 2 <= started
        {
            self.known
                .borrow_mut()
                .insert(path.to_path_buf(), (key, id));
        }
        Some(id)
    }
}

fn current_id(
    workdir: &Path,
    path: &Path,
    base: &Tree<'_>,
    regular: &mut dyn FnMut(&Path) -> Option<Oid>,
) -> Option<Oid> {
    let full = workdir.join(path);
    let folder_in_base = || base.get_path(path).is_ok_and(|e| e.filemode() == 0o040000);
    let found = std::fs::symlink_metadata(&full);
    // Beyond a symbolic link is not in the working tree (as git sees it): a link where a
    // folder was (one the operation made, say) is never read through.
    if found.is_ok() && beyond_symlink(workdir, path) {
        return None;
    }
    match found {
        // A file where a folder of `path` should be (a file replaced by a folder): absent.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            None
        }
        Err(_) => Some(Oid::ZERO_SHA1),
        Ok(meta) if meta.is_dir() => (!folder_in_base()).then_some(Oid::ZERO_SHA1),
        Ok(meta) if meta.file_type().is_symlink() => std::fs::read_link(&full)
            .ok()
            .and_then(|target| {
                Oid::hash_object(ObjectType::Blob, target.as_os_str().as_encoded_bytes()).ok()
            })
            .or(Some(Oid::ZERO_SHA1)),
        Ok(_) => Some(regular(path).unwrap_or(Oid::ZERO_SHA1)),
    }
}

/// Whether a folder above `path` in `workdir` is a symbolic link (what lies beyond it is
/// not the working tree's: git neither reads nor writes through one).
fn beyond_symlink(workdir: &Path, path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .take_while(|a| !a.as_os_str().is_empty())
        .any(|a| {
            std::fs::symlink_metadata(workdir.join(a)).is_ok_and(|m| m.file_type().is_symlink())
        })
}

/// Paths the transition changes whose file or index entry is no longer what `from_*` says.
fn changed_by_user(
    repo: &Repository,
    t: &Transition,
    paths: &Paths,
    index: &Index,
    checker: &Checker<'_>,
) -> Result<Vec<PathBuf>, git2::Error> {
    let from_work = repo.find_tree(oid(&t.from_work)?)?;
    let from_index = repo.find_tree(oid(&t.from_index)?)?;
    let mut changed = Vec::new();
    for path in &paths.index {
        let file_changed = paths.work.binary_search(path).is_ok()
            && checker.id(path, &from_work) != blob_at(&from_work, path).map(|b| b.0);
        let staged = index.get_path(path, 0).map(|e| e.id);
        let conflicted = (1..=3).any(|stage| index.get_path(path, stage).is_some());
        let index_changed = conflicted || staged != blob_at(&from_index, path).map(|b| b.0);
        if file_changed || index_changed {
            changed.push(path.clone());
        }
    }
    Ok(changed)
}

/// Writes the working tree paths that differ, then sets the index entries that differ (in
/// `index`, written by the caller). Each file is checked right before it is replaced: one
/// already holding its after content is left as it is (a roll-forward after a crash), one
/// holding neither its before nor its after content was changed by the user meanwhile and is
/// left alone and returned — nothing of the user's is ever overwritten. With `swap`, a file
/// the stage already holds is moved from there rather than written.
// TODO(issue 24): split
#[allow(clippy::too_many_lines)]
fn write_files(
    repo: &Repository,
    t: &Transition,
    paths: &Paths,
    index: &mut Index,
    checker: &Checker<'_>,
    mut swap: Option<&mut StageSwap>,
) -> Result<Vec<PathBuf>, git2::Error> {
    let from_work = repo.find_tree(oid(&t.from_work)?)?;
    let to_work = repo.find_tree(oid(&t.to_work)?)?;
    let to_index = repo.find_tree(oid(&t.to_index)?)?;
    let conversions = &checker.conversions;
    let mut skipped = Vec::new();
    // Folders the operation leaves in place (the user's empty folders a reply wrote into):
    // a deletion never removes them, even when it leaves them empty.
    let keep = t.op.extras.folders_after();
    // What a path may hold now for it to be replaced: its before content, or (done already)
    // its after content.
    let verdict = |path: &Path| {
        let before = blob_at(&from_work, path).map(|b| b.0);
        let after = blob_at(&to_work, path).map(|b| b.0);
        let now = checker.id(path, &from_work);
        if now == after {
            Verdict::Done
        } else if now == before {
            Verdict::Replace
        } else {
            Verdict::UserChanged
        }
    };
    let mut write: Vec<&PathBuf> = Vec::new();
    for path in &paths.work {
        match verdict(path) {
            Verdict::Replace => write.push(path),
            Verdict::UserChanged => skipped.push(path.clone()),
            // A deletion a crash interrupted may have left its folders behind.
            Verdict::Done if blob_at(&to_work, path).is_none() => {
                remove_empty_parents_keeping(&t.workdir, path, &keep);
            }
            // The content is there; the mode may be what changed (or a crash came between).
            Verdict::Done => {
                if let Some((_, mode @ (0o100644 | 0o100755))) = blob_at(&to_work, path) {
                    set_executable(&t.workdir.join(path), mode == 0o100755);
                }
            }
        }
    }
    // Deletions by hand (checkout would judge "untracked" against HEAD, which has already
    // moved); everything else by a checkout of just those paths, so filters (CRLF, eol)
    // apply as git would apply them.
    let (gone, written): (Vec<&PathBuf>, Vec<&PathBuf>) = write
        .into_iter()
        .partition(|path| blob_at(&to_work, path).is_none());
    // A file no conversion applies to is its blob: written straight from it (or moved from
    // the stage); the others come from a libgit2 checkout (below).
    let mut converted: Vec<&PathBuf> = Vec::new();
    for path in &written {
        match blob_at(&to_work, path) {
            Some((_, mode)) if mode != 0o160000 && !conversions.apply_to(repo, path)? => {}
            _ => converted.push(path),
        }
    }
    // What may move between the stage and the user's tree: plain files where the stage's
    // HEAD has what the publish writes (nothing, for a deletion). Recorded before any moves.
    let mut movable: Vec<&PathBuf> = Vec::new();
    if let Some(stage) = swap.as_deref_mut() {
        let stage_tree = repo.find_tree(stage.tree())?;
        for path in gone.iter().chain(&written) {
            if blob_at(&stage_tree, path) == blob_at(&to_work, path)
                && !converted.contains(path)
                && !conversions.apply_to(repo, path)?
            {
                movable.push(path);
            }
        }
        movable.sort();
        if movable.is_empty() {
            swap = None;
        } else if let Err(e) = stage.record(&movable) {
            tracing::debug!("stage files not moved: {e}");
            swap = None;
        }
    }
    let movable_path = |path: &PathBuf| movable.binary_search(&path).is_ok();
    // Between the first look at each file and the last one right before it is replaced: a
    // test saves a file here to see the last look keep it.
    crash_point("replacing");
    for path in gone {
        if verdict(path) != Verdict::Replace || beyond_symlink(&t.workdir, path) {
            skipped.push(path.clone());
        } else if movable_path(path)
            && swap
                .as_deref_mut()
                .is_some_and(|stage| stage.take_deleted(path, &t.workdir.join(path)))
        {
            remove_empty_parents_keeping(&t.workdir, path, &keep);
        } else {
            remove_file(&t.workdir, path, &keep)?;
        }
    }
    if !written.is_empty() {
        // Each file is written under another name, then renamed into place: a file is always
        // either its old or its new self, even if the process dies in the middle. The files
        // conversions apply to come from a libgit2 checkout of just those paths into a folder
        // next to the journal (filters applied, modes set), then their driver's smudge.
        let mut staging = None;
        let mut checkout_dir = PathBuf::new();
        if !converted.is_empty() {
            let loaf_dir = repo.commondir().join("loaf");
            let dir = tempfile::Builder::new()
                .prefix(STAGING_PREFIX)
                .tempdir_in(&loaf_dir)
                .map_err(|e| io_error("cannot create a folder in", &loaf_dir, e))?;
            checkout_dir = dir.path().to_path_buf();
            staging = Some(dir);
            let mut checkout = CheckoutBuilder::new();
            checkout
                .force()
                .update_index(false)
                .disable_pathspec_match(true)
                .target_dir(&checkout_dir);
            for path in &converted {
                checkout.path(path.as_path());
            }
            repo.checkout_tree(to_work.as_object(), Some(&mut checkout))?;
            super::filters::smudge_in_place(repo, &checkout_dir, &converted)?;
        }
        for path in &written {
            let to = t.workdir.join(path);
            // The last look before replacing: an edit saved since the first one wins; and
            // nothing is written through a link still standing where a folder goes.
            if verdict(path) != Verdict::Replace || beyond_symlink(&t.workdir, path) {
                skipped.push((*path).clone());
                continue;
            }
            // A folder in the way of a file goes first.
            if to.is_dir() && !to.is_symlink() {
                std::fs::remove_dir_all(&to).map_err(|e| io_error("cannot remove", &to, e))?;
            }
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| io_error("cannot create", parent, e))?;
            }
            let from = if converted.contains(path) {
                checkout_dir.join(path)
            } else if let Some((id, mode)) = blob_at(&to_work, path)
                && movable_path(path)
                && swap
                    .as_deref_mut()
                    .is_some_and(|swap| swap.take(path, &to, id, mode))
            {
                continue;
            } else {
                // Written beside its target (a new file in a busy folder of the git dir
                // costs the filesystem far more), under a name the journal determines, so
                // that recovery removes it if the process dies before the rename.
                let from = temp_beside(t, path);
                if let Some((id, mode)) = blob_at(&to_work, path) {
                    write_blob(repo, id, mode, &from)?;
                }
                from
            };
            super::filters::keep_permissions(&to, &from);
            std::fs::rename(&from, &to).map_err(|e| io_error("cannot write", &to, e))?;
        }
        drop(staging);
    }
    crash_point("checkout");
    // Skipped files still get their after index entry: the user's edit then shows as an
    // unstaged change on top of the new HEAD, as if made after the operation.
    for path in &paths.index {
        let holds_it = !skipped.contains(path);
        set_index_entry(index, &t.workdir, path, &to_index, &to_work, holds_it)?;
    }
    Ok(skipped)
}

/// Where the new content of `path` is written before it is renamed over the user's file:
/// beside it, named after the operation (unique, recorded in the journal).
fn temp_beside(t: &Transition, path: &Path) -> PathBuf {
    let full = t.workdir.join(path);
    let name = full
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Within the usual 255-byte limit on names.
    let name = if name.len() > 200 {
        Oid::hash_object(ObjectType::Blob, name.as_bytes())
            .map(|o| o.to_string())
            .unwrap_or_default()
    } else {
        name
    };
    full.with_file_name(format!(".{name}.loaf-{}", t.op.id))
}

/// Writes blob `id` as a new file (or symlink, by `mode`) at `file`, as a checkout without
/// conversions would: an executable gets the executable bits the umask allows.
fn write_blob(repo: &Repository, id: Oid, mode: i32, file: &Path) -> Result<(), git2::Error> {
    let blob = repo.find_blob(id)?;
    let failed = |e| io_error("cannot write", file, e);
    if mode == 0o120000 {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt as _;
            let target = std::ffi::OsStr::from_bytes(blob.content());
            return std::os::unix::fs::symlink(target, file).map_err(failed);
        }
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(if mode == 0o100755 { 0o777 } else { 0o666 });
    }
    let mut out = options.open(file).map_err(failed)?;
    out.write_all(blob.content()).map_err(failed)
}

/// Gives a plain file the executable bits its mode says (git's `x` for whoever may read it),
/// for a change of mode alone; a filesystem that keeps no such bit is left as it is.
#[cfg(unix)]
fn set_executable(file: &Path, executable: bool) {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(meta) = std::fs::symlink_metadata(file) else {
        return;
    };
    let mode = meta.permissions().mode() & 0o7777;
    let wanted = super::filters::with_executable(mode, executable);
    if meta.is_file() && wanted != mode {
        let _ = std::fs::set_permissions(file, std::fs::Permissions::from_mode(wanted));
    }
}

#[cfg(not(unix))]
fn set_executable(_file: &Path, _executable: bool) {}

/// What may be done with one file of the working tree, judged right before it is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// It holds its before content: replace it.
    Replace,
    /// It already holds its after content.
    Done,
    /// It holds something else: the user's; leave it.
    UserChanged,
}

/// Folders left empty above `path`, up to the working tree root, are removed (as git does).
pub(crate) fn remove_empty_parents(workdir: &Path, path: &Path) {
    remove_empty_parents_keeping(workdir, path, &BTreeSet::new());
}

/// [`remove_empty_parents`], stopping at the folders in `keep` (which then hold what is
/// above them).
fn remove_empty_parents_keeping(workdir: &Path, path: &Path, keep: &BTreeSet<PathBuf>) {
    let mut dir = path.parent();
    while let Some(parent) = dir.filter(|d| !d.as_os_str().is_empty()) {
        if keep.contains(parent) || std::fs::remove_dir(workdir.join(parent)).is_err() {
            break;
        }
        dir = parent.parent();
    }
}

/// Removes a file the transition deletes, then its folders left empty (as git does).
fn remove_file(workdir: &Path, path: &Path, keep: &BTreeSet<PathBuf>) -> Result<(), git2::Error> {
    let full = workdir.join(path);
    match std::fs::remove_file(&full) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(git2::Error::from_str(&format!(
                "cannot remove {}: {e}",
                full.display()
            )));
        }
    }
    remove_empty_parents_keeping(workdir, path, keep);
    Ok(())
}

/// Makes the index entry of `path` what `to_index` says. When the file on disk is that
/// content (`file_holds_it`: written by us or left as it was), the entry gets the file's stat
/// data (so git sees it clean without re-reading); otherwise (a partially staged file, or a
/// file the user changed meanwhile) zeroed stat data, so git re-hashes and sees the
/// difference.
fn set_index_entry(
    index: &mut Index,
    workdir: &Path,
    path: &Path,
    to_index: &Tree<'_>,
    to_work: &Tree<'_>,
    file_holds_it: bool,
) -> Result<(), git2::Error> {
    let Some((id, mode)) = blob_at(to_index, path) else {
        if index.get_path(path, 0).is_some()
            || (1..=3).any(|stage| index.get_path(path, stage).is_some())
        {
            index.remove_path(path)?;
        }
        return Ok(());
    };
    // Same blob and mode: the file is exactly the entry (a chmod-only difference must stay
    // visible to git, so it gets no trusted stat data).
    let same_as_file = file_holds_it && blob_at(to_work, path) == Some((id, mode));
    let meta = same_as_file
        .then(|| std::fs::symlink_metadata(workdir.join(path)).ok())
        .flatten();
    index.add(&index_lock::entry(path, id, mode as u32, meta.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal_of(t: &Transition) -> Journal {
        Journal {
            transition: t.clone(),
            attachment: Attachment::default(),
        }
    }
    use crate::git::checkpoint;
    use crate::git::oplog::{OpKind, UserState};
    use crate::git::testing::{committed_repo as repo, git, make_dirty, user_state};

    fn tree_of(repo: &Repository, commit: &str) -> String {
        repo.find_commit(oid(commit).expect("oid"))
            .and_then(|c| c.tree())
            .expect("tree")
            .id()
            .to_string()
    }

    /// The transition of an AI commit on HEAD whose tree is HEAD's plus `files` (path,
    /// content, mode), from the clean tree to that commit's tree.
    fn ai_commit(repo: &Repository, root: &Path, files: &[(&str, &[u8], i32)]) -> Transition {
        let head = repo.refname_to_id("HEAD").expect("head").to_string();
        let base_tree = tree_of(repo, &head);
        let base = repo.find_tree(oid(&base_tree).expect("oid")).expect("tree");
        let mut builder = repo.treebuilder(Some(&base)).expect("builder");
        for (path, content, mode) in files {
            let blob = repo.blob(content).expect("blob");
            builder.insert(path, blob, *mode).expect("insert");
        }
        let tree = builder.write().expect("tree").to_string();
        let commit = crate::git::commit::write_commit(
            repo,
            oid(&tree).expect("oid"),
            &[oid(&head).expect("oid")],
            "AI",
        )
        .expect("commit")
        .to_string();
        transition(
            root,
            &head,
            &commit,
            (&base_tree, &base_tree),
            (&tree, &tree),
        )
    }

    fn transition(
        root: &Path,
        old: &str,
        new: &str,
        from: (&str, &str),
        to: (&str, &str),
    ) -> Transition {
        let state = |head: &str, (work, index): (&str, &str)| UserState {
            head: Some(head.to_owned()),
            work: work.to_owned(),
            index: index.to_owned(),
        };
        Transition {
            workdir: root.to_path_buf(),
            ref_name: "refs/heads/main".to_owned(),
            old: Some(old.to_owned()),
            new: Some(new.to_owned()),
            from_work: from.0.to_owned(),
            from_index: from.1.to_owned(),
            to_work: to.0.to_owned(),
            to_index: to.1.to_owned(),
            message: "test".to_owned(),
            op: OpEntry {
                id: "t1".to_owned(),
                kind: OpKind::Apply,
                target: None,
                time: 0,
                workdir: root.display().to_string(),
                ref_name: "refs/heads/main".to_owned(),
                summary: "test".to_owned(),
                before: state(old, from),
                after: state(new, to),
                extras: Default::default(),
                reply_key: None,
            },
        }
    }

    /// Checkpoint a dirty state, publish the checkpoint commit as the new HEAD (clean), then
    /// publish back to the checkpoint: the user's dirty state comes back exactly.
    #[test]
    fn a_checkpointed_state_goes_forward_and_comes_back_exactly() {
        let dir = repo();
        let root = dir.path();
        make_dirty(root);
        let before = user_state(root);
        let repo = Repository::open(root).expect("open");
        let head = repo.refname_to_id("HEAD").expect("head").to_string();
        let cp = checkpoint::take(&repo).expect("take");
        let cp_commit = cp.as_commit(&repo, "work").expect("commit").to_string();
        let cp_tree = tree_of(&repo, &cp_commit);
        let cp_index = cp.index_tree.to_string();
        let forward = transition(
            root,
            &head,
            &cp_commit,
            (&cp_tree, &cp_index),
            (&cp_tree, &cp_tree),
        );
        publish(&repo, &forward, true).expect("forward");
        assert_eq!(
            git(root, &["status", "--porcelain", "--untracked-files=all"]),
            "",
            "clean at the checkpoint"
        );
        assert_eq!(git(root, &["rev-parse", "HEAD"]).trim(), cp_commit);
        std::fs::write(root.join("b.txt"), "later\n").expect("write");
        git(root, &["add", "b.txt"]);
        git(root, &["commit", "-q", "-m", "more"]);
        let tip = git(root, &["rev-parse", "HEAD"]).trim().to_owned();
        let tip_tree = tree_of(&repo, &tip);
        let back = transition(
            root,
            &tip,
            &head,
            (&tip_tree, &tip_tree),
            (&cp_tree, &cp_index),
        );
        publish(&repo, &back, false).expect("back");
        assert_eq!(
            user_state(root),
            before,
            "status, diffs and HEAD as they were"
        );
        assert!(
            !root.join("b.txt").exists(),
            "files created since are removed"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("debug.log"))
                .ok()
                .as_deref(),
            Some("ignored\n")
        );
        assert!(!journal_path(&repo).exists());
        let ids: Vec<String> = oplog::entries(&repo)
            .expect("log")
            .into_iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(ids.len(), 2);
    }

    #[test]
    fn refuses_when_the_branch_moved_or_the_user_changed_a_path() {
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let head = repo.refname_to_id("HEAD").expect("head").to_string();
        let base_tree = tree_of(&repo, &head);
        std::fs::write(root.join("a.txt"), "model\n").expect("write");
        let tree = {
            let mut index = repo.index().expect("index");
            index.add_path(Path::new("a.txt")).expect("add");
            let tree = index.write_tree().expect("tree");
            index.read(true).expect("reread");
            tree
        };
        std::fs::write(root.join("a.txt"), "1\n2\n3\n").expect("write");
        let commit =
            crate::git::commit::write_commit(&repo, tree, &[oid(&head).expect("oid")], "AI")
                .expect("commit");
        let t = transition(
            root,
            &head,
            &commit.to_string(),
            (&base_tree, &base_tree),
            (&tree.to_string(), &tree.to_string()),
        );
        std::fs::write(root.join("a.txt"), "the user's edit\n").expect("write");
        let err = publish(&repo, &t, true).expect_err("refused");
        assert!(
            matches!(&err, PublishError::Changed(p) if p == &[PathBuf::from("a.txt")]),
            "{err}"
        );
        assert_eq!(
            git(root, &["rev-parse", "HEAD"]).trim(),
            head,
            "nothing moved"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).ok().as_deref(),
            Some("the user's edit\n")
        );
        std::fs::write(root.join("a.txt"), "1\n2\n3\n").expect("write");
        git(root, &["commit", "-q", "--allow-empty", "-m", "moved"]);
        let err = publish(&repo, &t, true).expect_err("refused");
        assert!(matches!(err, PublishError::Moved { .. }), "{err}");
        assert!(!journal_path(&repo).exists());
    }

    /// Killed after removing a file but before removing the folders it left empty: the
    /// roll-forward removes them (an undo must not leave empty folders behind).
    #[test]
    fn recovery_removes_the_empty_folders_a_killed_deletion_left() {
        let dir = repo();
        let root = dir.path();
        crate::git::testing::write_file(root, "d/e/f.txt", "f\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "deep"]);
        let repo = Repository::open(root).expect("open");
        let head = repo.refname_to_id("HEAD").expect("head").to_string();
        let with = tree_of(&repo, &head);
        git(root, &["rm", "-q", "d/e/f.txt"]);
        git(root, &["commit", "-q", "-m", "gone"]);
        let without_commit = git(root, &["rev-parse", "HEAD"]).trim().to_owned();
        let without = tree_of(&repo, &without_commit);
        git(root, &["reset", "-q", "--hard", &head]);
        // The undo's ref moved and its file went; the kill came before its folders did.
        let t = transition(
            root,
            &head,
            &without_commit,
            (&with, &with),
            (&without, &without),
        );
        write_journal(&journal_path(&repo), &journal_of(&t)).expect("journal");
        move_ref(&repo, &t).expect("ref");
        std::fs::remove_file(root.join("d/e/f.txt")).expect("rm");
        assert!(root.join("d/e").is_dir());
        assert!(matches!(
            recover(&repo).expect("recover"),
            Recovered::RolledForward { .. }
        ));
        assert!(!root.join("d").exists(), "no empty folder left behind");
        assert_eq!(git(root, &["status", "--porcelain"]), "");
    }

    #[test]
    fn recovery_rolls_forward_after_the_ref_moved_and_back_before() {
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let t = ai_commit(
            &repo,
            root,
            &[
                ("a.txt", b"model\n", 0o100644),
                ("new.txt", b"model\n", 0o100644),
            ],
        );
        // Crash after the journal, before the ref: rolled back.
        write_journal(&journal_path(&repo), &journal_of(&t)).expect("journal");
        assert_eq!(recover(&repo).expect("recover"), Recovered::RolledBack);
        assert_eq!(git(root, &["status", "--porcelain"]), "");
        // Crash after the ref moved, one file written and another edited by the user since.
        write_journal(&journal_path(&repo), &journal_of(&t)).expect("journal");
        move_ref(&repo, &t).expect("ref");
        std::fs::write(root.join("new.txt"), "model\n").expect("write");
        std::fs::write(root.join("a.txt"), "user\n").expect("write");
        let recovered = recover(&repo).expect("recover");
        assert_eq!(
            recovered,
            Recovered::RolledForward {
                skipped: vec![PathBuf::from("a.txt")]
            }
        );
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).ok().as_deref(),
            Some("user\n"),
            "the user's edit kept"
        );
        assert_eq!(git(root, &["status", "--porcelain"]), " M a.txt\n");
        assert_eq!(oplog::newest_id(&repo).expect("log").as_deref(), Some("t1"));
        assert_eq!(recover(&repo).expect("again"), Recovered::Nothing);
    }

    /// Killed between writing a file's new content beside it and the rename: recovery
    /// removes that file (the roll-forward writes it again), leaving nothing but the tree.
    #[test]
    fn recovery_removes_new_content_a_kill_left_beside_its_file() {
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let t = ai_commit(&repo, root, &[("a.txt", b"model\n", 0o100644)]);
        let beside = temp_beside(&t, Path::new("a.txt"));
        assert_eq!(beside, root.join(".a.txt.loaf-t1"));
        for moved in [false, true] {
            write_journal(&journal_path(&repo), &journal_of(&t)).expect("journal");
            if moved {
                move_ref(&repo, &t).expect("ref");
            }
            std::fs::write(&beside, "model\n").expect("half-written");
            recover(&repo).expect("recover");
            assert!(!beside.exists(), "removed (ref moved: {moved})");
        }
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).ok().as_deref(),
            Some("model\n")
        );
        assert_eq!(git(root, &["status", "--porcelain"]), "");
    }

    /// Written straight from their blobs: an executable keeps its bit, a symlink is a link,
    /// and git sees the tree clean.
    #[cfg(unix)]
    #[test]
    fn executables_and_symlinks_are_written_as_git_would() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let t = ai_commit(
            &repo,
            root,
            &[
                ("run.sh", b"#!/bin/sh\necho hi\n", 0o100755),
                ("link", b"a.txt", 0o120000),
            ],
        );
        assert!(publish(&repo, &t, true).expect("publish").is_empty());
        let mode = std::fs::metadata(root.join("run.sh"))
            .expect("script")
            .permissions()
            .mode();
        assert_ne!(mode & 0o100, 0, "executable");
        assert_eq!(
            std::fs::read_link(root.join("link")).expect("a link"),
            PathBuf::from("a.txt")
        );
        assert_eq!(git(root, &["status", "--porcelain"]), "");
    }

    /// The checker takes what the index says of a file whose stat data it records (as git
    /// does: shown here by an entry that lies about the content), and looks at the file
    /// again as soon as its stat data change.
    #[test]
    fn the_checker_trusts_the_index_as_git_does_until_the_file_changes() {
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let head = repo.head().and_then(|h| h.peel_to_tree()).expect("tree");
        std::fs::write(root.join("a.txt"), "mine\n").expect("write");
        let other = repo.blob(b"other\n").expect("blob");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut index = repo.index().expect("index");
        let meta = std::fs::symlink_metadata(root.join("a.txt")).expect("stat");
        index
            .add(&index_lock::entry(
                Path::new("a.txt"),
                other,
                0o100644,
                Some(&meta),
            ))
            .expect("add");
        index.write().expect("write");
        let checker = Checker::new(&repo, root).expect("checker");
        checker.trust_index(&index, &[PathBuf::from("a.txt")]);
        assert_eq!(checker.id(Path::new("a.txt"), &head), Some(other));
        std::fs::write(root.join("a.txt"), "mine, changed\n").expect("write");
        let now = Oid::hash_object(ObjectType::Blob, b"mine, changed\n").expect("hash");
        assert_eq!(checker.id(Path::new("a.txt"), &head), Some(now));
    }
}
