//! The library surface: what a program built on git-loaf may use, and all that lorch (the
//! orchestrator in `lorch/`, docs/lorch.md) does use. Everything else in the crate is its
//! own business and may change from one version to the next.
//!
//! - The user's operations, as `git loaf apply`, `squash`, `undo --to` and `show` do them:
//!   [`apply`], [`squash`], [`undo_to`], [`show`]; [`reply_applies`] finds what the
//!   applies of one reply key left in the operation log (docs/history.md); [`instructions`]
//!   is the text `git loaf instructions` prints; a squash's commit names itself and what it
//!   folded in its [`SQUASH_TRAILER`] and [`SQUASHED_TRAILER`] (docs/trailers-and-notes.md).
//! - Running a command as an `exec` action runs (docs/sandbox-and-safety.md): [`run`] a
//!   [`Job`] in its own process group, with a deadline and capped output, in a [`Sandbox`]
//!   or not, with a [`CodeEnvironment`].
//! - Small pieces: the repository of a folder ([`worktree_root`], [`common_dir`]), the
//!   user's git [`identity`], a commit subject that fits ([`fit_subject`]), the NESL
//!   parser ([`parse`], docs/nesl.md).
//! - Set-up and feedback: [`init`] prepares the git library (first thing in `main`, before
//!   any thread); [`take_review_report`] takes what `git loaf review` rejected, for the
//!   model, once (docs/review.md).
//! - What an operation found and did besides its result ([`Applied`]'s and
//!   [`ReplyApplies`]'s notices): a [`Notice`], its [`NoticeKind`] and its text.

use std::path::{Path, PathBuf};

pub use crate::exec::environment::{CodeEnvironment, DEFAULT_ENVIRONMENT};
pub use crate::exec::process::{Captured, Ending, Finished, Job, RunError, SignalName, run};
pub use crate::exec::sandbox::{Policy, Sandbox};
pub use crate::git::identity::identity;
pub use crate::git::repo::init;
pub use crate::nesl::{ParseResult, parse};
pub use crate::notice::{Notice, NoticeKind};
pub use crate::ops::apply::{Applied, ApplyOptions, Kept, apply};
pub use crate::ops::config::TrustError;
pub use crate::ops::log::{Shown, show};
pub use crate::ops::reply_applies::{KeyedApply, ReplyApplies, reply_applies};
pub use crate::ops::review::take_report as take_review_report;
pub use crate::ops::squash::{SQUASH_TRAILER, SQUASHED_TRAILER, SquashOptions, Squashed, squash};
pub use crate::ops::undo::{SavedBy, Walked, undo_to};
pub use crate::report::subject::fit_subject;
pub use crate::report::{ExecutionResult, GitInfo};
pub use crate::tx::session::TxError;

/// The root of the working tree containing `dir` (no trailing separator); `None` outside a
/// git repository or in a bare one.
pub fn worktree_root(dir: &Path) -> Option<PathBuf> {
    crate::git::worktree_root(dir)
}

/// The common git dir of the repository containing `dir` (the one its linked worktrees
/// share, where git-loaf keeps its state); `None` outside a git repository.
pub fn common_dir(dir: &Path) -> Option<PathBuf> {
    let repo = crate::git::repo::discover(dir).ok()?;
    Some(repo.commondir().to_path_buf())
}

/// What `git loaf instructions` prints for the working tree (or folder) `root`: the NESL
/// syntax and every action the loaf.yml the user accepted allows (a wider one a reply wrote
/// is not in force yet).
pub fn instructions(root: &Path) -> Result<String, TrustError> {
    let config = crate::ops::config::load(root)?;
    Ok(crate::instructions::render(root, &config))
}
