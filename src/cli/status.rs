//! `git loaf status`: what git-loaf has in effect in this working tree, each with the command
//! that ends it.

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};
use crate::ops::status::answer::respond;

/// Show what git-loaf has in effect here, each with the command that ends it.
///
/// A step-back walk (from where, how many steps), a turn being recorded (session, agent,
/// since), applies kept (NOT APPLIED), saved work, an interrupted operation, a loaf.yml
/// change that waits for you. Only reads; exits 0.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("What is going on in this repository", &["git loaf status"]),
    ("The same, for a script", &["git loaf status --json"]),
]))]
pub struct StatusArgs {
    /// Print it as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `git loaf status`.
pub fn run(args: &StatusArgs) -> Result<Outcome, CliError> {
    let response = respond(&super::current_dir()?)?;
    super::response::print(&response, args.json)?;
    Ok(response.outcome)
}
