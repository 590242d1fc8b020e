//! `git loaf log` and `git loaf show`: AI history read back.

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};
use crate::ops::log::{self, Shown};

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
    let entries = log::log(&super::current_dir()?, args.max_count)?;
    if args.json {
        let json = serde_json::to_string_pretty(&entries).unwrap_or_default();
        return super::print_out(&(json + "\n")).map(|()| Outcome::Success);
    }
    let mut out = String::new();
    for e in &entries {
        let counts = if e.kind == "kept" {
            format!("NOT APPLIED (git loaf take {0} | git loaf drop {0})", e.id)
        } else {
            format!("✅{} ❌{}", e.succeeded, e.failed)
        };
        out.push_str(&format!(
            "{} {} {} {counts} {}\n",
            crate::git::short_id(&e.commit),
            e.id,
            e.time,
            e.summary
        ));
    }
    // `-n 0` asks for nothing; only an unlimited look that found nothing means "none".
    if entries.is_empty() && args.max_count > 0 {
        super::print_notices(&[
            "no git-loaf commits on this branch (`git loaf apply` makes them)".to_owned(),
        ]);
    }
    super::print_out(&out).map(|()| Outcome::Success)
}

/// Runs `git loaf show`.
pub fn run_show(args: &ShowArgs) -> Result<Outcome, CliError> {
    let shown = log::show(&super::current_dir()?, args.rev.as_deref())?;
    if let Shown::Full {
        notice: Some(notice),
        ..
    } = &shown
    {
        super::print_notices(std::slice::from_ref(notice));
    }
    let text = match (&shown, args.json) {
        (Shown::Full { text, .. }, false) => text.clone(),
        (Shown::Full { result, .. }, true) | (Shown::TrailerOnly { result, .. }, true) => {
            serde_json::to_string_pretty(result).unwrap_or_default() + "\n"
        }
        (Shown::TrailerOnly { commit, result }, false) => {
            super::print_notices(&[format!(
                "the full record of {commit} is not here (fetch it: `git fetch origin refs/notes/loaf:refs/notes/loaf`); showing the commit's Loaf-Result trailer, in which file contents and outputs are hashes"
            )]);
            serde_json::to_string_pretty(result).unwrap_or_default() + "\n"
        }
    };
    super::print_out(&text).map(|()| Outcome::Success)
}
