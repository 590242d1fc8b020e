//! The stage: a linked worktree inside the git dir (`<git dir>/loaf/stage`) where actions,
//! `exec` and hooks run, so the user's working tree is untouched until publish.
//!
//! It is created once (libgit2 checks out the whole tree: about 1.6 s on a 20,000-file
//! repository) and reused: [`Stage::reset_to`] brings it to a commit by the tree difference
//! and the paths the last run dirtied, not by a full checkout. It is left with a detached
//! HEAD and a locked worktree entry, and no branch: libgit2 creates a branch named after the
//! worktree, which is deleted at once so that `git branch` lists only the user's branches.
//!
//! Ignored files are never the stage's own: the user's show through it (see
//! [`crate::git::visible`]), so whatever ignored content a run left in the stage (an ignored file
//! an action wrote, a cache exec made) is removed by the next reset, lest an old copy hide the
//! user's current file. [`Stage::snapshot`] records where a run may have left some: the paths
//! its actions wrote, or "anywhere" after exec or hooks, which costs the next reset one
//! status scan of the stage.

use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{BranchType, Oid, Repository, StatusOptions, WorktreeAddOptions};

use super::stage_swap::WRITTEN;

/// The worktree's name in `git worktree list`.
const NAME: &str = "loaf-stage";

/// The first line of the record of where the last run may have left ignored content
/// ([`WRITTEN`], next to the stage) when only the listed paths (NUL-separated after it) may hold some.
const WRITTEN_PATHS: &[u8] = b"paths\n";

/// The line the same record starts with while an apply runs in the stage: written with the
/// record at the run's reset (before HEAD or any file there moves) and taken off when the run
/// ends. A run that did not end (killed, a refused commit, failed hooks) leaves it, and the
/// next apply then scans the whole stage and ends the processes a killed sandbox left. One
/// record rewritten instead of a marker file made and deleted by every apply.
pub(crate) const IN_FLIGHT: &[u8] = b"in flight\n";

