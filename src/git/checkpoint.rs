//! Checkpoints: the user's uncommitted work recorded as git objects, without changing the
//! user's files, index or HEAD, so that actions apply to exactly what the model saw and undo
//! can put that work back exactly.
//!
//! A checkpoint is a commit `loaf: checkpoint` whose tree is the working tree (tracked changes
//! and untracked, non-ignored files) and whose only parent is HEAD, so history stays linear
//! (squash refuses merge commits). The staged state, partially staged files included, is
//! kept as a separate tree (`index_tree`); the operation log keeps that tree alive and uses it
//! when undo puts the user's work back.

use git2::{Oid, Repository, StatusOptions};

use super::commit::{Trailers, message, write_commit};

/// The recorded state of the user's working tree and index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// The `loaf: checkpoint` commit: its tree is the working tree.
    pub commit: Oid,
    /// The tree of the index (what was staged).
    pub index_tree: Oid,
    /// HEAD when it was taken (`None` on an unborn branch).
    pub head: Option<Oid>,
}

/// Whether the working tree or index differs from HEAD (untracked, non-ignored files count).
/// Staged changes are found by comparing the index, as a tree, with HEAD's tree: libgit2
/// reuses the index's cached subtrees, so this is far cheaper than diffing HEAD against every
/// index entry. Then the working tree is scanned once against the index, and the refreshed
/// stat data written back so that the next scan (ours or git's) is fast.
pub fn is_dirty(repo: &Repository) -> Result<bool, git2::Error> {
    let head_tree = match head_commit(repo)? {
        Some(head) => Some(repo.find_commit(head)?.tree_id()),
        None => None,
    };
    let mut index = repo.index()?;
    let index_tree = match known_index_tree(repo) {
        Some(tree) => Ok(tree),
        None => index.write_tree(),
    };
    let staged = match (head_tree, index_tree) {
        (Some(head), Ok(tree)) => head != tree,
        (None, Ok(_)) => !index.is_empty(),
        // Unmerged entries: certainly not clean.
        (_, Err(_)) => true,
    };
    if staged {
        return Ok(true);
    }
    if super::quickscan::certainly_clean(repo)? {
        return Ok(false);
    }
    let mut options = StatusOptions::new();
    options
        .show(git2::StatusShow::Workdir)
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true)
        .update_index(true);
    Ok(!repo.statuses(Some(&mut options))?.is_empty())
}

