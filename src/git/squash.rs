//! What squashing asks of a commit beyond [`super::commits::CommitInfo`]: whether it is a
//! merge (which ends the run to squash), and how many files a run changed, as `git diff
//! --stat` counts them — found by comparing two trees, skipping identical subtrees, so the
//! cost follows what changed and not the repository's size.

use git2::{Oid, Repository};

/// Whether commit `id` has more than one parent.
pub(crate) fn is_merge(repo: &Repository, id: Oid) -> Result<bool, git2::Error> {
    Ok(repo.find_commit(id)?.parent_count() > 1)
}

/// The number of files that differ between commit `base` (`None`: nothing, a root) and
/// commit `head`, counted as `git diff --stat base head` counts them: a renamed file once
/// (renames found as git finds them, by `diff.renames` and `diff.renameLimit`), a file that
/// became a symlink once. The trees are compared first, skipping identical subtrees; only
/// the paths that differ are handed to the rename detection.
pub(crate) fn files_changed(
    repo: &Repository,
    base: Option<Oid>,
    head: Oid,
) -> Result<usize, git2::Error> {
    let tree = |id: Oid| repo.find_commit(id).and_then(|c| c.tree());
    let old = base.map(tree).transpose()?;
    let new = tree(head)?;
    let paths = super::treediff::changed_paths(repo, old.as_ref().map(|t| t.id()), Some(new.id()))?;
    if paths.is_empty() {
        return Ok(0);
    }
    // A rename pairs a file only the old tree has with one only the new tree has: without
    // both kinds, each path is one file of the stat, and rename detection (which reads the
    // blobs) has nothing to find.
    // A file there: a folder of the same name is not (a file moved into a folder named as it
    // was is a rename too).
    let has = |tree: Option<&git2::Tree<'_>>, path: &std::path::Path| {
        tree.is_some_and(|t| {
            t.get_path(path)
                .is_ok_and(|e| e.kind() != Some(git2::ObjectType::Tree))
        })
    };
    let only_old = paths.iter().any(|p| !has(Some(&new), p));
    let only_new = paths.iter().any(|p| !has(old.as_ref(), p));
    if !(only_old && only_new) {
        return Ok(paths.len());
    }
    let mut options = git2::DiffOptions::new();
    // The paths are exact names, not patterns: libgit2 then walks only the folders that
    // hold them.
    options
        .disable_pathspec_match(true)
        .include_typechange(true);
    for path in &paths {
        options.pathspec(path);
    }
    let mut diff = repo.diff_tree_to_tree(old.as_ref(), Some(&new), Some(&mut options))?;
    // Default find options read `diff.renames` and `diff.renameLimit`, as git does.
    diff.find_similar(Some(&mut git2::DiffFindOptions::new()))?;
    Ok(diff.deltas().len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{git, init_repo};

    /// `N files changed` as `git diff --stat` prints it.
    fn stat_count(dir: &std::path::Path, range: &[&str]) -> usize {
        let mut args = vec!["diff", "--stat"];
        args.extend(range);
        let out = git(dir, &args);
        let last = out.lines().last().unwrap_or("");
        last.split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    /// Commits everything in `root`; the commit's id.
    fn commit_all(root: &std::path::Path, message: &str) -> Oid {
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", message]);
        Oid::from_str(git(root, &["rev-parse", "HEAD"]).trim()).expect("oid")
    }

    /// [`files_changed`] from `base` to HEAD, checked against `git diff --stat`'s count.
    fn counted_since(root: &std::path::Path, base: Oid) -> usize {
        let repo = Repository::open(root).expect("open");
        let head = repo.head().and_then(|h| h.peel_to_commit()).expect("head");
        let counted = files_changed(&repo, Some(base), head.id()).expect("count");
        assert_eq!(counted, stat_count(root, &[&base.to_string(), "HEAD"]));
        counted
    }

    #[test]
    fn files_changed_counts_as_git_diff_stat_a_rename_once() {
        let dir = init_repo();
        let root = dir.path();
        std::fs::create_dir_all(root.join("deep/er")).expect("mkdir");
        let body = "a line that makes the file worth detecting as renamed\n".repeat(5);
        for name in ["deep/er/moved.txt", "kept.txt", "link", "gone.txt"] {
            std::fs::write(root.join(name), &body).expect("write");
        }
        let base = commit_all(root, "one");
        git(root, &["mv", "deep/er/moved.txt", "deep/renamed.txt"]);
        std::fs::write(root.join("kept.txt"), "changed\n").expect("write");
        std::fs::remove_file(root.join("link")).expect("rm");
        std::os::unix::fs::symlink("kept.txt", root.join("link")).expect("symlink");
        std::fs::remove_file(root.join("gone.txt")).expect("rm");
        std::fs::write(root.join("new.txt"), "new\n").expect("write");
        let head = commit_all(root, "two");
        assert_eq!(
            counted_since(root, base),
            5,
            "rename, change, typechange, deletion, creation"
        );
        let repo = Repository::open(root).expect("open");
        let from_root = files_changed(&repo, None, head).expect("count");
        assert_eq!(from_root, 4, "every file of HEAD");
        assert_eq!(files_changed(&repo, Some(head), head).expect("count"), 0);
    }

    /// Without a file that only the new side has, no rename can be found: the count is the
    /// changed paths', as git's.
    #[test]
    fn changes_and_deletions_alone_count_each_path() {
        let dir = init_repo();
        let root = dir.path();
        for name in ["a.txt", "b.txt", "c.txt"] {
            std::fs::write(root.join(name), format!("{name}\n").repeat(8)).expect("write");
        }
        let base = commit_all(root, "one");
        std::fs::write(root.join("a.txt"), "changed\n").expect("write");
        std::fs::write(root.join("b.txt"), "changed too\n").expect("write");
        std::fs::remove_file(root.join("c.txt")).expect("rm");
        commit_all(root, "two");
        assert_eq!(counted_since(root, base), 3);
    }

    /// A file moved into a folder of its own name (`a` to `a/a`) is one renamed file, as git
    /// counts it: the folder that replaced the file is not the file.
    #[test]
    fn a_file_moved_into_a_folder_of_its_name_counts_once() {
        let dir = init_repo();
        let root = dir.path();
        let body = "a line that makes the file worth detecting as renamed\n".repeat(5);
        std::fs::write(root.join("a"), &body).expect("write");
        let base = commit_all(root, "one");
        std::fs::remove_file(root.join("a")).expect("rm");
        std::fs::create_dir(root.join("a")).expect("mkdir");
        std::fs::write(root.join("a/a"), &body).expect("write");
        commit_all(root, "two");
        assert_eq!(counted_since(root, base), 1);
    }
}
