//! `git loaf apply` as a git transaction, end to end with the binary: the commit and its
//! trailers as git reads them, the note, checkpoints, publishing, refusals, the lock, and
//! `undo`/`redo`/`log`/`show`.

use insta::assert_snapshot;

use crate::scratch::{Scratch, block, git_cmd, trailer};

fn code(out: &std::process::Output) -> Option<i32> {
    out.status.code()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The apply id and short commit in a report replaced by placeholders.
fn redact_ids(scratch: &Scratch, text: &str) -> String {
    let mut text = text.to_owned();
    let head = scratch.head();
    if head != "unborn" {
        let id = trailer(scratch, "HEAD", "Loaf-Apply");
        if !id.is_empty() {
            text = text.replace(&id, "<id>");
        }
        text = text.replace(&head[..7], "<commit>");
    }
    text
}

#[test]
fn a_partly_failed_reply_is_committed_with_trailers_git_reads_and_exits_1() {
    let s = Scratch::with(&[("src/lib.rs", "fn a() {}\n"), ("README.md", "# demo\n")]);
    let base = s.head();
    let reply = format!(
        "Here is the change.\n{}{}{}",
        block(
            "k7m",
            "file_write",
            &[
                ("path", "/repo/src/new.rs"),
                ("content", "pub fn new() {}\n")
            ]
        ),
        block(
            "x9z",
            "file_replace_text",
            &[
                ("path", "/repo/src/lib.rs"),
                ("old_text", "fn b() {}"),
                ("new_text", "fn c() {}")
            ]
        ),
        block("r2d", "file_read", &[("path", "/repo/README.md")]),
    );
    let out = s.loaf(&["apply", "--model", "test-model-1"], &s.reply(&reply));
    assert_eq!(code(&out), Some(1), "{}", stderr(&out));
    let report = redact_ids(&s, &s.redact(&out.stdout));
    assert_snapshot!(report, @r"
    === LOAF RESULTS === apply <id> · commit <commit> · PARTIAL: 2 ✅ 1 ❌
    k7m ✅ file_write /repo/src/new.rs
    x9z ❌ file_replace_text /repo/src/lib.rs - old_text not found in file; closest match at line 1 (67% similar):
        1: fn a() {}
    r2d ✅ file_read /repo/README.md
    === OUTPUTS ===
    [r2d] file_read /repo/README.md:
    # demo
    === END ===
    ");
    assert!(
        !report.contains(".git/loaf"),
        "the stage's path never shows"
    );
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    assert_eq!(s.read("src/new.rs").as_deref(), Some("pub fn new() {}\n"));
    assert_eq!(
        s.git(&["log", "-1", "--format=%s%n%an <%ae>"]),
        "AI: Here is the change\nAda <ada@example.com>\n"
    );
    assert_eq!(
        s.git(&["rev-parse", "HEAD~1"]).trim(),
        base,
        "one commit on the old HEAD"
    );
    // git's own trailer parser reads every trailer.
    let message = s.git(&["log", "-1", "--format=%B"]);
    let parsed = crate::scratch::git_cmd(&s.root, &["interpret-trailers", "--parse"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(message.as_bytes())?;
            child.wait_with_output()
        })
        .expect("interpret-trailers runs");
    let parsed = String::from_utf8_lossy(&parsed.stdout);
    let keys: Vec<&str> = parsed
        .lines()
        .filter_map(|l| l.split_once(':').map(|k| k.0))
        .collect();
    assert_eq!(
        keys,
        ["Loaf-Apply", "Loaf-Base", "Loaf-Result", "Assisted-by"]
    );
    assert_eq!(trailer(&s, "HEAD", "Loaf-Base"), base);
    assert_eq!(trailer(&s, "HEAD", "Assisted-by"), "test-model-1");
    let result: serde_json::Value =
        serde_json::from_str(&trailer(&s, "HEAD", "Loaf-Result")).expect("the trailer is JSON");
    assert_eq!(result["success"], false);
    assert_eq!(
        result["results"][2]["data"]["content"]["bytes"], 7,
        "bulky data hashed"
    );
    // The note holds the result with outputs as hashes (DESIGN §2 "Secrets"); `show`
    // prints what apply printed, from the report kept locally.
    let note = s.git(&["notes", "--ref=loaf", "show", "HEAD"]);
    assert!(!note.contains("# demo\\n"), "{note}");
    assert!(note.contains("\"bytes\": 7"), "{note}");
    let shown = s.loaf(&["show"], "");
    assert_eq!(code(&shown), Some(0));
    assert_eq!(shown.stdout, out.stdout, "show prints the same report");
    let json = s.loaf(&["apply", "--json", "--dry-run"], "");
    assert_eq!(code(&json), Some(1), "an empty reply has no block to plan");
    assert!(String::from_utf8_lossy(&json.stdout).contains("\"fatalError\": \"the reply is empty"));
    s.assert_tidy();
    assert_eq!(s.git(&["branch", "--format=%(refname:short)"]), "main\n");
}

#[test]
fn show_json_is_what_apply_json_printed_and_log_lists_counts() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let reply = block(
        "k7m",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "two")],
    );
    let out = s.loaf(&["apply", "--json"], &s.reply(&reply));
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    let id = trailer(&s, "HEAD", "Loaf-Apply");
    let shown = s.loaf(&["show", "--json", &id], "");
    assert_eq!(code(&shown), Some(0), "{}", stderr(&shown));
    assert_eq!(
        String::from_utf8_lossy(&shown.stdout),
        String::from_utf8_lossy(&out.stdout)
    );
    let applied: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(applied["git"]["apply"], id.as_str());
    assert_eq!(applied["git"]["commit"], s.head().as_str());
    let log = s.loaf(&["log"], "");
    let text = redact_ids(&s, &String::from_utf8_lossy(&log.stdout));
    assert_snapshot!(text, @"<commit> <id> 2026-01-01T00:00:00Z ✅1 ❌0 AI: file_write b.txt");
    let log = s.loaf(&["log", "--json"], "");
    let entries: serde_json::Value = serde_json::from_slice(&log.stdout).expect("json");
    assert_eq!(entries[0]["kind"], "apply");
    assert_eq!(entries[0]["succeeded"], 1);
    let missing = s.loaf(&["show", "HEAD~1"], "");
    assert_eq!(code(&missing), Some(2));
    assert!(
        stderr(&missing).contains("not a git-loaf apply commit"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn reads_only_make_no_commit() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let head = s.head();
    let out = s.apply(&block("r1d", "file_read", &[("path", "/repo/a.txt")]));
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert_eq!(s.head(), head);
    assert!(
        !s.redact(&out.stdout).contains("commit"),
        "{}",
        s.redact(&out.stdout)
    );
    let undo = s.loaf(&["undo"], "");
    assert_eq!(code(&undo), Some(2), "nothing to undo");
    assert!(stderr(&undo).contains("nothing to undo"));
    s.assert_tidy();
}

fn dirty(s: &Scratch) {
    s.write("a.txt", "ONE\n2\n3\n");
    s.git(&["add", "a.txt"]);
    s.write("a.txt", "ONE\n2\nTHREE\n");
    std::fs::remove_file(s.root.join("gone.txt")).expect("rm");
    s.write("untracked.txt", "mine\n");
    s.write("staged-new.txt", "staged\n");
    s.git(&["add", "staged-new.txt"]);
    s.write("debug.log", "ignored\n");
}

#[test]
fn a_dirty_tree_stays_uncommitted_except_the_touched_paths_and_undo_brings_it_back() {
    let s = Scratch::with(&[
        (".gitignore", "*.log\n"),
        ("a.txt", "1\n2\n3\n"),
        ("gone.txt", "x\n"),
        ("b.txt", "b\n"),
    ]);
    dirty(&s);
    let before = s.state();
    let before_status = s.git(&["status", "--porcelain", "--untracked-files=all"]);
    let reply = format!(
        "{}{}",
        block(
            "k7m",
            "file_replace_text",
            &[
                ("path", "/repo/a.txt"),
                ("old_text", "THREE"),
                ("new_text", "three by AI")
            ]
        ),
        block(
            "x9z",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "B")]
        ),
    );
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("ONE\n2\nthree by AI\n"),
        "applied to what the model saw"
    );
    assert_eq!(
        s.git(&["log", "--format=%s"]),
        "AI: file_replace_text a.txt, file_write b.txt\ninitial\n",
        "no checkpoint commit on the branch"
    );
    assert_eq!(
        s.git(&["show", "--format=", "--name-status", "HEAD"]),
        "M\ta.txt\nM\tb.txt\n",
        "the commit holds only what the apply changed"
    );
    assert_eq!(
        s.git(&["show", "HEAD:a.txt"]),
        "1\n2\nthree by AI\n",
        "the reply's change on HEAD's version: the user's own line 3 it changed goes with it, the user's staged line 1 does not"
    );
    assert_eq!(
        s.git(&["diff", "--cached", "-U0", "a.txt"])
            .lines()
            .filter(|l| l.starts_with(['+', '-']) && !l.starts_with("+++") && !l.starts_with("---"))
            .collect::<Vec<_>>(),
        ["-1", "+ONE"],
        "the user's staged line stays staged"
    );
    let untouched = |status: &str| -> String {
        status
            .lines()
            .filter(|l| !l.ends_with(" a.txt") && !l.ends_with(" b.txt"))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let status = s.git(&["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(
        status, "M  a.txt\n D gone.txt\nA  staged-new.txt\n?? untracked.txt\n",
        "the rest stays uncommitted, staged and unstaged as it was (a.txt's staged line 1 too)"
    );
    assert_eq!(untouched(&before_status), untouched(&status));
    assert_eq!(s.read("debug.log").as_deref(), Some("ignored\n"));
    let report = s.redact(&out.stdout);
    assert!(
        report.contains(
            "note: the commit includes the user's uncommitted lines that the reply changed: a.txt (line 3)\n"
        ),
        "{report}"
    );
    assert!(
        !s.git(&["log", "--all", "--format=%B"])
            .contains("Loaf-Checkpoint"),
        "no checkpoint trailer anywhere"
    );
    assert!(
        !s.git(&["log", "--format=", "--name-only", "main"])
            .contains("untracked.txt"),
        "an untracked file the reply did not touch never enters the branch's history"
    );
    let after = s.state();
    let undo = s.loaf(&["undo"], "");
    assert_eq!(code(&undo), Some(0), "{}", stderr(&undo));
    assert_eq!(
        s.state(),
        before,
        "HEAD, index split, files and untracked files as before"
    );
    let text = s.redact(&undo.stdout);
    assert!(text.starts_with("Undid "), "{text}");
    assert!(text.contains("Your uncommitted changes are back"), "{text}");
    let redo = s.loaf(&["redo"], "");
    assert_eq!(code(&redo), Some(0), "{}", stderr(&redo));
    assert_eq!(s.state(), after, "redo puts the apply back");
    assert_eq!(code(&s.loaf(&["undo"], "")), Some(0));
    assert_eq!(s.state(), before);
    s.assert_tidy();
}

#[test]
fn repeated_undo_walks_back_and_a_new_apply_forgets_redo() {
    let s = Scratch::with(&[("a.txt", "0\n")]);
    let states: Vec<String> = (1..=3)
        .map(|n| {
            let out = s.apply(&block(
                "k7m",
                "file_write",
                &[("path", "/repo/a.txt"), ("content", &n.to_string())],
            ));
            assert_eq!(code(&out), Some(0), "{}", stderr(&out));
            s.state()
        })
        .collect();
    let initial = {
        assert_eq!(code(&s.loaf(&["undo"], "")), Some(0));
        assert_eq!(s.state(), states[1]);
        assert_eq!(code(&s.loaf(&["undo"], "")), Some(0));
        assert_eq!(s.state(), states[0]);
        assert_eq!(code(&s.loaf(&["undo"], "")), Some(0));
        s.state()
    };
    assert_eq!(s.read("a.txt").as_deref(), Some("0\n"));
    assert_eq!(
        code(&s.loaf(&["undo"], "")),
        Some(2),
        "nothing left to undo"
    );
    assert_eq!(code(&s.loaf(&["redo"], "")), Some(0));
    assert_eq!(s.state(), states[0]);
    assert_eq!(code(&s.loaf(&["redo"], "")), Some(0));
    assert_eq!(s.state(), states[1]);
    let out = s.apply(&block(
        "k7m",
        "file_write",
        &[("path", "/repo/c.txt"), ("content", "c")],
    ));
    assert_eq!(code(&out), Some(0));
    let redo = s.loaf(&["redo"], "");
    assert_eq!(code(&redo), Some(2), "a new apply forgets what was undone");
    assert!(
        stderr(&redo).contains("nothing to redo"),
        "{}",
        stderr(&redo)
    );
    assert_ne!(initial, s.state());
}

#[test]
fn undo_refuses_changes_since_and_pushed_commits_unless_forced() {
    let s = Scratch::with(&[("a.txt", "0\n")]);
    let before = s.state();
    let out = s.apply(&block(
        "k7m",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "AI")],
    ));
    assert_eq!(code(&out), Some(0));
    // A file edited since.
    s.write("a.txt", "my edit\n");
    let edited = s.state();
    let undo = s.loaf(&["undo"], "");
    assert_eq!(code(&undo), Some(3), "{}", stderr(&undo));
    assert!(stderr(&undo).contains("changed since"), "{}", stderr(&undo));
    assert!(
        stderr(&undo).contains("; refusing to undo it"),
        "{}",
        stderr(&undo)
    );
    assert_eq!(s.state(), edited, "nothing changed");
    // Only the index changed since (the file is as the apply left it).
    s.write("a.txt", "AI");
    s.git(&["rm", "-q", "--cached", "a.txt"]);
    let unstaged = s.state();
    assert_eq!(
        code(&s.loaf(&["undo"], "")),
        Some(3),
        "an index-only change is seen"
    );
    assert_eq!(s.state(), unstaged);
    s.git(&["add", "a.txt"]);
    // An untracked file created since.
    s.write("a.txt", "AI\n");
    s.write("new.txt", "new\n");
    assert_eq!(code(&s.loaf(&["undo"], "")), Some(3));
    std::fs::remove_file(s.root.join("new.txt")).expect("rm");
    // A commit made since.
    s.write("b.txt", "b\n");
    s.commit_all("mine");
    let moved = s.state();
    let undo = s.loaf(&["undo"], "");
    assert_eq!(code(&undo), Some(3));
    assert!(stderr(&undo).contains("HEAD moved"), "{}", stderr(&undo));
    assert_eq!(s.state(), moved);
    s.git(&["reset", "-q", "--hard", "HEAD~1"]);
    // Pushed: a remote-tracking ref has the commit.
    s.git(&["update-ref", "refs/remotes/origin/main", "HEAD"]);
    let undo = s.loaf(&["undo"], "");
    assert_eq!(code(&undo), Some(3));
    assert!(stderr(&undo).contains("origin/main"), "{}", stderr(&undo));
    assert!(
        stderr(&undo).contains("git revert"),
        "says what to do instead"
    );
    // Forced: done, and the edit made meanwhile is saved first.
    s.write("a.txt", "edited again\n");
    let forced = s.loaf(&["undo", "--force"], "");
    assert_eq!(code(&forced), Some(0), "{}", stderr(&forced));
    assert_eq!(s.state(), before);
    let saved = s.git(&["for-each-ref", "--format=%(refname)", "refs/loaf/saved/"]);
    let saved = saved.trim();
    assert!(!saved.is_empty(), "the edit is saved");
    assert_eq!(
        s.git(&["show", &format!("{saved}:a.txt")]),
        "edited again\n"
    );
}

