//! Checkpoints: the user's uncommitted work recorded as commits, without changing the user's
//! files, index or HEAD, so that actions apply to exactly what the model saw and undo can put
//! that work back exactly.
//!
//! Like `git stash`, a checkpoint is a commit whose tree is the working tree (tracked changes
//! and untracked, non-ignored files) and whose parents are HEAD and an "index" commit holding
//! the staged state: the staged/unstaged split, partially staged files included, survives.

use git2::{IndexAddOption, Oid, Repository, StatusOptions};

use super::commit::{Trailers, message, write_commit};

/// The recorded state of the user's working tree and index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// The checkpoint commit: working tree state, parents HEAD and [`Checkpoint::index_commit`].
    pub commit: Oid,
    /// A commit of the index state (parent HEAD).
    pub index_commit: Oid,
    /// HEAD when it was taken.
    pub head: Oid,
}

/// Whether the working tree or index differs from HEAD (untracked, non-ignored files count).
/// Stat data refreshed here is written back to the index, so the next scan is fast (DESIGN §7).
pub fn is_dirty(repo: &Repository) -> Result<bool, git2::Error> {
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .update_index(true);
    Ok(!repo.statuses(Some(&mut options))?.is_empty())
}

/// Records the user's uncommitted work as a checkpoint (`None` when there is none). Moves no
/// ref and writes no file of the user's: only objects.
pub fn take(repo: &Repository, id: &str) -> Result<Option<Checkpoint>, git2::Error> {
    if !is_dirty(repo)? {
        return Ok(None);
    }
    let head = repo.head()?.peel_to_commit()?.id();
    let mut index = repo.index()?;
    let index_tree = index.write_tree_to(repo)?;
    // The working tree's tree is built in the in-memory index, which is then read back from
    // disk: the user's index file is never written with it.
    let added = index
        .add_all(["*"].iter(), IndexAddOption::DEFAULT, None)
        .and_then(|()| index.update_all(["*"].iter(), None))
        .and_then(|()| index.write_tree_to(repo));
    index.read(true)?;
    let worktree_tree = added?;
    let trailers = Trailers {
        checkpoint: Some(id.to_owned()),
        base: Some(head),
        ..Trailers::default()
    };
    let index_commit = write_commit(
        repo,
        index_tree,
        &[head],
        &message("loaf: checkpoint index", &trailers),
    )?;
    let commit = write_commit(
        repo,
        worktree_tree,
        &[head, index_commit],
        &message("loaf: checkpoint", &trailers),
    )?;
    Ok(Some(Checkpoint {
        commit,
        index_commit,
        head,
    }))
}

/// Puts the user's working tree and index back to `checkpoint`: files as they were
/// (untracked ones included; files since created and not ignored are removed; ignored files
/// are left alone) and the index with its staged/unstaged split. HEAD is not moved: undo
/// moves it. Overwrites the user's current files: the caller checks first that nothing of
/// the user's changed since (undo refuses otherwise).
pub fn restore(repo: &Repository, checkpoint: &Checkpoint) -> Result<(), git2::Error> {
    let worktree = repo.find_commit(checkpoint.commit)?.tree()?;
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout
        .force()
        .remove_untracked(true)
        .remove_ignored(false);
    repo.checkout_tree(worktree.as_object(), Some(&mut checkout))?;
    let staged = repo.find_commit(checkpoint.index_commit)?.tree()?;
    let mut index = repo.index()?;
    index.read_tree(&staged)?;
    index.write()?;
    // Refresh the stat data read_tree dropped, so the next status stays fast (DESIGN §7).
    is_dirty(repo).map(|_| ())
}

/// Reads a checkpoint back from its commit.
pub fn read(repo: &Repository, commit: Oid) -> Result<Checkpoint, git2::Error> {
    let found = repo.find_commit(commit)?;
    Ok(Checkpoint {
        commit,
        head: found.parent_id(0)?,
        index_commit: found.parent_id(1)?,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::git::testing::{git, init_repo};

    fn repo() -> tempfile::TempDir {
        let dir = init_repo();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "*.log\n").expect("write");
        std::fs::write(root.join("a.txt"), "1\n2\n3\n").expect("write");
        std::fs::write(root.join("gone.txt"), "x\n").expect("write");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "first"]);
        dir
    }

    /// Uncommitted work of every kind: a partially staged file (line 1 staged, line 3 not),
    /// a deletion, an untracked file and an ignored one.
    fn make_dirty(root: &Path) {
        std::fs::write(root.join("a.txt"), "ONE\n2\n3\n").expect("write");
        git(root, &["add", "a.txt"]);
        std::fs::write(root.join("a.txt"), "ONE\n2\nTHREE\n").expect("write");
        std::fs::remove_file(root.join("gone.txt")).expect("rm");
        std::fs::write(root.join("new.txt"), "new\n").expect("write");
        std::fs::write(root.join("debug.log"), "ignored\n").expect("write");
    }

    /// Everything `git` says about the user's state.
    fn state(root: &Path) -> String {
        [
            git(root, &["status", "--porcelain=v2", "--untracked-files=all"]),
            git(root, &["diff"]),
            git(root, &["diff", "--cached"]),
            git(root, &["rev-parse", "HEAD"]),
        ]
        .join("\n---\n")
    }

    #[test]
    fn restore_puts_back_files_index_and_untracked_exactly() {
        let dir = repo();
        let root = dir.path();
        make_dirty(root);
        let before = state(root);
        let repo = Repository::open(root).expect("open");
        let checkpoint = take(&repo, "c1").expect("checkpoint").expect("dirty");
        // What an apply and a commit might leave: everything different.
        std::fs::write(root.join("a.txt"), "changed by the model\n").expect("write");
        std::fs::write(root.join("gone.txt"), "back\n").expect("write");
        std::fs::remove_file(root.join("new.txt")).expect("rm");
        std::fs::write(root.join("extra.txt"), "created later\n").expect("write");
        git(root, &["add", "-A"]);
        restore(&repo, &checkpoint).expect("restore");
        assert_eq!(state(root), before, "status, diffs and HEAD as they were");
        assert_eq!(
            std::fs::read_to_string(root.join("new.txt"))
                .ok()
                .as_deref(),
            Some("new\n")
        );
        assert!(
            !root.join("extra.txt").exists(),
            "files created since are removed"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("debug.log"))
                .ok()
                .as_deref(),
            Some("ignored\n"),
            "ignored files are left alone"
        );
    }

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
        let ix = checkpoint.index_commit.to_string();
        assert_eq!(
            show(&format!("{cp}:a.txt")),
            "ONE\n2\nTHREE\n",
            "working tree content"
        );
        assert_eq!(
            show(&format!("{ix}:a.txt")),
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
            read(&repo, checkpoint.commit).expect("read back"),
            checkpoint
        );
        assert_eq!(
            git(root, &["branch", "--format=%(refname:short)"]),
            "main\n"
        );
    }
}
