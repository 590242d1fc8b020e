//! The commit that holds a review (docs/review.md): each file with the rejected hunks taken
//! out (the parent's version with the kept hunks laid on it); the unpushed tip rewritten to
//! hold only the kept hunks, its note recording what was rejected; or, below the tip, a new
//! commit that reverts the rejected hunks, merged with the commits made since.

use std::path::PathBuf;

use serde_json::Value;

use super::hunks::{self, Hunk, Line};
use super::report::RejectedHunk;
use super::{Kept, Landed, REVIEW_TRAILER, REVIEWED_TRAILER, Verdict};
use crate::git::commit::{read_report, write_note, write_report};
use crate::git::notes::read_note;
use crate::git::treebuild::tree_with_values;
use crate::git::{Oid, Repository, short_oid};
use crate::tx::commits::{self, CommitInfo};
use crate::tx::merge;
use crate::tx::session::TxError;

/// Each file with a rejected hunk, as the review leaves it in the commit: the parent's
/// version with the kept hunks laid on it (a whole-file hunk: the parent's entry).
pub(super) fn kept_entries(
    repo: &Repository,
    hunks: &[Hunk],
    verdicts: &[Verdict],
) -> Result<Kept, TxError> {
    let mut paths: Vec<&PathBuf> = verdicts
        .iter()
        .filter_map(|v| hunks.iter().find(|h| h.id == v.hunk))
        .map(|h| &h.path)
        .collect();
    paths.sort();
    paths.dedup();
    let mut values = Vec::new();
    for path in paths {
        let of_file: Vec<&Hunk> = hunks.iter().filter(|h| &h.path == path).collect();
        let (old, new) = of_file[0].entries;
        let verdict = |h: &Hunk| verdicts.iter().find(|v| v.hunk == h.id);
        if of_file[0].whole.is_some() {
            values.push((path.clone(), old));
            continue;
        }
        let (Some(old), Some(new)) = (old, new) else {
            continue;
        };
        let laid: Vec<Vec<Line>> = of_file
            .iter()
            .map(|h| match verdict(h) {
                None => h.lines.clone(),
                Some(Verdict {
                    kept: Some(lines), ..
                }) if hunks::fits(&h.lines, lines) => lines.clone(),
                Some(_) => hunks::rejected_lines(&h.lines),
            })
            .collect();
        let pairs: Vec<(&Hunk, &[Line])> = of_file
            .iter()
            .zip(&laid)
            .map(|(h, l)| (*h, l.as_slice()))
            .collect();
        let parent = crate::git::hunks::blob_bytes(repo, old.0)?;
        let content = hunks::kept_content(&parent, &pairs);
        let blob = crate::git::repo::write_blob(repo, &content)?;
        values.push((path.clone(), Some((blob, new.1))));
    }
    Ok(values)
}

/// The tip rewritten: the kept hunks on the same parent, its message with a trailer saying
/// what was rejected, its note and report with the review's records. No hunk kept: the
/// branch moves to the parent.
pub(super) fn rewrite(
    repo: &Repository,
    commit: &CommitInfo,
    kept: &Kept,
    id: &str,
    rejected: &[RejectedHunk],
) -> Result<Landed, TxError> {
    let tree = tree_with_values(repo, commit.tree, kept)?;
    if let Some(parent) = commit.parent
        && commits::read(repo, parent)?.tree == tree
    {
        return Ok(Landed::Dropped {
            old: commit.id,
            parent,
        });
    }
    let message = format!(
        "{}\n{REVIEW_TRAILER}: {id} rejected {}\n",
        commit.message.trim_end(),
        rejected
            .iter()
            .map(|r| format!("{}:{}", r.path, r.lines))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let parents: Vec<Oid> = commit.parent.into_iter().collect();
    let new = crate::git::sign::write_commit(
        repo,
        tree,
        &parents,
        &message,
        &crate::git::sign::SignRequest::AsConfigured,
    )
    .map_err(crate::git::sign::SignError::into_git)?;
    let record = serde_json::json!({ "id": id, "rejected": rejected });
    let with_review = |text: String| -> String {
        match serde_json::from_str::<Value>(&text) {
            Ok(mut value) if value.is_object() => {
                let list = value["reviews"].as_array().cloned().unwrap_or_default();
                let mut list = list;
                list.push(record.clone());
                value["reviews"] = Value::Array(list);
                serde_json::to_string_pretty(&value).unwrap_or(text)
            }
            _ => text,
        }
    };
    if let Some(note) = read_note(repo, commit.id) {
        write_note(repo, new, &with_review(note))?;
    }
    if let Some(report) = read_report(repo, commit.id) {
        write_report(repo, new, &with_review(report))?;
    }
    Ok(Landed::Rewritten {
        old: commit.id,
        new,
    })
}

/// A commit on `head` that reverts the rejected hunks: each file 3-way merged (base: the
/// AI commit's version, ours: HEAD's, theirs: the version without the rejected hunks), so
/// commits made since stay; where they changed the same lines, refused.
pub(super) fn revert(
    repo: &Repository,
    commit: &CommitInfo,
    head: Oid,
    kept: &Kept,
    id: &str,
    n: usize,
) -> Result<Landed, TxError> {
    let head_tree = commits::read(repo, head)?.tree;
    let mut values = Vec::new();
    for (path, without) in kept {
        let base = crate::git::hunks::entry_at(repo, commit.tree, path)?;
        let ours = crate::git::hunks::entry_at(repo, head_tree, path)?;
        match merge::merge_entry(repo, path, base, ours, *without)? {
            Ok(entry) => values.push((path.clone(), entry)),
            Err(_) => {
                return Err(TxError::Refused {
                    message: format!(
                        "commits made since {} changed the same lines of {}",
                        short_oid(commit.id),
                        path.display()
                    ),
                    hint: "edit the file by hand (`git revert -n` shows the conflict), or keep that hunk".into(),
                });
            }
        }
    }
    let tree = tree_with_values(repo, head_tree, &values)?;
    let message = format!(
        "AI review: rejected {n} {} of {}\n\n{REVIEW_TRAILER}: {id}\n{REVIEWED_TRAILER}: {}\n",
        if n == 1 { "hunk" } else { "hunks" },
        commit.summary,
        commit.id
    );
    let new = crate::git::sign::write_commit(
        repo,
        tree,
        &[head],
        &message,
        &crate::git::sign::SignRequest::AsConfigured,
    )
    .map_err(crate::git::sign::SignError::into_git)?;
    Ok(Landed::Reverted { commit: new })
}
