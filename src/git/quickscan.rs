//! A fast, parallel proof that the working tree matches the index, used before falling back
//! to libgit2's full status (which stats every file on one thread; git's own status spreads
//! that over threads, `core.preloadIndex`).
//!
//! It answers only "certainly clean" or "cannot tell": every tracked file's stat data must
//! equal its index entry (and not be racily clean), and every name in a folder holding tracked
//! files must be tracked or ignored. Anything else — a changed stat, an untracked name,
//! conflicts, sparse or assume-unchanged entries — sends the caller to the full status, so a
//! mistake here can only cost time, never hide a change.
//!
//! A shell call's end in record mode ([`on_index_file`]) reads the index file itself, as git
//! does (`quickscan/index_file.rs`), so that the hook an agent waits on costs about one
//! `git status` (docs/agents.md#latency).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use git2::{IndexEntry, ObjectType, Oid, Repository};

use super::repo::path_from_bytes;

mod index_file;

use index_file::{Entry, IndexFile};

/// Index flags: stage (conflicts) and assume-unchanged; extended: skip-worktree,
/// intent-to-add.
const STAGE_MASK: u16 = 0x3000;
const ASSUME_VALID: u16 = 0x8000;
const SKIP_WORKTREE: u16 = 1 << 14;
const INTENT_TO_ADD: u16 = 1 << 13;
const GITLINK: u32 = 0o160000;

/// A modification time: seconds and nanoseconds since the epoch.
type Time = (i64, u32);

/// True when the working tree certainly matches the index (untracked, non-ignored files
/// count as a difference); false when it may not.
pub fn certainly_clean(repo: &Repository) -> Result<bool, git2::Error> {
    let Some((entries, written)) = libgit2_entries(repo)? else {
        return Ok(false);
    };
    let entries: Vec<Entry<'_>> = entries.iter().map(Entry::from).collect();
    Ok(matches!(
        scan(repo, &entries, written, false)?,
        Found::Clean
    ))
}

/// The paths of the working tree that may differ from the index: tracked files whose stat
/// data changed (content not compared: a file touched but unchanged is among them), and
/// untracked, non-ignored files. `None` when the scan cannot tell (see the module's doc,
/// and an untracked folder, whose files the caller should get from a full status, which
/// knows a nested repository when it meets one).
pub fn candidates(repo: &Repository) -> Result<Option<Vec<Vec<u8>>>, git2::Error> {
    let Some((entries, written)) = libgit2_entries(repo)? else {
        return Ok(None);
    };
    let entries: Vec<Entry<'_>> = entries.iter().map(Entry::from).collect();
    Ok(match scan(repo, &entries, written, true)? {
        Found::Clean => Some(Vec::new()),
        Found::Candidates(paths) => Some(paths),
        Found::Unknown => None,
    })
}

/// What differs between the index file on disk and the working tree, for a caller that
/// builds the working tree's tree from it: the index's tree and the candidates (as in
/// [`candidates`], each with whether the index tracks it).
#[derive(Debug)]
pub struct OnIndex {
    /// The tree the index holds.
    pub index_tree: Oid,
    /// The paths that may differ, and whether each is tracked.
    pub paths: Vec<(Vec<u8>, bool)>,
    /// The index's entries that converting those paths' content may look up (every
    /// `.gitattributes` file, and the tracked paths themselves, whose blob tells libgit2's
    /// `core.autocrlf` whether the file had CRs): an index holding only these answers the
    /// conversion as the whole index would, without reading it again through libgit2.
    pub lookups: Vec<IndexEntry>,
}

