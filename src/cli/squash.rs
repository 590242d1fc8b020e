//! `git loaf squash`: fold the run of AI commits ending at HEAD into one.

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome, Response};
use crate::git::push::PushError;
use crate::git::short_oid;
use crate::ops::squash::{self, RunEnd, SquashOptions, Squashed};
use crate::ops::undo::display_ref;

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
    pub(crate) containing: Vec<String>,
    /// Only the turns record mode committed for session ID (`Loaf-Session: ID`; `git loaf
    /// agent-hook` uses the agent's session id).
    #[arg(long, value_name = "ID")]
    pub(crate) session: Option<String>,
    /// Only commits made at or after DATE (`2026-01-01`, `2026-01-01T12:00:00+02:00`,
    /// `@<seconds>`, `3 days ago`; UTC unless a zone is given).
    #[arg(long, value_name = "DATE")]
    pub(crate) after: Option<String>,
    /// Only commits of the last N hours.
    #[arg(long, value_name = "N")]
    pub(crate) hours: Option<u64>,
    /// Only commits of the last N days.
    #[arg(long, value_name = "N")]
    pub(crate) days: Option<u64>,
    /// At most the N newest commits of the run (says how many more would have matched).
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<usize>,
    /// Use MESSAGE instead of the generated message (the git-loaf trailers are added).
    #[arg(short = 'm', long, value_name = "MESSAGE")]
    pub(crate) message: Option<String>,
    /// Print the commits and the message it would write; change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Then push the branch to its upstream with --force-with-lease (refused if anyone
    /// pushed since your last fetch).
    #[arg(long)]
    pub(crate) push: bool,
    /// Squash commits already pushed; with --push, push with --force.
    #[arg(long)]
    pub(crate) force: bool,
    /// Sign the commit as `git commit -S` does (gpg.format, user.signingKey); KEY names the
    /// key. Default: as commit.gpgSign says.
    #[arg(long, short = 'S', value_name = "KEY", num_args = 0..=1, require_equals = true)]
    pub(crate) gpg_sign: Option<Option<String>>,
    /// Do not sign the commit, whatever commit.gpgSign says.
    #[arg(long)]
    pub(crate) no_gpg_sign: bool,
}

/// Runs `git loaf squash`.
pub fn run(args: &SquashArgs) -> Result<Outcome, CliError> {
    let response = respond(&super::current_dir()?, args)?;
    super::response::print(&response, false)?;
    if let Some(error) = &response.error {
        super::print_error(error);
    }
    Ok(response.outcome)
}

/// Squashes (or, with `dry_run`, shows what it would squash) in the repository containing
/// `cwd`; a push that failed after the squash is the response's error, the squash stays.
pub fn respond(cwd: &std::path::Path, args: &SquashArgs) -> Result<Response, CliError> {
    let options = options(args)?;
    let squashed = squash::squash(cwd, &options)?;
    let mut response =
        Response::text(report(&squashed), Outcome::Success).with_notices(squashed.notices.clone());
    if let Some(Err(error)) = &squashed.pushed {
        response.outcome = Outcome::Failed;
        response.error = Some(push_failure(&squashed, error));
    }
    Ok(response)
}

/// The options, with `--after`, `--hours` and `--days` turned into one cutoff (the latest).
fn options(args: &SquashArgs) -> Result<SquashOptions, CliError> {
    let now = crate::ops::now_secs();
    let mut cutoffs = Vec::new();
    if let Some(text) = &args.after {
        cutoffs.push(squash::parse_date(text, now).ok_or_else(|| {
            CliError::usage(
                format!("--after: cannot read the date {text:?}"),
                "give a date like 2026-01-01, 2026-01-01T12:00:00Z, @1767225600 or \"3 days ago\"",
            )
        })?);
    }
    cutoffs.extend(args.hours.map(|h| now - (h as i64).saturating_mul(3600)));
    cutoffs.extend(args.days.map(|d| now - (d as i64).saturating_mul(86_400)));
    Ok(SquashOptions {
        containing: args.containing.clone(),
        session: args.session.clone(),
        after: cutoffs.into_iter().max(),
        limit: args.limit,
        message: args.message.clone(),
        dry_run: args.dry_run,
        push: args.push,
        force: args.force,
        sign: crate::git::sign::SignRequest::from_flags(args.gpg_sign.clone(), args.no_gpg_sign),
    })
}

/// What was (or would be) squashed, the message, and where the branch went.
fn report(squashed: &Squashed) -> String {
    let plan = &squashed.plan;
    let n = plan.picked.len();
    let mut out = match squashed.commit {
        None => format!("Would squash {n} commits (dry run, nothing changed):\n"),
        Some(_) => format!("Squashed {n} commits ({}):\n", squashed.id),
    };
    for p in plan.picked.iter().rev() {
        let id = p.loaf_id.as_deref().unwrap_or("------");
        out.push_str(&format!("  {} {id} {}\n", short_oid(p.commit), p.subject));
    }
    if plan.more > 0 {
        out.push_str(&format!(
            "--limit {n}: {} more commit{} would have matched\n",
            plan.more,
            if plan.more == 1 { "" } else { "s" }
        ));
    }
    let ended = match &plan.end {
        RunEnd::NotMatching(c, s) => Some(format!("the run ends at {} ({s})", short_oid(*c))),
        RunEnd::Merge(c) => Some(format!("the run ends at merge {}", short_oid(*c))),
        RunEnd::TooOld(c) => Some(format!(
            "the run ends at {}, older than asked",
            short_oid(*c)
        )),
        RunEnd::Root | RunEnd::Limit => None,
    };
    if let Some(ended) = ended {
        out.push_str(&format!("({ended})\n"));
    }
    match squashed.commit {
        None => {
            out.push_str("Message:\n");
            for line in plan.message.lines() {
                let indent = if line.is_empty() { "" } else { "  " };
                out.push_str(&format!("{indent}{line}\n"));
            }
        }
        Some(commit) => {
            out.push_str(&format!(
                "{}: {} -> {} {}\n",
                display_ref(&plan.ref_name),
                short_oid(plan.head),
                short_oid(commit),
                plan.message.lines().next().unwrap_or("")
            ));
            if let (Some(Ok(())), Some(up)) = (&squashed.pushed, &plan.upstream) {
                out.push_str(&format!("Pushed to {} {}.\n", up.remote, up.remote_ref));
            }
            out.push_str("`git loaf undo` takes the squash back.\n");
        }
    }
    out
}

/// The error shown when the push after a squash failed: the squash stays, and what to do.
fn push_failure(squashed: &Squashed, error: &PushError) -> CliError {
    let plan = &squashed.plan;
    let (remote, branch) = plan
        .upstream
        .as_ref()
        .map(|u| {
            (
                u.remote.clone(),
                u.remote_ref.trim_start_matches("refs/heads/").to_owned(),
            )
        })
        .unwrap_or_default();
    let kept = "the squash is kept locally (`git loaf undo` takes it back)";
    match error {
        PushError::RemoteMoved { .. } => CliError::refused(
            format!(
                "push refused: {remote}/{branch} moved since your last fetch (someone pushed); the remote is untouched and {kept}"
            ),
            format!(
                "`git fetch {remote}` and look at what is new (`git log HEAD..{remote}/{branch}`); to replace it anyway, `git push --force {remote} HEAD:{branch}`"
            ),
        ),
        other => CliError::usage(
            format!("{other}; {kept}"),
            format!(
                "fix the cause and push yourself: `git push --force-with-lease {remote} HEAD:{branch}`"
            ),
        ),
    }
}
