//! Removing many files at once, as the stage's reset does with the files an undo moved into
//! it (thousands after an exec that generated code or vendored a dependency).
//!
//! On a file system mounted with `discard` (common on cloud disks and SSDs), each unlink of a
//! file with data waits for the device to discard its blocks: one after another, 10,000
//! unlinks took 33 s on this project's machine, where `git reset --hard` pays the same in its
//! own deletions. The waits overlap when several unlinks are in flight, so the files are
//! removed by a few threads at once: 3,000 files in 0.5 s instead of 9.9 s there
//! (docs/speed.md, "Many changed files").

use std::io;
use std::path::{Path, PathBuf};

/// Threads removing at once: enough for the device's queue, few enough to stay cheap on a
/// small machine (the work is waiting, not computing).
const REMOVERS: usize = 16;

/// Below this many files one thread does it: threads cost more than they save.
const ALONE_UP_TO: usize = 64;

/// Removes each file (never a folder; a path already gone is no error). The first error
/// other than a missing file is returned, after every other file was tried.
pub(crate) fn remove_files(files: &[PathBuf]) -> io::Result<()> {
    if files.len() <= ALONE_UP_TO {
        return remove_each(files);
    }
    let per_thread = files.len().div_ceil(REMOVERS);
    std::thread::scope(|scope| {
        let removers: Vec<_> = files
            .chunks(per_thread)
            .map(|chunk| scope.spawn(move || remove_each(chunk)))
            .collect();
        let mut first = Ok(());
        for remover in removers {
            let done = remover
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a file remover panicked")));
            if first.is_ok() {
                first = done;
            }
        }
        first
    })
}

/// Removes a folder and everything in it (symlinks themselves, never what they point to), its
/// files several at a time as [`remove_files`] does: an ignored `node_modules` or build
/// folder a run left in the stage can hold tens of thousands.
pub(crate) fn remove_tree(folder: &Path) -> io::Result<()> {
    let mut files = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(next) = folders.pop() {
        let entries = match std::fs::read_dir(&next) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            entries => entries?,
        };
        for entry in entries {
            let entry = entry?;
            // The entry's own type: a symlink to a folder is a file here.
            if entry.file_type()?.is_dir() {
                folders.push(entry.path());
            } else {
                files.push(entry.path());
            }
        }
    }
    remove_files(&files)?;
    match std::fs::remove_dir_all(folder) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        done => done,
    }
}

fn remove_each(files: &[PathBuf]) -> io::Result<()> {
    let mut first = Ok(());
    for file in files {
        match std::fs::remove_file(file) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) if first.is_ok() => first = Err(e),
            _ => {}
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_every_file_and_leaves_folders_and_other_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut files = Vec::new();
        for i in 0..300 {
            let folder = dir.path().join(format!("d{}", i % 7));
            std::fs::create_dir_all(&folder).expect("folder");
            let file = folder.join(format!("f{i}"));
            std::fs::write(&file, b"x").expect("write");
            files.push(file);
        }
        std::fs::write(dir.path().join("d0/kept"), b"kept").expect("write");
        // One already gone: no error.
        std::fs::remove_file(&files[5]).expect("remove");
        remove_files(&files).expect("removed");
        assert!(files.iter().all(|f| !f.exists()));
        assert!(dir.path().join("d0/kept").is_file());
        assert!(dir.path().join("d6").is_dir());
    }

    #[test]
    fn a_tree_goes_whole_and_a_symlink_in_it_is_not_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).expect("outside");
        std::fs::write(outside.join("keep"), b"keep").expect("write");
        let top = dir.path().join("top");
        for i in 0..150 {
            let folder = top.join(format!("a/b{}", i % 5));
            std::fs::create_dir_all(&folder).expect("folder");
            std::fs::write(folder.join(format!("f{i}")), b"x").expect("write");
        }
        std::os::unix::fs::symlink(&outside, top.join("a/link")).expect("symlink");
        remove_tree(&top).expect("removed");
        assert!(!top.exists());
        assert!(outside.join("keep").is_file());
        remove_tree(&top).expect("a missing folder is no error");
    }

    #[test]
    fn an_error_is_reported_after_the_rest_is_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut files: Vec<PathBuf> = (0..200)
            .map(|i| {
                let f = dir.path().join(format!("f{i}"));
                std::fs::write(&f, b"x").expect("write");
                f
            })
            .collect();
        // A folder where a file is expected: remove_file refuses it.
        let folder = dir.path().join("folder");
        std::fs::create_dir(&folder).expect("folder");
        files.insert(0, folder.clone());
        assert!(remove_files(&files).is_err());
        assert!(folder.is_dir());
        assert!(files[1..].iter().all(|f| !f.exists()));
    }
}