#[test]
fn a_branch_moved_during_the_apply_keeps_the_commit_aside_says_not_applied_and_exits_3() {
    let s = Scratch::with(&[("a.txt", "0\n")]);
    let reply = block(
        "k7m",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "AI")],
    );
    let out = s.apply_pausing(&reply, "committed", || {
        s.git(&["commit", "-q", "--allow-empty", "-m", "meanwhile"]);
    });
    s.assert_exit(&out, 3);
    let report = s.redact(&out.stdout);
    let first = report.lines().next().unwrap_or_default();
    assert!(
        first.contains("NOT APPLIED: refs/heads/main moved while git-loaf ran"),
        "{report}"
    );
    assert!(
        !first.contains(" · commit "),
        "no commit id as if applied: {first}"
    );
    let err = stderr(&out);
    assert!(
        err.contains("refs/loaf/") && err.contains("git loaf take"),
        "{err}"
    );
    assert_eq!(
        s.git(&["log", "-1", "--format=%s"]),
        "meanwhile\n",
        "the user's commit stays"
    );
    assert_eq!(s.read("b.txt"), None, "nothing written");
    let kept = s.git(&["for-each-ref", "--format=%(refname)", "refs/loaf/"]);
    let kept = kept
        .lines()
        .find(|l| !l.contains("oplog"))
        .expect("kept ref");
    assert_eq!(s.git(&["show", &format!("{kept}:b.txt")]), "AI");
    let shown = s.loaf(&["show", kept], "");
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("NOT APPLIED"),
        "show prints what apply printed"
    );
    let id = kept.trim_start_matches("refs/loaf/");
    let log = s.loaf(&["log"], "");
    assert!(
        String::from_utf8_lossy(&log.stdout).contains(&format!(
            "NOT APPLIED (git loaf take {id} | git loaf drop {id})"
        )),
        "{}",
        String::from_utf8_lossy(&log.stdout)
    );
    // Taken later, with uncommitted work of the user's present: replayed onto the moved
    // branch; the user's work stays uncommitted.
    s.write("a.txt", "user's uncommitted edit\n");
    s.write("notes.txt", "untracked\n");
    let before_take = s.state();
    let take = s.loaf(&["take", id], "");
    s.assert_exit(&take, 0);
    assert_eq!(s.read("b.txt").as_deref(), Some("AI"));
    assert_eq!(
        s.git(&["log", "--format=%s"]),
        "AI: file_write b.txt\nmeanwhile\ninitial\n"
    );
    assert_eq!(
        s.git(&["status", "--porcelain"]),
        " M a.txt\n?? notes.txt\n",
        "the user's work stays uncommitted"
    );
    assert_eq!(
        s.git(&["for-each-ref", "--format=%(refname)", kept]),
        "",
        "no longer kept"
    );
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), before_take, "undo takes it back");
    s.assert_tidy();
}

