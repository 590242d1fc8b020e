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
//! [`crate::tx::visible_ignored`]), so whatever ignored content a run left in the stage (an ignored file
//! an action wrote, a cache exec made) is removed by the next reset, lest an old copy hide the
//! user's current file. [`Stage::snapshot`] records where a run may have left some: the paths
//! its actions wrote, or "anywhere" after exec or hooks, which costs the next reset one
//! status scan of the stage.

use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{BranchType, Oid, Repository, StatusOptions, WorktreeAddOptions};

use super::stage_records::{self, IN_FLIGHT, WRITTEN_PATHS, written_record_in};

/// The worktree's name in `git worktree list`.
const NAME: &str = "loaf-stage";

/// The marker file an earlier git-loaf made for the same purpose (`stage-in-flight`): one a
/// crash left before an upgrade still counts.
const OLD_IN_FLIGHT_MARKER: &str = "stage-in-flight";

/// Why the stage could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// The repository has no commit yet to stage from.
    /// A git operation failed.
    #[error("staging worktree: {}", crate::git::words::plain(.0))]
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
        // A run killed while code saw the user's view left the stage's own index aside.
        let own = self.repo.path().join(crate::exec::sandbox::OWN_INDEX);
        if own.exists() {
            let _ = std::fs::rename(&own, self.repo.path().join("index"));
        }
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
        stage_records::forget_moved(repo.commondir())?;
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
        // Files a publish moved here from the user's tree (or left not what HEAD says, if it
        // crashed): deleted and checked out anew, never written in place.
        let common_dir = self.repo.commondir().to_path_buf();
        let mut folders = crate::git::files::RealFolders::under(&self.path);
        let mut removed = Vec::new();
        for path in stage_records::moved(&common_dir) {
            // Never through a symlink in the stage (it may lead into another worktree's files
            // or out of the repository): libgit2's checkout replaces such a link by a folder.
            let full = self.path.join(&path);
            if folders.lead_to(&path) && full.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
                removed.push(full);
            }
            paths.insert(path);
        }
        // Thousands after an undo of generated files: removed several at a time, and before
        // the scan, which would otherwise read and hash each of them (their stat data is not
        // the stage index's) only to find them about to go.
        crate::git::remove_files::remove_files(&removed)?;
        super::transition::crash_point("stage-emptied");
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
        super::transition::crash_point("stage-scanned");
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
        stage_records::forget_moved(&common_dir)?;
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
                        crate::git::remove_files::remove_tree(&full)?;
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
        written_record_in(self.repo.commondir())
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
                // Built in memory, then kept as one pack when it made many objects (a
                // reply's 1,000 files: one file to sync, not 1,000 in 256 folders).
                let buffered = crate::git::pack_write::Buffered::open(&self.repo)?;
                let source = crate::git::treebuild::Source {
                    repo: buffered.repo(),
                    base,
                    root: &self.path,
                    filters: user,
                    remember: false,
                    objects_in_memory: Some(buffered.budget()),
                };
                let tree = crate::git::treebuild::tree_with_paths(&source, paths)?;
                buffered.keep(&self.repo, Some(base), tree)?;
                Ok(tree)
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

    /// Writes the index code sees while it runs ([`crate::exec::sandbox::USERS_INDEX`]):
    /// the user's, `index_tree`, built on the stage's own index so that the entries that
    /// agree keep their file stats (a `git status` in the code then reads only the files
    /// that differ, not the whole tree).
    pub fn write_users_index(&self, index_tree: Oid) -> Result<(), StageError> {
        let admin = self.repo.path();
        let users = admin.join(crate::exec::sandbox::USERS_INDEX);
        let _ = std::fs::remove_file(&users);
        let own = admin.join("index");
        if own.exists() {
            std::fs::copy(&own, &users)?;
        }
        let mut index = git2::Index::open(&users)?;
        let tree = self.repo.find_tree(index_tree)?;
        let diff = self
            .repo
            .diff_tree_to_index(Some(&tree), Some(&index), None)?;
        let paths: Vec<PathBuf> = diff
            .deltas()
            .filter_map(|d| d.new_file().path().or(d.old_file().path()))
            .map(Path::to_path_buf)
            .collect();
        for path in paths {
            match tree.get_path(&path) {
                // No file stats: git compares the entry with the file the first time.
                Ok(entry) => {
                    let mode = u32::try_from(entry.filemode()).unwrap_or(0o100644);
                    index.add(&crate::git::index::entry(&path, entry.id(), mode, None))?
                }
                Err(_) => index.remove_path(&path)?,
            }
        }
        index.write()?;
        Ok(())
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
        Ok(meta) if meta.is_dir() => crate::git::remove_files::remove_tree(full)?,
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
mod tests;
