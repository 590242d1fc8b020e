//! A newcomer's first hour (issue 37): errors in git's words with what to do, even on a
//! machine where git does not know who you are.

use std::process::Output;

use crate::scratch::{ENV, Scratch, block};
use crate::support::git_loaf;

/// `git loaf args` in `s` as on a fresh machine: `HOME` an empty folder, no system, global
/// or repository identity, no `GIT_AUTHOR_*`/`GIT_COMMITTER_*`.
fn loaf_without_identity(s: &Scratch, args: &[&str], stdin: &str) -> Output {
    let home = s.sibling("empty-home");
    std::fs::create_dir_all(&home).expect("an empty home");
    let mut cmd = git_loaf();
    for (key, value) in ENV {
        if !key.starts_with("GIT_AUTHOR_") && !key.starts_with("GIT_COMMITTER_") {
            cmd.env(key, value);
        }
        if key.ends_with("_NAME") || key.ends_with("_EMAIL") {
            cmd.env_remove(key);
        }
    }
    cmd.env_remove("GIT_CONFIG_GLOBAL")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .current_dir(&s.root)
        .args(args)
        .write_stdin(stdin.to_owned())
        .output()
        .expect("git-loaf runs")
}

/// A scratch repository whose own config names nobody.
fn nobody() -> Scratch {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    s.git(&["config", "--unset", "user.name"]);
    s.git(&["config", "--unset", "user.email"]);
    s
}

/// The text a user reads of `out`: stdout then stderr.
fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn without_an_identity_apply_says_what_git_says_and_changes_nothing() {
    let s = nobody();
    s.write("a.txt", "mine\n");
    let before = s.state();
    let reply = s.reply(&block(
        "id1",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "b")],
    ));
    let out = loaf_without_identity(&s, &["apply"], &reply);
    s.assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Author identity unknown"), "{stderr}");
    assert!(
        stderr.contains("git config --global user.name \"Your Name\"")
            && stderr.contains("git config --global user.email \"you@example.com\""),
        "{stderr}"
    );
    assert!(
        !stderr.contains("class=") && !stderr.contains("code="),
        "{stderr}"
    );
    assert_eq!(s.state(), before, "nothing changed");
    assert!(s.read("b.txt").is_none());
}

/// Every error below, as the user reads it, is in git's words: libgit2's
/// `class=…; code=…` never shows.
#[test]
fn no_error_shows_libgit2_class_or_code() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    for (id, path) in [("aa1", "/repo/b.txt"), ("aa2", "/repo/c.txt")] {
        s.assert_exit(
            &s.apply(&block(
                id,
                "file_write",
                &[("path", path), ("content", "x")],
            )),
            0,
        );
    }
    s.git(&["config", "--unset", "user.name"]);
    s.git(&["config", "--unset", "user.email"]);
    let before = s.state();
    let reply = s.reply(&block(
        "id2",
        "file_write",
        &[("path", "/repo/d.txt"), ("content", "d")],
    ));
    let mut outputs = vec![
        loaf_without_identity(&s, &["apply"], &reply),
        loaf_without_identity(&s, &["squash"], ""),
        loaf_without_identity(&s, &["record", "begin", "--prompt", "Add e"], ""),
        loaf_without_identity(&s, &["undo", "--to", "0123456789abcdef"], ""),
    ];
    assert_eq!(s.state(), before, "nothing changed without an identity");
    let known = Scratch::with(&[("a.txt", "1\n")]);
    outputs.push(known.loaf(&["undo", "--to", "nonesuch"], ""));
    outputs.push(known.loaf(&["show", "deadbeef"], ""));
    std::fs::write(known.root.join(".git/refs/heads/main"), "not a hash\n").expect("ref");
    outputs.push(known.apply(&block(
        "id3",
        "file_write",
        &[("path", "/repo/c.txt"), ("content", "c")],
    )));
    outputs.push(known.loaf(&["squash"], ""));
    for out in &outputs {
        let text = said(out);
        assert!(!out.status.success(), "an error: {text}");
        assert!(
            !text.contains("class=") && !text.contains("code="),
            "libgit2's codes reached the user: {text}"
        );
    }
}

/// HEAD's subject.
fn subject(s: &Scratch) -> String {
    s.git(&["log", "-1", "--format=%s"]).trim().to_owned()
}

/// A reply that opens with a sentence saying what it does is committed under that sentence;
/// one that opens with its blocks under the summary of what they did.
#[test]
fn the_subject_is_the_replys_opening_sentence_else_what_its_actions_did() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    let write = block(
        "su1",
        "file_write",
        &[("path", "/repo/tqdm/utils.py"), ("content", "x = 1\n")],
    );
    let with_prose = format!(
        "Make the terminal width fall back to 80 columns when stty fails. Tests follow.\n\n```sh\n{write}```\n"
    );
    s.assert_exit(&s.apply(&with_prose), 0);
    assert_eq!(
        subject(&s),
        "AI: Make the terminal width fall back to 80 columns when stty fails"
    );
    let long = format!(
        "I'll rewrite the pager so that it keeps the screen's last line free for the prompt and redraws it on resize.\n{}",
        block(
            "su2",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "b")]
        )
    );
    s.assert_exit(&s.apply(&long), 0);
    assert_eq!(
        subject(&s),
        "AI: I'll rewrite the pager so that it keeps the screen's last line…"
    );
    assert!(subject(&s).chars().count() <= 72);
    s.assert_exit(
        &s.apply(&block(
            "su3",
            "file_write",
            &[("path", "/repo/c.txt"), ("content", "c")],
        )),
        0,
    );
    assert_eq!(subject(&s), "AI: file_write c.txt");
}

/// Code that runs past `exec.timeout` is reported as timed out, not as `exit code: null`.
#[test]
fn an_exec_timeout_says_timed_out_after_its_seconds() {
    let s = Scratch::with(&[(
        "loaf.yml",
        "allowed-actions: [defaults, exec]\nexec:\n  timeout: 1\n",
    )]);
    let out = s.apply(&block(
        "to1",
        "exec",
        &[("lang", "bash"), ("code", "sleep 30")],
    ));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("timed out after 1 s"), "{report}");
    assert!(!report.contains("exit code: null"), "{report}");
}

/// A heredoc opened without quotes is one error: its text and closing delimiter are not
/// counted as more malformed lines, so the summary counts one failure for one slip.
#[test]
fn an_unquoted_heredoc_delimiter_counts_as_one_error() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    let reply = format!(
        "{}#!nesl [@three-char-SHA-256: hd2]\naction = \"file_write\"\npath = \"/repo/c.txt\"\ncontent = <<EOT_hd2\nline one\nline two\nEOT_hd2\n#!end_hd2\n",
        block(
            "ok1",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "b")]
        )
    );
    let out = s.apply(&reply);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("PARTIAL: 1 ✅ 1 ❌"), "{report}");
    assert!(!report.contains("Invalid line format"), "{report}");
    assert!(
        report.contains("<<'EOT_hd2'"),
        "says what to write: {report}"
    );
}
