//! The task's whole change, as the reviewer and the spec-maintainer see it (docs/lorch.md,
//! "The three agents"): the spec's `inputs.base` and `inputs.commits` (lorch sends the
//! commit of every builder step of the task, and the parent of the first as the base), the
//! commits `base..HEAD`, the diffstat and the diff `base..HEAD`. Not `git show HEAD`: after
//! `implement_changes` that is the fix alone, and with no builder commit at all the user's
//! own last commit, shown as if it were the task's work.
//!
//! A diff larger than the budget is cut between files: the diffstat still lists every file,
//! and the files whose diff is not shown are named with their size.
//!
//! Read with the git CLI (`git log`, `git diff`), as a reviewer would; a revision that
//! starts with `-` is refused (git would take it for an option).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::{StepError, input_str};
use crate::protocol::Command;

/// The markdown section `## The change` for `command`, its diff within `max_bytes`.
pub fn section(root: &Path, command: &Command, max_bytes: usize) -> Result<String, StepError> {
    let commits: Vec<&str> = command
        .inputs
        .get("commits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let named = input_str(command, "base")
        .into_iter()
        .chain(commits.iter().copied());
    if let Some(bad) = named.into_iter().find(|r| r.starts_with('-')) {
        return Err(StepError::Io {
            what: format!("the revision {bad:?} in the command's inputs"),
            source: std::io::Error::other("a revision may not start with `-`"),
        });
    }
    let base = match (input_str(command, "base"), commits.first()) {
        (Some(base), _) => Some(base.to_owned()),
        (None, Some(first)) => Some(parent_or_empty(root, first)?),
        (None, None) => None,
    };
    let Some(base) = base else {
        let head = git(root, &["show", "--stat", "--patch", "HEAD"])?;
        return Ok(format!(
            "## The change\n\nlorch named no base or commits for this task: below is HEAD's own \
             commit, which may not be the task's work.\n\n````diff\n{}\n````\n\n",
            super::clip(&head, max_bytes)
        ));
    };
    let range = format!("{base}..HEAD");
    let log = git(root, &["log", "--format=%h %s", &range])?;
    let stat = git(root, &["diff", "--stat", &base, "HEAD"])?;
    let patch = git(root, &["diff", "--patch", &base, "HEAD"])?;
    let mut out = format!("## The change\n\nThe task's whole change, `git diff {base} HEAD`");
    if !commits.is_empty() {
        let _ = write!(out, " (the builder's steps: {})", commits.join(", "));
    }
    let _ = write!(out, ". Its commits:\n\n```\n{log}```\n\n");
    if patch.trim().is_empty() {
        out.push_str("The diff is empty: the task changed nothing.\n\n");
        return Ok(out);
    }
    let _ = write!(
        out,
        "````diff\n{stat}\n{}````\n\n",
        bounded(&patch, max_bytes)
    );
    Ok(out)
}

/// `patch` whole when it fits in `max` bytes, else the diffs of the files that fit, in order
/// (a file too large is skipped, the next ones still shown), and
/// a list of the others with their size.
fn bounded(patch: &str, max: usize) -> String {
    if patch.len() <= max {
        return patch.to_owned();
    }
    let mut files: Vec<&str> = Vec::new();
    let mut start = 0;
    for (at, _) in patch.match_indices("\ndiff --git ") {
        files.push(&patch[start..=at]);
        start = at + 1;
    }
    files.push(&patch[start..]);
    let mut shown = String::new();
    let mut left_out = Vec::new();
    for file in files {
        if shown.len() + file.len() <= max {
            shown.push_str(file);
        } else {
            let name = file
                .lines()
                .next()
                .and_then(|l| l.rsplit_once(" b/"))
                .map_or("?", |(_, b)| b);
            left_out.push(format!("{name} ({} bytes of diff)", file.len()));
        }
    }
    let _ = write!(
        shown,
        "\n[the diff is {} bytes, more than the {max} shown here; not shown: {}]\n",
        patch.len(),
        left_out.join(", ")
    );
    shown
}

/// The parent of `commit`, or the empty tree when it is a root commit (its whole content is
/// then the change).
fn parent_or_empty(root: &Path, commit: &str) -> Result<String, StepError> {
    let parent = format!("{commit}^");
    match git(root, &["rev-parse", "--verify", "--quiet", &parent]) {
        Ok(id) if !id.trim().is_empty() => Ok(id.trim().to_owned()),
        _ => git(root, &["hash-object", "-t", "tree", "/dev/null"]).map(|id| id.trim().to_owned()),
    }
}

/// `git <args>`'s stdout, in `root` (the revisions in `args` are checked by the caller).
fn git(root: &Path, args: &[&str]) -> Result<String, StepError> {
    let shown = format!("git {}", args.join(" "));
    let (sub, rest) = args.split_first().unwrap_or((&"status", &[]));
    let out = std::process::Command::new("git")
        .args(["-c", "core.quotepath=off", "--no-pager", sub])
        .args(
            ["--no-color", "--no-ext-diff"]
                .iter()
                .filter(|_| matches!(*sub, "log" | "diff" | "show")),
        )
        .args(rest)
        .current_dir(root)
        .output()
        .map_err(StepError::io("run git"))?;
    if !out.status.success() {
        return Err(StepError::Io {
            what: shown,
            source: std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_owned()),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
