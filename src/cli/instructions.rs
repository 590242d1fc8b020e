//! `git loaf instructions`: print what to put in a model's system prompt.

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};
use crate::ops::instructions::render;

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
