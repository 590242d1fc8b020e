//! Changing the user's index as git itself does: `index.lock` is created exclusively before
//! the index is read, held while the working tree files are replaced, and turned into the new
//! index by one rename. While it is held, `git add` or `git commit` fail with git's own "index
//! is locked" message instead of racing us (a `git add` made between our read and our write
//! would otherwise be lost), and a crash that leaves it behind stops plain git from building
//! a commit on a half-published state until the next loaf command recovers.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use git2::{Index, Repository};

use super::index::index_identity;

/// Indexes adopted by [`adopt`] in this process: git dir → the identity the real index had
/// when it was copied.
static ADOPTED: Mutex<Option<HashMap<PathBuf, String>>> = Mutex::new(None);

/// The private copy of the index an operation works on (next to the index, so it can be
/// renamed over it).
fn scratch_path(repo: &Repository) -> PathBuf {
    repo.path().join(SCRATCH)
}

const SCRATCH: &str = "loaf-index.new";

/// The lock libgit2 takes while it writes the private copy, in git dir `git_dir`: ours
/// alone (only an operation holding git-loaf's lock writes the copy), so one a killed
/// operation left is always stale.
pub(crate) fn scratch_lock_path(git_dir: &Path) -> PathBuf {
    git_dir.join(format!("{SCRATCH}.lock"))
}

/// Makes `repo` work, for the rest of this operation, on a private copy of its index: the
/// index is parsed once (20,000 entries cost ~9 ms), used by every check, and can still be
/// written under git's `index.lock` at publish ([`IndexLock::read`] takes it over when the
/// real index has not changed since). Without it, publish copies and parses the index again.
pub(crate) fn adopt(repo: &Repository) -> Result<(), IndexLockError> {
    let index = repo.path().join("index");
    let Some(identity) = index_identity(repo) else {
        return Ok(());
    };
    let scratch = scratch_path(repo);
    let _ = std::fs::remove_file(&scratch);
    let _ = std::fs::remove_file(scratch_lock_path(repo.path()));
    copy_index(&index, &scratch)?;
    let mut copy = Index::open(&scratch)?;
    repo.set_index(&mut copy)?;
    let mut adopted = ADOPTED.lock().unwrap_or_else(|e| e.into_inner());
    adopted
        .get_or_insert_with(HashMap::new)
        .insert(repo.path().to_path_buf(), identity);
    Ok(())
}

/// A copy of the index's content at `scratch`. Never a hard link: a git-loaf of an earlier
/// version copies onto `scratch` in place (truncating it), which would empty the user's
/// index through a link left by a crash.
fn copy_index(index: &Path, scratch: &Path) -> Result<(), IndexLockError> {
    std::fs::copy(index, scratch).map_err(io(scratch))?;
    Ok(())
}

/// The held `index.lock` of one working tree.
#[derive(Debug)]
pub(crate) struct IndexLock {
    lock: PathBuf,
    index: PathBuf,
    /// Where the new index is written before it replaces the lock file's content.
    scratch: PathBuf,
    done: bool,
}

