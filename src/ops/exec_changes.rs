//! What each `exec` block changed in the stage (DESIGN §2: "The report names the files an
//! exec created, changed or deleted in the stage"), for the run's [`ChangeWatch`].
//!
//! The stage is written as a tree before and after each exec block, as the commit will see
//! it ([`Stage::snapshot`], `git add -A`: filters applied, ignored files left out), and the
//! two trees are compared; unchanged folders are skipped, so the comparison costs what
//! changed. What exec writes in ignored folders (build caches, `node_modules`) is not named:
//! it is neither committed nor undone, and listing a build's thousand object files would
//! bury the files that matter. Consecutive exec blocks share a snapshot (the one after the
//! first is the one before the second).

use std::cell::Cell;

use git2::{Oid, Repository};

use crate::git::stage::{Stage, Touched};
use crate::git::treediff;
use crate::run::{ChangeWatch, Changes};

/// Watches `stage` for the run.
pub struct StageWatch<'a> {
    stage: &'a Stage,
    repo: &'a Repository,
    /// The tree the running exec started from.
    before: Cell<Option<Oid>>,
    /// The tree the last exec left.
    last: Cell<Option<Oid>>,
}

impl<'a> StageWatch<'a> {
    /// A watch on `stage` of the user's repository `repo`.
    pub fn new(stage: &'a Stage, repo: &'a Repository) -> StageWatch<'a> {
        StageWatch {
            stage,
            repo,
            before: Cell::new(None),
            last: Cell::new(None),
        }
    }

    fn snapshot(&self) -> Option<Oid> {
        self.stage.snapshot(&Touched::Anything, self.repo).ok()
    }
}

impl ChangeWatch for StageWatch<'_> {
    fn before(&self, unchanged: bool) {
        let start = match self.last.get() {
            Some(last) if unchanged => Some(last),
            _ => self.snapshot(),
        };
        self.before.set(start);
    }

    fn after(&self) -> Option<Changes> {
        let before = self.before.take()?;
        let after = self.snapshot();
        self.last.set(after);
        let [created, changed, deleted] =
            treediff::created_changed_deleted(self.repo, before, after?).ok()?;
        Some(Changes {
            created,
            changed,
            deleted,
        })
    }
}