#[test]
fn an_edit_on_the_same_lines_during_the_apply_is_never_overwritten() {
    let s = Scratch::with(&[("a.txt", "0\n")]);
    let reply = block(
        "k7m",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "AI\n")],
    );
    let out = s.apply_pausing(&reply, "committed", || s.write("a.txt", "user\n"));
    s.assert_exit(&out, 3);
    let report = s.redact(&out.stdout);
    assert!(
        report.starts_with("=== LOAF RESULTS === apply ")
            && report
                .lines()
                .next()
                .unwrap_or_default()
                .contains("NOT APPLIED: you and the reply both changed the same lines of a.txt"),
        "{report}"
    );
    assert_eq!(s.read("a.txt").as_deref(), Some("user\n"));
    assert_eq!(s.git(&["log", "--format=%s"]), "initial\n");
    let kept = s.git(&["for-each-ref", "--format=%(refname:lstrip=2)", "refs/loaf/"]);
    let id = kept
        .lines()
        .find(|l| *l != "oplog")
        .expect("kept")
        .to_owned();
    let take = s.loaf(&["take", &id], "");
    s.assert_exit(&take, 3);
    assert!(
        stderr(&take).contains("same lines of a.txt"),
        "{}",
        stderr(&take)
    );
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("user\n"),
        "a refused take changes nothing"
    );
    s.assert_exit(&s.loaf(&["drop", &id], ""), 0);
    assert_eq!(
        s.git(&[
            "for-each-ref",
            "--format=%(refname)",
            &format!("refs/loaf/{id}")
        ]),
        ""
    );
    s.assert_exit(&s.loaf(&["drop", &id], ""), 2);
}

