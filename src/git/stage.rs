//! The stage: a linked worktree inside the git dir (`<git dir>/loaf/stage`) where actions,
//! `exec` and hooks run, so the user's working tree is untouched until publish.
//!
//! It is created once (libgit2 checks out the whole tree: about 1.6 s on a 20,000-file
//! repository) and reused: [`Stage::reset_to`] brings it to a commit by the tree difference
//! and the paths the last run dirtied, not by a full checkout. It is left with a detached
//! HEAD and a locked worktree entry, and no branch: libgit2 creates a branch named after the
//! worktree, which is deleted at once so that `git branch` lists only the user's branches.

use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{BranchType, Oid, Repository, StatusOptions, WorktreeAddOptions};

/// The worktree's name in `git worktree list`.
const NAME: &str = "loaf-stage";

/// Why the stage could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// The repository has no commit yet to stage from.
    /// A git operation failed.
    #[error("staging worktree: {0}")]
    Git(#[from] git2::Error),
    /// A file operation failed.
    #[error("staging worktree: {0}")]
    Io(#[from] std::io::Error),
}

/// The staging worktree of a repository.
pub struct Stage {
    repo: Repository,
    path: PathBuf,
}

impl std::fmt::Debug for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stage").field("path", &self.path).finish()
    }
}

/// What a run may have changed in the stage, which decides what [`Stage::snapshot`] looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Touched {
    /// Only these paths (relative to the root): fs actions, whose targets are known.
    Paths(Vec<PathBuf>),
    /// Anything: `exec` or hooks ran.
    Anything,
}

impl Stage {
    /// Opens the stage, creating it at `start` the first time (or when it was deleted).
    pub fn open_or_create(repo: &Repository, start: Oid) -> Result<Stage, StageError> {
        let path = repo.commondir().join("loaf").join("stage");
        // Present only while a stage is being created: if a crash interrupted that, the
        // branch, worktree entry and folder there are ours to remove.
        let creating = repo.commondir().join("loaf").join("stage-creating");
        if creating.exists() {
            // The worktree first: libgit2 will not delete a branch a worktree has checked out.
            remove_stage(repo, &path)?;
            if let Ok(mut branch) = repo.find_branch(NAME, BranchType::Local) {
                branch.delete()?;
            }
            std::fs::remove_file(&creating)?;
        }
        if let Ok(worktree) = repo.find_worktree(NAME)
            && worktree.validate().is_ok()
            && path.join(".git").exists()
        {
            let stage = Repository::open(&path)?;
            return Ok(Stage { repo: stage, path });
        }
        let start = repo.find_commit(start)?;
        remove_stage(repo, &path)?;
        std::fs::create_dir_all(path.parent().unwrap_or(&path))?;
        if repo.find_branch(NAME, BranchType::Local).is_ok() {
            return Err(StageError::Git(git2::Error::from_str(&format!(
                "a branch named '{NAME}' exists; rename it to let git-loaf create its stage"
            ))));
        }
        std::fs::write(&creating, "")?;
        // libgit2 checks a worktree out from a branch: make one at `start` (which works on an
        // unborn repository too), then detach and delete it.
        let branch = repo.branch(NAME, &start, false)?;
        let mut options = WorktreeAddOptions::new();
        options.lock(true);
        options.reference(Some(branch.get()));
        let added = repo.worktree(NAME, &path, Some(&options));
        let stage = added.and_then(|_| Repository::open(&path));
        let detached = stage
            .as_ref()
            .map_err(|e| git2::Error::from_str(e.message()))
            .and_then(|s| s.set_head_detached(start.id()));
        if let Ok(mut branch) = repo.find_branch(NAME, BranchType::Local) {
            branch.delete()?;
        }
        detached?;
        if let Ok(stage) = &stage {
            super::filters::smudge_whole_worktree(stage)?;
        }
        std::fs::remove_file(&creating)?;
        Ok(Stage { repo: stage?, path })
    }

    /// Where the stage's files are.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The commit the stage is at.
    pub fn head(&self) -> Result<Oid, StageError> {
        Ok(self.repo.head()?.peel_to_commit()?.id())
    }

