//! `undo`, `redo`, `log` and `show` as a user meets them after doing things in between: each
//! refusal's next step is one that works, and every id `log` or the report prints can be shown.

use crate::scratch::{Scratch, block};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn write(id: &str, path: &str, content: &str) -> String {
    block(id, "file_write", &[("path", path), ("content", content)])
}

#[test]
fn undo_after_the_user_committed_suggests_revert_not_stash() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt", "ai\n")), 0);
    let ai_commit = s.head();
    s.write("c.txt", "mine\n");
    s.git(&["add", "c.txt"]);
    s.git(&["commit", "-q", "-m", "mine"]);

    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        !err.contains("stash"),
        "a commit is not uncommitted work: {err}"
    );
    let revert = format!("git revert {}", &ai_commit[..7]);
    assert!(err.contains(&revert), "suggests {revert}: {err}");
    // The suggestion works: it takes back the AI's file and keeps the user's commit.
    s.git(&["revert", "--no-edit", &ai_commit[..7]]);
    assert_eq!(s.read("b.txt"), None);
    assert_eq!(s.read("c.txt").as_deref(), Some("mine\n"));
}

#[test]
fn after_a_forced_undo_restore_brings_back_only_the_users_work() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt", "ai\n")), 0);
    s.write("c.txt", "mine\n");
    s.write("a.txt", "one\nand mine\n");

    let out = s.loaf(&["undo", "--force"], "");
    s.assert_exit(&out, 0);
    let text = stdout(&out);
    let line = text
        .lines()
        .find(|l| l.contains("saved as"))
        .unwrap_or_else(|| panic!("says where the work was saved: {text}"));
    let command = line
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("a command in backquotes: {line}"));
    let id = command
        .strip_prefix("git loaf restore ")
        .unwrap_or_else(|| panic!("{command}"));
    assert_eq!(s.read("c.txt"), None, "the forced undo moved it away");

    s.assert_exit(&s.loaf(&["restore", id], ""), 0);
    assert_eq!(s.read("c.txt").as_deref(), Some("mine\n"));
    assert_eq!(s.read("a.txt").as_deref(), Some("one\nand mine\n"));
    assert_eq!(s.read("b.txt"), None, "the AI's edit stays undone");
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        " M a.txt\n?? c.txt\n",
        "unstaged and untracked, as they were"
    );
}

#[test]
fn redo_after_moving_head_suggests_cherry_pick() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt", "ai\n")), 0);
    let ai_commit = s.head();
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    s.write("c.txt", "mine\n");
    s.git(&["add", "c.txt"]);
    s.git(&["commit", "-q", "-m", "mine"]);

    let out = s.loaf(&["redo"], "");
    s.assert_exit(&out, 3);
    let err = stderr(&out);
    let pick = format!("git cherry-pick {}", &ai_commit[..7]);
    assert!(err.contains(&pick), "suggests {pick}: {err}");
    assert!(err.contains("; refusing to redo it"), "{err}");
    assert!(!err.contains("--force"), "redo has no --force: {err}");
}

#[test]
fn outside_a_repository_only_apply_mentions_no_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = Scratch::empty();
    for args in [&["undo"][..], &["redo"], &["log"], &["show"]] {
        let out = s.loaf_in(dir.path(), args, "");
        s.assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains("not inside a git repository"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("--no-commit"), "{args:?}: {err}");
    }
    let out = s.loaf_in(dir.path(), &["apply"], &write("k1a", "/x/b.txt", "x"));
    assert!(
        stderr(&out).contains("apply --no-commit"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn log_n_0_is_empty_without_claiming_there_are_no_commits() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt", "ai\n")), 0);
    let out = s.loaf(&["log", "-n", "0"], "");
    s.assert_exit(&out, 0);
    assert_eq!(stdout(&out), "");
    assert_eq!(stderr(&out), "");
    let out = s.loaf(&["log", "-n", "1"], "");
    assert_eq!(stdout(&out).lines().count(), 1, "{}", stdout(&out));
}

#[test]
fn show_finds_every_id_log_prints() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt", "ai\n")), 0);
    s.assert_exit(&s.apply(&write("k2b", "/repo/c.txt", "ai\n")), 0);
    let log = stdout(&s.loaf(&["log"], ""));
    assert_eq!(log.lines().count(), 2, "{log}");
    for line in log.lines() {
        let mut fields = line.split(' ');
        let (commit, id) = (fields.next().unwrap_or(""), fields.next().unwrap_or(""));
        for rev in [commit, id] {
            let out = s.loaf(&["show", rev], "");
            s.assert_exit(&out, 0);
            assert!(
                stdout(&out).starts_with("=== LOAF RESULTS ==="),
                "show {rev}: {}",
                stdout(&out)
            );
        }
    }
}

