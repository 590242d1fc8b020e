//! `git loaf squash`: fold the run of AI commits ending at HEAD into one.

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};
use crate::git::sign::SignRequest;
use crate::ops::squash::answer::{SquashRequest, respond};

/// Fold the run of AI commits at the tip of the branch into one commit.
///
/// The squash commit has HEAD's tree exactly. It takes the contiguous run of commits from HEAD back along first parents: by default the
/// git-loaf applies (a commit of yours or a merge ends the run). The squash commit's message
/// lists the squashed subjects and keeps every apply's id and result; `git loaf show` on it
/// prints each apply's report. Your uncommitted changes are not touched, and `git loaf undo`
/// takes the squash back. Refuses commits already on a remote-tracking branch unless
/// `--push` or `--force`.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("Fold the run of git-loaf applies at the tip into one commit", &["git loaf squash"]),
    ("See what it would fold and the message, changing nothing", &["git loaf squash --dry-run"]),
    (
        "Only the last 8 hours' applies, with your own message",
        &["git loaf squash --hours 8 -m \"Add the NESL parser\""],
    ),
    (
        "Your WIP commits instead, then push (--force-with-lease)",
        &["git loaf squash --containing WIP --push"],
    ),
]))]
pub struct SquashArgs {
    /// Select commits whose message contains TEXT instead of the applies (repeatable: any
    /// of them; `""` matches every commit).
    #[arg(long, value_name = "TEXT")]
    containing: Vec<String>,
    /// Only the turns record mode committed for session ID (`Loaf-Session: ID`; `git loaf
    /// agent-hook` uses the agent's session id).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Only commits made at or after DATE (`2026-01-01`, `2026-01-01T12:00:00+02:00`,
    /// `@<seconds>`, `3 days ago`; UTC unless a zone is given).
    #[arg(long, value_name = "DATE")]
    after: Option<String>,
    /// Only commits of the last N hours.
    #[arg(long, value_name = "N")]
    hours: Option<u64>,
    /// Only commits of the last N days.
    #[arg(long, value_name = "N")]
    days: Option<u64>,
    /// At most the N newest commits of the run (says how many more would have matched).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Use MESSAGE instead of the generated message (the git-loaf trailers are added).
    #[arg(short = 'm', long, value_name = "MESSAGE")]
    message: Option<String>,
    /// Print the commits and the message it would write; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Then push the branch to its upstream with --force-with-lease (refused if anyone
    /// pushed since your last fetch).
    #[arg(long)]
    push: bool,
    /// Squash commits already pushed; with --push, push with --force.
    #[arg(long)]
    force: bool,
    /// Sign the commit as `git commit -S` does (gpg.format, user.signingKey); KEY names the
    /// key. Default: as commit.gpgSign says.
    #[arg(long, short = 'S', value_name = "KEY", num_args = 0..=1, require_equals = true)]
    gpg_sign: Option<Option<String>>,
    /// Do not sign the commit, whatever commit.gpgSign says.
    #[arg(long)]
    no_gpg_sign: bool,
}

impl SquashArgs {
    /// The request, as every front door makes it.
    fn request(&self) -> SquashRequest {
        SquashRequest {
            containing: self.containing.clone(),
            session: self.session.clone(),
            after: self.after.clone(),
            hours: self.hours,
            days: self.days,
            limit: self.limit,
            message: self.message.clone(),
            dry_run: self.dry_run,
            push: self.push,
            force: self.force,
            sign: SignRequest::from_flags(self.gpg_sign.clone(), self.no_gpg_sign),
        }
    }
}

/// Runs `git loaf squash`.
pub fn run(args: &SquashArgs) -> Result<Outcome, CliError> {
    let response = respond(&super::current_dir()?, &args.request())?;
    super::response::print(&response, false)?;
    if let Some(error) = &response.error {
        super::print_error(error);
    }
    Ok(response.outcome)
}
