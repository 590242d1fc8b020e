//! The user's index file as git-loaf writes and recognises it: entries with the stat data git
//! would give them, and the file's identity, which tells whether it is still the one whose
//! tree was noted after the last write (so a dirty check need not rebuild that tree).

use std::path::{Path, PathBuf};

use git2::{IndexEntry, IndexTime, Oid, Repository};

/// Where git-loaf notes which tree the index holds, after writing it.
fn index_note_path(repo: &Repository) -> PathBuf {
    let name = repo
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    repo.commondir()
        .join("loaf")
        .join(format!("index-tree-{name}"))
}

/// The identity of the index file: git and libgit2 replace it by rename on every write, so
/// the same inode, size and mtime mean the same file.
#[cfg(unix)]
pub(crate) fn index_identity(repo: &Repository) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(repo.path().join("index")).ok()?;
    Some(format!(
        "{} {} {} {}",
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec()
    ))
}

#[cfg(not(unix))]
pub(crate) fn index_identity(_repo: &Repository) -> Option<String> {
    None
}

/// Records that the index file, just written, holds `tree`: the next dirty check then needs
/// neither to rebuild the index's tree (~5 ms on 20,000 files) nor to trust anything else.
pub(crate) fn note_index_tree(repo: &Repository, tree: Oid) {
    if let Some(identity) = index_identity(repo) {
        let _ = std::fs::write(index_note_path(repo), format!("{tree} {identity}"));
    }
}

/// The tree the index holds, if the index file is still the one [`note_index_tree`] saw.
pub(crate) fn known_index_tree(repo: &Repository) -> Option<Oid> {
    let note = std::fs::read_to_string(index_note_path(repo)).ok()?;
    let (tree, identity) = note.split_once(' ')?;
    (Some(identity) == index_identity(repo).as_deref())
        .then(|| Oid::from_str(tree).ok())
        .flatten()
}

/// An index entry for `path` holding blob `id`, with the stat data `meta` of the file when
/// it holds exactly that content (git then sees it clean without re-reading it), or zeroed
/// stat data otherwise (git re-hashes the file and sees the difference).
pub fn entry(path: &Path, id: Oid, mode: u32, meta: Option<&std::fs::Metadata>) -> IndexEntry {
    let bytes = path.as_os_str().as_encoded_bytes().to_vec();
    let entry = IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: bytes.len().min(0xfff) as u16,
        flags_extended: 0,
        path: bytes,
    };
    match meta {
        Some(meta) => with_stat(entry, meta),
        None => entry,
    }
}

/// `entry` with the stat data of `meta` (the file it describes).
pub(crate) fn with_stat(mut entry: IndexEntry, meta: &std::fs::Metadata) -> IndexEntry {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        // Index stat fields are 32 bits wide, truncated as git truncates them.
        entry.ctime = IndexTime::new(meta.ctime() as i32, meta.ctime_nsec() as u32);
        entry.mtime = IndexTime::new(meta.mtime() as i32, meta.mtime_nsec() as u32);
        entry.dev = meta.dev() as u32;
        entry.ino = meta.ino() as u32;
        entry.uid = meta.uid();
        entry.gid = meta.gid();
    }
    entry.file_size = meta.len() as u32;
    entry
}
