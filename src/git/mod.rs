//! Git plumbing, the only module that imports git2 (the user's operations that use it are in
//! [`crate::ops`], which hold its [`Oid`]s but call no git2 themselves): the lock and crash
//! recovery ([`session`], [`lock`]), the user's uncommitted work ([`checkpoint`]), the
//! staging worktree ([`stage`]) and the ignored files shown through it ([`visible`]), trees
//! built and compared ([`treebuild`], [`treediff`]), 3-way merges ([`merge`]), commits,
//! trailers and notes ([`commit`]) and reading them back ([`commits`]), the refs operations
//! move and keep ([`refs`]), moving the branch and files ([`publish`]) and the operation log
//! ([`oplog`]).
//! The repository's own git hooks run as `git commit` runs them ([`githooks`]), and commits
//! are signed by git itself ([`sign`]).

pub mod carry;
pub mod checkpoint;
pub mod commit;
pub mod commits;
pub mod durable;
pub mod exclude;
pub mod filters;
#[cfg(unix)]
mod fresh_checkout;
pub mod githooks;
pub mod head;
pub mod index_lock;
pub mod lock;
pub mod merge;
pub mod oplog;
pub mod publish;
pub mod push;
pub mod quickscan;
pub mod refs;
pub mod reports;
pub mod session;
pub mod sign;
pub mod squash;
pub mod stage;
mod stage_swap;
pub mod states;
#[cfg(test)]
mod testing;
pub mod treebuild;
pub mod treediff;
pub mod turn;
pub mod visible;

use std::path::{Path, PathBuf};

/// An object id, as the operations hold commits and trees between plumbing calls.
pub use git2::Oid;

/// An open repository, as the operations hand it from one plumbing call to the next.
pub use git2::Repository;

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

/// [`short_id`] of an [`Oid`].
pub fn short_oid(oid: Oid) -> String {
    short_id(&oid.to_string()).to_owned()
}

/// Sets libgit2 up as git behaves: objects read from the database are not re-hashed to verify
/// them (git leaves that to `git fsck`; libgit2 would spend a few milliseconds per tree walk).
pub fn init() {
    git2::opts::strict_hash_verification(false);
}

/// The working tree root of the repository containing `dir`, if any (a bare repository has
/// none).
pub fn worktree_root(dir: &Path) -> Option<PathBuf> {
    let repo = states::discover(dir).ok()?;
    let root = repo.workdir()?.to_path_buf();
    // libgit2 keeps a trailing separator; the model should see `/repo`, not `/repo/`.
    Some(root.components().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

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
