//! `git loaf mcp`: serve git-loaf's operations to an AI agent over the Model Context
//! Protocol.

use std::path::PathBuf;

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};

/// Serve git-loaf's operations to an AI agent as an MCP server on stdio.
///
/// An MCP client (Claude Code, Cursor, Codex, Gemini CLI, …) starts it and calls its tools:
/// apply (a NESL reply or a list of actions, one commit per call), undo, redo, log, show,
/// squash and instructions (also a prompt). Each answers with the text the command prints.
/// Runs until the client closes the connection; messages go to stderr. See docs/mcp.md.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    (
        "What an MCP client runs (register it as command `git`, args `loaf mcp`: docs/mcp.md)",
        &["git loaf mcp"],
    ),
    ("Serve another repository", &["git loaf mcp --repo ~/src/project"]),
]))]
pub struct McpArgs {
    /// The repository to serve (default: the current directory).
    #[arg(long, value_name = "DIR")]
    repo: Option<PathBuf>,
}

/// Runs `git loaf mcp`.
pub fn run(args: &McpArgs) -> Result<Outcome, CliError> {
    let cwd = super::current_dir()?;
    let repo = match &args.repo {
        Some(dir) => cwd.join(dir),
        None => cwd,
    };
    if !repo.is_dir() {
        return Err(CliError::usage(
            format!("--repo {}: not a directory", repo.display()),
            "name the repository's folder",
        ));
    }
    crate::mcp::serve(&repo).map_err(|error| {
        CliError::usage(
            error.to_string(),
            "start it from an MCP client, which talks to it on stdin and stdout",
        )
    })?;
    Ok(Outcome::Success)
}