/// The marker file an earlier git-loaf made for the same purpose (`stage-in-flight`): one a
/// crash left before an upgrade still counts.
const OLD_IN_FLIGHT_MARKER: &str = "stage-in-flight";

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
    /// An apply runs in the stage ([`Stage::begin_run`] to [`Stage::end_run`]): every record
    /// written meanwhile starts with [`IN_FLIGHT`].
    in_flight: std::sync::atomic::AtomicBool,
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
    fn new(repo: Repository, path: PathBuf) -> Stage {
        Stage {
            repo,
            path,
            in_flight: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// An apply begins to run in the stage: whether the last one did not end (then the
    /// caller scans the stage at its reset). From here until [`Stage::end_run`] the record of
    /// where ignored content may be says the run is in flight; the reset writes it first.
    pub fn begin_run(&self) -> bool {
        let old_marker = self
            .repo
            .commondir()
            .join("loaf")
            .join(OLD_IN_FLIGHT_MARKER);
        let crashed = old_marker.exists()
            || std::fs::read(self.written_record()).is_ok_and(|b| b.starts_with(IN_FLIGHT));
        // The record says it from the reset on.
        let _ = std::fs::remove_file(old_marker);
        self.in_flight
            .store(true, std::sync::atomic::Ordering::SeqCst);
        crashed
    }

    /// The run ended (committed and published, or nothing to commit): the next apply need
    /// not scan the stage. The record keeps what it says of ignored content.
    pub fn end_run(&self) -> Result<(), StageError> {
        self.in_flight
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let record = self.written_record();
        let bytes = std::fs::read(&record)?;
        if let Some(rest) = bytes.strip_prefix(IN_FLIGHT) {
            std::fs::write(&record, rest)?;
        }
        Ok(())
    }

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
            && let Some(stage) = own_stage(repo, &worktree, &path)
        {
            return Ok(Stage::new(stage, path));
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
        // libgit2 checks a worktree out from a branch: make one at a commit of the empty tree
        // (nothing to check out), then detach and delete it, and check `start` out in a
        // second step, where the checkout's options are ours: without content filters when
        // none can apply (libgit2 resolves every file's attributes otherwise, which was most
        // of the creation's time).
        let empty = crate::git::commit::write_commit(
            repo,
            super::checkpoint::empty_tree(repo)?,
            &[],
            "loaf: empty stage",
        )?;
        let branch = repo.branch(NAME, &repo.find_commit(empty)?, false)?;
        let mut options = WorktreeAddOptions::new();
        options.lock(true);
        options.reference(Some(branch.get()));
        let added = repo.worktree(NAME, &path, Some(&options));
        let stage = added.and_then(|_| Repository::open(&path));
        let detached = stage
            .as_ref()
            .map_err(|e| git2::Error::from_str(e.message()))
            .and_then(|s| s.set_head_detached(empty));
        if let Ok(mut branch) = repo.find_branch(NAME, BranchType::Local) {
            branch.delete()?;
        }
        detached?;
        let stage = Stage::new(stage?, path);
        let plain = !crate::git::filters::may_convert_any(repo, start.tree_id())?;
        // Without any conversion, the files are their blobs: written on several threads.
        #[cfg(unix)]
        let written =
            plain && super::fresh_checkout::write_tree(&stage.repo, &stage.path, start.tree_id())?;
        #[cfg(not(unix))]
        let written = false;
        if !written {
            let mut checkout = CheckoutBuilder::new();
            checkout.force();
            if plain {
                checkout.disable_filters(true);
            }
            let target = stage.repo.find_commit(start.id())?;
            stage
                .repo
                .checkout_tree(target.as_object(), Some(&mut checkout))?;
        }
        stage.repo.set_head_detached(start.id())?;
        crate::git::filters::smudge_whole_worktree(&stage.repo)?;
        stage.record_written(&Touched::Paths(Vec::new()))?;
        super::stage_swap::clear(repo.commondir())?;
        std::fs::remove_file(&creating)?;
        Ok(stage)
    }

    /// Where the stage's files are.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stage's repository (its worktree's view: HEAD, index, files).
    pub fn repo(&self) -> &Repository {
        &self.repo
    }

    /// The commit the stage is at.
    pub fn head(&self) -> Result<Oid, StageError> {
        Ok(self.repo.head()?.peel_to_commit()?.id())
    }

    /// Brings the stage's files and index to `commit`: only the paths that differ between the
    /// current and the target commit are checked out, plus, when `scan` is set (`exec`, hooks
    /// or a crash may have changed anything), every path a status scan finds dirty. Ignored
    /// content the last run left is removed: at the paths it wrote, or, after exec or hooks
    /// (or without a record), wherever a status scan finds some.
    pub fn reset_to(&self, commit: Oid, scan: bool) -> Result<(), StageError> {
        let target = self.repo.find_commit(commit)?;
        let current = self.repo.head()?.peel_to_commit()?;
        let mut paths = crate::git::treediff::changed_paths(
            &self.repo,
            Some(current.tree_id()),
            Some(target.tree_id()),
        )?;
        // Before the checkout, while the ignore rules and HEAD are the ones the run had.
        let scanned = match self.written() {
            Touched::Paths(written) if !scan => {
                self.remove_ignored_at(&current.tree()?, &written)?;
                false
            }
            _ => {
                let (dirty, ignored) = self.scan()?;
                paths.extend(dirty);
                for path in ignored {
                    remove_all(&self.path.join(path))?;
                }
                true
            }
        };
        self.record_written(&Touched::Paths(Vec::new()))?;
        // Files a publish moved here from the user's tree (or left not what HEAD says, if it
        // crashed): deleted and checked out anew, never written in place.
        let common_dir = self.repo.commondir().to_path_buf();
        let mut folders = super::stage_swap::RealFolders::under(&self.path);
        for path in super::stage_swap::recorded(&common_dir) {
            // Never through a symlink in the stage (it may lead into another worktree's files
            // or out of the repository): libgit2's checkout replaces such a link by a folder.
            let full = self.path.join(&path);
            if folders.lead_to(&path) && full.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
                std::fs::remove_file(&full)?;
            }
            paths.insert(path);
        }
        if current.id() != commit {
            self.repo.set_head_detached(commit)?;
        }
        if paths.is_empty() {
            return Ok(());
        }
        // Plain files are written from their blobs (no index read and written: on a large
        // repository that was most of a small reset), leaving the stage's index behind for
        // them; anything else, and every reset after a scan (which finds the paths where the
        // index lags and so brings it up to date), by libgit2's checkout.
        #[cfg(unix)]
        let written = !scanned
            && super::fresh_checkout::rewrite_paths(
                &self.repo,
                &self.path,
                &target.tree()?,
                &paths,
                &crate::git::filters::Conversions::of(&self.repo)?,
            )?;
        #[cfg(not(unix))]
        let written = false;
        if !written {
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
            crate::git::filters::smudge_worktree(&self.repo, &paths)?;
        }
        super::stage_swap::clear(&common_dir)?;
        Ok(())
    }

    /// Paths whose file differs from the stage's index or HEAD, untracked ones included; and
    /// the topmost ignored entries.
    fn scan(&self) -> Result<(Vec<PathBuf>, Vec<PathBuf>), StageError> {
        let mut options = StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(true)
            .recurse_ignored_dirs(false)
            .exclude_submodules(true)
            .update_index(true);
        let statuses = self.repo.statuses(Some(&mut options))?;
        let (mut dirty, mut ignored) = (Vec::new(), Vec::new());
        for status in statuses.iter() {
            let bytes = status.path_bytes();
            let path = crate::git::repo::path_from_bytes(bytes.strip_suffix(b"/").unwrap_or(bytes));
            if status.status().contains(git2::Status::IGNORED) {
                ignored.push(path.into_owned());
            } else {
                dirty.push(path.into_owned());
            }
        }
        Ok((dirty, ignored))
    }

    /// Paths whose file differs from the stage's index or HEAD, untracked ones included.
    #[cfg(test)]
    fn dirty_paths(&self) -> Result<Vec<PathBuf>, StageError> {
        Ok(self.scan()?.0)
    }

    /// Removes, among the paths a run wrote, what the stage holds there that `tree` (the
    /// stage's HEAD) does not track and git ignores, and the folders left empty on the way
    /// up (an ignored file's folders were made for it; an empty folder is nothing git keeps).
    fn remove_ignored_at(
        &self,
        tree: &git2::Tree<'_>,
        written: &[PathBuf],
    ) -> Result<(), StageError> {
        let mut written: Vec<&PathBuf> = written.iter().collect();
        written.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
        for path in written {
            let full = self.path.join(path);
            if let Ok(meta) = full.symlink_metadata()
                && tree.get_path(path).is_err()
            {
                if meta.is_dir() {
                    if self.repo.is_path_ignored(path)? {
                        std::fs::remove_dir_all(&full)?;
                    } else {
                        let _ = std::fs::remove_dir(&full);
                    }
                } else if self.repo.is_path_ignored(path)? {
                    std::fs::remove_file(&full)?;
                }
            }
            // Git keeps no empty folder, tracked or not.
            crate::git::files::remove_empty_parents(&self.path, path);
        }
        Ok(())
    }

    /// Where the last run may have left ignored content; anywhere when unknown.
    fn written(&self) -> Touched {
        let Ok(bytes) = std::fs::read(self.written_record()) else {
            return Touched::Anything;
        };
        let bytes = bytes.strip_prefix(IN_FLIGHT).unwrap_or(&bytes);
        match bytes.strip_prefix(WRITTEN_PATHS) {
            Some(list) => Touched::Paths(
                list.split(|b| *b == 0)
                    .filter(|p| !p.is_empty())
                    .map(|p| crate::git::repo::path_from_bytes(p).into_owned())
                    .collect(),
            ),
            None => Touched::Anything,
        }
    }

    /// Records where the run may leave ignored content, for the next reset.
    fn record_written(&self, touched: &Touched) -> Result<(), StageError> {
        let mut bytes = Vec::new();
        if self.in_flight.load(std::sync::atomic::Ordering::SeqCst) {
            bytes.extend_from_slice(IN_FLIGHT);
        }
        if let Touched::Paths(paths) = touched {
            bytes.extend_from_slice(WRITTEN_PATHS);
            for path in paths {
                bytes.extend_from_slice(path.as_os_str().as_encoded_bytes());
                bytes.push(0);
            }
        }
        std::fs::write(self.written_record(), bytes)?;
        Ok(())
    }

    fn written_record(&self) -> PathBuf {
        self.repo.commondir().join("loaf").join(WRITTEN)
    }

    /// Writes the stage's files as a tree (ignored files left out). With [`Touched::Paths`]
    /// only those paths are read, on top of the tree of the stage's HEAD, and the index is not
    /// touched, so a run that wrote five files costs five files; the stage's index then lags
    /// behind for those paths, which only makes the next scan check them again. With
    /// [`Touched::Anything`] the whole stage is added to its index.
    ///
    /// It also records `touched` for the next [`Stage::reset_to`], which removes the ignored
    /// content the run may have left there.
    pub fn snapshot(&self, touched: &Touched, user: &Repository) -> Result<Oid, StageError> {
        self.record_written(touched)?;
        match touched {
            Touched::Anything => {
                let mut index = self.repo.index()?;
                // From HEAD's entries (the stat data of the unchanged ones kept): the index
                // lags behind where a reset wrote files without it, and `add_all` would leave
                // out a tracked file that `.gitignore` matches if its entry were missing.
                index.read_tree(&self.repo.head()?.peel_to_tree()?)?;
                // As `git add -A` stores it: external clean filters included.
                crate::git::filters::add_all(&self.repo, &mut index)?;
                let tree = index.write_tree()?;
                index.write()?;
                Ok(tree)
            }
            Touched::Paths(paths) => {
                let base = self.repo.head()?.peel_to_tree()?.id();
                let source = crate::git::treebuild::Source {
                    repo: &self.repo,
                    base,
                    root: &self.path,
                    filters: user,
                    remember: false,
                    objects_in_memory: None,
                };
                Ok(crate::git::treebuild::tree_with_paths(&source, paths)?)
            }
        }
    }

    /// [`Stage::snapshot`] with [`Touched::Anything`], at the cost of what changed: only the
    /// paths whose stat data differs from the stage's index (and untracked ones) are read
    /// again. Valid only while the index is the stage's content as the last snapshot took it
    /// (its entries match the files wherever their stat data does); `None` when the quick
    /// scan cannot tell (an untracked folder, conflicts), for the caller to take the full
    /// snapshot.
    /// `last` is that snapshot's tree: when nothing changed since, it is the answer, and
    /// neither the index nor a tree is written.
    pub fn snapshot_changed(&self, last: Oid) -> Result<Option<Oid>, StageError> {
        let Some(candidates) = crate::git::quickscan::candidates(&self.repo)? else {
            return Ok(None);
        };
        if candidates.is_empty() {
            return Ok(Some(last));
        }
        self.record_written(&Touched::Anything)?;
        let mut index = self.repo.index()?;
        for bytes in &candidates {
            let path = crate::git::repo::path_from_bytes(bytes);
            match std::fs::symlink_metadata(self.path.join(&path)) {
                Ok(meta) if !meta.is_dir() => {
                    crate::git::filters::add_path(&self.repo, &mut index, &self.path, &path)?;
                }
                Ok(_) => return Ok(None),
                Err(_) => index.remove_path(&path)?,
            }
        }
        let tree = index.write_tree()?;
        index.write()?;
        Ok(Some(tree))
    }

    /// Records that the stage now holds `commit` (its files and index already do).
    pub fn set_head(&self, commit: Oid) -> Result<(), StageError> {
        self.repo.set_head_detached(commit)?;
        Ok(())
    }
}

