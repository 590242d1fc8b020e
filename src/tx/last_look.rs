//! The last look at a user's file before a transition replaces it ([`Checker`]): does it
//! hold its before content, its after content, or neither (the user's edit, left alone)?
//! Cheap for a file whose stat data the index vouches for, as git trusts them; see
//! docs/apply.md.

use std::path::{Path, PathBuf};

use git2::{Index, ObjectType, Oid, Repository, Tree};

use super::transition::{Paths, Transition, oid};
use crate::git::filters;
use crate::git::treediff::blob_at;

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
    let conversions = filters::Conversions::of(repo).ok()?;
    current_id(workdir, path, base, &mut |path| {
        filters::file_blob(repo, &conversions, workdir, path).ok()
    })
}

/// How publish checks that a file still holds what it expects, up to three times per path:
/// [`file_blob`]'s id, without writing the blob when no conversion applies, and remembered
/// for a file whose stat data (change time included, which no tool can set back) show it
/// settled well before it was read: the same stat data later mean the same content.
pub(crate) struct Checker<'r> {
    repo: &'r Repository,
    pub(super) conversions: filters::Conversions,
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
    pub(crate) fn new(repo: &'r Repository, workdir: &Path) -> Result<Checker<'r>, git2::Error> {
        Ok(Checker {
            repo,
            conversions: filters::Conversions::of(repo)?,
            workdir: workdir.to_path_buf(),
            known: Default::default(),
        })
    }

    /// Takes what the user's index knows: an entry whose stat data are the file's, and not
    /// racily clean (the file changed before the index was written), holds the file's
    /// content, as git itself judges (`git status` reads no such file).
    pub(crate) fn trust_index(&self, index: &Index, paths: &[PathBuf]) {
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
    pub(super) fn id(&self, path: &Path, base: &Tree<'_>) -> Option<Oid> {
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
        let id = filters::file_id(self.repo, &self.conversions, &self.workdir, path).ok()?;
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
pub(super) fn beyond_symlink(workdir: &Path, path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .take_while(|a| !a.as_os_str().is_empty())
        .any(|a| {
            std::fs::symlink_metadata(workdir.join(a)).is_ok_and(|m| m.file_type().is_symlink())
        })
}

/// Paths the transition changes whose file or index entry is no longer what `from_*` says.
pub(crate) fn changed_by_user(
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

/// The files on disk that would go with a folder the transition replaces by a file (a path of
/// `work` where `to_work` holds a file or link and the disk a real folder), other than those
/// the state before tracks (the checkpoint: new files were in it) and those the operation's
/// own extras write or remove: ignored files, or files made since, that nothing else keeps;
/// and empty folders (named with a trailing `/`).
pub(crate) fn in_folders_replaced(
    repo: &Repository,
    t: &Transition,
    work: &[PathBuf],
) -> Result<Vec<PathBuf>, git2::Error> {
    let from_work = repo.find_tree(oid(&t.from_work)?)?;
    let to_work = repo.find_tree(oid(&t.to_work)?)?;
    let extras: Vec<&Path> =
        t.op.extras
            .changes
            .iter()
            .map(|c| c.path.as_path())
            .collect();
    let ours = |rel: &Path| extras.iter().any(|e| rel.starts_with(e));
    let mut found = Vec::new();
    for path in work {
        let becomes_file = to_work
            .get_path(path)
            .is_ok_and(|e| e.kind() != Some(ObjectType::Tree));
        let full = t.workdir.join(path);
        if !becomes_file || !full.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let mut folders = vec![path.clone()];
        while let Some(folder) = folders.pop() {
            let Ok(read) = std::fs::read_dir(t.workdir.join(&folder)) else {
                continue;
            };
            let mut empty = true;
            for entry in read.flatten() {
                empty = false;
                let rel = folder.join(entry.file_name());
                if entry.file_type().is_ok_and(|k| k.is_dir()) {
                    folders.push(rel);
                } else if from_work.get_path(&rel).is_err() && !ours(&rel) {
                    found.push(rel);
                }
            }
            // An empty folder of the user's is theirs too (undo leaves them as they were).
            if empty && folder != *path && !ours(&folder) {
                found.push(folder.join(""));
            }
        }
    }
    found.sort();
    Ok(found)
}