/// [`candidates`] with the index file read directly (as git reads it, see
/// `index_file`) rather than through libgit2, which costs ~8 ms of CPU on 20,000 files
/// (a sixth of a `git status`): for a caller that reads the index from disk and nothing else (never one that
/// holds a changed index in memory). `None` when the scan cannot tell, when the file does
/// not say its tree (its tree cache invalidated by a `git add` since the last write, and
/// no note of git-loaf's), and when the index holds a submodule (the caller's full path
/// knows those).
pub fn on_index_file(repo: &Repository) -> Result<Option<OnIndex>, git2::Error> {
    let Some(file) = IndexFile::read(&repo.path().join("index")) else {
        return Ok(None);
    };
    let Some(index_tree) = file.tree.or_else(|| super::index::known_index_tree(repo)) else {
        return Ok(None);
    };
    let entries = file.entries();
    if entries.iter().any(|e| e.mode == GITLINK) {
        return Ok(None);
    }
    let paths = match scan(repo, &entries, file.written, true)? {
        Found::Clean => Vec::new(),
        Found::Candidates(paths) => paths,
        Found::Unknown => return Ok(None),
    };
    let tracked = Tracked::of(&entries);
    let paths: Vec<(Vec<u8>, bool)> = paths
        .into_iter()
        .map(|path| {
            let known = tracked.entries.contains(path.as_slice());
            (path, known)
        })
        .collect();
    let changed: HashSet<&[u8]> = paths.iter().map(|(path, _)| path.as_slice()).collect();
    let lookups = entries
        .iter()
        .filter(|e| {
            changed.contains(e.path)
                || e.path == b".gitattributes"
                || e.path.ends_with(b"/.gitattributes")
        })
        .map(|e| e.to_index_entry())
        .collect();
    Ok(Some(OnIndex {
        index_tree,
        paths,
        lookups,
    }))
}

/// The index's entries as libgit2 holds them (in memory: what the caller may have changed),
/// and when the index file was written.
/// `None` when there is no index file.
fn libgit2_entries(repo: &Repository) -> Result<Option<(Vec<IndexEntry>, Time)>, git2::Error> {
    let Ok(written) = std::fs::metadata(repo.path().join("index")).and_then(|m| m.modified())
    else {
        return Ok(None);
    };
    Ok(Some((repo.index()?.iter().collect(), unix_time(written))))
}

/// What [`scan`] found.
enum Found {
    Clean,
    Candidates(Vec<Vec<u8>>),
    Unknown,
}

/// One parallel pass over the index's `entries` (the index file written at `index_time`)
/// and the folders holding them. Without `collect` it stops at the first difference.
fn scan(
    repo: &Repository,
    entries: &[Entry<'_>],
    index_time: (i64, u32),
    collect: bool,
) -> Result<Found, git2::Error> {
    let Some(root) = repo.workdir() else {
        return Ok(Found::Unknown);
    };
    if entries.iter().any(|e| {
        e.flags & (STAGE_MASK | ASSUME_VALID) != 0
            || e.flags_extended & (SKIP_WORKTREE | INTENT_TO_ADD) != 0
    }) {
        return Ok(Found::Unknown);
    }
    let tracked = Tracked::of(entries);
    let threads = threads_for(entries.len());
    let Some((stat_changed, racy)) = stat_changes(root, entries, index_time, collect, threads)
    else {
        return Ok(Found::Unknown);
    };
    let mut candidates: Vec<Vec<u8>> = Vec::new();
    for path in stat_changed {
        // A file that became a folder: the full status knows what in it to take.
        if root.join(path_from_bytes(path)).is_dir() {
            return Ok(Found::Unknown);
        }
        candidates.push(path.to_vec());
    }
    // Racily clean entries (written in the same clock tick as the index, typically the files
    // the last operation wrote): their content decides.
    for entry in racy {
        if !holds_its_blob(root, entry) {
            if !collect {
                return Ok(Found::Unknown);
            }
            candidates.push(entry.path.to_vec());
        }
    }
    let Some(untracked) = untracked_names(root, &tracked, threads) else {
        return Ok(Found::Unknown);
    };
    for (path, is_dir) in untracked {
        // libgit2 matches folder patterns (`target/`) only with the trailing slash.
        let probe = if is_dir { path.join("") } else { path.clone() };
        if !repo.is_path_ignored(&probe)? {
            // An untracked folder (maybe another repository): the full status decides.
            if !collect || is_dir {
                return Ok(Found::Unknown);
            }
            candidates.push(path.as_os_str().as_encoded_bytes().to_vec());
        }
    }
    Ok(if candidates.is_empty() {
        Found::Clean
    } else {
        Found::Candidates(candidates)
    })
}

/// The threads a scan of `entries` files spreads its work over: as git's preload of the
/// index does (`preload-index.c`), one per 500 files, at most 20, whatever the cores. On a
/// busy machine the scheduler shares the cores by thread, so a scan on fewer threads than
/// `git status` takes would wait longer than git for the same work; on an idle one, the
/// extra threads cost a few tens of microseconds each.
fn threads_for(entries: usize) -> usize {
    (entries / 500).clamp(1, 20)
}

/// Runs `work` on a thread of `scope` with a small stack; false when no thread could be
/// made. The default stack (2 MiB) is one the kernel may back with a huge page, zeroed
/// whole on first touch: with 20 threads that was a tenth of a scan's time; the work here
/// (a loop of stat and readdir calls) needs a few kilobytes.
fn spawn_small<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    work: impl FnOnce() + Send + 'scope,
) -> bool {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn_scoped(scope, work)
        .is_ok()
}

