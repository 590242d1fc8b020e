//! `git loaf step-back` and `git loaf step-forward`: walk back through a branch's commits
//! and forward again, the uncommitted changes of each commit kept for it.

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};
use crate::ops::step::{self, Stepped};
use crate::ops::undo::{display_ref, short};

/// Step back one commit; your uncommitted work stays where the step allows it.
///
/// HEAD moves, detached, to the first parent, with that commit's files. Your uncommitted
/// work (untracked files included, staged and unstaged apart) stays in place in every file
/// the step does not change, as `git switch` carries local changes; your work in a file the
/// step changes is kept aside for the commit you leave (`git loaf step-forward` brings it
/// back, `git loaf restore <id>` puts it back here). The branch stays where it is. Repeat to
/// go further back; `git loaf undo` takes a step back exactly.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    (
        "Try the code as it was two commits ago, then come back",
        &["git loaf step-back", "git loaf step-back", "git loaf step-forward", "git loaf step-forward"],
    ),
]))]
pub struct StepBackArgs {}

/// Step forward one commit toward the tip `git loaf step-back` left.
///
/// The changes kept for that commit come back (merged with any edits you made meanwhile); at
/// the tip HEAD is on the branch again. Refuses if the branch moved or a commit was made
/// while stepped back.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("Back one commit and forward again", &["git loaf step-back", "git loaf step-forward"]),
]))]
pub struct StepForwardArgs {}

/// Runs `git loaf step-back`.
pub fn run_back(_args: &StepBackArgs) -> Result<Outcome, CliError> {
    let stepped = step::step_back(&super::current_dir()?)?;
    super::print_notices(&stepped.notices);
    let mut out = format!("{}\n", position(&stepped));
    if !stepped.carried.is_empty() {
        out.push_str(
            "Your uncommitted changes stay in place (the step does not touch these files):\n",
        );
        out.push_str(&listed(&stepped.carried));
    }
    if !stepped.paths.is_empty() {
        out.push_str("Kept aside for the commit stepped off (the step changes these files):\n");
        out.push_str(&listed(&stepped.paths));
        if let Some(id) = &stepped.saved {
            out.push_str(&format!(
                "`git loaf step-forward` brings them back; `git loaf restore {id}` puts them back here.\n"
            ));
        }
    }
    super::print_out(&out).map(|()| Outcome::Success)
}

/// Runs `git loaf step-forward`.
pub fn run_forward(_args: &StepForwardArgs) -> Result<Outcome, CliError> {
    let stepped = step::step_forward(&super::current_dir()?)?;
    super::print_notices(&stepped.notices);
    let mut out = format!("{}\n", position(&stepped));
    if !stepped.paths.is_empty() {
        out.push_str("Brought back the changes kept for it:\n");
        out.push_str(&listed(&stepped.paths));
    }
    if !stepped.marked.is_empty() {
        out.push_str("Your edits and the kept changes changed the same lines; both are in the file, between conflict markers:\n");
        out.push_str(&listed(&stepped.marked));
    }
    let unmarked: Vec<String> = stepped
        .conflicts
        .iter()
        .filter(|p| !stepped.marked.contains(p))
        .cloned()
        .collect();
    if !unmarked.is_empty() {
        out.push_str("Your edits and the kept changes both changed these files (not text, or deleted on one side); your version stays:\n");
        out.push_str(&listed(&unmarked));
        if let Some(id) = &stepped.saved {
            out.push_str(&format!(
                "The kept version is saved: `git loaf restore {id}` puts it back once yours is out of the way.\n"
            ));
        }
    }
    if !stepped.conflicts.is_empty() {
        out.push_str("`git loaf undo` goes back to before this step-forward exactly.\n");
    }
    super::print_out(&out).map(|()| Outcome::Success)
}

/// `HEAD now at <short> <subject> (N steps back from main <short>)`, or on the branch.
fn position(stepped: &Stepped) -> String {
    let (at, subject) = &stepped.at;
    let tip = short(Some(&stepped.tip.to_string()));
    let branch = if stepped.branch == "HEAD" {
        "the tip".to_owned()
    } else {
        display_ref(&stepped.branch)
    };
    let at = format!("{} {subject}", short(Some(&at.to_string())));
    match stepped.back {
        0 if stepped.attached => format!("HEAD now at {at}, on {branch} again (the tip)"),
        // A walk begun on a detached HEAD has no branch to name.
        0 if stepped.branch == "HEAD" => format!("HEAD now at {at} (the tip, detached)"),
        0 => format!("HEAD now at {at} (the tip, {branch} {tip})"),
        1 => format!("HEAD now at {at} (1 step back from {branch} {tip})"),
        n => format!("HEAD now at {at} ({n} steps back from {branch} {tip})"),
    }
}

fn listed(paths: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut out = String::new();
    for path in paths.iter().take(SHOWN) {
        out.push_str(&format!("  {path}\n"));
    }
    if paths.len() > SHOWN {
        out.push_str(&format!("  … and {} more\n", paths.len() - SHOWN));
    }
    out
}
