//! `git loaf log` and `git loaf show`: AI history read back.

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};
use crate::ops::log::answer::{respond_log, respond_show};

/// List the git-loaf commits on the current branch, newest first.
///
/// One line each: commit, apply id, time, ✅/❌ counts and summary. Applies that were kept,
/// not applied, are listed with how to take or drop them.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("The last 20 applies on this branch", &["git loaf log"]),
    ("The last 5", &["git loaf log -n 5"]),
    ("As JSON, for a script", &["git loaf log --json | jq -r '.[0].id'"]),
]))]
pub struct LogArgs {
    /// Show at most this many.
    #[arg(
        short = 'n',
        long = "max-count",
        value_name = "N",
        default_value_t = 20
    )]
    max_count: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Print what an apply recorded: the same report `git loaf apply` printed.
///
/// Reads the full report kept in this repository (outputs included); without it, the git
/// note (`refs/notes/loaf`) of the commit, in which what the blocks read and printed is
/// recorded as sizes and hashes; without that, the commit's `Loaf-Result` trailer.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("The report of the last apply, to paste back to the model", &["git loaf show"]),
    ("An apply by its id, or any commit", &["git loaf show 3f2a1c", "git loaf show HEAD~2"]),
    ("The ExecutionResult as JSON", &["git loaf show --json 3f2a1c"]),
]))]
pub struct ShowArgs {
    /// A commit (default HEAD) or an apply id.
    #[arg(value_name = "REV")]
    rev: Option<String>,
    /// Print the ExecutionResult as JSON, as `apply --json` did.
    #[arg(long)]
    json: bool,
}

/// Runs `git loaf log`.
pub fn run_log(args: &LogArgs) -> Result<Outcome, CliError> {
    let response = respond_log(&super::current_dir()?, args.max_count)?;
    super::response::print(&response, args.json)?;
    Ok(response.outcome)
}

/// Runs `git loaf show`.
pub fn run_show(args: &ShowArgs) -> Result<Outcome, CliError> {
    let response = respond_show(&super::current_dir()?, args.rev.as_deref())?;
    super::response::print(&response, args.json)?;
    Ok(response.outcome)
}
