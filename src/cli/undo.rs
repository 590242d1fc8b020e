//! `git loaf undo` and `git loaf redo`: walk the operation log back and forth.

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};
use crate::ops::undo::answer::{respond_redo, respond_undo};

/// Undo the most recent git-loaf operation (apply, squash, take, step).
///
/// Restores HEAD, the index and the working tree (untracked files included) exactly as they
/// were before it; repeated undo walks further back, `git loaf redo` walks forward again.
/// Refuses (exit 3) when anything changed since the operation or when a commit it would
/// remove is on a remote-tracking branch.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("Take back the last apply; again for the one before", &["git loaf undo", "git loaf undo"]),
    (
        "Take back the last three operations, or back to an apply id, in one step",
        &["git loaf undo --to 3", "git loaf undo --to 3f2a1c"],
    ),
    (
        "Even though it was pushed or things changed since (your state is saved first)",
        &["git loaf undo --force"],
    ),
]))]
pub struct UndoArgs {
    /// Undo even if things changed since or the commits were pushed. Your uncommitted work
    /// is saved first (`git loaf saved` lists it, `git loaf restore` puts it back), and
    /// commits made since under refs/loaf/saved/.
    #[arg(long)]
    force: bool,
    /// Undo every operation back to and including this one, in one step: an apply id, the
    /// commit an apply or squash made, or a count N (the last N operations). A plain
    /// `git loaf undo` afterwards re-does them all.
    #[arg(long, value_name = "ID|COMMIT|N")]
    to: Option<String>,
}

/// Re-do the operation the last `git loaf undo` undid.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("Undo an apply, look around, bring it back", &["git loaf undo", "git loaf redo"]),
]))]
pub struct RedoArgs {}

/// Runs `git loaf undo`.
pub fn run_undo(args: &UndoArgs) -> Result<Outcome, CliError> {
    let response = respond_undo(&super::current_dir()?, args.to.as_deref(), args.force)?;
    super::response::print(&response, false)?;
    Ok(response.outcome)
}

/// Runs `git loaf redo`.
pub fn run_redo(_args: &RedoArgs) -> Result<Outcome, CliError> {
    let response = respond_redo(&super::current_dir()?)?;
    super::response::print(&response, false)?;
    Ok(response.outcome)
}