    /// Brings the stage's files and index to `commit`: only the paths that differ between the
    /// current and the target commit are checked out, plus, when `scan` is set (`exec`, hooks
    /// or a crash may have changed anything), every path a status scan finds dirty. Ignored
    /// files (build output) are kept.
    pub fn reset_to(&self, commit: Oid, scan: bool) -> Result<(), StageError> {
        let target = self.repo.find_commit(commit)?;
        let current = self.repo.head()?.peel_to_commit()?;
        let mut paths = super::treediff::changed_paths(
            &self.repo,
            Some(current.tree_id()),
            Some(target.tree_id()),
        )?;
        if scan {
            paths.extend(self.dirty_paths()?);
        }
        if current.id() != commit {
            self.repo.set_head_detached(commit)?;
        }
        if paths.is_empty() {
            return Ok(());
        }
        let mut checkout = CheckoutBuilder::new();
        checkout
            .force()
            .remove_untracked(true)
            .disable_pathspec_match(true);
        for path in &paths {
            checkout.path(path);
        }
        self.repo
            .checkout_tree(target.as_object(), Some(&mut checkout))?;
        super::filters::smudge_worktree(&self.repo, &paths)?;
        Ok(())
    }

    /// Paths whose file differs from the stage's index or HEAD, untracked ones included.
    fn dirty_paths(&self) -> Result<Vec<PathBuf>, StageError> {
        let mut options = StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .update_index(true);
        let statuses = self.repo.statuses(Some(&mut options))?;
        Ok(statuses
            .iter()
            .filter_map(|s| s.path().ok().map(PathBuf::from))
            .collect())
    }

    /// Writes the stage's files as a tree (ignored files left out). With [`Touched::Paths`]
    /// only those paths are read, on top of the tree of the stage's HEAD, and the index is not
    /// touched, so a run that wrote five files costs five files; the stage's index then lags
    /// behind for those paths, which only makes the next scan check them again. With
    /// [`Touched::Anything`] the whole stage is added to its index.
    pub fn snapshot(&self, touched: &Touched, user: &Repository) -> Result<Oid, StageError> {
        match touched {
            Touched::Anything => {
                let mut index = self.repo.index()?;
                index.add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)?;
                index.update_all(["*"].iter(), None)?;
                let tree = index.write_tree()?;
                index.write()?;
                Ok(tree)
            }
            Touched::Paths(paths) => {
                let base = self.repo.head()?.peel_to_tree()?.id();
                let source = super::treebuild::Source {
                    repo: &self.repo,
                    base,
                    root: &self.path,
                    filters: user,
                };
                Ok(super::treebuild::tree_with_paths(&source, paths)?)
            }
        }
    }

    /// Records that the stage now holds `commit` (its files and index already do).
    pub fn set_head(&self, commit: Oid) -> Result<(), StageError> {
        self.repo.set_head_detached(commit)?;
        Ok(())
    }
}