/// The user's edit during the apply keeps the file's size and inode (written in place), so
/// only its times tell it from what the index recorded: it is still seen, never overwritten.
#[test]
fn an_edit_of_the_same_size_during_the_apply_is_never_overwritten() {
    let s = Scratch::with(&[("a.txt", "0\n")]);
    let reply = block(
        "k7m",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "AI\n")],
    );
    let out = s.apply_pausing(&reply, "committed", || s.write("a.txt", "1\n"));
    s.assert_exit(&out, 3);
    assert_eq!(s.read("a.txt").as_deref(), Some("1\n"));
    assert_eq!(s.git(&["log", "--format=%s"]), "initial\n");
}

#[test]
fn an_edit_elsewhere_in_the_file_during_the_apply_is_merged_and_stays_uncommitted() {
    let s = Scratch::with(&[("a.txt", "1\n2\n3\n4\n5\n")]);
    let reply = block(
        "k7m",
        "file_replace_text",
        &[
            ("path", "/repo/a.txt"),
            ("old_text", "1\n"),
            ("new_text", "one by AI\n"),
        ],
    );
    let before = s.state();
    let out = s.apply_pausing(&reply, "committed", || {
        s.write("a.txt", "1\n2\n3\n4\nfive by user\n")
    });
    s.assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("you changed a.txt while git-loaf ran: merged"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("one by AI\n2\n3\n4\nfive by user\n"),
        "both edits"
    );
    assert_eq!(
        s.git(&["show", "HEAD:a.txt"]),
        "one by AI\n2\n3\n4\n5\n",
        "the commit holds the reply's change only"
    );
    assert_eq!(s.git(&["status", "--porcelain"]), " M a.txt\n");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("1\n2\n3\n4\nfive by user\n"),
        "undo gives back the user's edit, without the reply's"
    );
    assert_ne!(s.state(), before, "the user's edit is not lost by undo");
    s.assert_tidy();
}