/// The names the index tracks: its entries (files, symlinks, submodules) and the folders
/// holding them (the root among them). Only whether a name is tracked matters here, not as
/// what.
struct Tracked<'e> {
    entries: HashSet<&'e [u8]>,
    dirs: HashSet<&'e [u8]>,
}

impl<'e> Tracked<'e> {
    fn of(entries: &[Entry<'e>]) -> Tracked<'e> {
        let mut names: HashSet<&[u8]> = HashSet::with_capacity(entries.len());
        let mut dirs: HashSet<&[u8]> = HashSet::new();
        dirs.insert(b"");
        for entry in entries {
            let path = entry.path;
            names.insert(path);
            let mut end = path.len();
            while let Some(slash) = path[..end].iter().rposition(|b| *b == b'/') {
                if !dirs.insert(&path[..slash]) {
                    break;
                }
                end = slash;
            }
        }
        Tracked {
            entries: names,
            dirs,
        }
    }

    fn holds(&self, rel: &[u8]) -> bool {
        self.entries.contains(rel) || self.dirs.contains(rel)
    }
}

/// Tracked files whose stat data is not as recorded, and the racily clean entries, from a
/// look at every entry on `threads` threads; `None` when the scan cannot tell (or, without
/// `collect`, at the first difference).
fn stat_changes<'e>(
    root: &Path,
    entries: &'e [Entry<'e>],
    index_time: (i64, u32),
    collect: bool,
    threads: usize,
) -> Option<(Vec<&'e [u8]>, Vec<&'e Entry<'e>>)> {
    // Set at the first difference when not collecting: the threads stop.
    let changed = AtomicBool::new(false);
    let racy: std::sync::Mutex<Vec<&Entry<'_>>> = std::sync::Mutex::new(Vec::new());
    let stat_changed: std::sync::Mutex<Vec<&[u8]>> = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        let chunk = entries.len().div_ceil(threads).max(1);
        for part in entries.chunks(chunk) {
            let (changed, racy, stat_changed) = (&changed, &racy, &stat_changed);
            let spawned = spawn_small(scope, move || {
                let mut dirs = Dirs::new(root);
                let mut local = Vec::new();
                for entry in part {
                    if changed.load(Ordering::Relaxed) {
                        return;
                    }
                    match stat_state(&mut dirs, entry, index_time) {
                        Stat::Same => {}
                        Stat::Racy => match racy.lock() {
                            Ok(mut list) => list.push(entry),
                            Err(_) => changed.store(true, Ordering::Relaxed),
                        },
                        Stat::Changed if collect => local.push(entry.path),
                        Stat::Changed => changed.store(true, Ordering::Relaxed),
                    }
                }
                match stat_changed.lock() {
                    Ok(mut all) => all.extend(local),
                    Err(_) => changed.store(true, Ordering::Relaxed),
                }
            });
            if !spawned {
                changed.store(true, Ordering::Relaxed);
            }
        }
    });
    if changed.load(Ordering::Relaxed) {
        return None;
    }
    Some((
        stat_changed.into_inner().unwrap_or_default(),
        racy.into_inner().unwrap_or_default(),
    ))
}

