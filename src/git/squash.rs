//! What squashing asks of a commit beyond [`super::commits::CommitInfo`]: whether it is a
//! merge (which ends the run to squash), and how many files a run changed — found by
//! comparing two trees, skipping identical subtrees, so the cost follows what changed and
//! not the repository's size.

use git2::{Oid, Repository};

/// Whether commit `id` has more than one parent.
pub fn is_merge(repo: &Repository, id: Oid) -> Result<bool, git2::Error> {
    Ok(repo.find_commit(id)?.parent_count() > 1)
}

/// The number of files that differ between commit `base` (`None`: nothing, a root) and
/// commit `head`.
pub fn files_changed(
    repo: &Repository,
    base: Option<Oid>,
    head: Oid,
) -> Result<usize, git2::Error> {
    let tree = |id: Oid| repo.find_commit(id).map(|c| c.tree_id());
    let base = base.map(tree).transpose()?;
    Ok(super::treediff::changed_paths(repo, base, Some(tree(head)?))?.len())
}
