//! `git loaf review`: keep or reject an AI commit's hunks; the model is told what was
//! rejected and why (docs/review.md).

mod interactive;

use std::io::IsTerminal as _;
use std::path::Path;

use clap::Args;
use serde_json::json;

use super::examples::examples;
use super::{CliError, Outcome, Response};
use crate::git::short_oid;
use crate::ops::review::{self, Landed, Reviewed};

/// Keep or reject an AI change hunk by hunk; the model learns what you rejected.
///
/// On a terminal it walks the hunks of the last apply or agent's turn on this branch (or
/// of ID: an apply or turn id, or a commit) as `git add -p` does: y keeps a hunk, n rejects
/// it (and asks a one-line reason), s splits it, e edits it, q keeps the rest. `--reject`
/// does the same without asking. When the commit is the branch's tip and not pushed, it is
/// rewritten to hold only the kept hunks; otherwise a new commit reverts the rejected ones.
/// The working tree follows, your uncommitted work stays as it is, and `git loaf undo`
/// brings the rejected hunks back. The report for the model (the rejected hunks, your
/// reasons, "do not reintroduce") is printed, and given to the agent with its next prompt
/// (record mode) or the next MCP `apply` answer, once.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("Walk the last AI change hunk by hunk", &["git loaf review"]),
    ("List its hunks with their ids", &["git loaf review --list"]),
    (
        "Reject the hunk at line 42 of src/pager.rs, saying why",
        &["git loaf review --reject src/pager.rs:42 --reason \"keep the old paging\""],
    ),
    ("Reject hunks 2 and 3 of apply 3f2a1c", &["git loaf review 3f2a1c --reject 2 --reject 3"]),
]))]
pub struct ReviewArgs {
    /// The apply or turn id, or a commit (default: the last apply or turn on this branch).
    pub(crate) id: Option<String>,
    /// List the hunks (`ID  PATH:START-END  +ADDED -REMOVED`) and change nothing.
    #[arg(long, conflicts_with = "reject")]
    pub(crate) list: bool,
    /// With --list: the hunks as JSON.
    #[arg(long, requires = "list")]
    pub(crate) json: bool,
    /// Reject the hunk of PATH whose lines (in the commit) hold LINE; every hunk of PATH
    /// without one; or a hunk id as --list shows it. Repeatable.
    #[arg(long, value_name = "PATH[:LINE]|ID")]
    pub(crate) reject: Vec<String>,
    /// Why (told to the model with the rejected hunks).
    #[arg(long, value_name = "TEXT", requires = "reject")]
    pub(crate) reason: Option<String>,
    /// Also put the report for the model on the clipboard.
    #[arg(long)]
    pub(crate) copy: bool,
}

/// Runs `git loaf review`.
pub fn run(args: &ReviewArgs) -> Result<Outcome, CliError> {
    let cwd = super::current_dir()?;
    let response = if args.list {
        respond_list(&cwd, args.id.as_deref())?
    } else if !args.reject.is_empty() {
        respond_reject(
            &cwd,
            args.id.as_deref(),
            &args.reject,
            args.reason.as_deref().unwrap_or(""),
        )?
    } else if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        let listing = review::list(&cwd, args.id.as_deref())?;
        let verdicts = interactive::walk(&cwd, &listing)?;
        if verdicts.is_empty() {
            super::print_out("Kept every hunk: nothing changed.\n")?;
            return Ok(Outcome::Success);
        }
        reviewed(
            review::review(&cwd, &listing, &verdicts)?,
            listing.hunks.len(),
        )
    } else {
        return Err(CliError::usage(
            "not on a terminal: say which hunks to reject",
            "`git loaf review --list` shows the hunks; `git loaf review --reject PATH[:LINE]` rejects one",
        ));
    };
    response.print(args.json)?;
    if args.copy
        && let Some(report) = response
            .json
            .as_deref()
            .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
            .and_then(|v| v["report"].as_str().map(str::to_owned))
    {
        copy(&report);
    }
    Ok(response.outcome)
}

