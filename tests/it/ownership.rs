//! Ownership (DESIGN §2, issue 35): a commit holds exactly what the reply changed, at hunk
//! level; the user's uncommitted work stays the user's — uncommitted, staged or not as it
//! was, in place, and untouched by undo. Code a reply runs sees the repository as the user
//! does, and what it does to the user's uncommitted work is not kept.

use std::process::Output;

use crate::scratch::{Scratch, block};

pub(crate) const TEN: &str = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

fn with_line(text: &str, number: usize, line: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == number {
                format!("{line}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

/// The `+`/`-` lines of a diff, headers left out.
fn changed_lines(diff: &str) -> Vec<String> {
    diff.lines()
        .filter(|l| l.starts_with(['+', '-']) && !l.starts_with("+++") && !l.starts_with("---"))
        .map(str::to_owned)
        .collect()
}

pub(crate) fn replace_line_9() -> String {
    block(
        "r9x",
        "file_replace_text",
        &[
            ("path", "/repo/f.txt"),
            ("old_text", "9\n"),
            ("new_text", "nine by AI\n"),
        ],
    )
}

/// A repository allowing exec, with `f.txt` and `b.txt` committed.
fn with_exec() -> Scratch {
    Scratch::with(&[
        ("f.txt", TEN),
        ("b.txt", "b\n"),
        ("loaf.yml", "allowed-actions: [defaults, exec]\n"),
    ])
}

/// [`with_exec`] after an apply that changed `b.txt` to `two`.
fn after_an_apply() -> Scratch {
    let s = with_exec();
    let first = block(
        "w1a",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "two\n")],
    );
    s.assert_exit(&s.apply(&first), 0);
    s
}

pub(crate) fn exec(s: &Scratch, sandbox: &str, code: &str) -> Output {
    crate::support::git_loaf()
        .current_dir(&s.root)
        .envs(crate::scratch::ENV)
        .env("LOAF_SANDBOX", sandbox)
        .arg("apply")
        .write_stdin(s.reply(&block("e1x", "exec", &[("lang", "bash"), ("code", code)])))
        .output()
        .expect("git-loaf runs")
}

#[test]
fn a_reply_editing_line_9_commits_line_9_only_and_the_users_unstaged_line_1_stays() {
    let s = Scratch::with(&[("f.txt", TEN)]);
    s.write("f.txt", &with_line(TEN, 1, "mine"));
    let before = s.state();
    let out = s.apply(&replace_line_9());
    s.assert_exit(&out, 0);
    let report = s.redact(&out.stdout);
    assert!(
        !report.contains("uncommitted"),
        "nothing of the user's is committed: {report}"
    );
    assert_eq!(
        changed_lines(&s.git(&["show", "--format=", "HEAD"])),
        ["-9", "+nine by AI"]
    );
    assert_eq!(changed_lines(&s.git(&["diff"])), ["-1", "+mine"]);
    assert_eq!(s.git(&["diff", "--cached"]), "");
    assert_eq!(
        s.read("f.txt"),
        Some(with_line(&with_line(TEN, 1, "mine"), 9, "nine by AI"))
    );
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(
        s.state(),
        before,
        "undo removes the reply's hunk, leaves line 1"
    );
    s.assert_tidy();
}

#[test]
fn a_users_staged_hunk_stays_staged_and_out_of_the_commit() {
    let s = Scratch::with(&[("f.txt", TEN)]);
    s.write("f.txt", &with_line(TEN, 1, "staged"));
    s.git(&["add", "f.txt"]);
    s.write(
        "f.txt",
        &with_line(&with_line(TEN, 1, "staged"), 5, "unstaged"),
    );
    let before = s.state();
    s.assert_exit(&s.apply(&replace_line_9()), 0);
    assert_eq!(
        changed_lines(&s.git(&["show", "--format=", "HEAD"])),
        ["-9", "+nine by AI"]
    );
    assert_eq!(
        changed_lines(&s.git(&["diff", "--cached"])),
        ["-1", "+staged"]
    );
    assert_eq!(changed_lines(&s.git(&["diff"])), ["-5", "+unstaged"]);
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), before);
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert_eq!(
        changed_lines(&s.git(&["diff", "--cached"])),
        ["-1", "+staged"]
    );
}

