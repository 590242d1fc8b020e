//! Reading commits back for `log` and `show`: what a commit says ([`CommitInfo`]), HEAD's
//! first-parent chain, and a revision or apply id resolved to its commit.

use git2::{Commit, Oid, Repository};

use super::oplog::{self, OpKind};

/// What the operations read of a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitInfo {
    /// The commit.
    pub id: Oid,
    /// Its tree.
    pub tree: Oid,
    /// Its first parent (`None` for a root commit).
    pub parent: Option<Oid>,
    /// The whole message (empty when it is not UTF-8).
    pub message: String,
    /// The subject line (empty when it is not UTF-8).
    pub summary: String,
    /// Commit time, seconds since the Unix epoch.
    pub time: i64,
}

impl CommitInfo {
    fn of(commit: &Commit<'_>) -> CommitInfo {
        CommitInfo {
            id: commit.id(),
            tree: commit.tree_id(),
            parent: commit.parent_ids().next(),
            message: commit.message().unwrap_or("").to_owned(),
            summary: commit.summary().ok().flatten().unwrap_or("").to_owned(),
            time: commit.time().seconds(),
        }
    }
}

/// The commit `id`.
pub fn read(repo: &Repository, id: Oid) -> Result<CommitInfo, git2::Error> {
    Ok(CommitInfo::of(&repo.find_commit(id)?))
}

/// HEAD's first-parent chain, newest first, read as it is walked; `None` when HEAD names no
/// commit (an unborn branch).
pub(crate) fn first_parents(
    repo: &Repository,
) -> Result<Option<impl Iterator<Item = Result<CommitInfo, git2::Error>> + '_>, git2::Error> {
    let Ok(head) = repo.head().and_then(|h| h.peel_to_commit()) else {
        return Ok(None);
    };
    let mut walk = repo.revwalk()?;
    walk.push(head.id())?;
    walk.simplify_first_parent()?;
    Ok(Some(walk.map(move |oid| read(repo, oid?))))
}

/// An apply id (a kept commit under `refs/loaf/<id>`, or an apply in the operation log that
/// made a commit); else `rev` as git reads it. Ids come first: an id is six hex digits, which
/// git could also take for an abbreviated commit. `None` when it names no commit.
pub fn resolve(repo: &Repository, rev: &str) -> Result<Option<CommitInfo>, git2::Error> {
    let kept = repo.refname_to_id(&format!("refs/loaf/{rev}")).ok();
    let applied = || -> Result<Option<Oid>, git2::Error> {
        // Apply ids are six hex digits: anything else cannot be one, so the log is not read.
        if rev.len() != 6 || !rev.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        for entry in oplog::walk(repo) {
            let e = entry?;
            if e.kind == OpKind::Apply && e.id == rev && e.after.head != e.before.head {
                return Ok(e.after.head.and_then(|h| Oid::from_str(&h).ok()));
            }
        }
        Ok(None)
    };
    let by_id = match kept {
        Some(oid) => Some(oid),
        None => applied()?,
    };
    if let Some(info) = by_id.and_then(|oid| read(repo, oid).ok()) {
        return Ok(Some(info));
    }
    Ok(repo
        .revparse_single(rev)
        .and_then(|o| o.peel_to_commit())
        .ok()
        .map(|commit| CommitInfo::of(&commit)))
}

/// Whether commit `descendant` has `ancestor` in its history (false if either is not a
/// commit id).
pub(crate) fn descends_from(repo: &Repository, descendant: &str, ancestor: &str) -> bool {
    match (Oid::from_str(descendant), Oid::from_str(ancestor)) {
        (Ok(d), Ok(a)) => repo.graph_descendant_of(d, a).unwrap_or(false),
        _ => false,
    }
}
