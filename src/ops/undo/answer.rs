//! What `undo` and `redo` answer, whichever front door asked (docs/history.md): what moved,
//! which paths changed, and where the user's own work went.

use std::path::Path;

use super::{SavedBy, Walked, display_ref, short};
use crate::ops::{OpError, Outcome, Response};

/// Undoes the last operation (or back to `to`) in the repository containing `cwd`, and says
/// what it restored.
pub fn respond_undo(cwd: &Path, to: Option<&str>, force: bool) -> Result<Response, OpError> {
    let walked = match to {
        Some(to) => super::undo_to(cwd, to, force)?,
        None => super::undo(cwd, force)?,
    };
    Ok(report("Undid", &walked))
}

/// Re-does what the last undo undid in the repository containing `cwd`, and says so.
pub fn respond_redo(cwd: &Path) -> Result<Response, OpError> {
    Ok(report("Redid", &super::redo(cwd)?))
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
            super::name_paths(&between.paths),
        ));
    }
    Response::text(out, Outcome::Success).with_notices(walked.notices.clone())
}
