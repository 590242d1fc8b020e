//! Test helpers for the git module: the git CLI in a deterministic environment.

use std::path::Path;
use std::process::Command;

/// Runs `git args` in `dir` with fixed dates and identity, no system or global config, and
/// returns its stdout; a failing command fails the test.
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_dated(dir, "2026-01-01T00:00:00Z", args)
}

/// [`git`] with author and committer dated `date` (any form git reads, e.g. `@1577836800`).
pub(crate) fn git_dated(dir: &Path, date: &str, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A new repository on branch `main` whose config names the user (libgit2 reads it for the
/// commit signature).
pub(crate) fn init_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["config", "user.name", "Ada"]);
    git(dir.path(), &["config", "user.email", "ada@example.com"]);
    dir
}

/// Everything `git` says about the user's state: status (untracked files listed one by one),
/// unstaged and staged diffs, and HEAD. Equal strings mean an identical state.
pub(crate) fn user_state(root: &Path) -> String {
    [
        git(root, &["status", "--porcelain=v2", "--untracked-files=all"]),
        git(root, &["diff"]),
        git(root, &["diff", "--cached"]),
        git(root, &["rev-parse", "HEAD"]),
    ]
    .join("\n---\n")
}

/// Writes `content` at `rel`, stages it and commits it with `message`, author and committer
/// dated `day` days after 2020-01-01; returns the commit.
pub(crate) fn commit_on_day(
    root: &Path,
    rel: &str,
    content: &str,
    day: i64,
    message: &str,
) -> git2::Oid {
    write_file(root, rel, content);
    git(root, &["add", rel]);
    let date = format!("@{}", 1_577_836_800 + day * 86_400);
    git_dated(root, &date, &["commit", "-q", "-m", message]);
    git2::Oid::from_str(git(root, &["rev-parse", "HEAD"]).trim()).expect("an id")
}

/// Writes `content` at `rel` under `root`, creating folders.
pub fn write_file(root: &Path, rel: &str, content: &str) {
    let full = root.join(rel);
    std::fs::create_dir_all(full.parent().expect("a file has a parent")).expect("mkdir");
    std::fs::write(full, content).expect("write");
}

/// A repository with one commit: `.gitignore` (`*.log`), `a.txt` (three lines), `gone.txt`.
pub(crate) fn committed_repo() -> tempfile::TempDir {
    let dir = init_repo();
    let root = dir.path();
    write_file(root, ".gitignore", "*.log\n");
    write_file(root, "a.txt", "1\n2\n3\n");
    write_file(root, "gone.txt", "x\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "first"]);
    dir
}

/// Uncommitted work of every kind on a [`committed_repo`]: a partially staged file (line 1
/// staged, line 3 not), a deletion, an untracked file and an ignored one.
pub(crate) fn make_dirty(root: &Path) {
    write_file(root, "a.txt", "ONE\n2\n3\n");
    git(root, &["add", "a.txt"]);
    write_file(root, "a.txt", "ONE\n2\nTHREE\n");
    std::fs::remove_file(root.join("gone.txt")).expect("rm");
    write_file(root, "new.txt", "new\n");
    write_file(root, "debug.log", "ignored\n");
}
