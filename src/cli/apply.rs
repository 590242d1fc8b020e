//! `git loaf apply`: run a reply's blocks.

use std::path::PathBuf;

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};
use crate::input::{Source, as_text, read_bytes};
use crate::ops::apply::answer::{ApplyRequest, respond};

/// Run an LLM's reply as one commit and print the results for the model.
///
/// Every valid NESL block runs, in order, in a staging worktree; what changed becomes one
/// commit on your branch (results in its trailers and a git note), then your branch, index
/// and files move to it. Uncommitted work you had stays uncommitted; `git loaf undo` takes
/// the apply back. Paste what it prints back to the model.
///
/// Exits 0 when everything succeeded, 1 when some block or action failed (what succeeded is
/// kept: failures are data), 2 for usage, configuration or input errors (nothing changed).
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    (
        "Apply a reply saved from the chat, or pasted from the clipboard",
        &["git loaf apply reply.md", "xclip -o -selection clipboard | git loaf apply"],
    ),
    (
        "Check a reply first: the planned actions and every error, nothing changed",
        &["git loaf apply --dry-run reply.md"],
    ),
    ("Record which model wrote it", &["git loaf apply --model claude-sonnet-4 reply.md"]),
    ("Outside a repository: run it in place, no commit", &["git loaf apply --no-commit reply.md"]),
    ("The result as JSON, for a script", &["git loaf apply --json reply.md | jq .success"]),
]))]
pub struct ApplyArgs {
    /// The reply to read; `-` or nothing reads standard input.
    #[arg(value_name = "FILE|-")]
    file: Option<PathBuf>,
    /// Parse and validate only: print the planned actions and every error; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Run the actions directly in the current directory, without a git transaction (works
    /// outside a repository too).
    #[arg(long)]
    no_commit: bool,
    /// Print the result as JSON instead of the text report.
    #[arg(long)]
    json: bool,
    /// Record the model that wrote the reply (`Assisted-by:` trailer).
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// Skip the repository's pre-commit and commit-msg git hooks, as `git commit --no-verify`.
    #[arg(long, short = 'n')]
    no_verify: bool,
    /// Sign the commit as `git commit -S` does (gpg.format, user.signingKey); KEY names the
    /// key. Default: as commit.gpgSign says.
    #[arg(long, short = 'S', value_name = "KEY", num_args = 0..=1, require_equals = true)]
    gpg_sign: Option<Option<String>>,
    /// Do not sign the commit, whatever commit.gpgSign says.
    #[arg(long)]
    no_gpg_sign: bool,
}

impl ApplyArgs {
    fn request(&self) -> ApplyRequest {
        ApplyRequest {
            dry_run: self.dry_run,
            no_commit: self.no_commit,
            model: self.model.clone(),
            no_verify: self.no_verify,
            sign: crate::git::sign::SignRequest::from_flags(
                self.gpg_sign.clone(),
                self.no_gpg_sign,
            ),
            message: None,
        }
    }
}

/// Runs `git loaf apply`.
pub fn run(args: &ApplyArgs) -> Result<Outcome, CliError> {
    super::show_progress(!args.json);
    let cwd = super::current_dir()?;
    let source = Source::from_arg(args.file.as_deref());
    let bytes = read_bytes(&source)?;
    let text = as_text(&bytes, &source)?;
    let response = respond(&cwd, text, &args.request())?;
    super::response::print(&response, args.json)?;
    match response.error {
        Some(error) => Err(error),
        None => Ok(response.outcome),
    }
}
