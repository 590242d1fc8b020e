//! Reading commits back for `log` and `show`: what a commit says ([`CommitInfo`]), HEAD's
//! first-parent chain, and a revision or apply id resolved to its commit.

use git2::{Commit, Oid, Repository};

use super::oplog::{self, OpKind};

/// What the operations read of a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
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
pub fn first_parents(
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

/// `rev` as git reads it; else an apply id from the operation log or `refs/loaf/<id>`.
/// `None` when it names no commit.
pub fn resolve(repo: &Repository, rev: &str) -> Result<Option<CommitInfo>, git2::Error> {
    if let Ok(commit) = repo.revparse_single(rev).and_then(|o| o.peel_to_commit()) {
        return Ok(Some(CommitInfo::of(&commit)));
    }
    let by_id = oplog::entries(repo)?
        .into_iter()
        .find(|e| e.kind == OpKind::Apply && e.id == rev)
        .and_then(|e| e.after.head)
        .and_then(|h| Oid::from_str(&h).ok())
        .or_else(|| repo.refname_to_id(&format!("refs/loaf/{rev}")).ok());
    Ok(by_id.and_then(|oid| read(repo, oid).ok()))
}