/// Why the lock could not be taken or the index written.
#[derive(Debug, thiserror::Error)]
pub enum IndexLockError {
    /// Another process holds `index.lock`.
    #[error("another git command is using the index ({} exists)", .0.display())]
    Busy(PathBuf),
    /// Reading or writing failed.
    #[error("{}", super::words::plain(.0))]
    Git(#[from] git2::Error),
    /// A file operation failed.
    #[error("{}: {error}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> IndexLockError + '_ {
    move |error| IndexLockError::Io {
        path: path.to_path_buf(),
        error,
    }
}

impl IndexLock {
    /// Takes `index.lock` of `repo`'s working tree, or says who has it.
    pub fn acquire(repo: &Repository) -> Result<IndexLock, IndexLockError> {
        let index = repo.path().join("index");
        let lock = repo.path().join("index.lock");
        match OpenOptions::new().write(true).create_new(true).open(&lock) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(IndexLockError::Busy(lock));
            }
            Err(e) => return Err(io(&lock)(e)),
        }
        Ok(IndexLock {
            scratch: scratch_path(repo),
            lock,
            index,
            done: false,
        })
    }

    /// The index as it is now, to change in memory; nobody else can write it meanwhile. The
    /// copy [`adopt`] made is used when the index has not changed since.
    pub fn read(&self, repo: &Repository) -> Result<Index, IndexLockError> {
        let adopted = ADOPTED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|a| a.get(repo.path()).cloned());
        if adopted.is_some() && adopted == index_identity(repo) && self.scratch.exists() {
            let mut index = repo.index()?;
            // Reread only if the copy's file changed (libgit2 knows its own writes).
            index.read(false)?;
            return Ok(index);
        }
        let _ = std::fs::remove_file(&self.scratch);
        let _ = std::fs::remove_file(scratch_lock_path(repo.path()));
        if self.index.exists() {
            copy_index(&self.index, &self.scratch)?;
        }
        Ok(Index::open(&self.scratch)?)
    }

    /// Writes `index` as the working tree's index and releases the lock: the new content
    /// takes the lock file's place, then the lock file becomes the index (git's protocol).
    /// The file says its own tree (git's cache-tree extension, which `git status` keeps when
    /// it rewrites the file), so the next scan takes the index's tree from it instead of
    /// building it. Its trees exist already when git-loaf publishes them, so that hashes
    /// and writes nothing new; an index libgit2 cannot make a tree of is written as is.
    pub fn commit(mut self, index: &mut Index) -> Result<(), IndexLockError> {
        // libgit2 first checks that every entry's object exists and is a blob, reading each
        // one's header (on git.git, inflating delta chains: a sixth of an undo's CPU). The
        // entries are the operation's own, each written or read by it before it got here;
        // the check is off for this one call (a plain flag of libgit2's, which only skips
        // that validation while it is off).
        git2::opts::strict_object_creation(false);
        let _ = index.write_tree();
        git2::opts::strict_object_creation(true);
        index.write()?;
        std::fs::rename(&self.scratch, &self.lock).map_err(io(&self.lock))?;
        std::fs::rename(&self.lock, &self.index).map_err(io(&self.index))?;
        self.done = true;
        // The copy is the index now: a later adopted read must copy again.
        if let Some(adopted) = ADOPTED.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            adopted.clear();
        }
        Ok(())
    }
}

impl Drop for IndexLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.scratch);
        if !self.done {
            let _ = std::fs::remove_file(&self.lock);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::index::entry;
    use crate::git::testing::{committed_repo, git};

    #[test]
    fn a_held_lock_makes_git_add_fail_and_commit_replaces_the_index() {
        let dir = committed_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let lock = IndexLock::acquire(&repo).expect("lock");
        assert!(matches!(
            IndexLock::acquire(&repo),
            Err(IndexLockError::Busy(_))
        ));
        std::fs::write(root.join("a.txt"), "changed\n").expect("write");
        let add = std::process::Command::new("git")
            .args(["add", "a.txt"])
            .current_dir(root)
            .output()
            .expect("git runs");
        assert!(!add.status.success(), "git add must wait for our lock");
        let mut index = lock.read(&repo).expect("read");
        let id = repo.blob(b"changed\n").expect("blob");
        index
            .add(&entry(
                Path::new("a.txt"),
                id,
                0o100644,
                std::fs::symlink_metadata(root.join("a.txt")).ok().as_ref(),
            ))
            .expect("add");
        lock.commit(&mut index).expect("commit");
        assert!(!root.join(".git/index.lock").exists());
        assert_eq!(git(root, &["status", "--porcelain"]), "M  a.txt\n");
    }

    #[test]
    fn dropping_the_lock_without_commit_leaves_the_index_alone() {
        let dir = committed_repo();
        let root = dir.path();
        let before = std::fs::read(root.join(".git/index")).expect("index");
        let repo = Repository::open(root).expect("open");
        drop(IndexLock::acquire(&repo).expect("lock"));
        assert!(!root.join(".git/index.lock").exists());
        assert_eq!(
            std::fs::read(root.join(".git/index")).expect("index"),
            before
        );
    }
}