#[test]
fn a_reply_changing_the_users_own_line_commits_it_and_names_file_and_line() {
    let s = Scratch::with(&[("f.txt", TEN)]);
    s.write(
        "f.txt",
        &with_line(&with_line(TEN, 1, "mine"), 9, "my nine"),
    );
    let reply = block(
        "r9y",
        "file_replace_text",
        &[
            ("path", "/repo/f.txt"),
            ("old_text", "my nine\n"),
            ("new_text", "nine by AI\n"),
        ],
    );
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    let report = s.redact(&out.stdout);
    assert!(
        report.contains("uncommitted lines that the reply changed: f.txt (line 9)"),
        "{report}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("f.txt (line 9)"),
        "the user is told too"
    );
    assert_eq!(
        changed_lines(&s.git(&["show", "--format=", "HEAD"])),
        ["-9", "+nine by AI"]
    );
    assert_eq!(changed_lines(&s.git(&["diff"])), ["-1", "+mine"]);
}

/// What the user's git says of their repository, as the exec below prints it.
const LOOK: &str = "git status --porcelain=v1 --untracked-files=all; echo ---; git rev-parse HEAD; echo ---; git stash list; echo ---; git diff --cached; echo ---; git diff; echo ---; git log --format=%s";

fn exec_sees_what_the_user_sees(sandbox: &str) {
    // An earlier apply committed a change (its stage index must not linger).
    let s = after_an_apply();
    s.write("stashed.txt", "s\n");
    s.git(&["add", "stashed.txt"]);
    s.git(&["stash", "-q"]);
    s.write("f.txt", &with_line(TEN, 1, "staged"));
    s.git(&["add", "f.txt"]);
    s.write(
        "f.txt",
        &with_line(&with_line(TEN, 1, "staged"), 5, "unstaged"),
    );
    s.write("notes.txt", "mine\n");
    let users = s.sh(LOOK);
    let out = exec(&s, sandbox, LOOK);
    s.assert_exit(&out, 0);
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    let users = String::from_utf8_lossy(&users.stdout).into_owned();
    assert!(users.contains("MM f.txt\n?? notes.txt\n"), "{users}");
    for line in users.lines().filter(|l| !l.is_empty()) {
        assert!(
            report.contains(line),
            "exec ({sandbox}) should print the user's `{line}`:\n{report}"
        );
    }
    assert!(!report.contains("loaf: stage"), "{report}");
    assert_eq!(
        s.git(&["log", "--format=%s"]).lines().count(),
        2,
        "no commit"
    );
}

#[test]
fn exec_sees_the_users_status_head_stash_index_and_log() {
    exec_sees_what_the_user_sees("on");
}

#[test]
fn without_namespaces_exec_sees_the_users_repository_too() {
    exec_sees_what_the_user_sees("off");
}

#[test]
fn git_checkout_dot_after_an_apply_reverts_nothing_and_commits_nothing() {
    let s = after_an_apply();
    s.write("f.txt", &with_line(TEN, 1, "mine"));
    let before = s.state();
    let head = s.head();
    let out = exec(&s, "on", "git checkout -- .");
    s.assert_exit(&out, 0);
    let report = s.redact(&out.stdout);
    assert_eq!(s.head(), head, "no commit: {report}");
    assert_eq!(
        s.read("b.txt").as_deref(),
        Some("two\n"),
        "the earlier apply stays"
    );
    assert_eq!(s.state(), before, "the user's edit stays");
    assert!(
        report.contains("kept in place and not committed: f.txt"),
        "{report}"
    );
    // And the next apply starts from exactly the user's state.
    s.assert_exit(&s.apply(&replace_line_9()), 0);
    assert_eq!(changed_lines(&s.git(&["diff"])), ["-1", "+mine"]);
    s.assert_tidy();
}

#[test]
fn reset_hard_stash_and_rm_keep_the_users_edits_and_say_so() {
    for code in [
        "git reset -q --hard",
        "git stash -q",
        "rm f.txt notes.txt",
        "git checkout -q -- . && printf 'b by AI\\n' > b.txt",
    ] {
        let s = with_exec();
        s.write("f.txt", &with_line(TEN, 1, "mine"));
        s.write("notes.txt", "my notes\n");
        let out = exec(&s, "on", code);
        s.assert_exit(&out, 0);
        let report = s.redact(&out.stdout);
        assert_eq!(
            s.read("f.txt"),
            Some(with_line(TEN, 1, "mine")),
            "{code}: {report}"
        );
        assert_eq!(s.read("notes.txt").as_deref(), Some("my notes\n"), "{code}");
        assert!(
            report.contains("kept in place and not committed: f.txt"),
            "{code}: {report}"
        );
        assert_eq!(
            s.git(&["stash", "list"]),
            "",
            "{code}: the user's stash is untouched"
        );
        let committed = s.git(&["show", "--format=", "--name-only", "HEAD"]);
        if code.contains("b by AI") {
            assert_eq!(
                committed, "b.txt\n",
                "{code}: the reply's own change is committed"
            );
        } else {
            assert_eq!(
                s.git(&["log", "--format=%s"]),
                "initial\n",
                "{code}: no commit"
            );
        }
    }
}
