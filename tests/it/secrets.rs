//! Secrets (issue 22, DESIGN §2 "Secrets"): what can be pushed — the commits and their
//! `Loaf-Result` trailers, the notes under `refs/notes/loaf` — never holds what a block read
//! or printed; the full report stays local for `git loaf show` and goes with `git loaf gc`;
//! `notes.outputs: full` opts in to outputs in notes.

use std::collections::BTreeSet;

use git_loaf::git::session::Session;
use git_loaf::ops::gc;

use crate::scratch::{Scratch, block};

/// The value of the ignored `.env`: it must never reach what can be pushed.
const SECRET: &str = "hunter2-s3cr3t-value";

/// A repository ignoring `.env`, with one on disk, and loaf.yml `extra` on top of exec being
/// allowed and `.env` not isolated (the user allowed it: what is read then must still stay
/// out of the notes).
fn project(extra: &str) -> Scratch {
    let s = Scratch::with(&[
        (".gitignore", ".env\n"),
        (
            "loaf.yml",
            &format!("allowed-actions: [defaults, exec]\nstage:\n  isolate: []\n{extra}"),
        ),
        ("a.txt", "a\n"),
    ]);
    s.write(".env", &format!("TOKEN={SECRET}\n"));
    s
}

/// Reads `.env` every way a reply can (and writes a file, so that there is a commit).
fn reply() -> String {
    [
        block("r1a", "file_read", &[("path", "/repo/.env")]),
        block("r2b", "file_read_numbered", &[("path", "/repo/.env")]),
        block("r3c", "files_read", &[("paths", "/repo/.env\n/repo/a.txt")]),
        block("g4d", "grep", &[("pattern", "TOKEN"), ("path", "/repo")]),
        block(
            "e5e",
            "exec",
            &[
                ("lang", "bash"),
                ("code", "cat /repo/.env; cat /repo/.env >&2"),
            ],
        ),
        block(
            "w6f",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "b")],
        ),
    ]
    .concat()
}

