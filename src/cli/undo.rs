//! `git loaf undo` and `git loaf redo`: walk the operation log back and forth.

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome, Response};
use crate::ops::undo::{self, SavedBy, Walked, display_ref, short};

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

/// Undoes the last operation (or back to `to`) in the repository containing `cwd`, and says
/// what it restored.
pub fn respond_undo(
    cwd: &std::path::Path,
    to: Option<&str>,
    force: bool,
) -> Result<Response, CliError> {
    let walked = match to {
        Some(to) => undo::undo_to(cwd, to, force)?,
        None => undo::undo(cwd, force)?,
    };
    Ok(report("Undid", &walked))
}

/// Re-does what the last undo undid in the repository containing `cwd`, and says so.
pub fn respond_redo(cwd: &std::path::Path) -> Result<Response, CliError> {
    Ok(report("Redid", &undo::redo(cwd)?))
}

fn report(verb: &str, walked: &Walked) -> Response {
    let target = &walked.target;
    // Detached by the move: the branch stays where it is, HEAD alone moves.
    let to = if walked.detached {
        format!("detached HEAD {}", short(walked.to.as_deref()))
    } else {
        short(walked.to.as_deref())
    };
    let mut out = format!(
        "{verb} {} ({}): {} {} -> {to}\n",
        target.id,
        target.summary,
        display_ref(&walked.ref_name),
        short(walked.from.as_deref()),
    );
    if walked.detached {
        out.push_str(&format!(
            "{} stays at {}; `git loaf step-forward` walks back to it.\n",
            display_ref(&walked.ref_name),
            short(walked.from.as_deref())
        ));
    }
    if walked.run.len() > 1 {
        out.push_str(&format!("{verb} {} operations:\n", walked.run.len()));
        for op in walked.run.iter().rev() {
            out.push_str(&format!("  {} {}\n", op.id, op.summary));
        }
        out.push_str("Changed:\n");
    }
    if let Some(branch) = &walked.attached {
        out.push_str(&format!("HEAD is on {} again.\n", display_ref(branch)));
    }
    const SHOWN: usize = 10;
    for path in walked.paths.iter().take(SHOWN) {
        out.push_str(&format!("  {path}\n"));
    }
    if walked.paths.len() > SHOWN {
        out.push_str(&format!("  … and {} more\n", walked.paths.len() - SHOWN));
    }
    if walked.restored_uncommitted {
        out.push_str("Your uncommitted changes are back as they were (staged and unstaged).\n");
    }
    match &walked.saved {
        // The saved work holds the AI's edits too; restore puts back only the paths the user
        // changed since the operation, which is what they want back.
        Some(SavedBy::Work { id }) => out.push_str(&format!(
            "Your uncommitted work from before this forced undo is saved as {id}: `git loaf restore {id}` puts back what you changed since {} (`git loaf saved` lists it).\n",
            walked.target.id
        )),
        Some(SavedBy::Commits { name }) => out.push_str(&format!(
            "The commits you made since are saved as {name}: `git branch <name> {name}` puts them on a branch.\n"
        )),
        None => {}
    }
    for between in &walked.between {
        let how = match &between.saved {
            Some(id) => format!("`git loaf restore {id}` brings back only that"),
            None => "it is in the saved state".to_owned(),
        };
        out.push_str(&format!(
            "What you did between {} and {} ({}) was undone too: {how}.\n",
            between.earlier,
            between.later,
            undo::name_paths(&between.paths),
        ));
    }
    Response::text(out, Outcome::Success).with_notices(walked.notices.clone())
}
