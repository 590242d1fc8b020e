//! `git loaf apply --no-commit` end to end on a fixture folder: the report, exit code 1 for a
//! partly failed reply, and the files afterwards.

use std::path::Path;

use insta::assert_snapshot;

use crate::support::{fixture, git_loaf, read};

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("readable") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

#[test]
fn no_commit_runs_the_reply_in_place_and_reports_for_the_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    copy_dir(&fixture("002_apply_no_commit/input"), &root);
    let reply =
        read(&fixture("002_apply_no_commit/reply.md")).replace("/repo", &root.to_string_lossy());
    let out = git_loaf()
        .current_dir(&root)
        .args(["apply", "--no-commit"])
        .write_stdin(reply)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1), "two blocks failed");
    let report = String::from_utf8_lossy(&out.stdout).replace(&*root.to_string_lossy(), "/repo");
    assert_snapshot!(report, @r#"
    === LOAF RESULTS === PARTIAL: 3 ✅ 2 ❌
    k7m ✅ file_write /repo/greet.sh
    x9z ✅ file_replace_text /repo/main.sh
    q1w ❌ file_replace_text /repo/main.sh - old_text not found in file; closest match at line 5 (78% similar):
        5: echo "done"
    r2d ✅ exec bash
    w3b ❌ ERROR: Unknown action 'create_file' (did you mean 'file_write'?) (line 48)
    === OUTPUTS ===
    [r2d] exec bash:
    exit code: 0
    stdout:
    start
    Hello, world!
    done
    === END ===
    "#);
    assert_eq!(
        read(&root.join("main.sh")),
        "#!/bin/sh\necho \"start\"\n. ./greet.sh\ngreet world\necho \"done\"\n"
    );
    assert!(
        !root.join("notes.txt").exists(),
        "the invalid block did not run"
    );
    assert_eq!(
        read(&root.join("hook-ran.txt")),
        "file_write,file_replace_text,file_replace_text (failed),exec\n",
        "the after hook ran with the run's values"
    );
}

/// Runs a reply writing `<root>/a.txt` in a fresh folder with `loaf_yml`.
fn write_a_txt_with(
    loaf_yml: &str,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    git_loaf::report::ExecutionResult,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let config = git_loaf::config::Config::parse(loaf_yml, &root).expect("valid loaf.yml");
    let reply = format!(
        "#!nesl [@three-char-SHA-256: ab1]\naction = \"file_write\"\npath = \"{}/a.txt\"\ncontent = \"x\"\n#!end_ab1\n",
        root.display()
    );
    let result = git_loaf::Loaf::with_config(&root, config).execute(&reply);
    (dir, root, result)
}

#[test]
fn a_failing_before_hook_aborts_with_nothing_run() {
    let (_dir, root, result) =
        write_a_txt_with("hooks:\n  before:\n    - run: echo not ready >&2; exit 2\n");
    assert!(!result.success);
    assert_eq!(result.executed_actions, 0);
    assert_eq!(
        result.fatal_error.as_deref(),
        Some("Before hooks failed - aborting execution")
    );
    let before = result.hook_errors.map(|h| h.before).unwrap_or_default();
    assert_eq!(
        before,
        ["echo not ready >&2; exit 2: Process exited with code 2: not ready"]
    );
    assert!(!root.join("a.txt").exists(), "nothing ran");
}

#[test]
fn a_tolerated_before_hook_failure_is_recorded_and_the_reply_runs() {
    let (_dir, root, result) =
        write_a_txt_with("hooks:\n  before:\n    - run: exit 1\n      continueOnError: true\n");
    assert!(result.success, "{result:?}");
    assert!(root.join("a.txt").exists());
    let before = result.hook_errors.map(|h| h.before).unwrap_or_default();
    assert_eq!(before, ["exit 1: Process exited with code 1"]);
}

#[test]
fn a_bad_loaf_yml_is_exit_2_naming_the_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("loaf.yml"), "version: 1\nhook: []\n").expect("write");
    let out = git_loaf()
        .current_dir(dir.path())
        .args(["apply", "--no-commit"])
        .write_stdin("")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 2 column 1: unknown key 'hook' (did you mean 'hooks'?)"),
        "{stderr}"
    );
}

#[test]
fn redirected_paths_land_in_the_real_root_and_the_report_shows_the_users() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = dir.path().canonicalize().expect("canonical");
    let user = std::path::Path::new("/home/ada/project");
    let config = git_loaf::config::Config::parse(
        "fs-guard:\n  read: { allow: [\"./**\"] }\n  write: { allow: [\"./src/**\"] }\n",
        user,
    )
    .expect("valid loaf.yml");
    let reply = "#!nesl [@three-char-SHA-256: ab1]\naction = \"file_write\"\npath = \"/home/ada/project/src/a.txt\"\ncontent = \"x\"\n#!end_ab1\n\
                 #!nesl [@three-char-SHA-256: ab2]\naction = \"file_write\"\npath = \"/home/ada/project/b.txt\"\ncontent = \"y\"\n#!end_ab2\n";
    let paths = git_loaf::exec::PathMap::redirect(user, &real);
    let result = git_loaf::execute(reply, &config, &paths);
    assert_eq!(
        read(&real.join("src/a.txt")),
        "x",
        "written in the real root"
    );
    assert!(!real.join("b.txt").exists(), "outside ./src/** refused");
    let json = result.to_json();
    assert!(json.contains("/home/ada/project/src/a.txt"), "{json}");
    assert!(
        !json.contains(&*real.to_string_lossy()),
        "the real root never shows: {json}"
    );
    assert_eq!(
        result.results[1].error.as_deref().map(|e| e
            .starts_with("fs-guard violation: write access denied for '/home/ada/project/b.txt'")),
        Some(true),
        "{:?}",
        result.results[1].error
    );
}
