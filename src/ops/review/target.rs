//! Which commit a review takes (docs/review.md) — an apply or turn id, a commit, or the last
//! AI commit on the branch — and when a review may not run: HEAD stepped back or detached,
//! an agent's turn being recorded, a commit that is not an AI commit or not on the branch.

use std::path::Path;

use super::SEARCH_LIMIT;
use crate::git::commit::parse_trailers;
use crate::git::{Oid, Repository, refs, short_oid};
use crate::tx::commits::{self, CommitInfo};
use crate::tx::session::TxError;
use crate::tx::turn;

/// The AI commit `id` names; the last apply or turn on HEAD's first-parent chain without.
pub(super) fn target(repo: &Repository, id: Option<&str>) -> Result<CommitInfo, TxError> {
    let listed = "`git loaf log` lists the applies and turns on this branch";
    let Some(id) = id else {
        let chain = commits::first_parents(repo)?.ok_or_else(|| TxError::Invalid {
            message: "the branch has no commit yet".into(),
            hint: "apply a reply first (`git loaf apply`)".into(),
        })?;
        for commit in chain.take(SEARCH_LIMIT) {
            let commit = commit?;
            if loaf_id(&commit).is_some() {
                return Ok(commit);
            }
        }
        return Err(TxError::Invalid {
            message: "there is no apply or agent's turn on this branch to review".into(),
            hint: listed.into(),
        });
    };
    // An id first on the branch: a review that rewrote the tip made a new commit with it.
    if id.len() == 6
        && id.bytes().all(|b| b.is_ascii_hexdigit())
        && let Some(chain) = commits::first_parents(repo)?
    {
        for commit in chain.take(SEARCH_LIMIT) {
            let commit = commit?;
            if loaf_id(&commit).as_deref() == Some(id) {
                return Ok(commit);
            }
        }
    }
    let commit = commits::resolve(repo, id)?.ok_or_else(|| TxError::Invalid {
        message: format!("unknown revision or apply id '{id}'"),
        hint: listed.into(),
    })?;
    if loaf_id(&commit).is_none() {
        return Err(TxError::Invalid {
            message: format!(
                "{id} ({}) is not an AI commit: it has no Loaf-Apply trailer",
                short_oid(commit.id)
            ),
            hint: format!("review takes an apply or an agent's turn; {listed}"),
        });
    }
    if repo.find_commit(commit.id)?.parent_count() > 1 {
        return Err(TxError::Invalid {
            message: format!("{id} is a merge commit"),
            hint: listed.into(),
        });
    }
    Ok(commit)
}

/// The apply (or turn) id of an AI commit.
pub(super) fn loaf_id(commit: &CommitInfo) -> Option<String> {
    parse_trailers(&commit.message)
        .into_iter()
        .find(|(k, _)| k == "Loaf-Apply")
        .map(|(_, v)| v.trim().to_owned())
}

pub(super) fn parent_tree(repo: &Repository, commit: &CommitInfo) -> Result<Option<Oid>, TxError> {
    Ok(match commit.parent {
        Some(parent) => Some(commits::read(repo, parent)?.tree),
        None => None,
    })
}

pub(super) fn not_on_branch(commit: &CommitInfo) -> TxError {
    TxError::Refused {
        message: format!(
            "{} ({}) is not on the current branch",
            short_oid(commit.id),
            commit.summary
        ),
        hint: "switch to the branch that holds it, then review it there".into(),
    }
}

/// Stepped back (HEAD detached) or a turn being recorded: the history or the files are
/// someone else's to change just now.
pub(super) fn refuse_states(repo: &Repository, root: &Path) -> Result<(), TxError> {
    refuse_stepped_back(repo, root)?;
    if turn::any_begun(repo)? {
        return Err(TxError::Refused {
            message: "an agent's turn is being recorded: its edits are still coming".into(),
            hint: "review once the turn is committed (`git loaf status` shows it)".into(),
        });
    }
    Ok(())
}

/// HEAD stepped back, or detached: a review changes a branch.
pub(super) fn refuse_stepped_back(repo: &Repository, root: &Path) -> Result<(), TxError> {
    if let Some(back) = crate::ops::step::stepped_back(repo, root)? {
        return Err(TxError::Refused {
            message: format!(
                "HEAD is stepped back ({} of {})",
                short_oid(Oid::from_str(&back.at)?),
                crate::ops::undo::display_ref(&back.branch)
            ),
            hint: "`git loaf step-forward` back to the tip first, then review".into(),
        });
    }
    if refs::head_ref(repo)?.0 == "HEAD" {
        return Err(TxError::Refused {
            message: "HEAD is detached: a review changes a branch".into(),
            hint: "switch to a branch (`git switch <branch>`), then review".into(),
        });
    }
    Ok(())
}

pub(super) fn overlaps(reason: &str) -> TxError {
    TxError::Refused {
        // The landing speaks of an apply's reply; here the change is the review's.
        message: format!(
            "nothing was reviewed: {}",
            reason.replace("the reply", "the review")
        ),
        hint: "commit or stash your own change to that file first, or keep that hunk".into(),
    }
}
