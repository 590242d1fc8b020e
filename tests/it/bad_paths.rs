//! Bad paths (DESIGN §2): a NUL, a line break, a name past 255 bytes or a path past
//! `PATH_MAX` fails its own block with a message for the model; the other blocks run, the
//! report is printed as usual, no message shows the stage's path, and a block is ✅ only
//! when what it wrote reached the user.

use crate::scratch::{Scratch, block};

/// A 300-byte file name.
fn long_name() -> String {
    format!("{}.txt", "n".repeat(296))
}

/// A path of about 4,700 bytes under the root: fifty folders of 90 bytes.
fn long_path() -> String {
    let folders: Vec<String> = (0..50)
        .map(|i| format!("{i:02}{}", "d".repeat(88)))
        .collect();
    format!("/repo/{}/x.txt", folders.join("/"))
}

/// Applies `bad` (one block with a bad path) followed by a good write, and checks the rule:
/// exit 1, the bad block ❌ with `why`, the good one ✅ and committed, nothing else written,
/// no stage path anywhere. The report's text.
fn applies_around(s: &Scratch, bad: &str, why: &str) -> String {
    let reply = format!(
        "{bad}{}",
        block(
            "ok1",
            "file_write",
            &[("path", "/repo/ok.txt"), ("content", "ok\n")]
        )
    );
    let before = s.head();
    let out = s.apply(&reply);
    let report = s.redact(&out.stdout);
    let stderr = s.redact(&out.stderr);
    s.assert_exit(&out, 1);
    assert!(
        report.contains("ok1 ✅ file_write /repo/ok.txt"),
        "{report}"
    );
    let bad_line = report
        .lines()
        .find(|l| l.starts_with("bad ❌"))
        .unwrap_or_else(|| panic!("the bad block fails on its own line: {report}"));
    assert!(bad_line.contains(why), "{bad_line}");
    assert!(!report.contains("loaf/stage") && !stderr.contains("loaf/stage"));
    let succeeded = report
        .lines()
        .filter(|l| l.get(3..).is_some_and(|r| r.starts_with(" ✅")))
        .count();
    assert_eq!(succeeded, 1, "{report}");
    // Only the good block's file landed: committed, and nothing else in the tree.
    assert_eq!(s.git(&["diff", "--name-only", &before, "HEAD"]), "ok.txt\n");
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    s.assert_tidy();
    report
}

/// The report's text for block `id`: its line and the indented lines that follow it.
fn block_text(report: &str, id: &str) -> String {
    let mut lines = report
        .lines()
        .skip_while(|l| !l.starts_with(&format!("{id} ")));
    let first = lines.next().unwrap_or_default().to_owned();
    lines
        .take_while(|l| l.starts_with(' '))
        .fold(first, |text, l| text + "\n" + l)
}

#[test]
fn a_path_with_a_line_break_fails_its_block_instead_of_claiming_success() {
    let s = Scratch::with(&[("README.md", "# demo\n")]);
    // In a heredoc (as a model writes a value that ran on into the next line), and as a
    // quoted `\n`.
    let heredoc = block(
        "bad",
        "file_write",
        &[("path", "/repo/a\nb.txt"), ("content", "x\n")],
    );
    let report = applies_around(
        &s,
        &heredoc,
        "the path contains a line break after '/repo/a'",
    );
    assert!(
        report.contains("bad ❌ file_write /repo/a\\nb.txt - "),
        "{report}"
    );
    let quoted = "#!nesl [@three-char-SHA-256: bad]\naction = \"file_write\"\npath = \"/repo/c\\nd.txt\"\ncontent = \"x\"\n#!end_bad\n";
    let s2 = Scratch::with(&[("README.md", "# demo\n")]);
    applies_around(&s2, quoted, "line break after '/repo/c'");
    assert!(!s.root.join("a").exists() && !s2.root.join("c").exists());
}

#[test]
fn a_nul_in_a_path_fails_its_block_and_the_reply_still_reports() {
    let s = Scratch::with(&[("README.md", "# demo\n")]);
    let bad = block(
        "bad",
        "file_write",
        &[("path", "/repo/a\0b.txt"), ("content", "x\n")],
    );
    let report = applies_around(&s, &bad, "the path contains a NUL character");
    assert!(
        report.contains("bad ❌ file_write /repo/a\\0b.txt - "),
        "{report}"
    );
}

#[test]
fn a_name_past_255_bytes_fails_its_block_and_the_reply_still_reports() {
    let s = Scratch::with(&[("README.md", "# demo\n")]);
    let path = format!("/repo/{}", long_name());
    let bad = block("bad", "file_write", &[("path", &path), ("content", "x\n")]);
    applies_around(
        &s,
        &bad,
        "is 300 bytes long; a file or folder name can be at most 255 bytes",
    );
}

