//! The repository as every other module meets it: found as git finds it, opened as git
//! behaves, its paths as git stores them, its commit ids as the messages show them.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

/// The repository containing `dir`, found as git finds it. Not `Repository::discover`: that
/// opens the git dir it finds on its own, so a working tree whose `.git` is a file pointing
/// elsewhere (`git init --separate-git-dir`) gets the git dir's parent as its working tree.
pub fn discover(dir: &Path) -> Result<Repository, git2::Error> {
    Repository::open_ext(
        dir,
        git2::RepositoryOpenFlags::empty(),
        [] as [&std::ffi::OsStr; 0],
    )
}

/// Stores `content` as a blob and returns its id. Not `Repository::blob`: libgit2 writes
/// that through a stream, which compresses the content into a temporary file in the object
/// folder before it learns the object is already there (and then deletes the file); most of
/// what an operation stores is already there (the log's stacks and entries of an undo, a
/// report written again, files the reply left as they were). Hashing first skips that file.
pub(crate) fn write_blob(repo: &Repository, content: &[u8]) -> Result<Oid, git2::Error> {
    repo.odb()?.write(git2::ObjectType::Blob, content)
}

/// A path as git stores it (index entries, tree entry names: bytes). On Unix any bytes are a
/// path and nothing is copied; elsewhere a path that is not UTF-8 is converted lossily
/// (repositories made there hold UTF-8).
#[cfg(unix)]
pub(crate) fn path_from_bytes(bytes: &[u8]) -> std::borrow::Cow<'_, Path> {
    use std::os::unix::ffi::OsStrExt as _;
    std::borrow::Cow::Borrowed(Path::new(std::ffi::OsStr::from_bytes(bytes)))
}

#[cfg(not(unix))]
pub(crate) fn path_from_bytes(bytes: &[u8]) -> std::borrow::Cow<'_, Path> {
    std::borrow::Cow::Owned(PathBuf::from(String::from_utf8_lossy(bytes).into_owned()))
}

/// A commit id abbreviated as the messages show it: its first 7 digits.
pub fn short_id(id: &str) -> &str {
    id.get(..7).unwrap_or(id)
}

/// Where object `id` lies as a loose object in the objects folder `objects`:
/// `objects/ab/cdef…`.
pub(crate) fn loose_object_path(objects: &Path, id: Oid) -> PathBuf {
    let hex = id.to_string();
    objects.join(&hex[..2]).join(&hex[2..])
}

/// The object a loose object's path names ([`loose_object_path`] read back): its folder's
/// two hex digits and its file's thirty-eight; `None` for any other path.
pub(crate) fn loose_object_id(path: &Path) -> Option<Oid> {
    let file = path.file_name()?.to_str()?;
    let folder = path.parent()?.file_name()?.to_str()?;
    if folder.len() != 2 || file.len() != 38 {
        return None;
    }
    Oid::from_str(&format!("{folder}{file}")).ok()
}

/// [`short_id`] of an [`Oid`].
pub fn short_oid(oid: Oid) -> String {
    short_id(&oid.to_string()).to_owned()
}

/// Sets libgit2 up as git behaves: objects read from the database are not re-hashed to verify
/// them (git leaves that to `git fsck`; libgit2 would spend a few milliseconds per tree walk);
/// and a parsed tree stays in the repository's object cache whatever its size. libgit2 keeps
/// only trees under 4 KiB (about 100 entries), so every path looked up in a larger folder
/// inflated and parsed that folder's tree again: a change of N files in one folder cost N²
/// (10,000 new files: minutes). Called first thing in `main`, before any thread exists.
pub fn init() {
    git2::opts::strict_hash_verification(false);
    // SAFETY: libgit2's cache limits are plain globals, read by every lookup; this runs
    // before the process starts a thread (the caller's contract), so nothing reads them
    // concurrently. The kinds given are the ones libgit2 accepts.
    unsafe {
        let _ = git2::opts::set_cache_object_limit(git2::ObjectType::Tree, TREE_CACHE_LIMIT);
    }
}

/// The largest tree kept parsed in a repository's object cache: a folder of ~400,000
/// entries. The cache's total stays libgit2's (256 MiB), evicting as it fills.
const TREE_CACHE_LIMIT: usize = 16 << 20;

/// The working tree root of the repository containing `dir`, if any (a bare repository has
/// none).
pub fn worktree_root(dir: &Path) -> Option<PathBuf> {
    let repo = discover(dir).ok()?;
    let root = repo.workdir()?.to_path_buf();
    // libgit2 keeps a trailing separator; the model should see `/repo`, not `/repo/`.
    Some(root.components().collect())
}

/// The git folder of the working tree containing `dir` (in a linked worktree, its own
/// folder under the main repository's, not `.git` of the tree, which is a file there).
pub fn git_dir(dir: &Path) -> Option<PathBuf> {
    Some(discover(dir).ok()?.path().components().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blob stored is the blob git names, readable, stored once; storing it again (the
    /// common case) leaves the object folder as it was.
    #[test]
    fn a_blob_is_stored_once_under_the_id_git_gives_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        let id = write_blob(&repo, b"hello\n").expect("stored");
        assert_eq!(id.to_string(), "ce013625030ba8dba906f756967f9e9ca394464a");
        assert_eq!(repo.find_blob(id).expect("read").content(), b"hello\n");
        let objects = dir.path().join(".git/objects");
        let names = || {
            let mut all: Vec<_> = walk(&objects);
            all.sort();
            all
        };
        let before = names();
        assert_eq!(write_blob(&repo, b"hello\n").expect("again"), id);
        assert_eq!(names(), before);
    }

    /// A folder of 1,000 files (a 40 KB tree) is parsed once and kept: a second lookup is the
    /// cached object itself. Without it each path looked up below the folder parsed it anew,
    /// which made a change of N files in one folder cost N².
    #[test]
    fn a_large_tree_is_parsed_once_and_kept() {
        use git2::Binding as _;
        // Only raises libgit2's limit, which no other test depends on.
        init();
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        let blob = write_blob(&repo, b"x\n").expect("blob");
        let mut builder = repo.treebuilder(None).expect("builder");
        for n in 0..1000 {
            builder
                .insert(format!("file-{n:04}.txt"), blob, 0o100644)
                .expect("insert");
        }
        let id = builder.write().expect("tree");
        let first = repo.find_tree(id).expect("tree");
        let second = repo.find_tree(id).expect("tree");
        assert_eq!(first.len(), 1000);
        assert!(
            std::ptr::eq(first.raw(), second.raw()),
            "the tree was parsed a second time"
        );
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .expect("read")
            .flatten()
            .flat_map(|e| {
                if e.path().is_dir() {
                    walk(&e.path())
                } else {
                    vec![e.path()]
                }
            })
            .collect()
    }

    #[test]
    fn finds_the_root_from_a_subdirectory_and_nothing_outside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        let sub = dir.path().join("a/b");
        std::fs::create_dir_all(&sub).expect("mkdir");
        let root = repo.workdir().map(|p| p.canonicalize().expect("canonical"));
        let found = worktree_root(&sub).map(|p| p.canonicalize().expect("canonical"));
        assert_eq!(found, root);
        let outside = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            worktree_root(outside.path()),
            None,
            "the temp dir is not in a repository"
        );
    }
}