/// The hunks of the AI commit `id` names, as text lines and as JSON.
pub fn respond_list(cwd: &Path, id: Option<&str>) -> Result<Response, CliError> {
    let listing = review::list(cwd, id)?;
    let mut text = String::new();
    let mut hunks = Vec::new();
    for hunk in &listing.hunks {
        let (added, removed) = hunk.counts();
        let whole = hunk.whole.map(|w| format!("  ({})", whole_word(w)));
        text.push_str(&format!(
            "{}  {}:{}  +{added} -{removed}{}\n",
            hunk.id,
            hunk.shown_path(),
            hunk.span(),
            whole.unwrap_or_default()
        ));
        hunks.push(json!({
            "id": hunk.id,
            "path": hunk.path.display().to_string(),
            "start": hunk.new_start,
            "end": hunk.new_start + hunk.new_lines.max(1) - 1,
            "added": added,
            "removed": removed,
            "whole": hunk.whole,
            "diff": hunk.shown(),
        }));
    }
    let value = json!({
        "commit": listing.commit.to_string(),
        "apply": listing.apply,
        "subject": listing.subject,
        "hunks": hunks,
    });
    let json = serde_json::to_string_pretty(&value).unwrap_or_default() + "\n";
    Ok(Response::text(text, Outcome::Success).with_json(json))
}

fn whole_word(whole: review::hunks::Whole) -> &'static str {
    match whole {
        review::hunks::Whole::Added => "new file",
        review::hunks::Whole::Deleted => "deleted file",
        review::hunks::Whole::Binary => "whole file, not text",
    }
}

/// Rejects the hunks `rejects` names (`PATH[:LINE]` or ids) of the AI commit `id` names.
pub fn respond_reject(
    cwd: &Path,
    id: Option<&str>,
    rejects: &[String],
    reason: &str,
) -> Result<Response, CliError> {
    let listing = review::list(cwd, id)?;
    let root = crate::git::worktree_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let verdicts = review::rejecting(&listing, &root, rejects, reason)?;
    Ok(reviewed(
        review::review(cwd, &listing, &verdicts)?,
        listing.hunks.len(),
    ))
}

/// What a review did, then the report for the model.
fn reviewed(done: Reviewed, total: usize) -> Response {
    let n = done.rejected.len();
    let mut text = format!(
        "Reviewed {} ({}): rejected {n} of {total} {}\n",
        short_oid(done.commit),
        done.id,
        if total == 1 { "hunk" } else { "hunks" },
    );
    text.push_str(&match done.landed {
        Landed::Dropped { old, parent } => format!(
            "No hunk kept: {} is gone, the branch is at its parent {}\n",
            short_oid(old),
            short_oid(parent)
        ),
        Landed::Rewritten { old, new } => format!(
            "{} rewritten as {} with the kept hunks (it was the tip, not pushed)\n",
            short_oid(old),
            short_oid(new)
        ),
        Landed::Reverted { commit } => format!(
            "Commit {} reverts the rejected {}\n",
            short_oid(commit),
            if n == 1 { "hunk" } else { "hunks" }
        ),
    });
    text.push_str("`git loaf undo` brings the rejected hunks back.\n\n");
    text.push_str(&done.report);
    let value = json!({
        "review": done.id,
        "commit": done.commit.to_string(),
        "rejected": done.rejected,
        "report": done.report,
    });
    Response::text(text, Outcome::Success)
        .with_notices(done.notices)
        .with_json(serde_json::to_string_pretty(&value).unwrap_or_default() + "\n")
}

/// `--copy`: the report on the clipboard (`LOAF_CLIPBOARD_FILE` names a file instead).
fn copy(text: &str) {
    use crate::watch::clipboard::{Clipboard, FileClipboard, SystemClipboard};
    let mut clipboard: Box<dyn Clipboard> = match std::env::var_os("LOAF_CLIPBOARD_FILE") {
        Some(path) => Box::new(FileClipboard::new(Path::new(&path))),
        None => Box::new(SystemClipboard::default()),
    };
    match clipboard.set_text(text) {
        Ok(()) => super::print_notices(&["the report for the model is on the clipboard".into()]),
        Err(e) => super::print_notices(&[format!(
            "could not put the report on the clipboard ({e}): copy it from above"
        )]),
    }
}
