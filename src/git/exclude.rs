//! Keeping git-loaf's own files out of the user's `git status`: a pattern added once to the
//! repository's `info/exclude` (git's per-repository ignore file, never committed, so the
//! user's `.gitignore` stays theirs).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use git2::Repository;

/// The pattern for the watcher's folder at the repository root (`.loaf/reply.md`,
/// `.loaf/results.md`).
pub(crate) const LOAF_DIR_PATTERN: &str = "/.loaf/";

/// Why the exclude file could not be updated.
#[derive(Debug, thiserror::Error)]
#[error("cannot update {}: {error}", .path.display())]
pub(crate) struct ExcludeError {
    /// The exclude file.
    pub path: PathBuf,
    /// The OS error.
    pub error: std::io::Error,
}

/// The exclude file git reads for this repository: `info/exclude` in the common git dir
/// (shared by all its linked worktrees, as git reads it).
pub fn exclude_file(repo: &Repository) -> PathBuf {
    repo.commondir().join("info").join("exclude")
}

/// Adds `pattern` as a line of the repository's exclude file unless a line already says
/// exactly that. Returns whether it was added.
pub(crate) fn ensure_excluded(repo: &Repository, pattern: &str) -> Result<bool, ExcludeError> {
    let path = exclude_file(repo);
    ensure_line(&path, pattern).map_err(|error| ExcludeError { path, error })
}

fn ensure_line(path: &Path, pattern: &str) -> std::io::Result<bool> {
    let existing = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    let present = existing
        .split(|b| *b == b'\n')
        .any(|line| line.trim_ascii() == pattern.as_bytes());
    if present {
        return Ok(false);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?;
    // A last line without its newline must not swallow the pattern.
    let separator = if existing.is_empty() || existing.ends_with(b"\n") {
        ""
    } else {
        "\n"
    };
    file.write_all(format!("{separator}{pattern}\n").as_bytes())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{git, init_repo};

    #[test]
    fn the_pattern_is_added_once_and_git_ignores_the_folder() {
        let dir = init_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        // A user's own last line without a newline stays intact.
        let file = exclude_file(&repo);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, "*.log").expect("write");
        assert!(ensure_excluded(&repo, LOAF_DIR_PATTERN).expect("added"));
        assert!(!ensure_excluded(&repo, LOAF_DIR_PATTERN).expect("present"));
        assert_eq!(
            std::fs::read_to_string(&file).expect("read"),
            "*.log\n/.loaf/\n"
        );
        std::fs::create_dir_all(root.join(".loaf")).expect("mkdir");
        std::fs::write(root.join(".loaf/reply.md"), "x").expect("write");
        std::fs::write(root.join("a.log"), "x").expect("write");
        std::fs::write(root.join("kept.txt"), "x").expect("write");
        let status = git(root, &["status", "--porcelain", "--untracked-files=all"]);
        assert_eq!(status, "?? kept.txt\n");
    }
}