#[test]
fn git_add_cannot_slip_in_while_the_index_is_being_published() {
    let s = Scratch::with(&[("a.txt", "0\n"), ("other.txt", "o\n")]);
    let reply = block(
        "k7m",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "AI\n")],
    );
    let out = s.apply_pausing(&reply, "ref", || {
        s.write("other.txt", "staged by the user\n");
        let add = git_cmd(&s.root, &["add", "other.txt"])
            .output()
            .expect("git runs");
        assert!(
            !add.status.success(),
            "git add must wait: git-loaf holds index.lock"
        );
        let commit = git_cmd(&s.root, &["commit", "-q", "-a", "-m", "half"])
            .output()
            .expect("git runs");
        assert!(
            !commit.status.success(),
            "no commit on a half-published state"
        );
    });
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["status", "--porcelain"]), " M other.txt\n");
    s.git(&["add", "other.txt"]);
    assert_eq!(s.git(&["status", "--porcelain"]), "M  other.txt\n");
    s.assert_tidy();
}

#[test]
fn a_held_lock_makes_a_second_operation_exit_3_naming_the_holder() {
    let s = Scratch::with(&[("a.txt", "0\n")]);
    let mut holder = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep runs");
    let lock = s.root.join(".git/loaf/lock");
    std::fs::create_dir_all(lock.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &lock,
        format!(
            "{{\"pid\":{},\"command\":\"apply\",\"since\":0}}",
            holder.id()
        ),
    )
    .expect("write");
    let out = s.apply(&block(
        "k7m",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "x")],
    ));
    let _ = holder.kill();
    let _ = holder.wait();
    s.assert_exit(&out, 3);
    assert!(
        stderr(&out).contains(&format!("pid {}", holder.id())),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.read("b.txt"), None);
    // The holder is gone now: its lock is stale and recovered.
    let out = s.apply(&block(
        "k7m",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "x")],
    ));
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    s.assert_tidy();
}

