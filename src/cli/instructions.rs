//! `git loaf instructions`: print what to put in a model's system prompt.

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};

/// Print the instructions to put in a model's system prompt for this repository.
///
/// The NESL syntax, the repository's root, the rules, and every action loaf.yml allows with
/// its parameters and an example. Exits 0, or 2 when loaf.yml is unusable.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    (
        "Copy them into the model's system prompt (Linux, macOS)",
        &["git loaf instructions | xclip -selection clipboard", "git loaf instructions | pbcopy"],
    ),
    ("Or save them to a file", &["git loaf instructions > prompt.md"]),
]))]
pub struct InstructionsArgs {}

/// Runs `git loaf instructions`.
pub fn run(_args: &InstructionsArgs) -> Result<Outcome, CliError> {
    super::print_out(&render(&super::current_dir()?)?)?;
    Ok(Outcome::Success)
}

/// The instructions for the repository (or folder) containing `cwd`.
pub fn render(cwd: &std::path::Path) -> Result<String, CliError> {
    let cwd = cwd.to_path_buf();
    // The same root and configuration `apply` uses, so the text matches what it accepts.
    let root = crate::git::worktree_root(&cwd).unwrap_or(cwd);
    // The loaf.yml the user accepted: a wider one a reply wrote is not in force yet.
    let config = crate::ops::config::load(&root).map_err(|e| {
        CliError::usage(
            e.to_string(),
            "fix loaf.yml (see loaf.yml.example for every key), or move it away to use the defaults",
        )
    })?;
    Ok(crate::instructions::render(&root, &config))
}
