//! The deterministic environment every git, git-loaf and lorch process of lorch's integration
//! tests runs in (no system or global config, fixed identity and dates, UTC, C locale), and
//! git run with it. The same as git-loaf's `tests/common/deterministic.rs`: the two crates'
//! tests must see git alike.

use std::path::Path;
use std::process::Command;

/// The environment every git, git-loaf and lorch process of a test gets.
pub const ENV: [(&str, &str); 10] = [
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("GIT_AUTHOR_NAME", "Ada"),
    ("GIT_AUTHOR_EMAIL", "ada@example.com"),
    ("GIT_COMMITTER_NAME", "Ada"),
    ("GIT_COMMITTER_EMAIL", "ada@example.com"),
    ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"),
    ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"),
    ("TZ", "UTC"),
    ("LC_ALL", "C"),
];

/// Runs git in `dir`; a failure fails the test. Its stdout.
pub fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .envs(ENV)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