/// Removes the stage's worktree entry (however stale or locked) and its folder.
fn remove_stage(repo: &Repository, path: &Path) -> Result<(), StageError> {
    if let Ok(worktree) = repo.find_worktree(NAME) {
        let _ = worktree.unlock();
        let _ = worktree.prune(Some(
            git2::WorktreePruneOptions::new()
                .valid(true)
                .locked(true)
                .working_tree(true),
        ));
    }
    // An entry a crash left half made is not found as a worktree, yet blocks a new one.
    let admin = repo.commondir().join("worktrees").join(NAME);
    if admin.exists() && repo.find_worktree(NAME).is_err() {
        std::fs::remove_dir_all(&admin)?;
    }
    if path.exists() {
        std::fs::remove_dir_all(path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::git::testing::{git, init_repo};

    /// A repository with two commits: `a.txt`+`keep.txt`, then `a.txt` changed and `b.txt`.
    fn repo() -> (tempfile::TempDir, Repository, Oid, Oid) {
        let dir = init_repo();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
        std::fs::write(root.join("a.txt"), "one\n").expect("write");
        std::fs::write(root.join("keep.txt"), "keep\n").expect("write");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "first"]);
        let first = git(root, &["rev-parse", "HEAD"]);
        std::fs::write(root.join("a.txt"), "two\n").expect("write");
        std::fs::write(root.join("b.txt"), "b\n").expect("write");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "second"]);
        let second = git(root, &["rev-parse", "HEAD"]);
        let repo = Repository::open(root).expect("open");
        let oid = |s: String| Oid::from_str(s.trim()).expect("oid");
        (dir, repo, oid(first), oid(second))
    }

    #[test]
    fn created_once_detached_locked_and_without_a_branch() {
        let (dir, repo, _, second) = repo();
        let stage = Stage::open_or_create(&repo, second).expect("created");
        assert_eq!(stage.head().expect("head"), second);
        assert_eq!(
            std::fs::read_to_string(stage.path().join("a.txt"))
                .ok()
                .as_deref(),
            Some("two\n")
        );
        assert_eq!(
            git(dir.path(), &["branch", "--format=%(refname:short)"]),
            "main\n"
        );
        let list = git(dir.path(), &["worktree", "list", "--porcelain"]);
        assert!(
            list.contains("detached") && list.contains("locked"),
            "{list}"
        );
        git(dir.path(), &["worktree", "prune"]);
        assert!(
            git(dir.path(), &["worktree", "list"]).contains("loaf/stage"),
            "prune keeps it"
        );
        std::fs::write(stage.path().join("marker"), "x").expect("write");
        let again = Stage::open_or_create(&repo, second).expect("reopened");
        assert!(
            again.path().join("marker").exists(),
            "reused, not recreated"
        );
        assert_eq!(
            git(dir.path(), &["status", "--porcelain"]),
            "",
            "the user's tree is untouched"
        );
    }

    #[test]
    fn reset_moves_by_the_difference_and_clears_leftovers() {
        let (_dir, repo, first, second) = repo();
        let stage = Stage::open_or_create(&repo, second).expect("created");
        // A previous run's leftovers: a change, an untracked file, and ignored build output.
        std::fs::write(stage.path().join("keep.txt"), "changed by a run\n").expect("write");
        std::fs::write(stage.path().join("stray.txt"), "untracked\n").expect("write");
        std::fs::create_dir_all(stage.path().join("target")).expect("mkdir");
        std::fs::write(stage.path().join("target/cache"), "build\n").expect("write");
        stage.reset_to(first, true).expect("reset");
        let read = |p: &str| std::fs::read_to_string(stage.path().join(p)).ok();
        assert_eq!(stage.head().expect("head"), first);
        assert_eq!(read("a.txt").as_deref(), Some("one\n"));
        assert_eq!(read("b.txt"), None, "removed: not in the first commit");
        assert_eq!(
            read("keep.txt").as_deref(),
            Some("keep\n"),
            "the run's change undone"
        );
        assert_eq!(read("stray.txt"), None, "untracked leftovers removed");
        assert_eq!(
            read("target/cache").as_deref(),
            Some("build\n"),
            "ignored output kept"
        );
        assert!(stage.dirty_paths().expect("status").is_empty());
        stage.reset_to(second, false).expect("reset back");
        assert_eq!(read("b.txt").as_deref(), Some("b\n"));
    }

    #[test]
    fn snapshot_sees_what_the_actions_did() {
        let (_dir, repo, _, second) = repo();
        let stage = Stage::open_or_create(&repo, second).expect("created");
        std::fs::write(stage.path().join("a.txt"), "three\n").expect("write");
        std::fs::remove_file(stage.path().join("b.txt")).expect("rm");
        std::fs::write(stage.path().join("new.txt"), "new\n").expect("write");
        std::fs::create_dir_all(stage.path().join("target")).expect("mkdir");
        std::fs::write(stage.path().join("target/out"), "ignored\n").expect("write");
        let tree = repo
            .find_tree(stage.snapshot(&Touched::Anything, &repo).expect("snapshot"))
            .expect("tree");
        let names: Vec<String> = tree
            .iter()
            .filter_map(|e| e.name().ok().map(str::to_owned))
            .collect();
        assert_eq!(names, [".gitignore", "a.txt", "keep.txt", "new.txt"]);
        let base = repo
            .find_commit(second)
            .and_then(|c| c.tree())
            .expect("base tree");
        assert_ne!(tree.id(), base.id());
    }
}
