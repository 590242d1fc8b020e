//! The first checkout of a new stage, written on several threads.
//!
//! Creating the stage checks the whole tree out into an empty folder: a file per blob, most
//! of the first apply's time (libgit2 writes them one after the other: inflate, create,
//! write). When nothing can convert content (no attribute, driver or `core.autocrlf`, which
//! the caller has checked) and the tree holds only folders and regular files with ordinary
//! names, each file is just its blob's bytes, so the files are written here instead, shared
//! out between threads with a handle on the object database each, and the stage's index is
//! then built from the files' stat data, as a checkout leaves it (`git status` in the stage
//! sees it clean without reading a file). Anything else (a symlink, a submodule, a name git
//! protects such as `.git` or `..`) leaves the checkout to libgit2: [`write_tree`] returns
//! `false` before touching anything.

use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, TreeWalkMode, TreeWalkResult};

const EXECUTABLE: i32 = 0o100755;
const REGULAR: i32 = 0o100644;
const TREE: i32 = 0o040000;

/// At most this many threads write files (beyond it they contend in the filesystem).
const MAX_THREADS: usize = 4;

/// A tree's folders (parents first) and files.
type Entries = (Vec<PathBuf>, Vec<File>);

/// One file to write: its path (relative), blob and mode.
struct File {
    path: PathBuf,
    id: Oid,
    mode: i32,
}

/// Writes `tree` of `repo` (the stage, whose working tree `root` is empty) and sets its
/// index to match; `false` when the tree holds something this does not write (nothing is
/// written then).
pub(crate) fn write_tree(repo: &Repository, root: &Path, tree: Oid) -> Result<bool, git2::Error> {
    let Some((folders, files)) = plain_entries(repo, tree)? else {
        return Ok(false);
    };
    for folder in &folders {
        std::fs::create_dir_all(root.join(folder)).map_err(|e| io_error(&root.join(folder), e))?;
    }
    let written = write_on_threads(repo, root, &files)?;
    let mut index = repo.index()?;
    index.clear()?;
    for (file, meta) in files.iter().zip(&written) {
        index.add(&crate::git::index::entry(
            &file.path,
            file.id,
            file.mode as u32,
            Some(meta),
        ))?;
    }
    index.write()?;
    Ok(true)
}

/// Writes `files` (absent now) under `root` from their blobs, shared out between threads
/// with a handle on the object database each; their metadata, in order.
fn write_on_threads(
    repo: &Repository,
    root: &Path,
    files: &[File],
) -> Result<Vec<std::fs::Metadata>, git2::Error> {
    // A thread costs a handle on the repository: worth it for many files only.
    let threads = if files.len() < 64 {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_THREADS)
    };
    let mut parts = files.chunks(files.len().div_ceil(threads).max(1));
    let mine = parts.next().unwrap_or_default();
    let git_dir = repo.path();
    std::thread::scope(|scope| {
        let others: Vec<_> = parts
            .map(|part| {
                scope.spawn(move || {
                    let own = Repository::open(git_dir)?;
                    write_files(&own, root, part)
                })
            })
            .collect();
        let mut all = write_files(repo, root, mine)?;
        for other in others {
            let part = other
                .join()
                .map_err(|_| git2::Error::from_str("a thread writing the stage panicked"))??;
            all.extend(part);
        }
        Ok::<_, git2::Error>(all)
    })
}

/// Brings the files at `paths` (relative) under `root`, the stage's working tree, to what
/// `tree` holds there: each is deleted and written anew from its blob (never rewritten in
/// place: it may be a file that was the user's), on several threads; one `tree` does not hold
/// is deleted, with the folders it leaves empty. The stage's index is left as it was (it only
/// caches stat data there: a later scan re-reads those files). `false`, before anything is
/// touched, when conversions may apply to a path (`conversions` says so anywhere, or a
/// `.gitattributes` is on its way in `tree` or on disk), or a path is not a plain file in
/// `tree`, has a folder in the way on disk or a symlink or file among its folders: the caller
/// leaves it all to libgit2 (which replaces such a link by a folder, never writing through it).
pub(crate) fn rewrite_paths(
    repo: &Repository,
    root: &Path,
    tree: &git2::Tree<'_>,
    paths: &std::collections::BTreeSet<PathBuf>,
    conversions: &crate::git::filters::Conversions,
) -> Result<bool, git2::Error> {
    if conversions.anywhere() {
        return Ok(false);
    }
    let mut attributes: std::collections::HashMap<&Path, bool> = Default::default();
    let mut folders = crate::git::files::RealFolders::under(root);
    let mut files = Vec::new();
    let mut gone = Vec::new();
    for path in paths {
        for folder in path.ancestors().skip(1) {
            let has = *attributes.entry(folder).or_insert_with(|| {
                let file = folder.join(crate::git::filters::ATTRIBUTES_FILE);
                tree.get_path(&file).is_ok() || root.join(&file).symlink_metadata().is_ok()
            });
            if has {
                return Ok(false);
            }
        }
        let on_disk = root.join(path).symlink_metadata();
        if on_disk.as_ref().is_ok_and(|m| m.is_dir())
            || !folders.lead_to(path)
            || !path.iter().all(|name| plain_name(name.as_encoded_bytes()))
        {
            return Ok(false);
        }
        match tree.get_path(path) {
            Ok(entry) if matches!(entry.filemode(), REGULAR | EXECUTABLE) => files.push(File {
                path: path.clone(),
                id: entry.id(),
                mode: entry.filemode(),
            }),
            Ok(_) => return Ok(false),
            Err(e) if e.code() == git2::ErrorCode::NotFound => gone.push(path),
            Err(e) => return Err(e),
        }
    }
    for path in gone {
        match std::fs::remove_file(root.join(path)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io_error(&root.join(path), e));
            }
            _ => crate::git::files::remove_empty_parents(root, path),
        }
    }
    for file in &files {
        let full = root.join(&file.path);
        match std::fs::remove_file(&full) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_error(&full, e)),
            _ => {}
        }
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
        }
    }
    write_on_threads(repo, root, &files)?;
    Ok(true)
}

