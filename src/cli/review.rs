//! `git loaf review`: keep or reject an AI commit's hunks; the model is told what was
//! rejected and why (docs/review.md).

mod interactive;

use std::io::IsTerminal as _;
use std::path::Path;

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};
use crate::ops::review;
use crate::ops::review::answer::{respond_list, respond_reject, reviewed};

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
    super::response::print(&response, args.json)?;
    if args.copy
        && let Some(report) = response
            .json
            .as_ref()
            .and_then(|v| v["report"].as_str().map(str::to_owned))
    {
        copy(&report);
    }
    Ok(response.outcome)
}

/// `--copy`: the report on the clipboard (`LOAF_CLIPBOARD_FILE` names a file instead).
fn copy(text: &str) {
    use crate::watch::clipboard::{Clipboard, FileClipboard, SystemClipboard};
    let mut clipboard: Box<dyn Clipboard> = match std::env::var_os("LOAF_CLIPBOARD_FILE") {
        Some(path) => Box::new(FileClipboard::new(Path::new(&path))),
        None => Box::new(SystemClipboard::default()),
    };
    match clipboard.set_text(text) {
        Ok(()) => super::print_notices(&["the report for the model is on the clipboard"]),
        Err(e) => super::print_notices(&[format!(
            "could not put the report on the clipboard ({e}): copy it from above"
        )]),
    }
}