/// Every object `refs/heads/*` and `refs/notes/*` reach, as `git cat-file -p` prints it, with
/// the whole history and every note (`git log --all -p`, `git notes show`).
fn pushable(s: &Scratch) -> String {
    let mut out = s.git(&["log", "--all", "-p", "--format=%H%n%B"]);
    out.push_str(&s.git(&[
        "log",
        "--all",
        "--format=%(trailers:key=Loaf-Result,valueonly)",
    ]));
    let objects = s.git(&["rev-list", "--objects", "--branches", "--glob=refs/notes/*"]);
    let oids: BTreeSet<&str> = objects
        .lines()
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert!(oids.len() > 5, "the walk found the objects: {objects}");
    for oid in oids {
        out.push_str(&s.git(&["cat-file", "-p", oid]));
    }
    out
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn reads_and_exec_output_of_a_secret_stay_out_of_commits_and_notes_but_show_keeps_them() {
    let s = project("");
    let out = s.apply(&reply());
    s.assert_exit(&out, 0);
    let report = stdout(&out);
    assert!(
        report.matches(SECRET).count() >= 5,
        "the model sees what it asked for: {report}"
    );
    let commit = s.head();
    let pushed = pushable(&s);
    assert!(!pushed.contains(SECRET), "{pushed}");
    let note = s.git(&["notes", "--ref", "loaf", "show", &commit]);
    assert!(!note.contains(SECRET), "{note}");
    // Sizes and hashes instead: `printf 'TOKEN=…\n' | sha256sum` is the file's.
    let file_hash = s.sh("sha256sum .env");
    let file_hash = stdout(&file_hash);
    let file_hash = file_hash.split(' ').next().expect("a hash");
    assert!(note.contains(file_hash), "{note}");
    assert!(note.contains("\"outputs\": \"hashes\""), "{note}");

    // Shown locally, in full, as apply printed it.
    let shown = s.loaf(&["show"], "");
    s.assert_exit(&shown, 0);
    assert_eq!(stdout(&shown), report);
    let json = s.loaf(&["show", "--json"], "");
    assert!(stdout(&json).contains(SECRET));

    // After undo: still nowhere that can be pushed, and still shown here.
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert!(!pushable(&s).contains(SECRET));
    assert!(
        !s.git(&["notes", "--ref", "loaf", "show", &commit])
            .contains(SECRET)
    );
    let shown = s.loaf(&["show", &commit], "");
    s.assert_exit(&shown, 0);
    assert!(stdout(&shown).contains(SECRET));
}

#[test]
fn without_the_local_report_show_falls_back_to_the_note_and_says_so() {
    let s = project("");
    s.assert_exit(&s.apply(&reply()), 0);
    // As in another clone (notes fetched), or after the report was dropped.
    s.git(&["update-ref", "-d", "refs/loaf/reports"]);
    let shown = s.loaf(&["show"], "");
    s.assert_exit(&shown, 0);
    let text = stdout(&shown);
    assert!(!text.contains(SECRET), "{text}");
    let read = format!("[r1a] file_read {}/.env:\n(", s.root.display());
    assert!(text.contains(&read), "{text}");
    assert!(text.contains("bytes, sha256 "), "{text}");
    let stderr = String::from_utf8_lossy(&shown.stderr);
    assert!(
        stderr.contains("are not in this repository") && stderr.contains("sha256"),
        "{stderr}"
    );
}

#[test]
fn notes_outputs_full_puts_the_outputs_in_the_note() {
    let s = project("notes:\n  outputs: full\n");
    s.assert_exit(&s.apply(&reply()), 0);
    let note = s.git(&["notes", "--ref", "loaf", "show", "HEAD"]);
    assert!(note.contains(SECRET), "{note}");
    // The trailer holds hashes whatever the notes hold.
    let trailer = crate::scratch::trailer(&s, "HEAD", "Loaf-Result");
    assert!(!trailer.contains(SECRET), "{trailer}");
}

#[test]
fn squash_keeps_the_notes_free_of_outputs_and_the_full_reports_local() {
    let s = project("");
    s.assert_exit(&s.apply(&reply()), 0);
    let second = block(
        "w7g",
        "file_write",
        &[("path", "/repo/c.txt"), ("content", "c")],
    ) + &block("r8h", "file_read", &[("path", "/repo/.env")]);
    s.assert_exit(&s.apply(&second), 0);
    s.assert_exit(&s.loaf(&["squash"], ""), 0);
    assert!(!pushable(&s).contains(SECRET));
    let note = s.git(&["notes", "--ref", "loaf", "show", "HEAD"]);
    assert!(!note.contains(SECRET), "{note}");
    assert!(note.contains("\"outputs\": \"hashes\""), "{note}");
    let shown = s.loaf(&["show"], "");
    s.assert_exit(&shown, 0);
    assert!(
        stdout(&shown).matches(SECRET).count() >= 6,
        "{}",
        stdout(&shown)
    );
}

#[test]
fn an_older_note_with_outputs_loses_them_when_squashed() {
    let s = project("notes:\n  outputs: full\n");
    s.assert_exit(&s.apply(&reply()), 0);
    // Hashes from now on (left uncommitted: the run of applies stays unbroken).
    s.write(
        "loaf.yml",
        "allowed-actions: [defaults, exec]\nstage:\n  isolate: []\n",
    );
    let second = block(
        "w7g",
        "file_write",
        &[("path", "/repo/c.txt"), ("content", "c")],
    );
    s.assert_exit(&s.apply(&second), 0);
    // The first apply's local report is gone, as in a clone that fetched its note only.
    s.git(&["update-ref", "-d", "refs/loaf/reports"]);
    s.assert_exit(&s.loaf(&["squash"], ""), 0);
    let note = s.git(&["notes", "--ref", "loaf", "show", "HEAD"]);
    assert!(!note.contains(SECRET), "{note}");
}

#[test]
fn gc_drops_the_full_report_with_its_entry() {
    let s = project("");
    s.assert_exit(&s.apply(&reply()), 0);
    assert!(stdout(&s.loaf(&["show"], "")).contains(SECRET));
    let session = Session::begin(&s.root, "gc").expect("session");
    let far = git_loaf::ops::now_secs() + 10 * 24 * 60 * 60;
    let done = gc::collect(&session, 1, far, false).expect("gc");
    drop(session);
    assert_eq!(done.reports_dropped, 1);
    assert!(s.git(&["for-each-ref", "refs/loaf/reports"]).is_empty());
    let shown = s.loaf(&["show"], "");
    s.assert_exit(&shown, 0);
    assert!(!stdout(&shown).contains(SECRET));
}