/// Whether the file of `entry` holds its blob, hashed without filters (so a file with CRLF
/// conversion counts as changed: a candidate, or the full status decides).
fn holds_its_blob(root: &Path, entry: &Entry<'_>) -> bool {
    let path = root.join(path_from_bytes(entry.path));
    let content = if entry.mode & 0o170000 == 0o120000 {
        std::fs::read_link(&path).ok().and_then(|t| {
            git2::Oid::hash_object(ObjectType::Blob, t.as_os_str().as_encoded_bytes()).ok()
        })
    } else {
        git2::Oid::hash_file(ObjectType::Blob, &path).ok()
    };
    content == Some(entry.id)
}

/// The names in the folders that hold tracked files which the index does not track (with
/// whether each is a folder), read on `threads` threads; `None` when a folder cannot be read.
fn untracked_names(
    root: &Path,
    tracked: &Tracked<'_>,
    threads: usize,
) -> Option<Vec<(PathBuf, bool)>> {
    let dir_list: Vec<&[u8]> = tracked.dirs.iter().copied().collect();
    let found: std::sync::Mutex<Vec<(PathBuf, bool)>> = std::sync::Mutex::new(Vec::new());
    let unreadable = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let chunk = dir_list.len().div_ceil(threads).max(1);
        for part in dir_list.chunks(chunk) {
            let (found, unreadable) = (&found, &unreadable);
            let spawned = spawn_small(scope, move || {
                let mut local = Vec::new();
                // One buffer for every name looked up: most are tracked, and need no copy.
                let mut rel = Vec::new();
                for dir in part {
                    let Ok(read) = std::fs::read_dir(root.join(path_from_bytes(dir))) else {
                        unreadable.store(true, Ordering::Relaxed);
                        return;
                    };
                    for child in read.flatten() {
                        let name = child.file_name();
                        let name = name.as_encoded_bytes();
                        if dir.is_empty() && name == b".git" {
                            continue;
                        }
                        rel.clear();
                        rel.extend_from_slice(dir);
                        if !rel.is_empty() {
                            rel.push(b'/');
                        }
                        rel.extend_from_slice(name);
                        if tracked.holds(&rel) {
                            continue;
                        }
                        let is_dir = child.file_type().is_ok_and(|t| t.is_dir());
                        local.push((path_from_bytes(&rel).into_owned(), is_dir));
                    }
                }
                if let Ok(mut all) = found.lock() {
                    all.extend(local);
                }
            });
            if !spawned {
                unreadable.store(true, Ordering::Relaxed);
            }
        }
    });
    if unreadable.load(Ordering::Relaxed) {
        return None;
    }
    Some(found.into_inner().unwrap_or_default())
}

/// How a tracked file's stat data compares with its index entry.
enum Stat {
    /// As recorded: unchanged.
    Same,
    /// As recorded, but modified no earlier than the index was written: stat data cannot
    /// tell (git's "racily clean"); the content must be compared.
    Racy,
    /// Different, missing, or a submodule: the full status decides.
    Changed,
}

fn stat_state(dirs: &mut Dirs<'_>, entry: &Entry<'_>, index_time: (i64, u32)) -> Stat {
    if entry.mode == GITLINK {
        return Stat::Same;
    }
    let Some(meta) = dirs.lstat(entry.path) else {
        return Stat::Changed;
    };
    let mtime = entry.mtime;
    if stat_matches(&meta, entry, mtime, entry.size) {
        if mtime >= index_time {
            Stat::Racy
        } else {
            Stat::Same
        }
    } else if entry.size == 0 && stat_matches(&meta, entry, mtime, meta.size as u32) {
        // git and libgit2 "smudge" a racily clean entry when writing the index (size 0)
        // so that it cannot pass as clean; its content decides.
        Stat::Racy
    } else {
        Stat::Changed
    }
}

