//! A new tree from a base tree and what is on disk now at a few paths: only the folders on
//! those paths are rebuilt, and no index is read or written. This is how an apply whose
//! actions' targets are known turns the stage into a commit in time proportional to what it
//! wrote (the stage's index alone is ~1.8 MB on a 20,000-file repository).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use git2::{ObjectType, Oid, Repository, Tree};

use super::blob_cache::Stamp;
use super::filters::Conversions;
#[cfg(test)]
use plain_files::PARALLEL_FROM;
use plain_files::{plain_blobs, plain_values};

mod plain_files;

/// What a path holds now: nothing, or an entry (blob or tree) with its mode.
pub type Value = Option<(Oid, i32)>;

const TREE_MODE: i32 = 0o040000;
const GITLINK_MODE: i32 = 0o160000;

/// Where a tree is built from: the working tree `root` of `repo` (whose ignore rules apply),
/// and the repository whose attributes and config decide the blob filters (drivers, CRLF
/// conversion…: see [`super::filters`]).
///
/// The filters are looked up in the user's repository, whose index is already in memory: in
/// the stage's, looking up `.gitattributes` would read and verify its whole index (~8 ms on
/// a 20,000-file repository) for every apply. The two differ only when the reply itself
/// edits a `.gitattributes` file, and publish re-checks every written file through the
/// user's filters anyway.
pub(crate) struct Source<'a> {
    /// The repository the files are in (objects, ignore rules).
    pub repo: &'a Repository,
    /// The tree the paths are applied to: what it tracks stays tracked even if ignored, and
    /// its submodules are kept.
    pub base: Oid,
    /// Its working tree.
    pub root: &'a Path,
    /// The repository whose attributes pick the filters.
    pub filters: &'a Repository,
    /// Whether plain files unchanged since the last build with this set are taken from the
    /// cache of their blobs (see [`super::blob_cache`]), and this build's are remembered:
    /// for the user's working tree, whose dirty files every operation records again.
    pub remember: bool,
    /// When `repo` keeps its writes in memory (a [`super::pack_write::Buffered`] handle),
    /// its budget: files are then read on several threads and stored through `repo` alone
    /// while the budget lasts, written to disk after.
    pub objects_in_memory: Option<&'a super::pack_write::MemoryBudget>,
}

/// `base` with every path in `paths` (relative to the source's root) set to what the disk
/// holds there now: a file becomes the blob `git add` stores (external drivers, then the
/// built-in filters; executable bit and symlinks kept), a folder its files, a missing path
/// nothing. Ignored files that `base` does not already hold are left out, as `git add` would.
pub(crate) fn tree_with_paths(
    source: &Source<'_>,
    paths: &[std::path::PathBuf],
) -> Result<Oid, git2::Error> {
    let repo = source.repo;
    let base_tree = repo.find_tree(source.base)?;
    // Read once: which folders hold attributes is then looked up once per folder.
    let conversions = super::filters::Conversions::of(source.filters)?;
    let mut changes: Vec<(Vec<OsString>, Value)> = Vec::new();
    // Plain files (no conversion) are hashed last, all together: (change, path, mode,
    // stat data before reading).
    let mut plain: Vec<(usize, &Path, i32, Option<Stamp>)> = Vec::new();
    let base = BaseTree::new(repo, base_tree.clone());
    for path in paths {
        let parts = parts(path);
        if parts.is_empty() {
            continue;
        }
        match plan(source, &conversions, &base, path)? {
            Planned::Value(value) => changes.push((parts, value)),
            Planned::Plain(mode, stamp) => {
                plain.push((changes.len(), path, mode, stamp));
                changes.push((parts, None));
            }
        }
    }
    for (change, id, mode) in plain_values(source, &plain)? {
        changes[change].1 = Some((id, mode));
    }
    // Shallow paths first, so that a folder rebuilt from disk is refined, not undone, by a
    // deeper path inside it (both read the same disk).
    changes.sort_by_key(|(parts, _)| parts.len());
    let refs: Vec<(&[OsString], Value)> = changes.iter().map(|(p, v)| (p.as_slice(), *v)).collect();
    Ok(update(repo, Some(&base_tree), &refs)?.map_or(empty_tree(repo)?, |(id, _)| id))
}

