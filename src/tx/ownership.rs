//! Ownership (docs/apply.md, "What an apply commits, and what it leaves alone"): a commit holds
//! exactly what its author changed, at hunk level, and the user's uncommitted work stays the user's
//! — uncommitted, in place.
//!
//! A reply starts from the user's working tree (HEAD plus their uncommitted work) and
//! leaves its result in the stage. For each path it changed:
//!
//! - **the commit** gets the reply's change laid on HEAD's version: a 3-way merge with the
//!   user's version as base, HEAD's as ours and the reply's result as theirs. Where the reply
//!   changed the user's own uncommitted lines (the merge overlaps), the reply's version of
//!   those hunks is committed, the user's lines there with it, and the path is *carried*,
//!   named with those lines; the user's other hunks stay out. A file that exists only
//!   uncommitted, or is not text, is committed whole;
//! - **the working tree** gets the commit with the user's uncommitted change laid back on it
//!   (base HEAD, ours the commit, theirs the user's version). Where the reply's code reverted
//!   or deleted the user's work (`git checkout -- .`, `git reset --hard`, `git stash`, `rm`),
//!   that work comes back and the path is *kept*; a file holding the user's work that the
//!   reply deleted is not deleted;
//! - **the index** gets the commit with the user's staged change laid on it, so staged hunks
//!   stay staged and nothing else is.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::merge::{Entry, merge_entry, merge_entry_favoring};
use crate::git::treebuild::tree_with_values;
use crate::git::treediff::{blob_at, changed_paths};

/// The commit's tree, and the files whose uncommitted lines of the user's it takes along.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Committed {
    /// HEAD's tree with the reply's change of each changed path.
    pub tree: Oid,
    /// The paths whose own uncommitted lines the reply changed, as `path (lines 3-5, 9)`.
    pub carried: Vec<String>,
    /// The changed paths whose commit differs from HEAD (a path the reply only reverted to
    /// HEAD's version is not among them).
    pub changed: Vec<PathBuf>,
}

/// The user's working tree and index once the commit is published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UserAfter {
    /// The working tree.
    pub work: Oid,
    /// The index.
    pub index: Oid,
    /// The paths where the reply's result would have discarded the user's uncommitted work,
    /// which the working tree keeps instead.
    pub kept: Vec<PathBuf>,
}

/// The user's state as the checkpoint recorded it, and what the reply made of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sides {
    /// HEAD's tree.
    pub head: Oid,
    /// The user's working tree (the reply's start).
    pub work: Oid,
    /// The user's index.
    pub index: Oid,
    /// The stage as the reply left it.
    pub staged: Oid,
}

/// The commit's tree for the reply's result `sides.staged`, at the `changed` paths (where the
/// stage differs from the user's working tree).
pub(crate) fn commit_tree(
    repo: &Repository,
    sides: Sides,
    changed: &[PathBuf],
) -> Result<Committed, git2::Error> {
    if sides.work == sides.head {
        // Nothing uncommitted: the reply's result is its change.
        return Ok(Committed {
            tree: sides.staged,
            carried: Vec::new(),
            changed: changed.to_vec(),
        });
    }
    let trees = Trees::of(repo, sides)?;
    let mut values = Vec::new();
    let mut carried = Vec::new();
    for path in changed {
        let (head, work, staged) = (trees.head(path), trees.work(path), trees.staged(path));
        let entry = if work == head {
            staged
        } else if staged.is_none() {
            // The reply deleted a file holding the user's work: the deletion is not the
            // reply's to commit (the working tree keeps the file, see `user_after`).
            head
        } else {
            match merge_entry(repo, path, work, head, staged)? {
                Ok(merged) => merged,
                Err(_) => {
                    // The hunks that overlap the user's own lines are the reply's (the
                    // user's lines there with them); the others merge as usual, so the
                    // user's other hunks stay out. A side absent or not text: the whole file.
                    let favor = Some(git2::FileFavor::Theirs);
                    let merged = merge_entry_favoring(repo, path, (work, head, staged), favor)?
                        .unwrap_or(staged);
                    let lines = carried_lines(repo, head, work, merged)?;
                    carried.push(format!("{} ({lines})", path.display()));
                    merged
                }
            }
        };
        values.push((path.clone(), entry));
    }
    let tree = tree_with_values(repo, sides.head, &values)?;
    let changed = changed_paths(repo, Some(sides.head), Some(tree))?
        .into_iter()
        .collect();
    Ok(Committed {
        tree,
        carried,
        changed,
    })
}