/// Where git-loaf notes which tree the index holds, after writing it.
fn index_note_path(repo: &Repository) -> std::path::PathBuf {
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
fn index_identity(repo: &Repository) -> Option<String> {
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
fn index_identity(_repo: &Repository) -> Option<String> {
    None
}

/// Records that the index file, just written, holds `tree`: the next dirty check then needs
/// neither to rebuild the index's tree (~5 ms on 20,000 files) nor to trust anything else.
pub fn note_index_tree(repo: &Repository, tree: Oid) {
    if let Some(identity) = index_identity(repo) {
        let _ = std::fs::write(index_note_path(repo), format!("{tree} {identity}"));
    }
}

/// The tree the index holds, if the index file is still the one [`note_index_tree`] saw.
fn known_index_tree(repo: &Repository) -> Option<Oid> {
    let note = std::fs::read_to_string(index_note_path(repo)).ok()?;
    let (tree, identity) = note.split_once(' ')?;
    (Some(identity) == index_identity(repo).as_deref())
        .then(|| Oid::from_str(tree).ok())
        .flatten()
}

/// The commit HEAD points at, or `None` on an unborn branch.
pub fn head_commit(repo: &Repository) -> Result<Option<Oid>, git2::Error> {
    match repo.head() {
        Ok(head) => Ok(Some(head.peel_to_commit()?.id())),
        Err(e)
            if e.code() == git2::ErrorCode::UnbornBranch
                || e.code() == git2::ErrorCode::NotFound =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Paths staged with `git add -N` (intent to add). A checkpoint records the index as a tree,
/// which has no place for that flag (the entry would come back as a staged empty file), so
/// an operation refuses rather than restore something else than what was there.
pub fn refuse_intent_to_add(repo: &Repository) -> Result<(), Vec<String>> {
    const INTENT_TO_ADD: u16 = 1 << 13;
    let Ok(index) = repo.index() else {
        return Ok(());
    };
    let paths: Vec<String> = index
        .iter()
        .filter(|e| e.flags_extended & INTENT_TO_ADD != 0)
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    if paths.is_empty() { Ok(()) } else { Err(paths) }
}

/// Records the working tree and index if they differ from HEAD; `None` when they do not.
/// Writes objects only: the user's files, index and refs are untouched.
pub fn take(repo: &Repository, id: &str) -> Result<Option<Checkpoint>, git2::Error> {
    if !is_dirty(repo)? {
        return Ok(None);
    }
    let head = head_commit(repo)?;
    let mut index = repo.index()?;
    let index_tree = index.write_tree_to(repo)?;
    // Add everything to the in-memory index to get the working tree as a tree, then drop
    // those changes: the index on disk is never written.
    let added = super::filters::add_all(repo, &mut index).and_then(|()| index.write_tree_to(repo));
    index.read(true)?;
    let worktree_tree = added?;
    let trailers = Trailers {
        checkpoint: Some(id.to_owned()),
        base: head,
        ..Trailers::default()
    };
    let parents: Vec<Oid> = head.into_iter().collect();
    let commit = write_commit(
        repo,
        worktree_tree,
        &parents,
        &message("loaf: checkpoint", &trailers),
    )?;
    Ok(Some(Checkpoint {
        commit,
        index_tree,
        head,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{committed_repo as repo, git, make_dirty, user_state as state};

    /// Uncommitted work of every kind: a partially staged file (line 1 staged, line 3 not),
    /// Everything `git` says about the user's state.
    #[test]
    fn a_clean_tree_needs_no_checkpoint() {
        let dir = repo();
        let repo = Repository::open(dir.path()).expect("open");
        assert_eq!(take(&repo, "c1").expect("checkpoint"), None);
    }

    #[test]
    fn records_the_staged_unstaged_split_without_changing_anything() {
        let dir = repo();
        let root = dir.path();
        make_dirty(root);
        let before = state(root);
        let index_before = git(root, &["ls-files", "--stage"]);
        let repo = Repository::open(root).expect("open");
        let checkpoint = take(&repo, "c1").expect("checkpoint").expect("dirty");
        assert_eq!(state(root), before, "the user's state is untouched");
        assert_eq!(
            git(root, &["ls-files", "--stage"]),
            index_before,
            "the index is untouched"
        );
        let show = |rev: &str| git(root, &["show", rev]);
        let cp = checkpoint.commit.to_string();
        let ix = checkpoint.index_tree.to_string();
        assert_eq!(
            show(&format!("{cp}:a.txt")),
            "ONE\n2\nTHREE\n",
            "working tree content"
        );
        assert_eq!(
            git(root, &["cat-file", "-p", &format!("{ix}:a.txt")]),
            "ONE\n2\n3\n",
            "staged content"
        );
        assert_eq!(show(&format!("{cp}:new.txt")), "new\n");
        let files = git(root, &["ls-tree", "--name-only", &cp]);
        assert_eq!(
            files, ".gitignore\na.txt\nnew.txt\n",
            "deletion kept, ignored file left out"
        );
        assert!(git(root, &["log", "-1", "--format=%B", &cp]).contains("Loaf-Checkpoint: c1"));
        assert_eq!(
            git(root, &["rev-list", "--parents", "-n1", &cp])
                .split_whitespace()
                .count(),
            2,
            "one parent: history stays linear"
        );
        assert_eq!(
            git(root, &["branch", "--format=%(refname:short)"]),
            "main\n"
        );
    }
}
