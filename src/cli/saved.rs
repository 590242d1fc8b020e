//! `git loaf saved` and `git loaf restore`: the work git-loaf moved out of your files to make
//! room, listed and put back exactly.

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};
use crate::ops::saved;

/// List the work git-loaf moved out of your files and saved.
///
/// A forced undo, a step-back (your work in files the step changes) and a step-forward
/// (the kept version where yours stayed) save it. Each entry has an id for `git loaf
/// restore`, when and what saved it, and the files it holds.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("See what was saved, then put it back", &["git loaf saved", "git loaf restore 3f2a1c"]),
]))]
pub struct SavedArgs {}

/// Put saved work back into your files exactly as it was.
///
/// Untracked files come back untracked, unstaged changes unstaged, staged ones staged.
/// Refuses, naming the files, where it would overwrite changes of yours; `git loaf undo`
/// takes a restore back.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("Put back the work saved as 3f2a1c", &["git loaf restore 3f2a1c"]),
]))]
pub struct RestoreArgs {
    /// The saved work's id (`git loaf saved` lists them).
    id: String,
}

/// Runs `git loaf saved`.
pub fn run_saved(_args: &SavedArgs) -> Result<Outcome, CliError> {
    let listed = saved::list(&super::current_dir()?)?;
    if listed.is_empty() {
        return super::print_out("No saved work.\n").map(|()| Outcome::Success);
    }
    let mut out = String::new();
    for work in &listed {
        let restore = match work.commits {
            true => String::new(),
            false => format!(" (`git loaf restore {}`)", work.id),
        };
        out.push_str(&format!(
            "{} {} {}{restore}\n",
            work.id,
            crate::ops::log::rfc3339(work.time),
            work.why,
        ));
        for path in &work.paths {
            out.push_str(&format!("  {path}\n"));
        }
    }
    super::print_out(&out).map(|()| Outcome::Success)
}

/// Runs `git loaf restore`.
pub fn run_restore(args: &RestoreArgs) -> Result<Outcome, CliError> {
    let restored = saved::restore(&super::current_dir()?, &args.id)?;
    super::print_notices(&restored.notices);
    let mut out = format!("Restored {}:\n", restored.id);
    for (paths, how) in [
        (&restored.unstaged, "unstaged"),
        (&restored.untracked, "untracked"),
        (&restored.staged, "staged"),
        (&restored.already, "already as saved"),
    ] {
        for path in paths {
            out.push_str(&format!("  {path} ({how})\n"));
        }
    }
    let put_back = restored.unstaged.len() + restored.untracked.len() + restored.staged.len();
    if put_back > 0 {
        out.push_str(&format!(
            "`git loaf undo` takes this restore ({}) back.\n",
            restored.op
        ));
    }
    super::print_out(&out).map(|()| Outcome::Success)
}