/// The user's working tree and index after the commit `committed` (a tree) is published:
/// at each path the reply or the commit changed, the commit with the user's uncommitted
/// (respectively staged) change laid back on it; everywhere else, as they were.
pub(crate) fn user_after(
    repo: &Repository,
    sides: Sides,
    committed: Oid,
) -> Result<UserAfter, git2::Error> {
    if sides.work == sides.head && sides.index == sides.head {
        // Nothing uncommitted: the user gets the commit, in the files and the index (the
        // hooks may have made it differ from what the reply left).
        return Ok(UserAfter {
            work: sides.staged,
            index: committed,
            kept: Vec::new(),
        });
    }
    let mut paths: Vec<PathBuf> = changed_paths(repo, Some(sides.work), Some(sides.staged))?
        .into_iter()
        .chain(changed_paths(repo, Some(sides.head), Some(committed))?)
        .collect();
    paths.sort();
    paths.dedup();
    let trees = Trees::of(repo, sides)?;
    let commit = repo.find_tree(committed)?;
    let (mut work_values, mut index_values, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    for path in &paths {
        let (head, work, staged) = (trees.head(path), trees.work(path), trees.staged(path));
        let committed = blob_at(&commit, path);
        // Where the commit carried the user's lines, laying them on again overlaps: the
        // reply's result stands.
        let work_after = if work == head {
            staged
        } else {
            lay_on(repo, path, head, committed, work)?.unwrap_or(staged)
        };
        if work_after != staged {
            kept.push(path.clone());
        }
        let index = trees.index(path);
        let index_after = if index == head {
            committed
        } else {
            lay_on(repo, path, head, committed, index)?.unwrap_or(committed)
        };
        work_values.push((path.clone(), work_after));
        index_values.push((path.clone(), index_after));
    }
    Ok(UserAfter {
        work: tree_with_values(repo, sides.work, &work_values)?,
        index: tree_with_values(repo, sides.index, &index_values)?,
        kept,
    })
}

/// The user's index once the commit `committed` (a tree on top of `head`) is published,
/// for a front door that leaves the working tree as it is (record mode): at each path the
/// commit changed, the commit's version with the user's staged change laid back on it (the
/// commit's alone where the two overlap); everywhere else, as it was.
pub(crate) fn index_after(
    repo: &Repository,
    head: Oid,
    index: Oid,
    committed: Oid,
) -> Result<Oid, git2::Error> {
    let paths = changed_paths(repo, Some(head), Some(committed))?;
    let (head_tree, index_tree, commit) = (
        repo.find_tree(head)?,
        repo.find_tree(index)?,
        repo.find_tree(committed)?,
    );
    let mut values = Vec::new();
    for path in paths {
        let (old, staged, new) = (
            blob_at(&head_tree, &path),
            blob_at(&index_tree, &path),
            blob_at(&commit, &path),
        );
        let value = if staged == old {
            new
        } else {
            lay_on(repo, &path, old, new, staged)?.unwrap_or(new)
        };
        values.push((path, value));
    }
    tree_with_values(repo, index, &values)
}

/// `change` (made on `base`) laid on `onto`; `None` where the two overlap.
fn lay_on(
    repo: &Repository,
    path: &Path,
    base: Entry,
    onto: Entry,
    change: Entry,
) -> Result<Option<Entry>, git2::Error> {
    Ok(merge_entry(repo, path, base, onto, change)?.ok())
}

/// The user's lines (of `work`, as numbered there) that the commit `committed` takes
/// along: their hunks against HEAD that overlap a hunk of the commit's; `lines 3-5, 9`.
fn carried_lines(
    repo: &Repository,
    head: Entry,
    work: Entry,
    committed: Entry,
) -> Result<String, git2::Error> {
    let (Some(head), Some(work), Some(committed)) = (head, work, committed) else {
        return Ok("the whole file, uncommitted before".to_owned());
    };
    let (old, users, commit) = (
        repo.find_blob(head.0)?,
        repo.find_blob(work.0)?,
        repo.find_blob(committed.0)?,
    );
    if old.is_binary() || users.is_binary() || commit.is_binary() {
        return Ok("a binary file".to_owned());
    }
    let users_hunks = hunks(&old, &users)?;
    let commit_hunks = hunks(&old, &commit)?;
    // Ranges of HEAD's lines; an insertion (no line of HEAD's) sits between two lines.
    let overlaps = |a: &Hunk, b: &Hunk| {
        a.old_start <= b.old_start + b.old_lines.max(1)
            && b.old_start <= a.old_start + a.old_lines.max(1)
    };
    let mut ranges = Vec::new();
    for hunk in users_hunks
        .iter()
        .filter(|u| commit_hunks.iter().any(|c| overlaps(u, c)))
    {
        let (start, count) = (hunk.new_start, hunk.new_lines.max(1));
        ranges.push(if count == 1 {
            start.to_string()
        } else {
            format!("{start}-{}", start + count - 1)
        });
    }
    if ranges.is_empty() {
        return Ok("lines next to the reply's change".to_owned());
    }
    let word = if ranges.len() == 1 && !ranges[0].contains('-') {
        "line"
    } else {
        "lines"
    };
    Ok(format!("{word} {}", ranges.join(", ")))
}

/// One hunk's line ranges: `old` in HEAD's version, `new` in the other.
struct Hunk {
    old_start: u32,
    old_lines: u32,
    new_start: u32,
    new_lines: u32,
}

/// The hunks from `old` to `new`, without context lines.
fn hunks(old: &git2::Blob<'_>, new: &git2::Blob<'_>) -> Result<Vec<Hunk>, git2::Error> {
    let mut options = git2::DiffOptions::new();
    options.context_lines(0);
    let patch = git2::Patch::from_blobs(old, None, new, None, Some(&mut options))?;
    (0..patch.num_hunks())
        .map(|i| {
            let (hunk, _) = patch.hunk(i)?;
            Ok(Hunk {
                old_start: hunk.old_start(),
                old_lines: hunk.old_lines(),
                new_start: hunk.new_start(),
                new_lines: hunk.new_lines(),
            })
        })
        .collect()
}

/// The four trees, opened once.
struct Trees<'r> {
    head: git2::Tree<'r>,
    work: git2::Tree<'r>,
    index: git2::Tree<'r>,
    staged: git2::Tree<'r>,
}

impl<'r> Trees<'r> {
    fn of(repo: &'r Repository, sides: Sides) -> Result<Trees<'r>, git2::Error> {
        Ok(Trees {
            head: repo.find_tree(sides.head)?,
            work: repo.find_tree(sides.work)?,
            index: repo.find_tree(sides.index)?,
            staged: repo.find_tree(sides.staged)?,
        })
    }

    fn head(&self, path: &Path) -> Entry {
        blob_at(&self.head, path)
    }

    fn work(&self, path: &Path) -> Entry {
        blob_at(&self.work, path)
    }

    fn index(&self, path: &Path) -> Entry {
        blob_at(&self.index, path)
    }

    fn staged(&self, path: &Path) -> Entry {
        blob_at(&self.staged, path)
    }
}

#[cfg(test)]
mod tests;
