//! A reply of file actions alone costs what it touches (docs/apply.md): the stage gets the
//! user's uncommitted version of the paths the actions name, never the rest of the user's
//! dirty files; code (exec) still sees every one of them. Whatever the stage holds from
//! earlier runs, a commit holds only what the reply changed, and the user's work stays.

use crate::crash::spawn_apply;
use crate::ownership::{TEN, exec, replace_line_9};
use crate::scratch::{Scratch, block};

const USERS_TEN: &str = "mine\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

/// Committed `f.txt`, `other.txt`, `gone.txt`; exec allowed. The user then edits line 1 of
/// `f.txt`, rewrites `other.txt`, deletes `gone.txt` and adds `new.txt`.
fn dirty() -> Scratch {
    let s = Scratch::with(&[
        ("f.txt", TEN),
        ("other.txt", "committed\n"),
        ("gone.txt", "committed\n"),
        ("loaf.yml", "allowed-actions: [defaults, exec]\n"),
    ]);
    make_dirty(&s, "mine");
    s
}

fn make_dirty(s: &Scratch, word: &str) {
    s.write("f.txt", &TEN.replacen("1\n", &format!("{word}\n"), 1));
    s.write("other.txt", &format!("{word}\n"));
    let _ = std::fs::remove_file(s.root.join("gone.txt"));
    s.write("new.txt", &format!("{word}, untracked\n"));
}

/// What the stage holds at `path` (`None`: nothing).
fn in_stage(s: &Scratch, path: &str) -> Option<String> {
    std::fs::read_to_string(s.root.join(".git/loaf/stage").join(path)).ok()
}

/// The files the last commit changed.
fn committed_paths(s: &Scratch) -> String {
    s.git(&["show", "--format=", "--name-only", "HEAD"])
}

#[test]
fn a_file_action_on_a_dirty_file_sees_the_users_lines_and_commits_its_own_hunk_only() {
    let s = dirty();
    let out = s.apply(&replace_line_9());
    s.assert_exit(&out, 0);
    assert_eq!(committed_paths(&s), "f.txt\n");
    let diff = s.git(&["show", "--format=", "HEAD"]);
    assert!(diff.contains("-9\n+nine by AI\n"), "{diff}");
    assert!(
        !diff.contains("mine"),
        "the user's line stays uncommitted: {diff}"
    );
    assert_eq!(
        s.read("f.txt").as_deref(),
        Some(USERS_TEN.replace("9\n", "nine by AI\n").as_str())
    );
    assert_eq!(s.read("other.txt").as_deref(), Some("mine\n"));
    assert_eq!(s.read("gone.txt"), None);
    assert_eq!(s.read("new.txt").as_deref(), Some("mine, untracked\n"));
    // The dirty files the reply did not name were never copied into the stage.
    assert_eq!(in_stage(&s, "other.txt").as_deref(), Some("committed\n"));
    assert_eq!(in_stage(&s, "new.txt"), None);
    assert_eq!(in_stage(&s, "gone.txt").as_deref(), Some("committed\n"));
}

#[test]
fn a_reply_that_reads_dirty_files_gets_the_users_text_and_the_users_deletion() {
    let s = dirty();
    let read = |path: &str| {
        let out = s.apply(&block("r1x", "file_read", &[("path", path)]));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(read("/repo/f.txt").contains("mine\n"));
    // What a read names is placed in the stage, from the checkpoint; nothing else is.
    assert_eq!(in_stage(&s, "f.txt").as_deref(), Some(USERS_TEN));
    assert_eq!(in_stage(&s, "other.txt").as_deref(), Some("committed\n"));
    assert!(read("/repo/other.txt").contains("mine\n"));
    assert!(read("/repo/new.txt").contains("mine, untracked"));
    let gone = read("/repo/gone.txt");
    assert!(
        gone.contains("ENOENT") && !gone.contains("committed"),
        "{gone}"
    );
}

#[test]
fn an_exec_after_file_actions_still_sees_every_dirty_file_of_the_user() {
    let s = dirty();
    s.assert_exit(&s.apply(&replace_line_9()), 0);
    let out = exec(
        &s,
        "off",
        "cat other.txt new.txt; test -e gone.txt && echo GONE-PRESENT; head -1 f.txt",
    );
    s.assert_exit(&out, 0);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("mine\nmine, untracked\nmine\n"), "{report}");
    assert!(!report.contains("GONE-PRESENT"), "{report}");
}

