//! The paths that differ between two trees, found by walking both and skipping every
//! subtree whose id is the same on both sides: the cost follows what changed, not the size of
//! the repository (libgit2's tree-to-tree diff visits every entry of both trees).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, Tree};

/// One entry of a tree: its id, mode and whether it is a folder.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Entry {
    id: Oid,
    mode: i32,
    tree: bool,
}

/// File paths (never folders) whose entry differs between `a` and `b`, either side possibly
/// absent (an empty tree).
pub(crate) fn changed_paths(
    repo: &Repository,
    a: Option<Oid>,
    b: Option<Oid>,
) -> Result<BTreeSet<PathBuf>, git2::Error> {
    let mut out = BTreeSet::new();
    if a == b {
        return Ok(out);
    }
    let a = a.map(|id| repo.find_tree(id)).transpose()?;
    let b = b.map(|id| repo.find_tree(id)).transpose()?;
    walk(repo, a.as_ref(), b.as_ref(), Path::new(""), &mut out)?;
    Ok(out)
}

/// The file paths that differ between trees `a` and `b`, sorted into those only `b` has
/// (created), those both have (changed: content, mode or kind) and those only `a` has
/// (deleted), each sorted.
pub(crate) fn created_changed_deleted(
    repo: &Repository,
    a: Oid,
    b: Oid,
) -> Result<[Vec<PathBuf>; 3], git2::Error> {
    let mut out: [Vec<PathBuf>; 3] = Default::default();
    let paths = changed_paths(repo, Some(a), Some(b))?;
    if paths.is_empty() {
        return Ok(out);
    }
    let (a, b) = (repo.find_tree(a)?, repo.find_tree(b)?);
    let is_file = |tree: &Tree<'_>, path: &Path| {
        tree.get_path(path)
            .is_ok_and(|e| e.kind() != Some(ObjectType::Tree))
    };
    for path in paths {
        let slot = match (is_file(&a, &path), is_file(&b, &path)) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => 2,
        };
        out[slot].push(path);
    }
    Ok(out)
}

fn entries(tree: Option<&Tree<'_>>) -> BTreeMap<Vec<u8>, Entry> {
    tree.map(|t| {
        t.iter()
            .map(|e| {
                let entry = Entry {
                    id: e.id(),
                    mode: e.filemode(),
                    tree: e.kind() == Some(ObjectType::Tree),
                };
                (e.name_bytes().to_vec(), entry)
            })
            .collect()
    })
    .unwrap_or_default()
}

fn walk(
    repo: &Repository,
    a: Option<&Tree<'_>>,
    b: Option<&Tree<'_>>,
    prefix: &Path,
    out: &mut BTreeSet<PathBuf>,
) -> Result<(), git2::Error> {
    let (left, right) = (entries(a), entries(b));
    let names: BTreeSet<&Vec<u8>> = left.keys().chain(right.keys()).collect();
    for name in names {
        let (x, y) = (left.get(name).copied(), right.get(name).copied());
        if x == y {
            continue;
        }
        let path = prefix.join(super::repo::path_from_bytes(name));
        let blob = |e: Option<Entry>| e.filter(|e| !e.tree);
        if blob(x) != blob(y) && (blob(x).is_some() || blob(y).is_some()) {
            out.insert(path.clone());
        }
        let subtree = |e: Option<Entry>| -> Result<Option<Tree<'_>>, git2::Error> {
            e.filter(|e| e.tree)
                .map(|e| repo.find_tree(e.id))
                .transpose()
        };
        let (sa, sb) = (subtree(x)?, subtree(y)?);
        if sa.is_some() || sb.is_some() {
            walk(repo, sa.as_ref(), sb.as_ref(), &path, out)?;
        }
    }
    Ok(())
}

/// The blob id a tree holds at `path`.
pub(crate) fn blob_at(tree: &Tree<'_>, path: &Path) -> Option<(Oid, i32)> {
    tree.get_path(path)
        .ok()
        .map(|e| (e.id(), e.filemode()))
        .filter(|(_, mode)| *mode != 0o040000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{git, init_repo, write_file};

    #[test]
    fn agrees_with_git_diff_and_skips_nothing_that_changed() {
        let dir = init_repo();
        let root = dir.path();
        let write = |p: &str, c: &str| write_file(root, p, c);
        for (p, c) in [
            ("a/b/c.txt", "1"),
            ("a/d.txt", "2"),
            ("e.txt", "3"),
            ("f/g.txt", "4"),
            ("same/x", "5"),
        ] {
            write(p, c);
        }
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "one"]);
        write("a/b/c.txt", "changed");
        std::fs::remove_file(root.join("e.txt")).expect("rm");
        write("e.txt/now-a-folder.txt", "6");
        std::fs::remove_dir_all(root.join("f")).expect("rm");
        write("f", "now a file");
        write("new/deep/file.txt", "7");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "two"]);
        let repo = Repository::open(root).expect("open");
        let tree = |rev: &str| {
            repo.revparse_single(rev)
                .and_then(|o| o.peel_to_tree())
                .map(|t| t.id())
                .ok()
        };
        let ours = changed_paths(&repo, tree("HEAD~1"), tree("HEAD")).expect("diff");
        let theirs: BTreeSet<PathBuf> = git(
            root,
            &["diff", "--name-only", "--no-renames", "HEAD~1", "HEAD"],
        )
        .lines()
        .map(PathBuf::from)
        .collect();
        assert_eq!(ours, theirs);
        let all = changed_paths(&repo, None, tree("HEAD")).expect("diff");
        assert_eq!(all.len(), git(root, &["ls-files"]).lines().count());
        assert!(
            changed_paths(&repo, tree("HEAD"), tree("HEAD"))
                .expect("diff")
                .is_empty()
        );
    }
}