/// The folders (parents first) and files of `tree`, or `None` when it holds an entry other
/// than a folder, a regular or executable file, or a name that is not plainly a file name.
fn plain_entries(repo: &Repository, tree: Oid) -> Result<Option<Entries>, git2::Error> {
    let mut folders = Vec::new();
    let mut files = Vec::new();
    let mut plain = true;
    repo.find_tree(tree)?
        .walk(TreeWalkMode::PreOrder, |parent, entry| {
            let name = entry.name_bytes();
            let mode = entry.filemode();
            if !plain_name(name) || !matches!(mode, TREE | REGULAR | EXECUTABLE) {
                plain = false;
                return TreeWalkResult::Abort;
            }
            let path = Path::new(parent).join(crate::git::repo::path_from_bytes(name));
            if mode == TREE {
                folders.push(path);
            } else {
                files.push(File {
                    path,
                    id: entry.id(),
                    mode,
                });
            }
            TreeWalkResult::Ok
        })
        .or_else(|e| if plain { Err(e) } else { Ok(()) })?;
    Ok(plain.then_some((folders, files)))
}

/// Whether a tree entry's name is an ordinary file name: not `.`, `..`, or anything git
/// guards (`.git` in any case or an 8.3 short form of it, a separator, a NUL). A false
/// alarm only costs libgit2's slower checkout.
fn plain_name(name: &[u8]) -> bool {
    let lower = name.to_ascii_lowercase();
    !(name.is_empty()
        || lower == b"."
        || lower == b".."
        || lower.starts_with(b".git")
            && !matches!(
                lower.as_slice(),
                b".gitignore" | b".gitattributes" | b".gitkeep"
            )
        || lower.starts_with(b"git~")
        || name
            .iter()
            .any(|&b| b == b'/' || b == b'\\' || b == 0 || b == b':'))
}

/// Writes `files` under `root` from their blobs; their metadata, in order.
fn write_files(
    repo: &Repository,
    root: &Path,
    files: &[File],
) -> Result<Vec<std::fs::Metadata>, git2::Error> {
    let odb = repo.odb()?;
    let threshold = crate::git::blob_stream::threshold(repo);
    let mut written = Vec::with_capacity(files.len());
    for file in files {
        let full = root.join(&file.path);
        let mode = if file.mode == EXECUTABLE {
            0o777
        } else {
            0o666
        };
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&full)
            .map_err(|e| io_error(&full, e))?;
        // A big blob is streamed into its file, not held whole.
        crate::git::blob_stream::write_blob(repo, &odb, file.id, threshold, &mut out, &full)?;
        let meta = out.metadata().map_err(|e| io_error(&full, e))?;
        written.push(meta);
    }
    Ok(written)
}

