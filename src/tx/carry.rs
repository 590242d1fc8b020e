//! Carrying uncommitted work across a step. `step-back` carries it as `git switch` carries
//! local changes ([`across`]): work in a file the step does not touch stays in place, work in
//! a file it does touch is kept aside. `step-forward` ([`carry`]): the user's edits made while
//! stepped back, which are relative to the commit they stood on, merged 3-way into the
//! changes kept for the commit they step onto. Where both changed the same lines, the file
//! gets conflict markers with both sides; where a side is not text or deleted the file, the
//! user's version stays in place. Either way nothing is dropped: the caller keeps the kept
//! side under a ref, and the user's side is the operation log's before state.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use git2::{MergeFileInput, MergeFileOptions, Oid, Repository};

use crate::git::treebuild::{Value, tree_with_values};
use crate::git::treediff::{blob_at, changed_paths};

/// Two sides of uncommitted work: a working tree and an index, as trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    /// The working tree.
    pub work: Oid,
    /// The index.
    pub index: Oid,
}

/// The result of [`carry`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Carried {
    /// The merged working tree and index.
    pub into: Work,
    /// Paths where the two sides could not both be kept in the file: conflict markers in
    /// text files ([`Carried::marked`]), the user's version otherwise.
    pub conflicts: Vec<PathBuf>,
    /// The conflicts written into the file with conflict markers, both sides in it.
    pub marked: Vec<PathBuf>,
}

/// `ours` (the user's work, edits made on top of `base`) carried into `theirs` (the kept
/// work): every path where `ours` differs from `base` is merged 3-way; the rest is `theirs`
/// as it is. Working tree and index are merged each with its own side. `labels` name the
/// two sides in conflict markers.
pub fn carry(
    repo: &Repository,
    base: Work,
    ours: Work,
    theirs: Work,
    labels: (&str, &str),
) -> Result<Carried, git2::Error> {
    let mut conflicts = BTreeSet::new();
    let mut marked = BTreeSet::new();
    let mut side = |base: Oid, ours: Oid, theirs: Oid, in_file: bool| -> Result<Oid, git2::Error> {
        let base_tree = repo.find_tree(base)?;
        let (ours_tree, theirs_tree) = (repo.find_tree(ours)?, repo.find_tree(theirs)?);
        let mut values: Vec<(PathBuf, Value)> = Vec::new();
        for path in changed_paths(repo, Some(base), Some(ours))? {
            let (b, o, t) = (
                blob_at(&base_tree, &path),
                blob_at(&ours_tree, &path),
                blob_at(&theirs_tree, &path),
            );
            let value = match merge3(repo, &path, b, o, t, labels)? {
                Merged::Clean(value) => value,
                // In the file both sides are shown (or the user's kept); in the index the
                // kept side stays staged, so the user's conflict shows as an unstaged change.
                Merged::Conflict(value) => {
                    conflicts.insert(path.clone());
                    if in_file { value } else { t }
                }
                Merged::Marked(value) => {
                    conflicts.insert(path.clone());
                    if in_file {
                        marked.insert(path.clone());
                        value
                    } else {
                        t
                    }
                }
            };
            values.push((path, value));
        }
        tree_with_values(repo, theirs, &values)
    };
    let work = side(base.work, ours.work, theirs.work, true)?;
    let index = side(base.index, ours.index, theirs.index, false)?;
    Ok(Carried {
        into: Work { work, index },
        conflicts: conflicts.into_iter().collect(),
        marked: marked.into_iter().collect(),
    })
}

/// The result of [`across`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Across {
    /// The files and index after the step: the commit stepped onto, with the carried work.
    pub into: Work,
    /// Paths of the user's work that stay in place.
    pub carried: Vec<PathBuf>,
    /// Paths of the user's work the step touches: they get the commit's version, the work
    /// in them is kept aside.
    pub kept: Vec<PathBuf>,
}

