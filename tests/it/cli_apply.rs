//! `git loaf apply` end to end.

use insta::assert_snapshot;

use crate::support::{fixture, git_loaf};

#[test]
fn dry_run_lists_planned_actions_and_errors_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = git_loaf()
        .current_dir(dir.path())
        .args(["apply", "--dry-run"])
        .arg(fixture("001_parse_reply_with_prose_and_errors/reply.md"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1), "the reply has errors");
    assert_snapshot!(String::from_utf8_lossy(&out.stdout), @r"
    === LOAF DRY RUN ===
    k7m file_write /repo/src/greet.rs
    x9z file_replace_text /repo/src/main.rs
    q1w ❌ ERROR: Invalid assignment operator ':=' - only '=' is allowed (line 36)
    q1w ❌ ERROR: Unexpected content after quoted value (line 37)
    === 2 actions would run; 2 errors ===
    ");
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("readable").collect();
    assert!(left.is_empty(), "dry run wrote nothing");
}

#[test]
fn dry_run_json_is_the_plan() {
    let reply = "#!nesl [@three-char-SHA-256: ab1]\naction = \"file_read\"\npath = \"rel.txt\"\n#!end_ab1\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let out = git_loaf()
        .current_dir(dir.path())
        .args(["apply", "--dry-run", "--json"])
        .write_stdin(reply)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["success"], false);
    assert_eq!(json["parseErrors"][0]["errorType"], "type");
    let root = dir.path().canonicalize().expect("canonical");
    let message = json["parseErrors"][0]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains(&format!("write '{}/rel.txt'", root.display())),
        "names the current directory as the root outside a repository: {message}"
    );
}
