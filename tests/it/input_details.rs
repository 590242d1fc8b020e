//! Details of what git-loaf reads besides the blocks: a byte order mark before the reply,
//! and the dates git takes from `GIT_AUTHOR_DATE` / `GIT_COMMITTER_DATE`.

use crate::scratch::{Scratch, block, git_cmd};

fn reply(s: &Scratch) -> String {
    s.reply(&block(
        "k1m",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "hello\n")],
    ))
}

#[test]
fn a_reply_starting_with_a_byte_order_mark_is_applied() {
    let s = Scratch::with(&[("README.md", "# demo\n")]);
    let text = format!("\u{feff}{}", reply(&s));
    // From a file, as an editor saved it.
    let file = s.sibling("reply.md");
    std::fs::write(&file, &text).expect("write");
    let out = s.loaf(&["apply", &file.to_string_lossy()], "");
    s.assert_exit(&out, 0);
    assert!(
        s.redact(&out.stdout)
            .contains("k1m ✅ file_write /repo/a.txt")
    );
    assert_eq!(s.read("a.txt").as_deref(), Some("hello\n"));
    // `parse` reads it as the same reply without the mark.
    let with = s.loaf(&["parse", "--json"], &text);
    let without = s.loaf(&["parse", "--json"], &reply(&s));
    assert_eq!(with.stdout, without.stdout);
}

/// `git log`'s raw author and committer dates of `rev`.
fn raw_dates(s: &Scratch, rev: &str) -> String {
    s.git(&["log", "-1", "--date=raw", "--format=%ad|%cd", rev])
}

#[test]
fn dates_in_rfc_2822_are_used_as_git_uses_them() {
    let s = Scratch::with(&[("README.md", "# demo\n")]);
    let (author, committer) = (
        "Thu, 07 Apr 2005 22:13:13 +0200",
        "Fri, 8 Apr 2005 01:02:03 -0700",
    );
    let out = git_loaf_with_dates(&s, author, committer, &reply(&s));
    s.assert_exit(&out, 0);
    // The oracle: a commit git makes with the same variables.
    let tree = s.git(&["write-tree"]);
    let by_git = git_cmd(&s.root, &["commit-tree", tree.trim(), "-m", "x"])
        .env("GIT_AUTHOR_DATE", author)
        .env("GIT_COMMITTER_DATE", committer)
        .output()
        .expect("git runs");
    let by_git = String::from_utf8_lossy(&by_git.stdout).trim().to_owned();
    assert_eq!(raw_dates(&s, "HEAD"), raw_dates(&s, &by_git));
    assert_eq!(raw_dates(&s, "HEAD"), "1112904793 +0200|1112947323 -0700\n");
}

#[test]
fn a_date_git_refuses_is_refused_with_the_variable_named_and_nothing_changes() {
    let s = Scratch::with(&[("README.md", "# demo\n")]);
    let before = s.state();
    let out = git_loaf_with_dates(&s, "2026-01-01T00:00:00Z", "next tuesday", &reply(&s));
    s.assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("GIT_COMMITTER_DATE='next tuesday' is not a date git accepts"),
        "{err}"
    );
    assert_eq!(s.state(), before);
}

fn git_loaf_with_dates(
    s: &Scratch,
    author: &str,
    committer: &str,
    reply: &str,
) -> std::process::Output {
    crate::support::git_loaf()
        .current_dir(&s.root)
        .envs(crate::scratch::ENV)
        .env("GIT_AUTHOR_DATE", author)
        .env("GIT_COMMITTER_DATE", committer)
        .arg("apply")
        .write_stdin(reply.to_owned())
        .output()
        .expect("runs")
}
