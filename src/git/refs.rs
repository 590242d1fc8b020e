//! The refs the operations read and write: the one an operation moves (HEAD's branch),
//! the commits kept under `refs/loaf/<apply id>` when an apply could not publish, the work
//! a forced undo saves under `refs/loaf/saved/<id>`, and the remote-tracking refs that tell
//! published history from local.

use std::collections::{BinaryHeap, HashSet};

use git2::{Oid, Repository};

/// The ref an operation moves: the branch HEAD points at (existing or unborn), or `HEAD`
/// itself when detached; and what it holds now.
pub(crate) fn head_ref(repo: &Repository) -> Result<(String, Option<Oid>), git2::Error> {
    let head = repo.find_reference("HEAD")?;
    match head.symbolic_target()? {
        Some(branch) => Ok((branch.to_owned(), repo.refname_to_id(branch).ok())),
        None => Ok(("HEAD".to_owned(), head_commit(repo)?)),
    }
}

/// The commit HEAD points at, or `None` on an unborn branch.
pub(crate) fn head_commit(repo: &Repository) -> Result<Option<Oid>, git2::Error> {
    match repo.head() {
        Ok(head) => Ok(Some(head.peel_to_commit()?.id())),
        Err(e)
            if e.code() == git2::ErrorCode::UnbornBranch
                || e.code() == git2::ErrorCode::NotFound =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Detaches HEAD at `at`, the commit it already names: the branch, the index and the files
/// stay as they are. Refuses (a git error) when HEAD names another commit.
pub fn detach(repo: &Repository, at: Oid) -> Result<(), git2::Error> {
    let now = repo.head()?.peel_to_commit()?.id();
    if now != at {
        return Err(git2::Error::from_str(&format!(
            "HEAD moved while git-loaf ran (now {now}, expected {at})"
        )));
    }
    repo.set_head_detached(at)
}

/// Points HEAD at `branch` (`refs/heads/<name>`) if the branch holds `at`, the commit HEAD
/// is detached at; `false`, and nothing changed, when the branch holds something else.
pub fn attach(repo: &Repository, branch: &str, at: Oid) -> Result<bool, git2::Error> {
    if repo.refname_to_id(branch).ok() != Some(at) {
        return Ok(false);
    }
    repo.set_head(branch)?;
    Ok(true)
}

/// A kept commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeptCommit {
    /// The apply id (the ref's last part).
    pub id: String,
    /// The commit.
    pub commit: Oid,
}

/// The kept commits, by apply id.
pub fn kept(repo: &Repository) -> Result<Vec<KeptCommit>, git2::Error> {
    let mut out = Vec::new();
    for reference in repo.references_glob("refs/loaf/*")? {
        let reference = reference?;
        let Some(name) = reference
            .name()
            .ok()
            .and_then(|n| n.strip_prefix("refs/loaf/"))
        else {
            continue;
        };
        if name.contains('/') || !name.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        if let Some(commit) = reference.target() {
            out.push(KeptCommit {
                id: name.to_owned(),
                commit,
            });
        }
    }
    Ok(out)
}

/// Keeps `commit` as `refs/loaf/<id>` (an apply that could not publish); returns the ref.
pub fn keep(repo: &Repository, id: &str, commit: Oid) -> Result<String, git2::Error> {
    let refname = format!("refs/loaf/{id}");
    repo.reference(&refname, commit, true, "git-loaf: kept, not published")?;
    Ok(refname)
}

/// Deletes the kept commit `refs/loaf/<id>`.
pub(crate) fn drop_kept(repo: &Repository, id: &str) -> Result<(), git2::Error> {
    repo.find_reference(&format!("refs/loaf/{id}"))?.delete()
}

/// Drops `refs/loaf/<id>` where it exists (a take published: the commit is on the branch).
pub(crate) fn drop_kept_if_any(repo: &Repository, id: &str) -> Result<(), git2::Error> {
    match repo.find_reference(&format!("refs/loaf/{id}")) {
        Ok(mut kept) => kept.delete(),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Saves `commit` as `refs/loaf/saved/<id>` (what a forced undo moves away from); returns
/// the ref.
pub fn save(repo: &Repository, id: &str, commit: Oid) -> Result<String, git2::Error> {
    let name = format!("refs/loaf/saved/{id}");
    repo.reference(&name, commit, true, "git-loaf: saved before a forced undo")?;
    Ok(name)
}

/// The first commit reachable from `after` but not from `before` (what moving a ref from
/// `after` back to `before` removes) that a remote-tracking ref already has, with that ref's
/// short name: others may have it.
///
/// The cost follows the operation, not the history. A remote-tracking ref that has a removed
/// commit has it among its commits dated no earlier than that commit (a commit is made after
/// its parents), so each ref is walked newest first only down to the removed commits' oldest
/// date, less [`CLOCK_SKEW`] of margin and [`SKEWED_COMMITS`] commits in a row below it (for
/// clocks that disagree): a remote that has not moved since the operation costs a handful of
/// commits however long its history. No ref is walked with `before` hidden: libgit2 marks
/// what is hidden before it yields anything, which on a remote with an unrelated or older
/// history walked all of it.
pub(crate) fn first_pushed(
    repo: &Repository,
    after: Oid,
    before: Option<Oid>,
) -> Result<Option<(Oid, String)>, git2::Error> {
    let mut between = repo.revwalk()?;
    between.push(after)?;
    if let Some(before) = before {
        between.hide(before)?;
    }
    let removed: Vec<Oid> = between.take(10_000).collect::<Result<_, _>>()?;
    let Some(oldest) = removed
        .iter()
        .filter_map(|c| repo.find_commit(*c).ok())
        .map(|c| c.time().seconds())
        .min()
    else {
        return Ok(None);
    };
    let removed_set: HashSet<Oid> = removed.iter().copied().collect();
    for reference in repo.references_glob("refs/remotes/*")? {
        let reference = reference?;
        let Ok(tip) = reference.resolve().and_then(|r| r.peel_to_commit()) else {
            continue;
        };
        let has = removed_reachable_from(repo, tip.id(), &removed_set, oldest - CLOCK_SKEW)?;
        // The first in the order the removed commits were listed (newest first), as before.
        if let Some(commit) = removed.iter().find(|c| has.contains(c)) {
            let name = reference
                .shorthand()
                .unwrap_or("a remote-tracking ref")
                .to_owned();
            return Ok(Some((*commit, name)));
        }
    }
    Ok(None)
}

/// How much older than a removed commit a commit above it may be dated (clocks of different
/// machines disagree) before [`first_pushed`] counts it as below the removed commits.
const CLOCK_SKEW: i64 = 86_400;
/// How many commits in a row dated below the cut-off end a remote's walk: one commit with a
/// clock set back does not end it early.
const SKEWED_COMMITS: usize = 5;

/// Which of `removed` the commits reachable from `tip` include, read newest first down to
/// `cutoff` (see [`first_pushed`]). The walk is our own date-ordered queue: libgit2's
/// revwalk, once sorted or given a hidden commit, reads the whole history before it yields
/// the first commit.
fn removed_reachable_from(
    repo: &Repository,
    tip: Oid,
    removed: &HashSet<Oid>,
    cutoff: i64,
) -> Result<HashSet<Oid>, git2::Error> {
    let mut queue = BinaryHeap::new();
    let mut queued = HashSet::new();
    let first = repo.find_commit(tip)?;
    queue.push((first.time().seconds(), tip));
    queued.insert(tip);
    let mut has = HashSet::new();
    let mut below = 0;
    while let Some((time, id)) = queue.pop() {
        if removed.contains(&id) {
            has.insert(id);
            if has.len() == removed.len() {
                break;
            }
        }
        if time < cutoff {
            below += 1;
            if below >= SKEWED_COMMITS {
                break;
            }
        } else {
            below = 0;
        }
        for parent in repo.find_commit(id)?.parent_ids() {
            if queued.insert(parent) {
                queue.push((repo.find_commit(parent)?.time().seconds(), parent));
            }
        }
    }
    Ok(has)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{commit_on_day, committed_repo, git, write_file};

    fn oid(dir: &std::path::Path, rev: &str) -> Oid {
        Oid::from_str(git(dir, &["rev-parse", rev]).trim()).expect("an id")
    }

    /// Two commits on top of `first`; the remote-tracking ref at the first of them: undoing
    /// back to `first` would remove a pushed commit, undoing the second alone would not.
    /// A remote that moved on from a removed commit (others built on it) has it; one that
    /// moved on from the base alone does not; one behind the base has nothing removed.
    #[test]
    fn a_remote_that_moved_on_has_what_it_built_on_and_nothing_else() {
        let dir = committed_repo();
        let root = dir.path();
        let first = oid(root, "HEAD");
        write_file(root, "a.txt", "second");
        git(root, &["commit", "-q", "-am", "second"]);
        let second = oid(root, "HEAD");
        // Others built on `second` and on `first`, on branches of their own.
        git(root, &["switch", "-q", "-c", "theirs"]);
        write_file(root, "b.txt", "theirs");
        git(root, &["add", "b.txt"]);
        git(root, &["commit", "-q", "-m", "theirs"]);
        git(
            root,
            &["update-ref", "refs/remotes/origin/built-on-second", "HEAD"],
        );
        git(root, &["switch", "-q", "--detach", &first.to_string()]);
        write_file(root, "c.txt", "other");
        git(root, &["add", "c.txt"]);
        git(root, &["commit", "-q", "-m", "other"]);
        git(
            root,
            &["update-ref", "refs/remotes/origin/built-on-first", "HEAD"],
        );
        let repo = Repository::open(root).expect("open");
        assert_eq!(
            first_pushed(&repo, second, Some(first)).expect("walks"),
            Some((second, "origin/built-on-second".to_owned()))
        );
        git(
            root,
            &["update-ref", "-d", "refs/remotes/origin/built-on-second"],
        );
        git(
            root,
            &[
                "update-ref",
                "refs/remotes/origin/behind",
                &first.to_string(),
            ],
        );
        assert_eq!(
            first_pushed(&repo, second, Some(first)).expect("walks"),
            None
        );
    }

    /// Commits on HEAD changing `b.txt`, dated by the days after 2020-01-01 in `days`;
    /// returns the last one.
    fn dated_commits(root: &std::path::Path, days: &[i64]) -> Oid {
        static WRITTEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        for day in days {
            let n = WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let content = format!("{day} {n}\n");
            commit_on_day(root, "b.txt", &content, *day, &format!("day {day}"));
        }
        oid(root, "HEAD")
    }

    /// A remote's history is read only down to the removed commit's date: a remote that
    /// built on it with a few commits dated before it (a clock set back) still has it; one
    /// whose next SKEWED_COMMITS commits are all dated more than a day before it is taken not
    /// to, without reading further (the bound that keeps a long history's cost away); an
    /// unrelated, older history is not walked to its root.
    #[test]
    fn remotes_are_read_down_to_the_removed_commits_date_only() {
        let dir = committed_repo();
        let root = dir.path();
        let base = oid(root, "HEAD");
        let removed = dated_commits(root, &[100]);
        let skew = [10; SKEWED_COMMITS - 1];
        let built = dated_commits(root, &[&skew[..], &[200]].concat());
        git(
            root,
            &[
                "update-ref",
                "refs/remotes/origin/built",
                &built.to_string(),
            ],
        );
        git(root, &["reset", "-q", "--hard", &removed.to_string()]);
        let repo = Repository::open(root).expect("open");
        assert_eq!(
            first_pushed(&repo, removed, Some(base)).expect("walks"),
            Some((removed, "origin/built".to_owned()))
        );
        let skew = [10; SKEWED_COMMITS];
        let too_skewed = dated_commits(root, &[&skew[..], &[200]].concat());
        git(
            root,
            &[
                "update-ref",
                "refs/remotes/origin/built",
                &too_skewed.to_string(),
            ],
        );
        git(root, &["reset", "-q", "--hard", &removed.to_string()]);
        assert_eq!(
            first_pushed(&repo, removed, Some(base)).expect("walks"),
            None
        );
        git(root, &["update-ref", "-d", "refs/remotes/origin/built"]);
        git(root, &["switch", "-q", "--orphan", "todo"]);
        let unrelated = dated_commits(root, &[1, 2, 3, 4, 5, 6, 7, 8]);
        git(
            root,
            &[
                "update-ref",
                "refs/remotes/origin/todo",
                &unrelated.to_string(),
            ],
        );
        assert_eq!(
            first_pushed(&repo, removed, Some(base)).expect("walks"),
            None
        );
    }

    #[test]
    fn finds_the_removed_commit_a_remote_tracking_ref_has() {
        let dir = committed_repo();
        let root = dir.path();
        for n in ["second", "third"] {
            write_file(root, "a.txt", n);
            git(root, &["commit", "-q", "-am", n]);
        }
        git(root, &["update-ref", "refs/remotes/origin/main", "HEAD~1"]);
        let repo = Repository::open(root).expect("open");
        let (first, second, third) = (oid(root, "HEAD~2"), oid(root, "HEAD~1"), oid(root, "HEAD"));
        assert_eq!(
            first_pushed(&repo, third, Some(first)).expect("walks"),
            Some((second, "origin/main".to_owned()))
        );
        assert_eq!(
            first_pushed(&repo, third, Some(second)).expect("walks"),
            None
        );
        assert_eq!(
            head_ref(&repo).expect("head"),
            ("refs/heads/main".to_owned(), Some(third))
        );
    }

    /// Only `refs/loaf/<hex id>` are kept commits (not the oplog, not saved work); keeping and
    /// dropping one is what `git for-each-ref` sees.
    #[test]
    fn keeps_lists_and_drops_kept_commits() {
        let dir = committed_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let head = oid(root, "HEAD");
        assert_eq!(
            keep(&repo, "a1b2c3", head).expect("keeps"),
            "refs/loaf/a1b2c3"
        );
        assert_eq!(
            save(&repo, "d4e5f6", head).expect("saves"),
            "refs/loaf/saved/d4e5f6"
        );
        git(root, &["update-ref", "refs/loaf/oplog", "HEAD"]);
        assert_eq!(
            kept(&repo).expect("lists"),
            vec![KeptCommit {
                id: "a1b2c3".to_owned(),
                commit: head
            }]
        );
        drop_kept(&repo, "a1b2c3").expect("drops");
        assert_eq!(
            git(root, &["for-each-ref", "--format=%(refname)", "refs/loaf/"]),
            "refs/loaf/oplog\nrefs/loaf/saved/d4e5f6\n"
        );
    }
}