/// File actions, then an exec (the stage gets all the user's work), then the user changes
/// that work, then file actions again: nothing stale from the stage is committed, nothing of
/// the user's is reverted.
#[test]
fn file_actions_exec_then_file_actions_commit_only_their_own_changes() {
    let s = dirty();
    s.assert_exit(&s.apply(&replace_line_9()), 0);
    s.assert_exit(&exec(&s, "off", "echo made > made.txt"), 0);
    assert_eq!(committed_paths(&s), "made.txt\n");
    assert_eq!(in_stage(&s, "other.txt").as_deref(), Some("mine\n"));
    make_dirty(&s, "later");
    s.write("gone.txt", "back\n");
    let before = s.state();
    let write = block(
        "w2x",
        "file_write",
        &[("path", "/repo/made.txt"), ("content", "again\n")],
    );
    s.assert_exit(&s.apply(&write), 0);
    assert_eq!(committed_paths(&s), "made.txt\n");
    let state = s.state();
    for (path, content) in [
        ("other.txt", "later\n"),
        ("new.txt", "later, untracked\n"),
        ("gone.txt", "back\n"),
    ] {
        assert_eq!(s.read(path).as_deref(), Some(content), "{path}");
    }
    assert!(state.contains("later\n2\n3"), "{state}");
    assert_ne!(state, before);
    // The stage still holds the user's older work there: never read, never committed.
    assert_eq!(in_stage(&s, "other.txt").as_deref(), Some("mine\n"));
    // A file action on such a path gets the user's current version.
    let append = block(
        "a3x",
        "file_append",
        &[("path", "/repo/f.txt"), ("content", "appended\n")],
    );
    s.assert_exit(&s.apply(&append), 0);
    assert_eq!(
        s.read("f.txt").as_deref(),
        Some(format!("later\n{}appended\n", &TEN[2..]).as_str())
    );
    let diff = s.git(&["show", "--format=", "HEAD"]);
    assert!(
        diff.contains("+appended\n") && !diff.contains("later"),
        "{diff}"
    );
    // And a search of the whole tree sees the user's view.
    let out = s.apply(&block(
        "g4x",
        "grep",
        &[("pattern", "later"), ("path", "/repo")],
    ));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("new.txt"), "{report}");
}

/// Killed once the user's work is placed in a partly placed stage (before or after the
/// file action wrote there, or the commit was made): the next apply scans the stage, so
/// neither the unfinished write nor anything stale reaches a reply, a commit or the user.
#[test]
fn a_crash_after_a_partial_stage_is_placed_is_recovered() {
    for moment in ["stage", "executed", "snapshot", "commit"] {
        let s = dirty();
        let before = s.state();
        let status = spawn_apply(
            &s,
            &s.reply(&replace_line_9()),
            &[("LOAF_CRASH_AT", moment)],
        )
        .wait()
        .expect("waits");
        assert!(!status.success(), "{moment}");
        assert_eq!(s.state(), before, "{moment}: nothing published");
        let read = s.apply(&block("r7x", "file_read", &[("path", "/repo/f.txt")]));
        let report = String::from_utf8_lossy(&read.stdout);
        assert!(
            report.contains("mine\n") && !report.contains("nine by AI"),
            "{moment}: {report}"
        );
        let out = exec(&s, "off", "cat f.txt other.txt");
        s.assert_exit(&out, 0);
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            report.contains(&format!("{USERS_TEN}mine\n")),
            "{moment}: {report}"
        );
        assert!(!report.contains("nine by AI"), "{moment}: {report}");
        let write = block(
            "w5x",
            "file_write",
            &[("path", "/repo/x.txt"), ("content", "x\n")],
        );
        s.assert_exit(&s.apply(&write), 0);
        assert_eq!(committed_paths(&s), "x.txt\n", "{moment}");
        s.assert_tidy();
    }
}

/// A path through a symlink reaches another file than the one it names: the stage then
/// gets all of the user's work, and the edit lands on the user's version of the target.
#[cfg(unix)]
#[test]
fn a_path_through_a_symlink_edits_the_users_version_of_its_target() {
    let s = dirty();
    std::os::unix::fs::symlink("f.txt", s.root.join("link")).expect("symlink");
    s.git(&["add", "link"]);
    s.git(&["commit", "-q", "-m", "link", "--", "link"]);
    let replace = block(
        "r6x",
        "file_replace_text",
        &[
            ("path", "/repo/link"),
            ("old_text", "mine\n2\n"),
            ("new_text", "mine\ntwo\n"),
        ],
    );
    let out = s.apply(&replace);
    s.assert_exit(&out, 0);
    assert_eq!(
        s.read("f.txt").as_deref(),
        Some(USERS_TEN.replace("2\n", "two\n").as_str())
    );
}