/// `base` with every path in `paths` (file paths, relative) set to the entry `source` has
/// there, or removed where `source` has none: how an apply's changes, found between the
/// user's working tree and the stage, are laid onto HEAD's tree (and onto the index's).
pub(crate) fn tree_with_entries(
    repo: &Repository,
    base: Oid,
    source: Oid,
    paths: &[std::path::PathBuf],
) -> Result<Oid, git2::Error> {
    let source_tree = repo.find_tree(source)?;
    let values: Vec<(std::path::PathBuf, Value)> = paths
        .iter()
        .map(|path| {
            let value = source_tree
                .get_path(path)
                .ok()
                .map(|e| (e.id(), e.filemode()))
                .filter(|(_, mode)| *mode != TREE_MODE);
            (path.clone(), value)
        })
        .collect();
    tree_with_values(repo, base, &values)
}

/// `base` with each path (a file path, relative) set to the blob and mode given, or removed
/// for `None`; only the folders on those paths are rebuilt.
pub(crate) fn tree_with_values(
    repo: &Repository,
    base: Oid,
    values: &[(std::path::PathBuf, Value)],
) -> Result<Oid, git2::Error> {
    let base_tree = repo.find_tree(base)?;
    let mut changes: Vec<(Vec<OsString>, Value)> = values
        .iter()
        .map(|(path, value)| (parts(path), *value))
        .collect();
    // Removals before additions at the same depth do not matter (distinct paths); shallow
    // first so that a file replaced by a folder is removed before the folder's files land.
    changes.sort_by_key(|(parts, _)| parts.len());
    let refs: Vec<(&[OsString], Value)> = changes.iter().map(|(p, v)| (p.as_slice(), *v)).collect();
    Ok(update(repo, Some(&base_tree), &refs)?.map_or(empty_tree(repo)?, |(id, _)| id))
}

/// A relative path's names, `.`, `..` and the root left out.
fn parts(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            _ => None,
        })
        .collect()
}

fn empty_tree(repo: &Repository) -> Result<Oid, git2::Error> {
    repo.treebuilder(None)?.write()
}

/// The entry `path` should have, read from disk.
fn from_disk(
    source: &Source<'_>,
    conversions: &Conversions,
    base: &BaseTree<'_>,
    path: &Path,
) -> Result<Value, git2::Error> {
    Ok(match plan(source, conversions, base, path)? {
        Planned::Value(value) => value,
        Planned::Plain(mode, _) => Some((
            plain_blobs(source.repo, source.root, &[path], source.objects_in_memory)?[0],
            mode,
        )),
    })
}

/// The base tree's entries looked up by path, each folder's tree read once: a large folder's
/// tree is more than libgit2's object cache keeps, and without this every path below it
/// inflates and parses it again (250 dirty files under one 400-entry folder: ~10 ms).
struct BaseTree<'r> {
    repo: &'r Repository,
    folders: RefCell<HashMap<PathBuf, Option<Tree<'r>>>>,
}

impl<'r> BaseTree<'r> {
    fn new(repo: &'r Repository, root: Tree<'r>) -> BaseTree<'r> {
        let folders = HashMap::from([(PathBuf::new(), Some(root))]);
        BaseTree {
            repo,
            folders: RefCell::new(folders),
        }
    }

    /// The entry at `path` (relative), as (id, mode).
    fn entry(&self, path: &Path) -> Result<Value, git2::Error> {
        let (Some(name), Some(parent)) = (path.file_name(), path.parent()) else {
            return Ok(None);
        };
        Ok(self.folder(parent)?.and_then(|tree| {
            tree.get_name_bytes(name.as_encoded_bytes())
                .map(|e| (e.id(), e.filemode()))
        }))
    }

    /// The tree of folder `dir` (relative; `""` is the root), when the base has one there.
    fn folder(&self, dir: &Path) -> Result<Option<Tree<'r>>, git2::Error> {
        if let Some(known) = self.folders.borrow().get(dir) {
            return Ok(known.clone());
        }
        let tree = match self.entry(dir)? {
            Some((id, TREE_MODE)) => Some(self.repo.find_tree(id)?),
            _ => None,
        };
        self.folders
            .borrow_mut()
            .insert(dir.to_path_buf(), tree.clone());
        Ok(tree)
    }
}

/// What a path holds, decided from its metadata: the entry itself, or a plain file whose blob
/// is its bytes as they are (no filter applies), left to [`plain_blobs`] with others.
enum Planned {
    Value(Value),
    Plain(i32, Option<Stamp>),
}

