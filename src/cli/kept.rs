//! `git loaf take` and `git loaf drop`: what to do with an apply that was kept, not applied.

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};
use crate::ops::take;

/// Apply a kept commit, one that `git loaf apply` said was NOT APPLIED.
///
/// It goes onto the current branch: replayed onto HEAD if HEAD moved, merged with your
/// uncommitted edits, which stay uncommitted. `git loaf undo` takes it back.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    (
        "Find the kept apply, look at it, take it",
        &["git loaf log", "git loaf show 3f2a1c", "git loaf take 3f2a1c"],
    ),
]))]
pub struct TakeArgs {
    /// The apply id (`git loaf log` lists kept applies).
    id: String,
}

/// Discard a kept commit, one that `git loaf apply` said was NOT APPLIED.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("Discard the kept apply 3f2a1c", &["git loaf drop 3f2a1c"]),
]))]
pub struct DropArgs {
    /// The apply id (`git loaf log` lists kept applies).
    id: String,
}

/// Runs `git loaf take`.
pub fn run_take(args: &TakeArgs) -> Result<Outcome, CliError> {
    let taken = take::take(&super::current_dir()?, &args.id)?;
    super::print_notices(&taken.notices);
    let mut out = format!(
        "Took {}: now commit {}\n",
        args.id,
        crate::git::short_oid(taken.commit)
    );
    if !taken.merged.is_empty() {
        let paths: Vec<String> = taken
            .merged
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        out.push_str(&format!(
            "Your uncommitted edits to {} were merged in and stay uncommitted.\n",
            paths.join(", ")
        ));
    }
    super::print_out(&out).map(|()| Outcome::Success)
}

/// Runs `git loaf drop`.
pub fn run_drop(args: &DropArgs) -> Result<Outcome, CliError> {
    let dropped = take::drop_kept(&super::current_dir()?, &args.id)?;
    super::print_out(&format!(
        "Dropped {} (commit {})\n",
        dropped.id,
        crate::git::short_oid(dropped.commit)
    ))
    .map(|()| Outcome::Success)
}
