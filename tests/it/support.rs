//! Shared helpers: test data paths, markdown fences, and a deterministic command environment.

use std::path::{Path, PathBuf};

/// The repository's `test-data/` folder.
pub fn test_data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test-data")
        .join(rel)
}

/// The repository's `fixtures/` folder.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// Reads a test data file, failing the test with the path if it cannot.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// `### name` sections of a markdown file, each with the bodies of its fenced code blocks
/// (without their final newline) in order.
pub fn markdown_cases(text: &str) -> Vec<(String, Vec<String>)> {
    let mut cases: Vec<(String, Vec<String>)> = Vec::new();
    let mut fence: Option<String> = None;
    for line in text.split('\n') {
        if let Some(body) = fence.as_mut() {
            if line.starts_with("```") {
                let body = fence.take().unwrap_or_default();
                let body = body.strip_suffix('\n').unwrap_or(&body).to_owned();
                if let Some(case) = cases.last_mut() {
                    case.1.push(body);
                }
            } else {
                body.push_str(line);
                body.push('\n');
            }
        } else if let Some(name) = line.strip_prefix("### ") {
            cases.push((name.trim().to_owned(), Vec::new()));
        } else if line.starts_with("```") && !cases.is_empty() {
            fence = Some(String::new());
        }
    }
    cases
}

/// The `git-loaf` binary under a deterministic environment.
pub fn git_loaf() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("git-loaf").expect("the git-loaf binary is built");
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .env("NO_COLOR", "1")
        .env_remove("LOAF_LOG");
    cmd
}

/// Pretty JSON that keeps key order: comparing these strings checks key order too, and a
/// failure shows a readable diff.
pub fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON values serialize")
}

/// A test cannot run here because `what` (a program it drives) is missing or broken: with
/// `CI` set (CI runs with `CI=true`, and `.ci/run` installs these programs) that fails the
/// test, since passing without having tested anything would hide the gap; elsewhere the
/// test returns early after printing the reason (`cargo test -- --nocapture` shows it).
pub fn unavailable(what: &str) {
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0");
    assert!(
        !ci,
        "CI is set, so this test may not skip: {what} (`.ci/run` installs it on Debian-based machines)"
    );
    eprintln!("skipped: {what}");
}
