//! Durability across a power loss for what decides a commit point (docs/apply.md, "Crash safety"):
//! the journal, the refs it moves and the operation log's entry are fsynced with their folders, and
//! the objects they name before them.
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
    // A new operation (a long-lived process runs several): what an earlier one synced may
    // have been pruned and written again since.
    SYNCED.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// fsyncs `path` and the folder that holds its name.
pub(crate) fn sync_file(path: &Path) -> std::io::Result<()> {
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

/// Starts writing a file's data to the device without waiting (Linux; elsewhere nothing):
/// [`write_out`] then waits for it.
fn start_write_out(file: &std::fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain system call on a descriptor this function borrows. A failure is
        // left to `write_out`, which does the whole write-back and reports.
        unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// fsyncs a folder (its entries: a rename or a new name in it).
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// fsyncs a loose ref (`HEAD` lives in the worktree's git dir, the others in the common
/// one). A ref that is not loose (packed, deleted) has nothing of this process to sync.
pub(crate) fn sync_ref(repo: &Repository, name: &str) -> std::io::Result<()> {
    let per_worktree = name == "HEAD" || !name.starts_with("refs/");
    let base = if per_worktree {
        repo.path()
    } else {
        repo.commondir()
    };
    let path = base.join(name);
    let synced = if path.is_file() {
        sync_file(&path)
    } else {
        match path.parent().filter(|p| p.is_dir()) {
            Some(folder) => sync_dir(folder),
            None => Ok(()),
        }
    };
    match synced {
        // Packed (and its folder pruned) by a `git gc` running meanwhile: git wrote it.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// fsyncs the loose objects and packs this process wrote (modified since [`mark_start`])
/// and their folders, so that a ref made durable next never names an object a power loss took;
/// returns how many objects.
pub(crate) fn sync_new_objects(repo: &Repository) -> std::io::Result<usize> {
    let since = STARTED_AT
        .lock()
        .ok()
        .and_then(|at| *at)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    sync_objects_since(repo, since)
}

/// The objects this process has made durable: a later sync of the same operation skips them.
static SYNCED: Mutex<std::collections::BTreeSet<std::path::PathBuf>> =
    Mutex::new(std::collections::BTreeSet::new());

/// How many objects' write-back is started before the first is waited for.
const WRITE_OUT_BATCH: usize = 256;

/// [`sync_new_objects`] of the objects stamped `since` or later.
fn sync_objects_since(repo: &Repository, since: SystemTime) -> std::io::Result<usize> {
    let objects = repo.commondir().join("objects");
    let mut synced = SYNCED.lock().unwrap_or_else(|e| e.into_inner());
    let mut folders = recent_objects(&objects, since)?;
    // Synced by an earlier call of this operation (an apply syncs before its journal and
    // again before its log entry): only what was written since.
    let unsynced = |folders: &mut Folders, synced: &std::collections::BTreeSet<_>| {
        for (_, found) in folders.iter_mut() {
            found.retain(|o| !synced.contains(o));
        }
        folders.retain(|(_, found)| !found.is_empty());
    };
    unsynced(&mut folders, &synced);
    // Spread over many fan-out folders, the loose objects are made durable as one pack: three
    // flushes instead of one per folder (see `durable_pack`). Packs written already (a dirty
    // tree's objects, or that one) are synced as they are, below.
    let in_pack_folder = |folder: &std::path::Path| folder.ends_with("pack");
    let mut packed = 0;
    let fan_out = folders.iter().filter(|(f, _)| !in_pack_folder(f)).count();
    if fan_out >= super::durable_pack::PACK_FROM_FOLDERS {
        let loose: Vec<&std::path::PathBuf> = folders
            .iter()
            .filter(|(folder, _)| !in_pack_folder(folder))
            .flat_map(|(_, o)| o)
            .collect();
        match super::durable_pack::pack_and_sync(repo, &loose) {
            Ok(pack_files) => {
                packed = loose.len();
                synced.extend(loose.into_iter().cloned());
                synced.extend(pack_files);
                folders.retain(|(folder, _)| in_pack_folder(folder));
                unsynced(&mut folders, &synced);
            }
            // Synced one by one below instead (slower, never less durable).
            Err(e) => tracing::debug!("objects not packed: {e}"),
        }
    }
    // Write-back of the objects is started for a batch of them, then waited for: the device
    // takes the writes together instead of one after another (a dirty tree's 500 objects:
    // two waits rather than 500). Batches keep the open descriptors well under the limit.
    let all: Vec<&std::path::PathBuf> = folders.iter().flat_map(|(_, o)| o).collect();
    for batch in all.chunks(WRITE_OUT_BATCH) {
        // An object gone since it was listed was packed by a `git gc` running meanwhile
        // (git's auto gc after a commit runs in the background): nothing of ours to sync.
        let files = batch
            .iter()
            .filter_map(|path| match std::fs::File::open(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                opened => Some(opened),
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        files.iter().for_each(start_write_out);
        for file in &files {
            write_out(file)?;
        }
    }
    for (folder, _) in &folders {
        sync_dir(folder)?;
    }
    let count = all.len();
    // `LOAF_LOG=debug` shows where in an operation its objects are made durable.
    tracing::debug!("{} new objects made durable", count + packed);
    synced.extend(all.into_iter().cloned());
    // The objects folder holds the names of the fan-out folders (and `pack`): it changes
    // only when one of them is made, so it is synced only when one holding our objects may
    // be new. With none (an undo that writes nothing before its journal), or all of them
    // older (a repository past its first few hundred objects), there is no name in it that
    // is not on the disk already. A pack made durable above synced what it made itself.
    if !folders.iter().any(|(folder, _)| made_since(folder, since)) {
        return Ok(count + packed);
    }
    sync_dir(&objects)?;
    Ok(count + packed)
}

/// How long before an operation's start a folder made by someone else (git, which never
/// syncs folders) may still have its name only in the page cache: the kernel writes dirty
/// metadata back within seconds (ext4 commits its journal every 5 s, dirty pages expire
/// after 30 s), so a folder older than this is on the disk already.
const WRITEBACK_WINDOW: Duration = Duration::from_secs(120);

/// Whether `folder` may have been made too recently for its name in the objects folder to
/// be on the disk (see [`WRITEBACK_WINDOW`]), by the filesystem's birth stamp; when the
/// filesystem keeps none, taken as made now (its parent is then synced, never wrong).
fn made_since(folder: &Path, since: SystemTime) -> bool {
    let Some(window_start) = since.checked_sub(WRITEBACK_WINDOW) else {
        return true;
    };
    std::fs::metadata(folder)
        .and_then(|m| m.created())
        .map_or(true, |born| born >= window_start)
}

/// Object files by the folder holding them.
type Folders = Vec<(std::path::PathBuf, Vec<std::path::PathBuf>)>;

/// The loose objects and pack files stamped `since` or later, by folder (folders without any left
/// out).
fn recent_objects(objects: &Path, since: SystemTime) -> std::io::Result<Folders> {
    let Ok(folders) = std::fs::read_dir(objects) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for folder in folders.flatten() {
        let name = folder.file_name();
        // The 256 fan-out folders hold loose objects, `pack` the packs an operation wrote
        // (a dirty tree's objects: see `pack_write`); `info` nothing of ours.
        let holds_objects = name.len() == 2 || name == "pack";
        if !holds_objects || !folder.file_type().is_ok_and(|t| t.is_dir()) {
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
        let entries = match std::fs::read_dir(folder.path()) {
            // Emptied and removed by a `git gc` running meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            entries => entries?,
        };
        let recent: Vec<std::path::PathBuf> = entries
            .flatten()
            .filter(|object| {
                object
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t >= since)
            })
            .map(|object| object.path())
            .collect();
        if !recent.is_empty() {
            found.push((folder.path(), recent));
        }
    }
    Ok(found)
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

    /// The stamp the filesystem gives a file made now (as an operation's lock), past which
    /// the clock has then ticked.
    fn start_stamp(root: &Path) -> SystemTime {
        let lock = root.join(".git/lock-for-the-test");
        std::fs::write(&lock, "").expect("lock");
        let stamp = std::fs::metadata(&lock)
            .and_then(|m| m.modified())
            .expect("stamp");
        std::thread::sleep(Duration::from_millis(50));
        stamp
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
        let stamp = start_stamp(dir.path());
        repo.blob(b"this operation's first object").expect("blob");
        repo.blob(b"this operation's second object").expect("blob");
        assert_eq!(sync_objects_since(&repo, stamp).expect("synced"), 2);
        // A second sync of the same operation (before its log entry): only what is new.
        assert_eq!(sync_objects_since(&repo, stamp).expect("synced"), 0);
        repo.blob(b"the log entry's object").expect("blob");
        assert_eq!(sync_objects_since(&repo, stamp).expect("synced"), 1);
    }

    /// Objects spread over many fan-out folders are made durable as one pack (each is read
    /// from it once its loose copy is gone), and a second sync of the operation finds
    /// nothing more to do, the pack's own files included.
    #[test]
    fn objects_over_many_folders_are_made_durable_as_one_pack() {
        let dir = committed_repo();
        let repo = Repository::open(dir.path()).expect("open");
        let stamp = start_stamp(dir.path());
        let ids: Vec<git2::Oid> = (0..12)
            .map(|n| repo.blob(format!("object {n}\n").as_bytes()).expect("blob"))
            .collect();
        let folders: std::collections::BTreeSet<u8> =
            ids.iter().map(|id| id.as_bytes()[0]).collect();
        assert!(folders.len() >= crate::git::durable_pack::PACK_FROM_FOLDERS);
        assert_eq!(sync_objects_since(&repo, stamp).expect("synced"), 12);
        assert_eq!(sync_objects_since(&repo, stamp).expect("synced"), 0);
        let objects = repo.commondir().join("objects");
        for id in &ids {
            let loose = crate::git::repo::loose_object_path(&objects, *id);
            std::fs::remove_file(loose).expect("loose copy");
        }
        for (n, id) in ids.iter().enumerate() {
            let shown = crate::git::testing::git(dir.path(), &["cat-file", "-p", &id.to_string()]);
            assert_eq!(shown, format!("object {n}\n"));
        }
    }

    /// A folder made now is new for an operation started now, and still for one started
    /// within the write-back window; past it, its name is taken as on the disk already.
    #[test]
    fn a_folder_is_new_until_past_the_write_back_window() {
        let dir = tempfile::tempdir().expect("tempdir");
        let now = SystemTime::now();
        assert!(made_since(dir.path(), now - Duration::from_secs(5)));
        assert!(made_since(dir.path(), now + WRITEBACK_WINDOW / 2));
        let born_known = std::fs::metadata(dir.path())
            .and_then(|m| m.created())
            .is_ok();
        assert_eq!(
            made_since(dir.path(), now + WRITEBACK_WINDOW * 2),
            !born_known,
            "old enough, when the filesystem keeps a birth stamp"
        );
    }

    /// A pack written by the operation (a dirty tree's objects) is synced like its loose
    /// objects: its pack and index files, once.
    #[test]
    fn a_pack_written_since_the_start_is_synced() {
        let dir = committed_repo();
        let repo = Repository::open(dir.path()).expect("open");
        let stamp = start_stamp(dir.path());
        let buffered = crate::git::pack_write::Buffered::open(&repo).expect("buffered");
        let mut builder = buffered.repo().treebuilder(None).expect("builder");
        for n in 0..crate::git::pack_write::PACK_FROM {
            let blob = buffered
                .repo()
                .blob(format!("{n}").as_bytes())
                .expect("blob");
            builder
                .insert(format!("f{n}"), blob, 0o100644)
                .expect("insert");
        }
        let tree = builder.write().expect("tree");
        drop(builder);
        assert!(buffered.keep(&repo, None, tree).expect("kept").packed);
        assert_eq!(
            sync_objects_since(&repo, stamp).expect("synced"),
            2,
            "pack and index"
        );
        assert_eq!(sync_objects_since(&repo, stamp).expect("synced"), 0);
    }
}
