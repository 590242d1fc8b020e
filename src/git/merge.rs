//! Edits the user saved while an apply ran, on files the apply also changed: merged 3-way
//! (base: the file as the checkpoint recorded it; ours: the user's file now; theirs: what the
//! apply made) when the two edits do not touch the same lines, so the apply can still be
//! published without overwriting anything. The commit keeps only the apply's change; the
//! user's new edit stays in the working tree, uncommitted, as any later edit would.

use std::path::{Path, PathBuf};

use git2::{MergeFileInput, Oid, Repository};

use super::publish::{Transition, blob_at, file_blob};
use super::treebuild::tree_with_values;

/// Why the user's edits could not be merged: the commit is then kept, not published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap(pub String);

/// Merges the user's current files at `paths` into `t`: their `from_work` becomes what the
/// user has now and their `to_work` the merge, in the transition and in its log entry.
/// `Ok(Err(..))` when a path cannot be merged (both changed the same lines, a side deleted
/// or created it, the user staged it, or it is not text).
pub fn merge_users_edits(
    repo: &Repository,
    t: &mut Transition,
    paths: &[PathBuf],
) -> Result<Result<Vec<PathBuf>, Overlap>, git2::Error> {
    let from_work = repo.find_tree(Oid::from_str(&t.from_work)?)?;
    let from_index = repo.find_tree(Oid::from_str(&t.from_index)?)?;
    let to_work = repo.find_tree(Oid::from_str(&t.to_work)?)?;
    let index = repo.index()?;
    let mut users = Vec::new();
    let mut merged = Vec::new();
    for path in paths {
        let shown = path.display();
        let staged = index.get_path(path, 0).map(|e| e.id);
        if staged != blob_at(&from_index, path).map(|b| b.0) {
            return Ok(Err(Overlap(format!(
                "you staged {shown} while git-loaf ran"
            ))));
        }
        let base = blob_at(&from_work, path);
        let ours = file_blob(repo, &t.workdir, path, &from_work)
            .map(|id| (id, base.map_or(0o100644, |b| b.1)));
        let merged_entry = match merge_entry(repo, path, base, ours, blob_at(&to_work, path))? {
            Ok(entry) => entry,
            Err(overlap) => return Ok(Err(overlap)),
        };
        if ours.is_none() || merged_entry.is_none() {
            return Ok(Err(Overlap(format!(
                "you and the reply both changed {shown} (created or deleted it)"
            ))));
        }
        users.push((path.clone(), ours));
        merged.push((path.clone(), merged_entry));
    }
    let from = tree_with_values(repo, from_work.id(), &users)?.to_string();
    let to = tree_with_values(repo, to_work.id(), &merged)?.to_string();
    t.from_work = from.clone();
    t.op.before.work = from;
    t.to_work = to.clone();
    t.op.after.work = to;
    Ok(Ok(paths.to_vec()))
}

/// One path merged 3-way: the entry it should have, `None` for deleted. A side that did not
/// change it gives the other side's entry; both changing it, the texts are merged when their
/// edits do not overlap.
pub fn merge_entry(
    repo: &Repository,
    path: &Path,
    base: Option<(Oid, i32)>,
    ours: Option<(Oid, i32)>,
    theirs: Option<(Oid, i32)>,
) -> Result<Result<Option<(Oid, i32)>, Overlap>, git2::Error> {
    let shown = path.display();
    if ours == base || ours == theirs {
        return Ok(Ok(theirs));
    }
    if theirs == base {
        return Ok(Ok(ours));
    }
    let (Some(base), Some(ours), Some(theirs)) = (base, ours, theirs) else {
        return Ok(Err(Overlap(format!(
            "you and the reply both changed {shown} (one side created or deleted it)"
        ))));
    };
    let (Ok(base_blob), Ok(ours_blob), Ok(theirs_blob)) = (
        repo.find_blob(base.0),
        repo.find_blob(ours.0),
        repo.find_blob(theirs.0),
    ) else {
        return Ok(Err(Overlap(format!("{shown} is not a regular file"))));
    };
    if base_blob.is_binary() || ours_blob.is_binary() || theirs_blob.is_binary() {
        return Ok(Err(Overlap(format!(
            "you and the reply both changed {shown}, a binary file"
        ))));
    }
    let result = git2::merge_file(
        &input(base_blob.content()),
        &input(ours_blob.content()),
        &input(theirs_blob.content()),
        None,
    )?;
    if !result.is_automergeable() {
        return Ok(Err(Overlap(format!(
            "you and the reply both changed the same lines of {shown}"
        ))));
    }
    Ok(Ok(Some((repo.blob(result.content())?, theirs.1))))
}

fn input(content: &[u8]) -> MergeFileInput<'_> {
    let mut input = MergeFileInput::new();
    input.content(content);
    input
}