/// The user's work `ours` (on a commit whose tree is `from`) carried onto the commit whose
/// tree is `to`, as `git switch` carries local changes: every path the user changed (in the
/// files or the index) that holds the same entry in both trees keeps the user's file and
/// index entry; a path where they differ (or where `to` has a file on the way to it, or a
/// folder in its place) gets `to`'s version, and the user's work in it is reported kept.
pub fn across(repo: &Repository, ours: Work, from: Oid, to: Oid) -> Result<Across, git2::Error> {
    let mut users = changed_paths(repo, Some(from), Some(ours.work))?;
    users.extend(changed_paths(repo, Some(from), Some(ours.index))?);
    let (from_tree, to_tree) = (repo.find_tree(from)?, repo.find_tree(to)?);
    let (work_tree, index_tree) = (repo.find_tree(ours.work)?, repo.find_tree(ours.index)?);
    let (mut carried, mut kept) = (Vec::new(), Vec::new());
    let (mut work, mut index) = (Vec::new(), Vec::new());
    for path in users {
        let blocked = to_tree
            .get_path(&path)
            .is_ok_and(|e| e.kind() == Some(git2::ObjectType::Tree))
            || path.ancestors().skip(1).any(|folder| {
                !folder.as_os_str().is_empty()
                    && to_tree
                        .get_path(folder)
                        .is_ok_and(|e| e.kind() != Some(git2::ObjectType::Tree))
            });
        if blocked || blob_at(&from_tree, &path) != blob_at(&to_tree, &path) {
            kept.push(path);
            continue;
        }
        work.push((path.clone(), blob_at(&work_tree, &path)));
        index.push((path.clone(), blob_at(&index_tree, &path)));
        carried.push(path);
    }
    Ok(Across {
        into: Work {
            work: tree_with_values(repo, to, &work)?,
            index: tree_with_values(repo, to, &index)?,
        },
        carried,
        kept,
    })
}

/// The work a step-back kept aside: the user's work `before` (on a commit whose tree is
/// `head_tree`) on the paths the step did not carry (where its `after` state differs), laid
/// on `head_tree`; `None` when it carried everything.
pub(crate) fn kept_aside(
    repo: &Repository,
    head_tree: Oid,
    before: Work,
    after: Work,
) -> Result<Option<Work>, git2::Error> {
    let mut users = changed_paths(repo, Some(head_tree), Some(before.work))?;
    users.extend(changed_paths(repo, Some(head_tree), Some(before.index))?);
    let trees = [before.work, after.work, before.index, after.index]
        .map(|id| repo.find_tree(id))
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let (mut work, mut index) = (Vec::new(), Vec::new());
    for path in users {
        let at: Vec<_> = trees.iter().map(|tree| blob_at(tree, &path)).collect();
        if at[0] != at[1] || at[2] != at[3] {
            work.push((path.clone(), at[0]));
            index.push((path, at[2]));
        }
    }
    if work.is_empty() {
        return Ok(None);
    }
    Ok(Some(Work {
        work: tree_with_values(repo, head_tree, &work)?,
        index: tree_with_values(repo, head_tree, &index)?,
    }))
}

/// One path merged.
enum Merged {
    /// Both sides' changes are in it.
    Clean(Value),
    /// They could not be merged (not text, or deleted on a side): the value is ours.
    Conflict(Value),
    /// They could not be merged: the value holds both, between conflict markers.
    Marked(Value),
}

fn merge3(
    repo: &Repository,
    path: &Path,
    base: Value,
    ours: Value,
    theirs: Value,
    (our_label, their_label): (&str, &str),
) -> Result<Merged, git2::Error> {
    if ours == base || ours == theirs {
        return Ok(Merged::Clean(theirs));
    }
    if theirs == base {
        return Ok(Merged::Clean(ours));
    }
    let (Some(b), Some(o), Some(t)) = (base, ours, theirs) else {
        return Ok(Merged::Conflict(ours));
    };
    let blobs = (
        repo.find_blob(b.0),
        repo.find_blob(o.0),
        repo.find_blob(t.0),
    );
    let (Ok(b_blob), Ok(o_blob), Ok(t_blob)) = blobs else {
        return Ok(Merged::Conflict(ours)); // a submodule or a link: not text to merge
    };
    if b_blob.is_binary() || o_blob.is_binary() || t_blob.is_binary() {
        return Ok(Merged::Conflict(ours));
    }
    let mut options = MergeFileOptions::new();
    let shown = path.display().to_string();
    options
        .ancestor_label(format!("{shown} (commit)"))
        .our_label(format!("{shown} ({our_label})"))
        .their_label(format!("{shown} ({their_label})"));
    let result = git2::merge_file(
        &input(b_blob.content()),
        &input(o_blob.content()),
        &input(t_blob.content()),
        Some(&mut options),
    )?;
    let value = Some((crate::git::repo::write_blob(repo, result.content())?, t.1));
    Ok(if result.is_automergeable() {
        Merged::Clean(value)
    } else {
        Merged::Marked(value)
    })
}

