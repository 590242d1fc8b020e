//! What `git loaf review` answers, the same for every front door: the hunks of an AI commit
//! listed, or what a rejection did and the report for the model (docs/review.md).

use std::path::Path;

use serde_json::json;

use super::{Landed, Reviewed};
use crate::git::short_oid;
use crate::ops::review;
use crate::ops::{OpError, Outcome, Response};

/// The hunks of the AI commit `id` names, as text lines and as JSON.
pub fn respond_list(cwd: &Path, id: Option<&str>) -> Result<Response, OpError> {
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
    Ok(Response::text(text, Outcome::Success).with_json(&value))
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
) -> Result<Response, OpError> {
    let listing = review::list(cwd, id)?;
    let root = crate::git::worktree_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let verdicts = review::rejecting(&listing, &root, rejects, reason)?;
    Ok(reviewed(
        review::review(cwd, &listing, &verdicts)?,
        listing.hunks.len(),
    ))
}

/// What a review did, then the report for the model.
pub fn reviewed(done: Reviewed, total: usize) -> Response {
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
        .with_json(&value)
}
