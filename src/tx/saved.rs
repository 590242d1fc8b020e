//! Saved work: what git-loaf moved out of the user's files to make room (a forced undo, a
//! step-back onto a commit that changes a file the user was editing, a walk that could not
//! step forward), kept as `refs/loaf/saved/<id>` until `git loaf restore <id>` puts it back.
//!
//! Restoring exactly needs more than the files: which were staged, which untracked, and
//! which paths the work changed (against the state it was made on, the *base*). The ref
//! names a commit laid out like `git stash`'s, so that git keeps every tree alive:
//!
//! ```text
//! refs/loaf/saved/<id> → commit  tree: the saved working tree
//!                                parents: HEAD then (if any), details
//! details              → commit  tree: index/ (the saved index)
//!                                      base/ (the base's working tree)
//!                                      base-index/ (the base's index)
//! ```
//!
//! A ref written before this layout (a commit holding the working tree on HEAD, or HEAD
//! itself when a forced undo moved away from commits) reads as work on HEAD with nothing
//! staged.

use std::collections::BTreeSet;
use std::path::PathBuf;

use git2::{Oid, Repository};

use super::carry::Work;
use crate::git::commit::write_commit;
use crate::git::treediff::changed_paths;

/// Where saved work lives.
pub(crate) const SAVED_PREFIX: &str = "refs/loaf/saved/";

/// The subject of the details commit, by which a reader tells the layout apart.
const DETAILS_SUBJECT: &str = "loaf: saved work details";

/// One piece of saved work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SavedWork {
    /// Its id (the operation that saved it).
    pub id: String,
    /// What saved it, in words (the saved commit's subject).
    pub why: String,
    /// When it was saved (seconds since the epoch).
    pub time: i64,
    /// HEAD when it was saved.
    pub head: Option<Oid>,
    /// The state the work was made on: the paths where `work` differs from it are the work.
    pub base: Work,
    /// The saved working tree and index.
    pub work: Work,
    /// Whether the ref names commits of the user's (a forced undo that moved away from
    /// commits made since, the tree clean) rather than uncommitted work.
    pub commits: bool,
}

impl SavedWork {
    /// The paths the saved work changed (in the files or the index), sorted.
    pub fn paths(&self, repo: &Repository) -> Result<Vec<PathBuf>, git2::Error> {
        let mut paths: BTreeSet<PathBuf> =
            changed_paths(repo, Some(self.base.work), Some(self.work.work))?;
        paths.extend(changed_paths(
            repo,
            Some(self.base.index),
            Some(self.work.index),
        )?);
        Ok(paths.into_iter().collect())
    }
}

/// Saves `work`, made on `base` with HEAD at `head`, as `refs/loaf/saved/<id>`; `why` says
/// what saved it. Returns the ref's name.
pub(crate) fn save_work(
    repo: &Repository,
    id: &str,
    why: &str,
    head: Option<Oid>,
    base: Work,
    work: Work,
) -> Result<String, git2::Error> {
    let mut details = repo.treebuilder(None)?;
    details.insert("index", work.index, 0o040000)?;
    details.insert("base", base.work, 0o040000)?;
    details.insert("base-index", base.index, 0o040000)?;
    let details = write_commit(repo, details.write()?, &[], DETAILS_SUBJECT)?;
    let parents: Vec<Oid> = head.into_iter().chain([details]).collect();
    let commit = write_commit(repo, work.work, &parents, why)?;
    let name = format!("{SAVED_PREFIX}{id}");
    repo.reference(&name, commit, true, "git-loaf: saved work")?;
    Ok(name)
}

/// The saved work `id`, if there is any.
pub fn read(repo: &Repository, id: &str) -> Result<Option<SavedWork>, git2::Error> {
    let reference = match repo.find_reference(&format!("{SAVED_PREFIX}{id}")) {
        Ok(reference) => reference,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let commit = reference.peel_to_commit()?;
    Ok(Some(of_commit(id, &commit)?))
}

/// Every piece of saved work, oldest first.
pub fn list(repo: &Repository) -> Result<Vec<SavedWork>, git2::Error> {
    let mut out = Vec::new();
    for reference in repo.references_glob(&format!("{SAVED_PREFIX}*"))? {
        let reference = reference?;
        let Some(id) = reference
            .name()
            .ok()
            .and_then(|n| n.strip_prefix(SAVED_PREFIX))
            .map(str::to_owned)
        else {
            continue;
        };
        let commit = reference.peel_to_commit()?;
        out.push(of_commit(&id, &commit)?);
    }
    out.sort_by(|a, b| (a.time, &a.id).cmp(&(b.time, &b.id)));
    Ok(out)
}

/// Where restored work waits, in case its restore is undone.
pub(crate) const RESTORED_PREFIX: &str = "refs/loaf/restored/";

/// Moves the saved work `id` out of the list once it is restored (under
/// `refs/loaf/restored/<id>`, so that an undo of the restore can list it again).
pub(crate) fn put_away(repo: &Repository, id: &str) -> Result<(), git2::Error> {
    rename(
        repo,
        &format!("{SAVED_PREFIX}{id}"),
        &format!("{RESTORED_PREFIX}{id}"),
    )
}

/// Lists the saved work `id` again (its restore, or the step that brought it back, was
/// undone); nothing when it was not put away.
pub(crate) fn bring_back(repo: &Repository, id: &str) -> Result<(), git2::Error> {
    rename(
        repo,
        &format!("{RESTORED_PREFIX}{id}"),
        &format!("{SAVED_PREFIX}{id}"),
    )
}

fn rename(repo: &Repository, from: &str, to: &str) -> Result<(), git2::Error> {
    match repo.find_reference(from) {
        Ok(mut reference) => reference
            .rename(to, true, "git-loaf: saved work")
            .map(|_| ()),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

fn of_commit(id: &str, commit: &git2::Commit<'_>) -> Result<SavedWork, git2::Error> {
    let subject = |c: &git2::Commit<'_>| c.summary().ok().flatten().map(str::to_owned);
    let why = subject(commit).unwrap_or_default();
    let time = commit.committer().when().seconds();
    let details = commit
        .parents()
        .next_back()
        .filter(|p| subject(p).as_deref() == Some(DETAILS_SUBJECT));
    let head = commit
        .parents()
        .find(|p| subject(p).as_deref() != Some(DETAILS_SUBJECT))
        .map(|p| p.id());
    if let Some(details) = details {
        let tree = details.tree()?;
        let subtree = |name: &str| -> Result<Oid, git2::Error> {
            tree.get_name(name)
                .map(|e| e.id())
                .ok_or_else(|| git2::Error::from_str(&format!("saved work {id}: no {name}/")))
        };
        return Ok(SavedWork {
            id: id.to_owned(),
            why,
            time,
            head,
            base: Work {
                work: subtree("base")?,
                index: subtree("base-index")?,
            },
            work: Work {
                work: commit.tree_id(),
                index: subtree("index")?,
            },
            commits: false,
        });
    }
    // The older layout: the working tree on HEAD, nothing staged (or HEAD itself: the
    // user's own commits, whose subjects are theirs).
    let commits = !why.starts_with("loaf: ");
    let head_tree = match commit.parent(0) {
        Ok(parent) => parent.tree_id(),
        Err(_) => commit.tree_id(),
    };
    Ok(SavedWork {
        id: id.to_owned(),
        why,
        time,
        head,
        base: Work {
            work: head_tree,
            index: head_tree,
        },
        work: Work {
            work: commit.tree_id(),
            index: head_tree,
        },
        commits,
    })
}