/// The id in a report's header, if it prints one.
fn header_id(report: &str) -> Option<String> {
    let header = report.lines().next()?;
    let rest = header.split(" apply ").nth(1)?;
    Some(rest.split_whitespace().next()?.to_owned())
}

#[test]
fn a_report_prints_only_ids_show_can_find() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let out = s.apply(&write("k1a", "/repo/b.txt", "ai\n"));
    s.assert_exit(&out, 0);
    let id = header_id(&stdout(&out)).expect("a commit's report names its apply");
    s.assert_exit(&s.loaf(&["show", &id], ""), 0);

    // Only reads: no commit, nothing recorded, so no id to look up later.
    let out = s.apply(&block("r2b", "file_read", &[("path", "/repo/a.txt")]));
    s.assert_exit(&out, 0);
    let report = stdout(&out);
    assert_eq!(header_id(&report), None, "{report}");
    insta::assert_snapshot!(report.lines().next().unwrap_or(""), @"=== LOAF RESULTS === all 1 ✅");
    let json = s.loaf(
        &["apply", "--json"],
        &s.reply(&block("r3c", "file_read", &[("path", "/repo/a.txt")])),
    );
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert!(value["git"].get("apply").is_none(), "{value}");
}

/// Undoing an apply made on a clean tree names what it took back and says nothing about
/// uncommitted changes coming back: there were none.
#[test]
fn undo_of_an_apply_on_a_clean_tree_does_not_claim_uncommitted_changes_came_back() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt", "ai\n")), 0);
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.starts_with("Undid "), "{text}");
    assert_eq!(
        text.lines().skip(1).collect::<Vec<_>>(),
        ["  b.txt"],
        "{text}"
    );
    // With uncommitted work at the apply, the same undo says it is back.
    s.write("c.txt", "mine\n");
    s.assert_exit(&s.apply(&write("k2b", "/repo/b.txt", "ai\n")), 0);
    let text = stdout(&s.loaf(&["undo"], ""));
    assert!(
        text.ends_with("Your uncommitted changes are back as they were (staged and unstaged).\n"),
        "{text}"
    );
}

/// A forced undo after the user committed on top (the tree clean): the commit it takes off
/// the branch is kept under refs/loaf/saved/.
#[test]
fn a_forced_undo_keeps_a_commit_made_since_with_a_clean_tree() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt", "ai\n")), 0);
    s.write("c.txt", "mine\n");
    s.commit_all("mine");

    let out = s.loaf(&["undo", "--force"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.read("c.txt"), None, "the forced undo moved it away");
    let saved = s.git(&["for-each-ref", "--format=%(refname)", "refs/loaf/saved/"]);
    let saved = saved.trim();
    assert!(!saved.is_empty(), "{}", stdout(&out));
    assert_eq!(s.git(&["show", &format!("{saved}:c.txt")]), "mine\n");
}

/// A forced undo when what changed since loses nothing (the user threw away their own
/// uncommitted edit, HEAD where the apply left it): nothing to save, and none said.
#[test]
fn a_forced_undo_saves_nothing_when_nothing_would_be_lost() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.write("a.txt", "one\nmine\n");
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt", "ai\n")), 0);
    s.git(&["checkout", "--", "a.txt"]);
    s.assert_exit(&s.loaf(&["undo"], ""), 3);

    let out = s.loaf(&["undo", "--force"], "");
    s.assert_exit(&out, 0);
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("one\nmine\n"),
        "as before the apply"
    );
    assert_eq!(s.read("b.txt"), None);
    assert_eq!(
        s.git(&["for-each-ref", "--format=%(refname)", "refs/loaf/saved/"]),
        ""
    );
    assert!(!stdout(&out).contains("saved"), "{}", stdout(&out));
}

/// A forced undo after the user put the files back as they were before the apply (the
/// index still as the apply left it): the index moving back is their uncommitted state
/// coming back too, and undo says so.
#[test]
fn a_forced_undo_that_moves_only_the_index_says_the_uncommitted_changes_are_back() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.write("a.txt", "one\nmine\n");
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt", "ai\n")), 0);
    std::fs::remove_file(s.root.join("b.txt")).expect("rm");

    let out = s.loaf(&["undo", "--force"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["status", "--porcelain"]), " M a.txt\n");
    assert!(
        stdout(&out).contains("Your uncommitted changes are back as they were"),
        "{}",
        stdout(&out)
    );
}
