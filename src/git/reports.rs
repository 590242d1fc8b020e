//! The full reports, kept local (docs/trailers-and-notes.md): what each loaf commit's blocks read
//! and printed, for `git loaf show`. The note under `refs/notes/loaf` (which users push)
//! holds those outputs only as sizes and hashes; the whole report is stored here instead,
//! under `refs/loaf/reports`, which `git push` never sends unless asked by name.
//!
//! The ref points straight at a tree (no commit) that maps each annotated commit's id (flat,
//! as a notes tree) to its report: git keeps what a ref reaches, but `git log --all` walks
//! only commits, so a report never shows up in `git log --all -p`, and no history of the ref
//! holds old versions. A report that is replaced or pruned is reachable from nothing
//! afterwards, and git's own `gc` expires it: [`prune`] (run by `git loaf gc` with the
//! operation log's entries) is what makes a report go, with the entry it belongs to.

use std::collections::HashSet;

use git2::{Oid, Repository};

/// The ref holding the reports.
pub(crate) const REPORTS_REF: &str = "refs/loaf/reports";

/// Stores `text` as the report of `commit`, replacing any earlier one.
pub fn write(repo: &Repository, commit: Oid, text: &str) -> Result<(), git2::Error> {
    let blob = crate::git::repo::write_blob(repo, text.as_bytes())?;
    update(repo, |tree| {
        tree.insert(commit.to_string(), blob, 0o100644)?;
        Ok(true)
    })
    .map(|_| ())
}

/// The report of `commit`, if this repository holds one.
pub fn read(repo: &Repository, commit: Oid) -> Option<String> {
    let tree = repo
        .find_reference(REPORTS_REF)
        .and_then(|r| r.peel_to_tree())
        .ok()?;
    let entry = tree.get_name(&commit.to_string())?;
    let blob = repo.find_blob(entry.id()).ok()?;
    String::from_utf8(blob.content().to_vec()).ok()
}

/// Drops the reports of every commit not in `keep`; returns how many went (with `dry_run`,
/// would go). The caller holds the repository lock.
pub fn prune(repo: &Repository, keep: &HashSet<Oid>, dry_run: bool) -> Result<usize, git2::Error> {
    let Ok(tree) = repo
        .find_reference(REPORTS_REF)
        .and_then(|r| r.peel_to_tree())
    else {
        return Ok(0);
    };
    let gone: Vec<String> = tree
        .iter()
        .filter_map(|e| e.name().ok().map(str::to_owned))
        .filter(|name| Oid::from_str(name).map_or(true, |oid| !keep.contains(&oid)))
        .collect();
    if dry_run || gone.is_empty() {
        return Ok(gone.len());
    }
    update(repo, |tree| {
        for name in &gone {
            tree.remove(name)?;
        }
        Ok(true)
    })?;
    Ok(gone.len())
}

/// Writes the tree `change` makes of the current one and points the ref at it by
/// compare-and-swap; with nothing left, deletes the ref.
fn update(
    repo: &Repository,
    change: impl FnOnce(&mut git2::TreeBuilder<'_>) -> Result<bool, git2::Error>,
) -> Result<bool, git2::Error> {
    let current = repo.find_reference(REPORTS_REF).ok();
    let old = current.as_ref().and_then(|r| r.target());
    let base = current.as_ref().and_then(|r| r.peel_to_tree().ok());
    let mut tree = repo.treebuilder(base.as_ref())?;
    if !change(&mut tree)? {
        return Ok(false);
    }
    if tree.is_empty() {
        if let Some(mut reference) = current {
            reference.delete()?;
        }
        return Ok(true);
    }
    let tree = tree.write()?;
    let log = "git-loaf: report";
    match old {
        Some(old) => repo.reference_matching(REPORTS_REF, tree, true, old, log)?,
        None => repo.reference(REPORTS_REF, tree, false, log)?,
    };
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{git, init_repo};

    #[test]
    fn reports_are_kept_per_commit_replaced_and_pruned_to_nothing_reachable() {
        let dir = init_repo();
        let root = dir.path();
        std::fs::write(root.join("a"), "a\n").expect("write");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "one"]);
        git(root, &["commit", "-q", "--allow-empty", "-m", "two"]);
        let repo = Repository::open(root).expect("open");
        let one = repo.revparse_single("HEAD~1").expect("one").id();
        let two = repo.revparse_single("HEAD").expect("two").id();
        write(&repo, one, "report one: SECRET").expect("write");
        write(&repo, two, "report two").expect("write");
        write(&repo, two, "report two, again").expect("replace");
        assert_eq!(read(&repo, one).as_deref(), Some("report one: SECRET"));
        assert_eq!(read(&repo, two).as_deref(), Some("report two, again"));
        assert!(
            !git(root, &["log", "--all", "-p"]).contains("SECRET"),
            "git log never shows a report"
        );
        let keep: HashSet<Oid> = [two].into();
        assert_eq!(prune(&repo, &keep, true).expect("dry run"), 1);
        assert!(read(&repo, one).is_some(), "a dry run drops nothing");
        assert_eq!(prune(&repo, &keep, false).expect("prune"), 1);
        assert_eq!(read(&repo, one), None);
        // Nothing any ref reaches holds the dropped report.
        let all = git(root, &["rev-list", "--all", "--objects"]);
        for line in all.lines() {
            let oid = line.split(' ').next().unwrap_or_default();
            let kind = git(root, &["cat-file", "-t", oid]);
            if kind.trim() == "blob" {
                assert!(!git(root, &["cat-file", "-p", oid]).contains("SECRET"));
            }
        }
        assert_eq!(prune(&repo, &HashSet::new(), false).expect("all"), 1);
        assert!(repo.find_reference(REPORTS_REF).is_err(), "no ref left");
    }
}