/// A long name that is still allowed (250 bytes) is written and undone like any other: the
/// temporary file publish writes beside it has a name of its own within the limit.
#[test]
fn a_name_of_250_bytes_is_written_and_undone() {
    let s = Scratch::with(&[("README.md", "# demo\n")]);
    let name = format!("{}.txt", "n".repeat(246));
    let reply = block(
        "w1a",
        "file_write",
        &[("path", &format!("/repo/{name}")), ("content", "long\n")],
    );
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    assert_eq!(s.read(&name).as_deref(), Some("long\n"));
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.read(&name), None);
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert_eq!(s.read(&name).as_deref(), Some("long\n"));
}

#[test]
fn a_path_past_path_max_fails_its_block_and_the_reply_still_reports() {
    let s = Scratch::with(&[("README.md", "# demo\n")]);
    let path = long_path();
    let bad = block("bad", "file_write", &[("path", &path), ("content", "x\n")]);
    let report = applies_around(
        &s,
        &bad,
        "bytes long; paths in this repository can be at most",
    );
    // The report line shows the path's ends, not all of it.
    let line = report
        .lines()
        .find(|l| l.starts_with("bad ❌"))
        .unwrap_or("");
    assert!(line.len() < 600, "{line}");
}

/// A block: its id, action and parameters.
type Case<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>);

#[test]
fn every_fs_action_and_exec_cwd_refuse_bad_paths_on_their_own_line() {
    let s = Scratch::with(&[
        ("README.md", "# demo\n"),
        ("loaf.yml", "allowed-actions: [defaults, exec]\n"),
    ]);
    let name = format!("/repo/{}", long_name());
    let cases: Vec<Case> = vec![
        (
            "aa1",
            "file_write",
            vec![("path", "/repo/a\0"), ("content", "x")],
        ),
        (
            "aa2",
            "file_append",
            vec![("path", &name), ("content", "x")],
        ),
        (
            "aa3",
            "file_replace_text",
            vec![("path", "/repo/a\0"), ("old_text", "a"), ("new_text", "b")],
        ),
        (
            "aa4",
            "file_move",
            vec![("old_path", "/repo/README.md"), ("new_path", &name)],
        ),
        ("aa5", "dir_create", vec![("path", "/repo/d\0")]),
        ("aa6", "file_delete", vec![("path", &name)]),
        ("aa7", "file_read", vec![("path", "/repo/a\0")]),
        (
            "aa8",
            "files_read",
            vec![("paths", "/repo/README.md\n/repo/a\0")],
        ),
        ("aa9", "ls", vec![("path", &name)]),
        (
            "ab1",
            "exec",
            vec![("lang", "bash"), ("code", "echo hi"), ("cwd", "/repo/a\0")],
        ),
    ];
    let mut reply = String::new();
    for (id, action, params) in &cases {
        reply.push_str(&block(id, action, params));
    }
    reply.push_str(&block(
        "ok1",
        "file_write",
        &[("path", "/repo/ok.txt"), ("content", "ok\n")],
    ));
    let out = s.apply(&reply);
    let report = s.redact(&out.stdout);
    s.assert_exit(&out, 1);
    for (id, action, params) in &cases {
        let line = report
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("{id} has a line: {report}"));
        assert!(line.starts_with(&format!("{id} ❌ {action}")), "{line}");
        // The block's whole text: a list's failures follow on the next lines.
        let line = block_text(&report, id);
        let nul = params.iter().any(|(_, v)| v.contains('\0'));
        let expected = if nul {
            "NUL character"
        } else {
            "at most 255 bytes"
        };
        assert!(line.contains(expected), "{line}");
    }
    assert!(report.contains("ok1 ✅"), "{report}");
    assert!(!report.contains("loaf/stage"), "{report}");
    assert_eq!(s.read("README.md").as_deref(), Some("# demo\n"));
    assert_eq!(s.read("ok.txt").as_deref(), Some("ok\n"));
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
}

#[test]
fn outside_a_transaction_bad_paths_fail_their_block_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let reply = format!(
        "{}{}",
        block(
            "bad",
            "file_write",
            &[
                ("path", &format!("{}/a\nb.txt", root.display())),
                ("content", "x")
            ]
        ),
        block(
            "ok1",
            "file_write",
            &[
                ("path", &format!("{}/ok.txt", root.display())),
                ("content", "ok")
            ]
        )
    );
    let out = crate::support::git_loaf()
        .current_dir(&root)
        .envs(crate::scratch::ENV)
        .args(["apply", "--no-commit"])
        .write_stdin(reply)
        .output()
        .expect("runs");
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains("bad ❌") && report.contains("line break"),
        "{report}"
    );
    let names: Vec<_> = std::fs::read_dir(&root)
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert_eq!(names, ["ok.txt"]);
}