fn io_error(path: &Path, error: std::io::Error) -> git2::Error {
    git2::Error::from_str(&format!("{}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::git::testing::{git, init_repo, write_file};

    /// A worktree of `root`'s HEAD with nothing checked out, opened.
    fn empty_worktree(root: &Path, name: &str) -> (PathBuf, Repository) {
        let path = root.join(".git").join(name);
        git(
            root,
            &[
                "worktree",
                "add",
                "-q",
                "--no-checkout",
                "--detach",
                path.to_str().expect("utf-8"),
                "HEAD",
            ],
        );
        let repo = Repository::open(&path).expect("open");
        (path, repo)
    }

    /// Every file as git would check it out (modes included) and an index git sees clean.
    #[test]
    fn plain_trees_are_written_as_git_checks_them_out() {
        let dir = init_repo();
        let root = dir.path();
        for i in 0..40 {
            write_file(
                root,
                &format!("d{}/sub/f{i}.txt", i % 3),
                &format!("file {i}\n"),
            );
        }
        write_file(root, "run.sh", "#!/bin/sh\n");
        write_file(root, ".gitignore", "*.log\n");
        std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "files"]);
        let (path, stage) = empty_worktree(root, "plain");
        let tree = stage
            .head()
            .and_then(|h| h.peel_to_tree())
            .expect("tree")
            .id();
        assert!(write_tree(&stage, &path, tree).expect("write"));
        assert_eq!(
            git(&path, &["status", "--porcelain"]),
            "",
            "git sees it clean"
        );
        assert_eq!(
            std::fs::read_to_string(path.join("d1/sub/f4.txt")).expect("read"),
            "file 4\n"
        );
        let mode = |p: &str| {
            std::fs::metadata(path.join(p))
                .expect("stat")
                .permissions()
                .mode()
        };
        assert_ne!(mode("run.sh") & 0o111, 0, "executable");
        assert_eq!(mode("d0/sub/f0.txt") & 0o111, 0);
        // git's own index agrees entry by entry (ids and modes).
        assert_eq!(
            git(&path, &["ls-files", "-s"]),
            git(root, &["ls-files", "-s"])
        );
    }

    /// Changed, new and deleted paths brought to a commit as new files (never in place), or
    /// nothing touched where conversions may apply or a folder is in the way.
    #[test]
    fn paths_are_rewritten_as_new_files_or_left_to_libgit2() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = init_repo();
        let root = dir.path();
        write_file(root, "a.txt", "a one\n");
        write_file(root, "gone/g.txt", "g\n");
        write_file(root, "attr/.gitattributes", "*.txt text\n");
        write_file(root, "attr/t.txt", "t one\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "one"]);
        let (path, stage) = empty_worktree(root, "rewrite");
        let first = stage.head().and_then(|h| h.peel_to_tree()).expect("tree");
        assert!(write_tree(&stage, &path, first.id()).expect("write"));
        write_file(root, "a.txt", "a two\n");
        write_file(root, "new/n.sh", "#!/bin/sh\n");
        std::fs::set_permissions(
            root.join("new/n.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        write_file(root, "attr/t.txt", "t two\n");
        git(root, &["rm", "-q", "-r", "gone"]);
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "two"]);
        let second = stage
            .find_commit(Oid::from_str(git(root, &["rev-parse", "HEAD"]).trim()).expect("id"))
            .and_then(|c| c.tree())
            .expect("tree");
        let conversions = crate::git::filters::Conversions::of(&stage).expect("config");
        let set = |paths: &[&str]| paths.iter().map(PathBuf::from).collect();
        // Under a .gitattributes: libgit2's, nothing touched.
        let attr: std::collections::BTreeSet<PathBuf> = set(&["a.txt", "attr/t.txt"]);
        assert!(!rewrite_paths(&stage, &path, &second, &attr, &conversions).expect("ok"));
        assert_eq!(
            std::fs::read_to_string(path.join("a.txt")).expect("read"),
            "a one\n"
        );
        // Held open, the old file keeps its inode (a freed one may be reused at once).
        let held = std::fs::File::open(path.join("a.txt")).expect("open");
        let old_a = held.metadata().expect("stat").ino();
        let plain = set(&["a.txt", "gone/g.txt", "new/n.sh"]);
        assert!(rewrite_paths(&stage, &path, &second, &plain, &conversions).expect("ok"));
        assert_eq!(
            std::fs::read_to_string(path.join("a.txt")).expect("read"),
            "a two\n"
        );
        assert_ne!(
            std::fs::metadata(path.join("a.txt")).expect("stat").ino(),
            old_a
        );
        let mut seen = String::new();
        std::io::Read::read_to_string(&mut &held, &mut seen).expect("read");
        assert_eq!(seen, "a one\n", "the old file was not written in place");
        assert!(!path.join("gone").exists(), "deleted with its folder");
        let mode = std::fs::metadata(path.join("new/n.sh"))
            .expect("stat")
            .permissions()
            .mode();
        assert_ne!(mode & 0o111, 0, "executable");
        // A folder where a file goes: libgit2's.
        std::fs::create_dir_all(path.join("gone/g.txt")).expect("mkdir");
        let folder = set(&["gone/g.txt"]);
        assert!(!rewrite_paths(&stage, &path, &first, &folder, &conversions).expect("ok"));
        assert!(path.join("gone/g.txt").is_dir(), "untouched");
    }

    /// A symlink (or a submodule, or a guarded name) is left to libgit2: nothing written.
    #[test]
    fn anything_but_plain_files_is_left_to_libgit2() {
        let dir = init_repo();
        let root = dir.path();
        write_file(root, "a.txt", "a\n");
        std::os::unix::fs::symlink("a.txt", root.join("link")).expect("symlink");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "link"]);
        let (path, stage) = empty_worktree(root, "linked");
        let tree = stage
            .head()
            .and_then(|h| h.peel_to_tree())
            .expect("tree")
            .id();
        assert!(!write_tree(&stage, &path, tree).expect("write"));
        assert!(!path.join("a.txt").exists(), "nothing written");
        assert!(!plain_name(b".git"));
        assert!(!plain_name(b".GIT"));
        assert!(!plain_name(b"git~1"));
        assert!(!plain_name(b".."));
        assert!(plain_name(b".gitignore"));
        assert!(plain_name(b"README.md"));
    }
}