fn input(content: &[u8]) -> MergeFileInput<'_> {
    let mut input = MergeFileInput::new();
    input.content(content);
    input
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{committed_repo, git, write_file};
    use crate::tx::checkpoint;

    fn tree(root: &Path, rev: &str) -> Oid {
        Oid::from_str(git(root, &["rev-parse", rev]).trim()).expect("an id")
    }

    /// Kept: line 1 changed and a new file; the user's: line 3 changed (merges), and
    /// `gone.txt` changed by both (conflict markers with both sides).
    #[test]
    fn merges_separate_lines_and_marks_the_same_lines_keeping_both() {
        let dir = committed_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let base = tree(root, "HEAD^{tree}");
        write_file(root, "a.txt", "ONE\n2\n3\n");
        write_file(root, "gone.txt", "kept\n");
        write_file(root, "k.txt", "k\n");
        let kept = checkpoint::take(&repo).expect("checkpoint");
        git(root, &["checkout", "-q", "--", "."]);
        std::fs::remove_file(root.join("k.txt")).expect("rm");
        write_file(root, "a.txt", "1\n2\nTHREE\n");
        write_file(root, "gone.txt", "mine\n");
        let mine = checkpoint::take(&repo).expect("checkpoint");
        let work = |c: &checkpoint::Checkpoint| Work {
            work: c.work_tree,
            index: c.index_tree,
        };
        let carried = carry(
            &repo,
            Work {
                work: base,
                index: base,
            },
            work(&mine),
            work(&kept),
            ("yours", "kept"),
        )
        .expect("carries");
        assert_eq!(carried.conflicts, vec![PathBuf::from("gone.txt")]);
        assert_eq!(
            carried.marked, carried.conflicts,
            "text: both sides in the file"
        );
        let cat = |path: &str| {
            git(
                root,
                &["cat-file", "-p", &format!("{}:{path}", carried.into.work)],
            )
        };
        assert_eq!(cat("a.txt"), "ONE\n2\nTHREE\n");
        assert_eq!(cat("k.txt"), "k\n");
        let both = cat("gone.txt");
        assert!(
            both.contains("<<<<<<< gone.txt (yours)\nmine\n=======\nkept\n>>>>>>> gone.txt (kept)"),
            "{both}"
        );
        assert_eq!(
            carried.into.index, base,
            "nothing was staged on either side"
        );
    }

    /// step-back's carry: the user's edit of a file both commits hold alike stays; an edit
    /// of a file the step changes is kept; an untracked file where the commit stepped onto
    /// has a file on its way (`d` beside `d/x`) is kept too, never laid over it.
    #[test]
    fn across_carries_untouched_files_and_keeps_touched_or_blocked_ones() {
        let dir = committed_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let from = tree(root, "HEAD^{tree}");
        // The commit stepped onto: gone.txt changed, and a file `d`.
        write_file(root, "gone.txt", "older\n");
        write_file(root, "d", "a file\n");
        git(root, &["add", "-A"]);
        let to = Oid::from_str(git(root, &["write-tree"]).trim()).expect("a tree");
        git(root, &["reset", "-q", "--hard"]); // `d` was staged: removed with it
        // The user's work: a.txt (untouched by the step), gone.txt (touched), d/x (blocked).
        write_file(root, "a.txt", "1\n2\n3\nmine\n");
        write_file(root, "gone.txt", "mine\n");
        write_file(root, "d/x", "untracked\n");
        let mine = checkpoint::take(&repo).expect("checkpoint");
        let ours = Work {
            work: mine.work_tree,
            index: mine.index_tree,
        };
        let across = across(&repo, ours, from, to).expect("carries");
        assert_eq!(across.carried, vec![PathBuf::from("a.txt")]);
        assert_eq!(
            across.kept,
            vec![PathBuf::from("d/x"), PathBuf::from("gone.txt")]
        );
        let cat = |tree: Oid, path: &str| git(root, &["cat-file", "-p", &format!("{tree}:{path}")]);
        assert_eq!(cat(across.into.work, "a.txt"), "1\n2\n3\nmine\n");
        assert_eq!(cat(across.into.work, "gone.txt"), "older\n");
        assert_eq!(cat(across.into.work, "d"), "a file\n");
        assert_eq!(
            cat(across.into.index, "a.txt"),
            "1\n2\n3\n",
            "unstaged stays unstaged"
        );
        let kept = kept_aside(&repo, from, ours, across.into)
            .expect("reads")
            .expect("some work kept aside");
        assert_eq!(cat(kept.work, "gone.txt"), "mine\n");
        assert_eq!(
            cat(kept.work, "a.txt"),
            "1\n2\n3\n",
            "the carried file is not in it"
        );
    }
}