#[test]
fn after_hook_changes_are_part_of_the_commit_and_the_message_format_is_used() {
    let s = Scratch::with(&[
        (
            "loaf.yml",
            "commit_message_format: \"model: {operation_summary}\"\nhooks:\n  after:\n    - run: \"printf formatted > formatted.txt\"\n",
        ),
        ("a.txt", "0\n"),
    ]);
    let out = s.apply(&block(
        "k7m",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "1")],
    ));
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert_eq!(
        s.git(&["log", "-1", "--format=%s"]),
        "model: file_write a.txt\n"
    );
    assert_eq!(s.git(&["show", "HEAD:formatted.txt"]), "formatted");
    assert_eq!(s.read("formatted.txt").as_deref(), Some("formatted"));
    assert_eq!(s.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_failing_before_hook_changes_nothing() {
    let s = Scratch::with(&[
        ("loaf.yml", "hooks:\n  before:\n    - run: \"exit 4\"\n"),
        ("a.txt", "0\n"),
    ]);
    let before = s.state();
    let out = s.apply(&block(
        "k7m",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "1")],
    ));
    assert_eq!(code(&out), Some(1), "{}", stderr(&out));
    assert_eq!(s.state(), before);
    s.assert_tidy();
}

#[test]
fn outside_a_repository_apply_says_to_use_no_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = crate::support::git_loaf()
        .current_dir(dir.path())
        .env(
            "GIT_CEILING_DIRECTORIES",
            dir.path().parent().expect("parent"),
        )
        .arg("apply")
        .write_stdin("")
        .output()
        .expect("runs");
    assert_eq!(code(&out), Some(2));
    assert!(stderr(&out).contains("--no-commit"), "{}", stderr(&out));
}

#[test]
fn moves_deletions_and_folder_changes_commit_exactly_what_the_stage_holds() {
    let s = Scratch::with(&[
        ("lib/a.rs", "a\n"),
        ("lib/b.rs", "b\n"),
        ("old/x.txt", "x\n"),
        ("old/deep/y.txt", "y\n"),
        ("gone.txt", "gone\n"),
    ]);
    let before = s.state();
    let reply = [
        block(
            "m1a",
            "file_move",
            &[
                ("old_path", "/repo/lib/a.rs"),
                ("new_path", "/repo/src/a.rs"),
            ],
        ),
        block(
            "m2b",
            "file_move",
            &[
                ("old_path", "/repo/lib/b.rs"),
                ("new_path", "/repo/src/b.rs"),
            ],
        ),
        block("d3a", "file_delete", &[("path", "/repo/old/x.txt")]),
        block("d3b", "file_delete", &[("path", "/repo/old/deep/y.txt")]),
        block("d3c", "dir_delete", &[("path", "/repo/old/deep")]),
        block("d3d", "dir_delete", &[("path", "/repo/old")]),
        block("f4d", "file_delete", &[("path", "/repo/gone.txt")]),
        block("c5e", "dir_create", &[("path", "/repo/empty")]),
    ]
    .concat();
    let out = s.apply(&reply);
    assert_eq!(code(&out), Some(0), "{}", s.redact(&out.stdout));
    let tree = s.git(&["ls-tree", "-r", "--name-only", "HEAD"]);
    assert_eq!(tree, "src/a.rs\nsrc/b.rs\n", "{}", s.redact(&out.stdout));
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    assert!(!s.root.join("lib").exists() && !s.root.join("old").exists());
    assert_eq!(s.read("src/b.rs").as_deref(), Some("b\n"));
    assert_eq!(code(&s.loaf(&["undo"], "")), Some(0));
    assert_eq!(s.state(), before);
}