/// What the scan compares of a file's stat data.
struct FileStat {
    /// Regular file, symlink, or something else.
    kind: Kind,
    executable: bool,
    mtime: (i64, u32),
    ctime: (i64, u32),
    size: u64,
    ino: u64,
}

#[derive(PartialEq, Eq)]
enum Kind {
    File,
    Symlink,
    Other,
}

/// Stats files by name relative to their folder, which is opened once for all the files in
/// it (index entries come sorted, so a thread's files come folder by folder): the kernel then
/// walks one name per file instead of the whole absolute path, which was most of the scan.
#[cfg(unix)]
struct Dirs<'a> {
    root: &'a Path,
    /// The folder last opened (relative, as in the index) and its handle; `None` when it
    /// could not be opened (absent, or a symlink: its files are then not what git tracks).
    current: Option<(Vec<u8>, Option<rustix::fd::OwnedFd>)>,
}

#[cfg(unix)]
impl<'a> Dirs<'a> {
    fn new(root: &'a Path) -> Self {
        Dirs {
            root,
            current: None,
        }
    }

    /// The stat data of the file at `path` (relative), not following a final symlink.
    fn lstat(&mut self, path: &[u8]) -> Option<FileStat> {
        use rustix::fs::{AtFlags, FileType, Mode, OFlags};
        use std::os::unix::ffi::OsStrExt as _;
        let (dir, name) = match path.iter().rposition(|b| *b == b'/') {
            Some(slash) => (&path[..slash], &path[slash + 1..]),
            None => (&path[..0], path),
        };
        if self.current.as_ref().is_none_or(|(open, _)| open != dir) {
            let full = self.root.join(path_from_bytes(dir));
            let fd = rustix::fs::open(
                &full,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok();
            self.current = Some((dir.to_vec(), fd));
        }
        let fd = self.current.as_ref()?.1.as_ref()?;
        let st = rustix::fs::statat(
            fd,
            std::ffi::OsStr::from_bytes(name),
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .ok()?;
        let kind = match FileType::from_raw_mode(st.st_mode as _) {
            FileType::RegularFile => Kind::File,
            FileType::Symlink => Kind::Symlink,
            _ => Kind::Other,
        };
        Some(FileStat {
            kind,
            executable: st.st_mode & 0o100 != 0,
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as u32),
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as u32),
            size: st.st_size as u64,
            ino: st.st_ino as u64,
        })
    }
}

/// Elsewhere, each file by its full path.
#[cfg(not(unix))]
struct Dirs<'a> {
    root: &'a Path,
}

#[cfg(not(unix))]
impl<'a> Dirs<'a> {
    fn new(root: &'a Path) -> Self {
        Dirs { root }
    }

    fn lstat(&mut self, path: &[u8]) -> Option<FileStat> {
        let meta = std::fs::symlink_metadata(self.root.join(path_from_bytes(path))).ok()?;
        let kind = if meta.file_type().is_symlink() {
            Kind::Symlink
        } else if meta.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        Some(FileStat {
            kind,
            executable: false,
            mtime: (0, 0),
            ctime: (0, 0),
            size: meta.len(),
            ino: 0,
        })
    }
}

/// Whether type, executable bit, times, inode and size (`size`, as the index records it)
/// are the file's.
fn stat_matches(meta: &FileStat, entry: &Entry<'_>, mtime: (i64, u32), size: u32) -> bool {
    if cfg!(not(unix)) {
        return false;
    }
    let kind_ok = match entry.mode & 0o170000 {
        0o120000 => meta.kind == Kind::Symlink,
        0o100000 => meta.kind == Kind::File && meta.executable == (entry.mode & 0o100 != 0),
        _ => false,
    };
    kind_ok
        && meta.mtime == mtime
        && meta.ctime == entry.ctime
        && meta.size as u32 == size
        && meta.ino as u32 == entry.ino
}

fn unix_time(time: std::time::SystemTime) -> (i64, u32) {
    time.duration_since(std::time::UNIX_EPOCH)
        .map(|d| (d.as_secs() as i64, d.subsec_nanos()))
        .unwrap_or((0, 0))
}

#[cfg(test)]
mod tests;
