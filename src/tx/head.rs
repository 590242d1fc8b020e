//! HEAD itself, for `step-back` and `step-forward`: detached from its branch while the user
//! walks back through the branch's history (the branch stays at its tip, so nothing of it is
//! rewritten), re-attached when they are back at the tip; and the first-parent chain they walk.

use std::path::PathBuf;

use git2::{Oid, Repository};

use super::publish::{self, PublishError, Transition};

/// How far back a step session looks for the tip along the first-parent chain: far more
/// than anyone steps by hand, and it bounds the walk on a long history.
const CHAIN_LIMIT: usize = 100_000;

/// How many first-parent steps lead from `tip` back to `commit` (0 when they are the same),
/// `None` when `commit` is not on `tip`'s first-parent chain.
pub(crate) fn first_parent_distance(
    repo: &Repository,
    tip: Oid,
    commit: Oid,
) -> Result<Option<usize>, git2::Error> {
    let mut at = tip;
    for steps in 0..CHAIN_LIMIT {
        if at == commit {
            return Ok(Some(steps));
        }
        match repo.find_commit(at)?.parent_ids().next() {
            Some(parent) => at = parent,
            None => return Ok(None),
        }
    }
    Ok(None)
}

/// Publishes `t`, a move of HEAD itself (`t.ref_name` is `HEAD`), across a change of
/// attachment: HEAD is detached from `detach_from` (the branch it is on, at `t.old`) and,
/// once the files, index and log are written, attached to `attach_to` if that branch holds
/// `t.new`. Both are recorded in the journal with the move, so a crash at any moment is
/// rolled back or finished as a whole ([`publish::publish_attached`]). Returns the files
/// left alone (see [`publish::publish`]) and whether HEAD is now on `attach_to`.
pub(crate) fn publish_across(
    repo: &Repository,
    t: &Transition,
    check_user: bool,
    detach_from: Option<&str>,
    attach_to: Option<&str>,
) -> Result<(Vec<PathBuf>, bool), PublishError> {
    let attachment = publish::Attachment {
        detach_from: detach_from.map(str::to_owned),
        attach_to: attach_to.map(str::to_owned),
    };
    publish::publish_attached(repo, t, check_user, &attachment)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::refs::{attach, detach};
    use crate::git::testing::{committed_repo, git, write_file};

    fn oid(dir: &std::path::Path, rev: &str) -> Oid {
        Oid::from_str(git(dir, &["rev-parse", rev]).trim()).expect("an id")
    }

    #[test]
    fn detaches_and_reattaches_without_moving_the_branch() {
        let dir = committed_repo();
        let root = dir.path();
        write_file(root, "a.txt", "second\n");
        git(root, &["commit", "-q", "-am", "second"]);
        let repo = Repository::open(root).expect("open");
        let (first, second) = (oid(root, "HEAD~1"), oid(root, "HEAD"));
        assert!(detach(&repo, first).is_err(), "HEAD is not there");
        detach(&repo, second).expect("detaches");
        assert_eq!(git(root, &["rev-parse", "--abbrev-ref", "HEAD"]), "HEAD\n");
        assert_eq!(oid(root, "main"), second, "the branch did not move");
        assert!(!attach(&repo, "refs/heads/main", first).expect("checks"));
        assert!(attach(&repo, "refs/heads/main", second).expect("attaches"));
        assert_eq!(git(root, &["symbolic-ref", "HEAD"]), "refs/heads/main\n");
        assert_eq!(git(root, &["status", "--porcelain"]), "");
        assert_eq!(
            first_parent_distance(&repo, second, first).expect("walks"),
            Some(1)
        );
        assert_eq!(
            first_parent_distance(&repo, first, second).expect("walks"),
            None
        );
    }
}