#[test]
fn a_tracked_file_that_is_ignored_survives_a_folder_action() {
    let s = Scratch::with(&[(".gitignore", "*.log\n"), ("src/a.txt", "a\n")]);
    s.write("src/gen.log", "keep me\n");
    s.git(&["add", "-f", "src/gen.log"]);
    s.commit_all("tracked log");
    let head = s.head();
    let out = s.apply(&block("d1r", "dir_delete", &[("path", "/repo/src")]));
    assert_eq!(code(&out), Some(1), "not empty: refused");
    assert_eq!(s.head(), head, "nothing to commit");
    assert_eq!(s.read("src/gen.log").as_deref(), Some("keep me\n"));
    let out = s.apply(&format!(
        "{}{}",
        block("c1d", "dir_create", &[("path", "/repo/src")]),
        block(
            "w2e",
            "file_write",
            &[("path", "/repo/src/b.txt"), ("content", "b")]
        ),
    ));
    assert_eq!(code(&out), Some(0), "{}", s.redact(&out.stdout));
    assert_eq!(
        s.git(&["ls-tree", "-r", "--name-only", "HEAD", "src"]),
        "src/a.txt\nsrc/b.txt\nsrc/gen.log\n"
    );
    assert_eq!(s.read("src/gen.log").as_deref(), Some("keep me\n"));
}

#[test]
fn writes_through_symlinks_commit_the_target_and_keep_the_links() {
    let s = Scratch::with(&[("a.txt", "a\n"), ("real/x.txt", "x\n")]);
    std::os::unix::fs::symlink("a.txt", s.root.join("alink")).expect("symlink");
    std::os::unix::fs::symlink("real", s.root.join("linkdir")).expect("symlink");
    s.commit_all("links");
    let out = s.apply(&format!(
        "{}{}",
        block(
            "w1a",
            "file_write",
            &[("path", "/repo/alink"), ("content", "via link\n")]
        ),
        block(
            "w2b",
            "file_write",
            &[("path", "/repo/linkdir/new.txt"), ("content", "new\n")]
        ),
    ));
    assert_eq!(code(&out), Some(0), "{}", s.redact(&out.stdout));
    assert_eq!(s.git(&["show", "HEAD:a.txt"]), "via link\n");
    assert_eq!(s.git(&["show", "HEAD:real/new.txt"]), "new\n");
    assert_eq!(
        s.git(&["ls-tree", "HEAD", "alink", "linkdir"])
            .matches("120000")
            .count(),
        2,
        "still links"
    );
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    // The stage holds nothing left over for a later apply to pick up.
    let out = s.apply(&block(
        "w3c",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "b\n")],
    ));
    assert_eq!(code(&out), Some(0));
    assert_eq!(
        s.git(&["show", "--name-only", "--format=", "HEAD"]),
        "b.txt\n"
    );
}

#[test]
fn intent_to_add_entries_are_refused_rather_than_restored_wrongly() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    s.write("ita.txt", "intent\n");
    s.git(&["add", "-N", "ita.txt"]);
    let before = s.state();
    let out = s.apply(&block(
        "w1a",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "b")],
    ));
    assert_eq!(code(&out), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("git add -N"), "{}", stderr(&out));
    assert_eq!(s.state(), before);
}

#[test]
fn a_git_lock_held_by_a_live_process_is_never_removed() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let loaf_lock = s.root.join(".git/loaf/lock");
    std::fs::create_dir_all(loaf_lock.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &loaf_lock,
        "{\"pid\":999999999,\"command\":\"apply\",\"since\":1}",
    )
    .expect("write");
    let index_lock = s.root.join(".git/index.lock");
    let mut holder = std::process::Command::new("bash")
        .args([
            "-c",
            "exec 3>\"$1\"; sleep 30",
            "hold",
            &index_lock.to_string_lossy(),
        ])
        .spawn()
        .expect("bash runs");
    while !index_lock.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::fs::write(s.root.join("a.txt"), "dirty\n").expect("write");
    let out = s.apply(&block(
        "w1a",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "b")],
    ));
    let still_there = index_lock.exists();
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(still_there, "the live lock stays");
    assert_eq!(code(&out), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("index.lock"), "{}", stderr(&out));
    assert_eq!(s.read("b.txt"), None, "nothing written");
    assert_eq!(s.git(&["log", "--format=%s"]), "initial\n");
}

/// The user stages a version of a file the reply changes while the apply runs, then puts
/// the file back as it was: only the index changed. That is the user's work too: it is
/// never overwritten by the reply's index entry.
#[test]
fn a_staged_change_alone_during_the_apply_is_never_overwritten() {
    let s = Scratch::with(&[("a.txt", "0\n")]);
    let reply = block(
        "k7m",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "AI\n")],
    );
    let out = s.apply_pausing(&reply, "committed", || {
        s.write("a.txt", "staged by the user\n");
        s.git(&["add", "a.txt"]);
        s.write("a.txt", "0\n");
    });
    s.assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("NOT APPLIED: you changed a.txt while git-loaf ran"),
        "{}",
        stderr(&out)
    );
    // The files merged before the retried publish was refused: no "merged" claim.
    assert!(!stderr(&out).contains("merged with"), "{}", stderr(&out));
    assert_eq!(
        s.git(&["show", ":a.txt"]),
        "staged by the user\n",
        "the staged version"
    );
    assert_eq!(s.read("a.txt").as_deref(), Some("0\n"));
    assert_eq!(s.git(&["log", "--format=%s"]), "initial\n");
}