/// Removes a file, a symlink (not what it points to) or a folder with its content.
fn remove_all(full: &Path) -> Result<(), StageError> {
    match full.symlink_metadata() {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(full)?,
        Ok(_) => std::fs::remove_file(full)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// The stage at `path` opened, when it is this repository's and usable: the worktree entry
/// names this folder, the folder's git dir is this repository's, and its HEAD is a commit
/// this repository has. A repository copied whole (`cp -a`) holds the original's entry and
/// folder, whose absolute paths lead to the original's stage: used, the copy's operations
/// would move the original's stage onto commits the original lacks, and the original's
/// next apply would fail. `None` for such a stage, or one a copy already spoiled: the caller
/// makes a new one of its own.
fn own_stage(repo: &Repository, worktree: &git2::Worktree, path: &Path) -> Option<Repository> {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same(worktree.path(), path) {
        return None;
    }
    let stage = Repository::open(path).ok()?;
    if !same(stage.commondir(), repo.commondir()) {
        return None;
    }
    let head = stage.head().ok()?.target()?;
    repo.find_commit(head).ok()?;
    Some(stage)
}

/// Removes the stage's worktree entry and folder, both by their paths in this repository.
/// Not through libgit2's prune, which finds them through the entry's records: absolute
/// paths of where the repository was when the stage was made. In a moved repository those
/// lead nowhere (the prune failed, the entry stayed, and no stage could be made again); in a
/// copied one they lead to the original's stage, which the prune would remove.
fn remove_stage(repo: &Repository, path: &Path) -> Result<(), StageError> {
    let admin = repo.commondir().join("worktrees").join(NAME);
    if admin.symlink_metadata().is_ok() {
        std::fs::remove_dir_all(&admin)?;
    }
    if path.symlink_metadata().is_ok() {
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
        // A crashed run's leftovers: a change, an untracked file, and ignored build output.
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
            read("target/cache"),
            None,
            "ignored leftovers removed: the user's show through instead"
        );
        assert!(stage.dirty_paths().expect("status").is_empty());
        stage.reset_to(second, false).expect("reset back");
        assert_eq!(read("b.txt").as_deref(), Some("b\n"));
    }

    #[test]
    fn reset_removes_the_ignored_files_a_run_wrote_and_their_folders_only() {
        let (dir, repo, first, second) = repo();
        let stage = Stage::open_or_create(&repo, second).expect("created");
        let write = |p: &str, text: &str| {
            let full = stage.path().join(p);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::fs::write(full, text).expect("write");
        };
        // Left by an earlier run that had exec: not recorded below, so kept by a paths reset.
        write("target/old", "exec output\n");
        // This run's actions: an ignored file in a new folder, an empty folder, a change to a
        // tracked file (committed: the stage's HEAD moves to it).
        write("target/deep/new.o", "written\n");
        std::fs::create_dir_all(stage.path().join("empty")).expect("mkdir");
        write("a.txt", "changed\n");
        let touched = Touched::Paths(
            ["target/deep/new.o", "empty", "a.txt", "never"]
                .map(PathBuf::from)
                .to_vec(),
        );
        let tree = stage.snapshot(&touched, &repo).expect("snapshot");
        let parent = repo.find_commit(second).expect("commit");
        let sig = git2::Signature::now("Ada", "ada@example.com").expect("sig");
        let commit = repo
            .commit(
                None,
                &sig,
                &sig,
                "run",
                &repo.find_tree(tree).expect("tree"),
                &[&parent],
            )
            .expect("commit");
        stage.set_head(commit).expect("head");
        stage.reset_to(first, false).expect("reset");
        let exists = |p: &str| stage.path().join(p).symlink_metadata().is_ok();
        assert!(
            !exists("target/deep/new.o"),
            "the ignored file this run wrote"
        );
        assert!(!exists("target/deep"), "its folder, left empty");
        assert!(!exists("empty"), "an empty folder from dir_create");
        assert!(
            exists("target/old"),
            "not this run's: no scan needed for a paths run"
        );
        assert_eq!(
            std::fs::read_to_string(stage.path().join("a.txt"))
                .ok()
                .as_deref(),
            Some("one\n")
        );
        // A run with exec or hooks may have left ignored content anywhere: the next reset
        // scans for it.
        write("target/exec", "x\n");
        stage.snapshot(&Touched::Anything, &repo).expect("snapshot");
        stage.reset_to(first, false).expect("reset");
        assert!(!exists("target"), "every ignored entry removed");
        assert_eq!(
            git(dir.path(), &["status", "--porcelain"]),
            "",
            "the user's tree untouched"
        );
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

    /// A run that did not end (killed, refused) is found by the next one, which then scans;
    /// one that ended is not; the record of where ignored content may be survives both, and
    /// a publish forgetting that record keeps the run in flight.
    #[test]
    fn a_run_that_did_not_end_is_found_by_the_next() {
        let (_dir, repo, first, second) = repo();
        let stage = Stage::open_or_create(&repo, second).expect("created");
        assert!(!stage.begin_run(), "a new stage has no unfinished run");
        stage.reset_to(first, false).expect("reset");
        let touched = Touched::Paths(vec![PathBuf::from("target/x.o")]);
        stage.snapshot(&touched, &repo).expect("snapshot");
        // Killed here: the next apply opens the stage anew.
        let next = Stage::open_or_create(&repo, first).expect("reopened");
        assert_eq!(
            next.written(),
            touched,
            "the record is read past the run's line"
        );
        assert!(next.begin_run(), "the killed run is found");
        next.reset_to(first, true).expect("reset");
        super::super::stage_swap::forget_written(&repo).expect("forget");
        let after_forget = Stage::open_or_create(&repo, first).expect("reopened");
        assert_eq!(after_forget.written(), Touched::Anything);
        assert!(
            after_forget.begin_run(),
            "forgetting the paths keeps the run in flight"
        );
        after_forget.reset_to(first, true).expect("reset");
        after_forget.snapshot(&touched, &repo).expect("snapshot");
        after_forget.end_run().expect("ended");
        let ended = Stage::open_or_create(&repo, first).expect("reopened");
        assert!(!ended.begin_run(), "a run that ended is not found");
        assert_eq!(ended.written(), touched, "its record kept");
        // A marker an earlier git-loaf left counts, once.
        let old = repo.commondir().join("loaf").join(OLD_IN_FLIGHT_MARKER);
        std::fs::write(&old, "id").expect("old marker");
        assert!(
            Stage::open_or_create(&repo, first)
                .expect("reopened")
                .begin_run()
        );
        assert!(!old.exists(), "the record says it from now on");
    }

    /// A repository copied whole carries the original's stage entry, whose paths lead to the
    /// original's stage: the copy makes its own, and the original's stays as it was.
    #[test]
    fn a_copied_repository_makes_its_own_stage_and_leaves_the_originals() {
        let (dir, repo, _, second) = repo();
        let stage = Stage::open_or_create(&repo, second).expect("created");
        std::fs::write(stage.path().join("marker"), "the original's").expect("marker");
        let copies = tempfile::tempdir().expect("tempdir");
        let copy_root = copies.path().join("copy");
        let copied = std::process::Command::new("cp")
            .arg("-a")
            .arg(dir.path())
            .arg(&copy_root)
            .status()
            .expect("cp runs");
        assert!(copied.success());
        std::fs::write(copy_root.join("c.txt"), "only in the copy\n").expect("write");
        git(&copy_root, &["add", "c.txt"]);
        git(&copy_root, &["commit", "-q", "-m", "only in the copy"]);
        let copy = Repository::open(&copy_root).expect("copy");
        let only_in_copy = copy.head().expect("head").target().expect("commit");
        let theirs = Stage::open_or_create(&copy, only_in_copy).expect("the copy's stage");
        theirs.reset_to(only_in_copy, false).expect("reset");
        assert_eq!(
            theirs.repo().commondir().canonicalize().expect("path"),
            copy.commondir().canonicalize().expect("path")
        );
        assert!(!theirs.path().join("marker").exists(), "a stage of its own");
        let again = Stage::open_or_create(&repo, second).expect("the original's stage");
        assert_eq!(
            std::fs::read_to_string(again.path().join("marker"))
                .ok()
                .as_deref(),
            Some("the original's"),
            "the original's stage is the one it had"
        );
        assert_eq!(again.head().expect("head"), second);
        again.reset_to(second, false).expect("reset");
    }

    /// A stage whose HEAD names a commit the repository lacks (spoilt by a copy before
    /// git-loaf told them apart) is made anew instead of failing every apply.
    #[test]
    fn a_stage_on_a_missing_commit_is_made_anew() {
        let (dir, repo, first, second) = repo();
        let stage = Stage::open_or_create(&repo, second).expect("created");
        let admin = dir.path().join(".git/worktrees").join(NAME).join("HEAD");
        std::fs::write(&admin, format!("{}\n", "ab".repeat(20))).expect("spoil");
        drop(stage);
        let made = Stage::open_or_create(&repo, first).expect("made anew");
        made.reset_to(first, false).expect("reset");
        assert_eq!(made.head().expect("head"), first);
    }

    /// A repository moved to another folder: its stage entry names the old place, which is
    /// gone. The stage is made again there, and git sees it where it is.
    #[test]
    fn a_moved_repository_makes_its_stage_again() {
        let (dir, repo, _, second) = repo();
        Stage::open_or_create(&repo, second).expect("created");
        drop(repo);
        let moved_to = tempfile::tempdir().expect("tempdir");
        let moved = moved_to.path().join("moved");
        std::fs::rename(dir.path(), &moved).expect("moved");
        let repo = Repository::open(&moved).expect("the moved repository");
        let stage = Stage::open_or_create(&repo, second).expect("made again");
        stage.reset_to(second, false).expect("reset");
        assert_eq!(stage.head().expect("head"), second);
        let list = git(&moved, &["worktree", "list", "--porcelain"]);
        let expected = moved.canonicalize().expect("path").join(".git/loaf/stage");
        assert!(list.contains(&expected.display().to_string()), "{list}");
    }
}