/// [`from_disk`]'s decision for `path`, without hashing a plain file.
fn plan(
    source: &Source<'_>,
    conversions: &Conversions,
    base: &BaseTree<'_>,
    path: &Path,
) -> Result<Planned, git2::Error> {
    let repo = source.repo;
    let full = source.root.join(path);
    let in_base = base.entry(path)?;
    // A submodule is never checked out in the stage: keep what the base records.
    if let Some((_, GITLINK_MODE)) = in_base {
        return Ok(Planned::Value(in_base));
    }
    let tracked = in_base.is_some();
    let meta = match std::fs::symlink_metadata(&full) {
        Ok(meta) => meta,
        // Under a file (a folder the run replaced by a file): absent.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(Planned::Value(None));
        }
        Err(e) => return Err(git2::Error::from_str(&format!("{}: {e}", full.display()))),
    };
    if !tracked && repo.is_path_ignored(path)? {
        return Ok(Planned::Value(None));
    }
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&full)
            .map_err(|e| git2::Error::from_str(&format!("{}: {e}", full.display())))?;
        return Ok(Planned::Value(Some((
            crate::git::repo::write_blob(repo, target.as_os_str().as_encoded_bytes())?,
            0o120000,
        ))));
    }
    if meta.is_dir() {
        return Ok(Planned::Value(folder(source, conversions, base, path)?));
    }
    if !conversions.apply_to(source.filters, path)? {
        return Ok(Planned::Plain(file_mode(&meta), Stamp::of(&meta)));
    }
    let blob = super::filters::file_blob(source.filters, conversions, source.root, path)?;
    Ok(Planned::Value(Some((blob, file_mode(&meta)))))
}

#[cfg(unix)]
fn file_mode(meta: &std::fs::Metadata) -> i32 {
    use std::os::unix::fs::PermissionsExt as _;
    if meta.permissions().mode() & 0o111 != 0 {
        0o100755
    } else {
        0o100644
    }
}

#[cfg(not(unix))]
fn file_mode(_meta: &std::fs::Metadata) -> i32 {
    0o100644
}

/// A folder on disk as a tree (`None` when it holds nothing git would keep).
fn folder(
    source: &Source<'_>,
    conversions: &Conversions,
    base: &BaseTree<'_>,
    path: &Path,
) -> Result<Value, git2::Error> {
    let repo = source.repo;
    let full = source.root.join(path);
    let read = std::fs::read_dir(&full)
        .map_err(|e| git2::Error::from_str(&format!("{}: {e}", full.display())))?;
    let mut builder = repo.treebuilder(None)?;
    for entry in read {
        let entry =
            entry.map_err(|e| git2::Error::from_str(&format!("{}: {e}", full.display())))?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let child = path.join(&name);
        if let Some((id, mode)) = from_disk(source, conversions, base, &child)? {
            builder.insert(&name, id, mode)?;
        }
    }
    if builder.is_empty() {
        return Ok(None);
    }
    Ok(Some((builder.write()?, TREE_MODE)))
}