/// While the apply runs, the user puts a symbolic link that loops onto itself where the
/// reply makes a new folder: the path cannot be read (ELOOP), which is not "absent". The
/// link is the user's, and the path is not free: the apply is not published (taken for
/// absent, it went ahead and committed a file it could not write, saying nothing).
#[cfg(unix)]
#[test]
fn a_looping_link_made_where_the_replys_new_folder_goes_is_left_alone() {
    let s = Scratch::with(&[("a.txt", "0\n")]);
    let reply = block(
        "k7m",
        "file_write",
        &[("path", "/repo/d/f.txt"), ("content", "AI\n")],
    );
    let out = s.apply_pausing(&reply, "committed", || {
        std::os::unix::fs::symlink("d", s.root.join("d")).expect("link");
    });
    s.assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("NOT APPLIED: you and the reply both changed d/f.txt"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.git(&["log", "--format=%s"]), "initial\n");
    assert_eq!(
        std::fs::read_link(s.root.join("d")).ok(),
        Some(std::path::PathBuf::from("d")),
        "the user's link"
    );
}

/// Undo puts a partly staged file back as two versions: the index entry must not carry the
/// file's stat data (git would then take the file for the entry and hide the unstaged
/// part). Git's racy-clean rule hides that when the file and the index are written in the
/// same second, so the index file is dated later, as it is once any time has passed.
#[test]
fn undo_leaves_a_partly_staged_file_partly_staged_for_a_git_that_trusts_stat_data() {
    let s = Scratch::with(&[("a.txt", "1\n2\n3\n")]);
    s.write("a.txt", "ONE\n2\n3\n");
    s.git(&["add", "a.txt"]);
    s.write("a.txt", "ONE\n2\nTHREE\n");
    let reply = block(
        "k7m",
        "file_replace_text",
        &[
            ("path", "/repo/a.txt"),
            ("old_text", "2\n"),
            ("new_text", "two\n"),
        ],
    );
    s.assert_exit(&s.apply(&reply), 0);
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(10);
    std::fs::File::options()
        .write(true)
        .open(s.root.join(".git/index"))
        .and_then(|f| f.set_modified(later))
        .expect("index dated");
    assert_eq!(s.git(&["status", "--porcelain"]), "MM a.txt\n");
    assert!(s.git(&["diff"]).contains("\n+THREE\n"), "the unstaged part");
}

/// The root entry of the index file's cache-tree extension (git's `TREE`): the tree git
/// and git-loaf take the index to hold without building it, or `None` when the extension
/// is missing or its root was invalidated.
fn index_file_tree(s: &Scratch) -> Option<String> {
    let index = std::fs::read(s.root.join(".git/index")).expect("index");
    let at = index.windows(4).position(|w| w == b"TREE")? + 8;
    // The root entry: an empty path, then "<entries> <subtrees>\n" and, when valid, the id.
    let data = index.get(at..)?;
    let line_end = data.iter().position(|&b| b == b'\n')?;
    let header = std::str::from_utf8(data.get(1..line_end)?).ok()?;
    if data.first() != Some(&0) || header.starts_with('-') {
        return None;
    }
    let id = data.get(line_end + 1..line_end + 21)?;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// After an apply, the index file says which tree it holds, and keeps saying so when
/// `git status` (an editor runs it all the time) rewrites it: the next apply's or agent
/// hook's scan then reads the index's tree from the file instead of building it.
#[test]
fn the_index_an_apply_writes_says_its_tree_even_after_git_status_rewrites_it() {
    let s = Scratch::with(&[("a.txt", "one\n"), ("src/b.txt", "two\n")]);
    let reply = block(
        "t4q",
        "file_write",
        &[("path", "/repo/src/c.txt"), ("content", "three")],
    );
    let out = s.loaf(&["apply"], &s.reply(&reply));
    assert_eq!(
        code(&out),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let tree = s.git(&["rev-parse", "HEAD^{tree}"]).trim().to_owned();
    assert_eq!(index_file_tree(&s).as_deref(), Some(tree.as_str()));
    // A stat change git must look at makes `git status` write the index again.
    std::fs::write(s.root.join("a.txt"), "one\n").expect("touch");
    s.git(&["status", "--porcelain"]);
    assert_eq!(index_file_tree(&s).as_deref(), Some(tree.as_str()));
}
