//! `git loaf instructions`: print what to put in a model's system prompt.

use clap::Args;

use super::{CliError, Outcome};
use crate::config::Config;

/// Print the instructions a model needs to write replies for this repository: the NESL
/// syntax, the repository's root, the rules, and every action loaf.yml allows with its
/// parameters and an example.
///
/// Paste the output into the model's system prompt, e.g.
/// `git loaf instructions | pbcopy` (macOS) or `git loaf instructions | xclip -sel clip`.
/// Exits 0, or 2 when loaf.yml is unusable.
#[derive(Debug, Args)]
pub struct InstructionsArgs {}

/// Runs `git loaf instructions`.
pub fn run(_args: &InstructionsArgs) -> Result<Outcome, CliError> {
    let cwd = super::current_dir()?;
    // The same root and configuration `apply` uses, so the text matches what it accepts.
    let root = crate::git::worktree_root(&cwd).unwrap_or(cwd);
    let config = Config::load(&root).map_err(|e| {
        CliError::usage(
            e.to_string(),
            "fix loaf.yml (see loaf.yml.example for every key), or move it away to use the defaults",
        )
    })?;
    super::print_out(&crate::instructions::render(&root, &config))?;
    Ok(Outcome::Success)
}