/// `tree` with `changes` (paths as components, shallow first) applied; `None` when empty.
fn update(
    repo: &Repository,
    tree: Option<&Tree<'_>>,
    changes: &[(&[OsString], Value)],
) -> Result<Value, git2::Error> {
    let mut builder = repo.treebuilder(tree)?;
    let mut by_name: BTreeMap<&OsString, Vec<(&[OsString], Value)>> = BTreeMap::new();
    for (parts, value) in changes {
        if let Some((first, rest)) = parts.split_first() {
            by_name.entry(first).or_default().push((rest, *value));
        }
    }
    for (name, group) in by_name {
        let mut current: Value = builder.get(name)?.map(|e| (e.id(), e.filemode()));
        let mut deeper: Vec<(&[OsString], Value)> = Vec::new();
        for (rest, value) in group {
            if rest.is_empty() {
                current = value;
                deeper.clear();
            } else {
                deeper.push((rest, value));
            }
        }
        let only_removals = deeper.iter().all(|(_, v)| v.is_none());
        match current {
            _ if deeper.is_empty() => {}
            Some((id, TREE_MODE)) => current = update(repo, Some(&repo.find_tree(id)?), &deeper)?,
            // Nothing to remove under a file, a submodule or nothing; and a submodule is never
            // replaced by files (the stage does not check submodules out).
            _ if only_removals => {}
            Some((_, GITLINK_MODE)) => {}
            _ => current = update(repo, None, &deeper)?,
        }
        match current {
            Some((id, mode)) => {
                builder.insert(name, id, mode)?;
            }
            None => {
                if builder.get(name)?.is_some() {
                    builder.remove(name)?;
                }
            }
        }
    }
    if builder.is_empty() {
        return Ok(None);
    }
    let id = builder.write()?;
    debug_assert!(repo.find_object(id, Some(ObjectType::Tree)).is_ok());
    Ok(Some((id, TREE_MODE)))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::git::testing::{git, init_repo, write_file};

    /// The tree built from the touched paths is the one `git add -A && git write-tree` makes.
    #[test]
    fn matches_what_git_add_makes() {
        let dir = init_repo();
        let root = dir.path();
        let write = |p: &str, c: &str| write_file(root, p, c);
        write(".gitignore", "*.log\n");
        write(".gitattributes", "*.txt text eol=crlf\n");
        write("a.txt", "one\n");
        write("old/x.md", "x\n");
        write("old/deep/y.md", "y\n");
        write("keep/k.md", "k\n");
        write("keep/tracked.log", "tracked though ignored\n");
        git(root, &["add", "-A"]);
        git(root, &["add", "-f", "keep/tracked.log"]);
        git(root, &["commit", "-q", "-m", "base"]);
        let base = git(root, &["rev-parse", "HEAD^{tree}"]);
        write("a.txt", "one\r\ntwo\r\n");
        std::fs::remove_dir_all(root.join("old")).expect("rm");
        write("old/now.md", "replaced\n");
        write("new/dir/n.md", "n\n");
        write("new/dir/skip.log", "ignored\n");
        write("run.sh", "#!/bin/sh\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
            std::os::unix::fs::symlink("a.txt", root.join("link")).expect("symlink");
        }
        write("debug.log", "ignored\n");
        std::fs::create_dir_all(root.join("empty")).expect("mkdir");
        let repo = Repository::open(root).expect("open");
        let touched: Vec<PathBuf> = [
            "a.txt",
            "old",
            "old/now.md",
            "new",
            "run.sh",
            "link",
            "debug.log",
            "empty",
            "missing/file",
            "keep",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_matches_git_add(&repo, root, &base, &touched);
    }

    /// The tree built from `touched` on `base` is the one `git add -A && git write-tree`
    /// makes of the working tree `root`.
    fn assert_matches_git_add(repo: &Repository, root: &Path, base: &str, touched: &[PathBuf]) {
        let source = Source {
            repo,
            base: Oid::from_str(base.trim()).expect("oid"),
            root,
            filters: repo,
            remember: true,
            objects_in_memory: None,
        };
        let ours = tree_with_paths(&source, touched).expect("tree");
        let again = tree_with_paths(&source, touched).expect("tree from the blob cache");
        assert_eq!(ours, again, "the blob cache changes nothing");
        git(root, &["add", "-A"]);
        let theirs = git(root, &["write-tree"]);
        assert_eq!(ours.to_string(), theirs.trim());
    }

    /// Enough plain files to be hashed on several threads: the same tree as `git add -A`,
    /// with a converted file, an executable one and an ignored one among them.
    #[test]
    fn many_files_hashed_together_match_git_add() {
        let dir = init_repo();
        let root = dir.path();
        write_file(root, ".gitignore", "*.log\n");
        write_file(root, "conv/.gitattributes", "*.txt text eol=crlf\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "base"]);
        let base = git(root, &["rev-parse", "HEAD^{tree}"]);
        let mut touched = Vec::new();
        for i in 0..(PARALLEL_FROM * 2 + 3) {
            let path = format!("d{}/f{i}.md", i % 7);
            write_file(root, &path, &format!("file {i}\n"));
            touched.push(PathBuf::from(path));
        }
        write_file(root, "conv/c.txt", "one\r\ntwo\n");
        write_file(root, "skip.log", "ignored\n");
        write_file(root, "run.sh", "#!/bin/sh\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
        touched.extend(["conv/c.txt", "skip.log", "run.sh"].map(PathBuf::from));
        let repo = Repository::open(root).expect("open");
        assert_matches_git_add(&repo, root, &base, &touched);
        git(root, &["fsck", "--no-dangling"]);
    }
}
