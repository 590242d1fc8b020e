//! `examples/lorch/try.sh`, the one command that shows a whole lorch run without any LLM
//! (issue 26 finding 9), run end to end as a newcomer would, on the lorch built here.

use std::process::Command;

use crate::deterministic::{ENV, git_in as git};

#[test]
fn the_example_shows_a_whole_run_with_its_scripted_model() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = scratch.path().join("try");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/lorch/try.sh");
    let out = Command::new("sh")
        .arg(script)
        .arg(&dir)
        .env("LORCH", env!("CARGO_BIN_EXE_lorch"))
        .envs(ENV)
        .output()
        .expect("sh runs");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{shown}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut at = 0;
    for line in [
        "[lorch→builder] command implement",
        "[builder] builder.progress: turn 1 of 4: the apply did not fully succeed",
        "the report goes back to the model",
        "[builder] builder.progress: turn 2 of 4: done (all 1 ✅)",
        "[builder] builder.completed success",
        "[reviewer] review.completed changes_requested",
        "[lorch→builder] command implement_changes",
        "[reviewer] review.completed approved",
        "[spec_maintainer] spec.updated",
        "[lorch] DONE",
    ] {
        at += shown[at..]
            .find(line)
            .unwrap_or_else(|| panic!("{line:?} after byte {at}:\n{shown}"));
    }
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).expect(file);
    assert_eq!(read("greeting.txt"), "Hello, lorch\n");
    assert_eq!(read("farewell.txt"), "Goodbye, lorch\n");
    assert!(read("SPEC.md").contains("| T-0001 | done |"));
    // The project, one commit per builder step, the spec update; nothing left over.
    assert_eq!(git(&dir, &["rev-list", "--count", "HEAD"]), "4\n");
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
}

/// The environment of a machine where git has no identity: no system or global config, no
/// `GIT_AUTHOR_*`/`GIT_COMMITTER_*`, a HOME of its own.
fn without_identity(cmd: &mut Command, home: &std::path::Path) {
    cmd.envs(ENV).env("HOME", home).env_remove("EMAIL");
    for (key, _) in ENV {
        if key.starts_with("GIT_AUTHOR") || key.starts_with("GIT_COMMITTER") {
            cmd.env_remove(key);
        }
    }
}

#[test]
fn the_example_runs_on_a_machine_without_a_git_identity() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = scratch.path().join("try");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/lorch/try.sh");
    let mut cmd = Command::new("sh");
    cmd.arg(script)
        .arg(&dir)
        .env("LORCH", env!("CARGO_BIN_EXE_lorch"));
    without_identity(&mut cmd, scratch.path());
    let out = cmd.output().expect("sh runs");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{shown}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(shown.contains("[lorch] DONE"), "{shown}");
}

#[test]
fn a_failed_example_says_so_and_does_not_invite_to_look_around() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = scratch.path().join("try");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/lorch/try.sh");
    let out = Command::new("sh")
        .arg(script)
        .arg(&dir)
        .env("LORCH", "false")
        .envs(ENV)
        .output()
        .expect("sh runs");
    let shown = String::from_utf8_lossy(&out.stdout);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{shown}\n{said}");
    assert!(!shown.contains("Look around"), "{shown}");
    assert!(said.contains("lorch run failed (exit 1)"), "{said}");
}
