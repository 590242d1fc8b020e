//! Edits the user saved while an apply ran, on files the apply also changed: merged 3-way
//! (base: the file as the checkpoint recorded it; ours: the user's file now; theirs: what the
//! apply made) when the two edits do not touch the same lines, so the apply can still be
//! published without overwriting anything. The commit keeps only the apply's change; the
//! user's new edit stays in the working tree, uncommitted, as any later edit would.
//!
//! The same 3-way merge lands a kept commit on the user's state for `take` ([`land`]), after
//! [`replay`] has moved it onto the current HEAD.

use std::path::{Path, PathBuf};

use git2::{MergeFileInput, Oid, Repository};

use super::checkpoint::Checkpoint;
use super::last_look::file_blob;
use super::publish::Transition;
use crate::git::treebuild::tree_with_values;
use crate::git::treediff::blob_at;

/// One path's entry in a tree: blob and mode, `None` for absent.
pub(super) type Entry = Option<(Oid, i32)>;

/// Why the user's edits could not be merged: the commit is then kept, not published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Overlap(pub String);

/// Merges the user's current files at `paths` into `t`: their `from_work` becomes what the
/// user has now and their `to_work` the merge, in the transition and in its log entry.
/// `Ok(Err(..))` when a path cannot be merged (both changed the same lines, a side deleted
/// or created it, the user staged it, or it is not text).
pub(crate) fn merge_users_edits(
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
pub(crate) fn merge_entry(
    repo: &Repository,
    path: &Path,
    base: Option<(Oid, i32)>,
    ours: Option<(Oid, i32)>,
    theirs: Option<(Oid, i32)>,
) -> Result<Result<Option<(Oid, i32)>, Overlap>, git2::Error> {
    merge_entry_favoring(repo, path, (base, ours, theirs), None)
}

/// [`merge_entry`], where the hunks both sides changed are resolved to `favor`'s side when
/// it is given (a side absent, or not text, still overlaps).
pub(crate) fn merge_entry_favoring(
    repo: &Repository,
    path: &Path,
    (base, ours, theirs): (Entry, Entry, Entry),
    favor: Option<git2::FileFavor>,
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
    let mut options = git2::MergeFileOptions::new();
    if let Some(favor) = favor {
        options.favor(favor);
    }
    let result = git2::merge_file(
        &input(base_blob.content()),
        &input(ours_blob.content()),
        &input(theirs_blob.content()),
        Some(&mut options),
    )?;
    if !result.is_automergeable() {
        return Ok(Err(Overlap(format!(
            "you and the reply both changed the same lines of {shown}"
        ))));
    }
    Ok(Ok(Some((
        crate::git::repo::write_blob(repo, result.content())?,
        theirs.1,
    ))))
}

/// The working tree and index trees after a landing, and the paths merged with the user's
/// edits.
pub(crate) type Landing = (Oid, Oid, Vec<PathBuf>);

/// The working tree and index after landing `target` (a tree on top of `head_tree`) on the
/// user's state `cp`: each changed path merged with the user's uncommitted edits there.
pub fn land(
    repo: &Repository,
    cp: &Checkpoint,
    head_tree: Oid,
    target_tree: Oid,
    changed: &[PathBuf],
) -> Result<Result<Landing, Overlap>, git2::Error> {
    let (head, target) = (repo.find_tree(head_tree)?, repo.find_tree(target_tree)?);
    let (work, index) = (
        repo.find_tree(cp.work_tree)?,
        repo.find_tree(cp.index_tree)?,
    );
    let mut work_values = Vec::new();
    let mut index_values = Vec::new();
    let mut merged = Vec::new();
    for path in changed {
        let (base, theirs) = (blob_at(&head, path), blob_at(&target, path));
        let staged = blob_at(&index, path);
        if staged != base && staged != theirs {
            return Ok(Err(Overlap(format!(
                "you have staged changes to {}",
                path.display()
            ))));
        }
        let ours = blob_at(&work, path);
        let entry = match merge_entry(repo, path, base, ours, theirs)? {
            Ok(entry) => entry,
            Err(overlap) => return Ok(Err(overlap)),
        };
        if ours != base {
            merged.push(path.clone());
        }
        work_values.push((path.clone(), entry));
        index_values.push((path.clone(), theirs));
    }
    let work = tree_with_values(repo, cp.work_tree, &work_values)?;
    let index = tree_with_values(repo, cp.index_tree, &index_values)?;
    Ok(Ok((work, index, merged)))
}

/// `commit`'s change replayed onto `onto` (a cherry-pick, same message): the new commit, or
/// the paths that conflict.
pub fn replay(
    repo: &Repository,
    commit: Oid,
    onto: Oid,
) -> Result<Result<Oid, Vec<String>>, git2::Error> {
    let commit = repo.find_commit(commit)?;
    let onto = repo.find_commit(onto)?;
    let mut index = repo.cherrypick_commit(&commit, &onto, 0, None)?;
    if index.has_conflicts() {
        let paths: Vec<String> = index
            .conflicts()?
            .filter_map(|c| c.ok())
            .filter_map(|c| c.our.or(c.their).or(c.ancestor))
            .map(|e| String::from_utf8_lossy(&e.path).into_owned())
            .collect();
        return Ok(Err(paths));
    }
    let tree = index.write_tree_to(repo)?;
    let message = commit.message().ok().unwrap_or_default().to_owned();
    // A replayed commit lands on the user's branch: signed when commit.gpgSign asks, as
    // the apply's own commit is.
    let signed = crate::git::sign::write_commit(
        repo,
        tree,
        &[onto.id()],
        &message,
        &crate::git::sign::SignRequest::AsConfigured,
    );
    Ok(Ok(signed.map_err(crate::git::sign::SignError::into_git)?))
}

fn input(content: &[u8]) -> MergeFileInput<'_> {
    let mut input = MergeFileInput::new();
    input.content(content);
    input
}
