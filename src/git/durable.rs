//! Durability across a power loss for what decides a commit point (DESIGN §2 "Crash
//! safety"): the journal, the refs it moves and the operation log's entry are fsynced with
//! their folders, and the objects they name before them.
//!
//! libgit2 writes loose objects and refs without fsync (as git does by default), so the page
//! cache alone holds them for a while. A ref made durable while the commit it names is not
//! would, after a power loss, point at a missing object; so the objects written by this
//! process are synced first ([`sync_new_objects`]), then the journal, then each ref.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use git2::Repository;

/// When the current operation started writing (its lock taken), as the filesystem stamps
/// files: loose objects modified since then are its own. Unset, every loose object is
/// synced (slower, never wrong).
static STARTED_AT: Mutex<Option<SystemTime>> = Mutex::new(None);

/// The clock a filesystem stamps with may lag the precise one: without a stamp of the
/// filesystem's own to start from, objects this much older than the start are synced too.
const CLOCK_SLACK: Duration = Duration::from_secs(2);

/// Records the start of an operation (before it writes any object): `stamp` is the
/// modification time the filesystem gave a file this operation just created (its lock), so
/// that objects written from now on carry a stamp no older (the same clock, the same
/// granularity) while the previous operation's, written before the lock, are left out. Without
/// one, the precise clock less [`CLOCK_SLACK`].
pub fn mark_start(stamp: Option<SystemTime>) {
    let since = stamp.or_else(|| SystemTime::now().checked_sub(CLOCK_SLACK));
    if let Ok(mut at) = STARTED_AT.lock() {
        *at = since;
    }
}

/// fsyncs `path` and the folder that holds its name.
pub fn sync_file(path: &Path) -> std::io::Result<()> {
    std::fs::File::open(path)?.sync_all()?;
    sync_dir(path.parent().unwrap_or(path))
}

/// Writes a file's data to the device without the flush an fsync ends with (git's
/// `core.fsyncMethod = batch`): the flush of the folder fsync that follows makes it
/// durable, one flush for all the objects of a folder instead of one each. Elsewhere than
/// Linux, a plain fsync.
fn write_out(file: &std::fs::File) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        // SAFETY: a plain system call on a descriptor this function borrows.
        if unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, flags) } == 0 {
            return Ok(());
        }
    }
    file.sync_all()
}

/// fsyncs a folder (its entries: a rename or a new name in it).
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// fsyncs a loose ref (`HEAD` lives in the worktree's git dir, the others in the common
/// one). A ref that is not loose (packed, deleted) has nothing of this process to sync.
pub fn sync_ref(repo: &Repository, name: &str) -> std::io::Result<()> {
    let per_worktree = name == "HEAD" || !name.starts_with("refs/");
    let base = if per_worktree {
        repo.path()
    } else {
        repo.commondir()
    };
    let path = base.join(name);
    if path.is_file() {
        sync_file(&path)
    } else {
        match path.parent().filter(|p| p.is_dir()) {
            Some(folder) => sync_dir(folder),
            None => Ok(()),
        }
    }
}

/// fsyncs the loose objects this process wrote (modified since [`mark_start`]) and their
/// folders, so that a ref made durable next never names an object a power loss took;
/// returns how many objects.
pub fn sync_new_objects(repo: &Repository) -> std::io::Result<usize> {
    let since = STARTED_AT
        .lock()
        .ok()
        .and_then(|at| *at)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    sync_objects_since(repo, since)
}

/// [`sync_new_objects`] of the objects stamped `since` or later.
fn sync_objects_since(repo: &Repository, since: SystemTime) -> std::io::Result<usize> {
    let objects = repo.commondir().join("objects");
    let Ok(folders) = std::fs::read_dir(&objects) else {
        return Ok(0);
    };
    let mut synced = 0;
    for folder in folders.flatten() {
        let name = folder.file_name();
        // Only the 256 fan-out folders hold loose objects (not `pack`, `info`).
        if name.len() != 2 || !folder.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        // A new object is a new name in its folder, which stamps the folder: a folder not
        // changed since the start holds none of ours (one stat instead of reading it).
        let changed = folder
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= since);
        if !changed {
            continue;
        }
        let mut any = false;
        for object in std::fs::read_dir(folder.path())?.flatten() {
            let recent = object
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since);
            if recent {
                write_out(&std::fs::File::open(object.path())?)?;
                any = true;
                synced += 1;
            }
        }
        if any {
            sync_dir(&folder.path())?;
        }
    }
    sync_dir(&objects)?;
    Ok(synced)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::committed_repo;

    #[test]
    fn syncs_refs_and_new_objects_without_error() {
        let dir = committed_repo();
        let repo = Repository::open(dir.path()).expect("open");
        repo.blob(b"new object").expect("blob");
        sync_new_objects(&repo).expect("objects synced");
        sync_ref(&repo, "HEAD").expect("HEAD synced");
        sync_ref(&repo, "refs/heads/main").expect("branch synced");
        sync_ref(&repo, "refs/loaf/none").expect("an absent ref's folder");
    }

    /// Started from the stamp of a file made at the start (the lock), the objects written
    /// before it (the previous operation's, already synced) are not synced again; those
    /// written after are.
    #[test]
    fn only_the_objects_written_since_the_start_are_synced() {
        let dir = committed_repo();
        let repo = Repository::open(dir.path()).expect("open");
        repo.blob(b"the previous operation's object").expect("blob");
        // Past the filesystem clock's tick, so the two stamps differ.
        std::thread::sleep(Duration::from_millis(50));
        let lock = dir.path().join(".git/lock-for-the-test");
        std::fs::write(&lock, "").expect("lock");
        let stamp = std::fs::metadata(&lock)
            .and_then(|m| m.modified())
            .expect("stamp");
        std::thread::sleep(Duration::from_millis(50));
        repo.blob(b"this operation's first object").expect("blob");
        repo.blob(b"this operation's second object").expect("blob");
        assert_eq!(sync_objects_since(&repo, stamp).expect("synced"), 2);
    }
}
