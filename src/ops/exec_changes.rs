//! What each `exec` block changed in the stage (docs/apply.md, "The report"), for the run's
//! [`ChangeWatch`].
//!
//! The stage is written as a tree before and after each exec block, as the commit will see
//! it ([`Stage::snapshot`], `git add -A`: filters applied, ignored files left out), and the
//! two trees are compared; unchanged folders are skipped, so the comparison costs what
//! changed. What exec writes in ignored folders (build caches, `node_modules`) is not named:
//! it is neither committed nor undone, and listing a build's thousand object files would
//! bury the files that matter.
//!
//! Scans are shared: the stage as the reset left it is the start commit's tree (no scan
//! before a first exec that nothing precedes), the scan after one exec is the one before the
//! next unless something wrote in between, and the apply commits the last one unless
//! something wrote after it. A reply with one exec block scans the stage once, as before.

use std::cell::{Cell, RefCell};

use git2::{Oid, Repository};

use super::execute::{ChangeWatch, Changes};
use crate::git::{treebuild, treediff};
use crate::report::ActionResult;
use crate::tx::stage::{Stage, Touched};

use super::targets::{action_targets, through_symlink};

/// Watches `stage` for the run.
pub(crate) struct StageWatch<'a> {
    stage: &'a Stage,
    repo: &'a Repository,
    /// The tree the running exec started from.
    before: Cell<Option<Oid>>,
    /// Whether an exec ran (its scan recorded the stage as touched anywhere).
    scanned: Cell<bool>,
    /// The last snapshot's tree, once a full one made the stage's index hold what it took
    /// (the index is not updated for what write actions wrote after it: those paths differ
    /// from it in stat data, which the quick scan reads again).
    index_synced: Cell<Option<Oid>>,
    /// The stage's content as a tree when last known (the start, or the last snapshot).
    last: Cell<Oid>,
    /// What write actions wrote since `last` (root-relative): empty while `last` is the
    /// stage as it is; `None` when unknown (hooks ran, or a scan failed).
    pending: RefCell<Option<Vec<std::path::PathBuf>>>,
    /// The repository's root as the model sees it (write actions name their targets so).
    user_root: &'a std::path::Path,
}

impl<'a> StageWatch<'a> {
    /// A watch on `stage` of the user's repository `repo`, which holds exactly the tree
    /// `start` (as [`Stage::reset_to`] leaves it): until something writes, the first exec
    /// starts from it without a scan.
    pub fn new(
        stage: &'a Stage,
        repo: &'a Repository,
        start: Oid,
        user_root: &'a std::path::Path,
    ) -> StageWatch<'a> {
        StageWatch {
            stage,
            repo,
            before: Cell::new(None),
            scanned: Cell::new(false),
            index_synced: Cell::new(None),
            last: Cell::new(start),
            pending: RefCell::new(Some(Vec::new())),
            user_root,
        }
    }

    /// Once an exec ran, the stage's content as the commit would take it (and recorded as
    /// touched anywhere, as that would): the scan after the last exec, with what write
    /// actions wrote since read again. `None` when no exec ran.
    pub fn last_scan(&self) -> Option<Oid> {
        if !self.scanned.get() {
            return None;
        }
        self.current()
    }

    /// The stage as a tree, now: the last one when nothing wrote since; else that tree with
    /// the paths write actions wrote read again; a snapshot when a hook may have written
    /// anywhere.
    fn current(&self) -> Option<Oid> {
        let pending = self.pending.borrow().clone();
        match pending {
            Some(paths) if paths.is_empty() => Some(self.last.get()),
            // As the commit's own snapshot: a write through a symlink is read by a scan.
            Some(paths) if !paths.iter().any(|p| through_symlink(self.stage.path(), p)) => {
                let source = treebuild::Source {
                    repo: self.stage.repo(),
                    base: self.last.get(),
                    root: self.stage.path(),
                    filters: self.repo,
                    remember: false,
                    objects_in_memory: None,
                };
                match treebuild::tree_with_paths(&source, &paths) {
                    Ok(tree) => {
                        self.settle(tree);
                        Some(tree)
                    }
                    Err(_) => self.snapshot(),
                }
            }
            _ => self.snapshot(),
        }
    }

    /// `tree` is the stage as it is now.
    fn settle(&self, tree: Oid) {
        self.last.set(tree);
        *self.pending.borrow_mut() = Some(Vec::new());
    }

    /// The stage as a tree, after code ran. The first one of the run is a full snapshot (the
    /// index lags behind a reset that wrote files without it); after that the index is the
    /// stage as the last snapshot took it, and only what changed since is read again.
    fn snapshot(&self) -> Option<Oid> {
        if let Some(last) = self.index_synced.get()
            && let Ok(Some(tree)) = self.stage.snapshot_changed(last)
        {
            self.index_synced.set(Some(tree));
            self.settle(tree);
            return Some(tree);
        }
        let tree = self.stage.snapshot(&Touched::Anything, self.repo).ok();
        self.index_synced.set(tree);
        match tree {
            Some(tree) => self.settle(tree),
            // What the stage holds is unknown: the next look takes a snapshot.
            None => *self.pending.borrow_mut() = None,
        }
        tree
    }
}

impl ChangeWatch for StageWatch<'_> {
    fn written(&self, action: Option<&ActionResult>) {
        let mut pending = self.pending.borrow_mut();
        match (action, pending.as_mut()) {
            (Some(result), Some(paths)) => {
                paths.extend(action_targets(result, self.user_root, self.stage.path()));
            }
            _ => *pending = None,
        }
    }

    fn before(&self) {
        self.before.set(self.current());
    }

    fn after(&self) -> Option<Changes> {
        let before = self.before.take();
        let after = self.snapshot();
        self.scanned.set(true);
        let [created, changed, deleted] =
            treediff::created_changed_deleted(self.repo, before?, after?).ok()?;
        Some(Changes {
            created,
            changed,
            deleted,
        })
    }
}
