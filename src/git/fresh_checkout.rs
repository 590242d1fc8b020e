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

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};

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
pub fn write_tree(repo: &Repository, root: &Path, tree: Oid) -> Result<bool, git2::Error> {
    let Some((folders, files)) = plain_entries(repo, tree)? else {
        return Ok(false);
    };
    for folder in &folders {
        std::fs::create_dir_all(root.join(folder)).map_err(|e| io_error(&root.join(folder), e))?;
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS);
    let mut parts = files.chunks(files.len().div_ceil(threads).max(1));
    let mine = parts.next().unwrap_or_default();
    let git_dir = repo.path();
    let written: Vec<std::fs::Metadata> = std::thread::scope(|scope| {
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
    })?;
    let mut index = repo.index()?;
    index.clear()?;
    for (file, meta) in files.iter().zip(&written) {
        index.add(&super::index_lock::entry(
            &file.path,
            file.id,
            file.mode as u32,
            Some(meta),
        ))?;
    }
    index.write()?;
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
            let path = Path::new(parent).join(super::path_from_bytes(name));
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
    let mut written = Vec::with_capacity(files.len());
    for file in files {
        let object = odb.read(file.id)?;
        if object.kind() != ObjectType::Blob {
            return Err(git2::Error::from_str(&format!(
                "{}: {} is not a blob",
                file.path.display(),
                file.id
            )));
        }
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
        out.write_all(object.data())
            .map_err(|e| io_error(&full, e))?;
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
