//! `git loaf log` and `git loaf show`: AI history read back.

use std::path::Path;

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome, Response};
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
    let response = respond_log(&super::current_dir()?, args.max_count)?;
    super::response::print(&response, args.json)?;
    Ok(response.outcome)
}

/// The newest `max_count` applies on the branch of the repository containing `cwd`.
pub fn respond_log(cwd: &Path, max_count: usize) -> Result<Response, CliError> {
    let entries = log::log(cwd, max_count)?;
    let json = serde_json::to_string_pretty(&entries).unwrap_or_default() + "\n";
    let mut out = String::new();
    for e in &entries {
        let counts = match (e.kind, e.folded) {
            ("kept", _) => format!("NOT APPLIED (git loaf take {0} | git loaf drop {0})", e.id),
            // A recorded turn ran no actions: counting them would say nothing.
            ("turn", _) => "turn".to_owned(),
            (_, Some(folded)) => folded_words(folded, e.succeeded, e.failed),
            _ => format!("✅{} ❌{}", e.succeeded, e.failed),
        };
        out.push_str(&format!(
            "{} {} {} {counts} {}\n",
            crate::git::short_id(&e.commit),
            e.id,
            e.time,
            e.summary
        ));
    }
    let mut response = Response::text(out, Outcome::Success).with_json(json);
    // `-n 0` asks for nothing; only an unlimited look that found nothing means "none".
    if entries.is_empty() && max_count > 0 {
        response
            .notices
            .push("no git-loaf commits on this branch (`git loaf apply` makes them)".to_owned());
    }
    Ok(response)
}

/// A squash as what it folded in: `squash of 2 applies ✅5 ❌1`, `squash of 3 turns`,
/// `squash of 1 apply ✅2 ❌0 and 2 turns` (turns have no ✅/❌ counts).
fn folded_words(folded: log::Folded, succeeded: usize, failed: usize) -> String {
    let count =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let applies = (folded.applies > 0).then(|| {
        format!(
            "{} ✅{succeeded} ❌{failed}",
            count(folded.applies, "apply", "applies")
        )
    });
    let turns = (folded.turns > 0).then(|| count(folded.turns, "turn", "turns"));
    match (applies, turns) {
        (Some(applies), Some(turns)) => format!("squash of {applies} and {turns}"),
        (Some(one), None) | (None, Some(one)) => format!("squash of {one}"),
        (None, None) => format!("squash ✅{succeeded} ❌{failed}"),
    }
}

/// Runs `git loaf show`.
pub fn run_show(args: &ShowArgs) -> Result<Outcome, CliError> {
    let response = respond_show(&super::current_dir()?, args.rev.as_deref())?;
    super::response::print(&response, args.json)?;
    Ok(response.outcome)
}

/// What the apply at `rev` (default HEAD) recorded, in the repository containing `cwd`.
pub fn respond_show(cwd: &Path, rev: Option<&str>) -> Result<Response, CliError> {
    let shown = log::show(cwd, rev)?;
    let (text, result, notice) = match shown {
        Shown::Full {
            text,
            result,
            notice,
        } => (text, result, notice),
        Shown::TrailerOnly { commit, result } => {
            let json = pretty(&result);
            (
                json,
                result,
                Some(format!(
                    "the full record of {commit} is not here (fetch it: `git fetch origin refs/notes/loaf:refs/notes/loaf`); showing the commit's Loaf-Result trailer, in which file contents and outputs are hashes"
                )),
            )
        }
    };
    Ok(Response::text(text, Outcome::Success)
        .with_json(pretty(&result))
        .with_notices(notice.into_iter().collect()))
}

fn pretty(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}
