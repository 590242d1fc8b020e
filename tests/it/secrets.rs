//! Secrets (issue 22, DESIGN §2 "Secrets"): what can be pushed — the commits and their
//! `Loaf-Result` trailers, the notes under `refs/notes/loaf` — never holds what a block read
//! or printed; the full report stays local for `git loaf show` and goes with `git loaf gc`;
//! `notes.outputs: full` opts in to outputs in notes.

use std::collections::BTreeSet;

use git_loaf::ops::gc;
use git_loaf::tx::session::Session;

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

// Secret files isolated by default, and writes kept inside the repository.

/// The loaf.yml `git loaf init` writes.
const INIT_YML: &str = include_str!("../../loaf.yml.example");

/// A block's line of the report, by id, with its indented continuation lines.
fn line(report: &str, id: &str) -> String {
    let mut lines = report
        .lines()
        .skip_while(|l| !l.starts_with(&format!("{id} ")));
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("no line for {id} in:\n{report}"));
    let rest: Vec<&str> = lines.take_while(|l| l.starts_with("    ")).collect();
    [vec![first], rest].concat().join("\n")
}

#[test]
fn no_default_config_lets_a_write_leave_the_repository() {
    let configs: [(&str, Option<&str>); 3] = [
        ("init's loaf.yml", Some(INIT_YML)),
        ("no loaf.yml", None),
        ("a loaf.yml without fs-guard", Some("version: 1\n")),
    ];
    for (name, config) in configs {
        let s = Scratch::with(&[("a.txt", "a\n")]);
        if let Some(text) = config {
            s.write("loaf.yml", text);
            s.commit_all("config");
        }
        let outside = s.sibling("outside");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::os::unix::fs::symlink(&outside, s.root.join("link")).expect("symlink");
        s.commit_all("a link out");
        let elsewhere = outside.join("abs.txt");
        let reply = [
            block(
                "w1a",
                "file_write",
                &[("path", "/repo/../escape.txt"), ("content", "x")],
            ),
            block(
                "w2b",
                "file_write",
                &[("path", "/repo/sub/../../escape2.txt"), ("content", "x")],
            ),
            block(
                "w3c",
                "file_write",
                &[("path", "/repo/link/through.txt"), ("content", "x")],
            ),
            block(
                "w4d",
                "file_write",
                &[
                    ("path", elsewhere.to_str().expect("utf-8")),
                    ("content", "x"),
                ],
            ),
            block("w5e", "dir_create", &[("path", "/repo/../made")]),
            block(
                "w6f",
                "file_move",
                &[
                    ("old_path", "/repo/a.txt"),
                    ("new_path", "/repo/link/moved.txt"),
                ],
            ),
        ]
        .concat();
        let out = s.apply(&reply);
        let report = s.redact(&out.stdout);
        for id in ["w1a", "w2b", "w3c", "w4d", "w5e", "w6f"] {
            let l = line(&report, id);
            assert!(l.contains("❌"), "{name}: {l}");
            assert!(
                l.contains("fs-guard.write.allow") && l.contains("matches it"),
                "{name}: the refusal names the rule and the key: {l}"
            );
        }
        let parent = s.root.parent().expect("parent");
        for path in [
            parent.join("escape.txt"),
            parent.join("escape2.txt"),
            parent.join("made"),
            outside.join("through.txt"),
            outside.join("moved.txt"),
            elsewhere.clone(),
        ] {
            assert!(!path.exists(), "{name}: {} was written", path.display());
        }
        assert_eq!(s.read("a.txt").as_deref(), Some("a\n"), "{name}");
    }
}

#[test]
fn a_deny_pattern_is_named_in_the_refusal() {
    // init's fs-guard, with stage.isolate empty so that the guard's own rule refuses.
    let s = Scratch::with(&[(
        "loaf.yml",
        "fs-guard:\n  read:  { allow: [\"./**\"], deny: [] }\n  write: { allow: [\"./**\"], deny: [\"**/.git/**\", \"**/.env\"] }\nstage:\n  isolate: []\n",
    )]);
    assert!(INIT_YML.contains("write: { allow: [\"./**\"], deny: [\"**/.git/**\", \"**/.env\"] }"));
    let out = s.apply(&block(
        "w1a",
        "file_write",
        &[("path", "/repo/sub/.env"), ("content", "x")],
    ));
    let report = s.redact(&out.stdout);
    let l = line(&report, "w1a");
    assert!(
        l.contains("it matches `**/.env` in fs-guard.write.deny of loaf.yml"),
        "{l}"
    );
}

#[test]
fn secret_files_are_kept_from_replies_by_default_and_the_refusal_says_how_to_allow() {
    let s = Scratch::with(&[
        (".gitignore", ".env\n*.pem\n.ssh/\n"),
        (".env.example", "TOKEN=\n"),
        ("a.txt", "a\n"),
    ]);
    s.write(".env", &format!("TOKEN={SECRET}\n"));
    s.write("api/.env", &format!("TOKEN={SECRET}\n"));
    s.write("server.pem", SECRET);
    s.write(".ssh/id_ed25519", SECRET);
    // Not ignored, so the stage holds it as the user's untracked file: still refused.
    s.write(".npmrc", SECRET);
    let reply = [
        block("r1a", "file_read", &[("path", "/repo/.env")]),
        block("r2b", "file_read", &[("path", "/repo/api/.env")]),
        block("r3c", "file_read_numbered", &[("path", "/repo/server.pem")]),
        block(
            "r4d",
            "files_read",
            &[("paths", "/repo/a.txt\n/repo/.ssh/id_ed25519")],
        ),
        block("r5e", "ls", &[("path", "/repo/.ssh")]),
        block("r6f", "file_read", &[("path", "/repo/.npmrc")]),
        block(
            "w7g",
            "file_write",
            &[("path", "/repo/.env.local"), ("content", "X=1")],
        ),
        block("r8h", "file_read", &[("path", "/repo/.env.example")]),
        block("l9i", "ls", &[("path", "/repo")]),
        block("g1j", "grep", &[("pattern", "TOKEN"), ("path", "/repo")]),
        block(
            "g2k",
            "glob",
            &[("pattern", "**/*"), ("base_path", "/repo")],
        ),
    ]
    .concat();
    let out = s.apply(&reply);
    let report = s.redact(&out.stdout);
    assert!(!report.contains(SECRET), "{report}");
    for (id, pattern) in [
        ("r1a", ".env"),
        ("r2b", ".env"),
        ("r3c", "*.pem"),
        ("r4d", "id_ed25519*"),
        ("r5e", ".ssh/**"),
        ("r6f", ".npmrc"),
        ("w7g", ".env.*"),
    ] {
        let l = line(&report, id);
        assert!(l.contains("❌"), "{l}");
        assert!(
            l.contains(&format!("(pattern `{pattern}`)"))
                && l.contains("the built-in stage.isolate list")
                && l.contains("remove the pattern from stage.isolate in loaf.yml"),
            "{l}"
        );
    }
    assert!(
        line(&report, "r8h").contains("✅"),
        "a tracked file is readable"
    );
    assert!(line(&report, "l9i").contains("✅"));
    let listing = &report[report.find("[l9i]").expect("ls output")..];
    let listing = &listing[..listing.find("\n[").unwrap_or(listing.len())];
    for name in [".env (", "server.pem", ".ssh/", ".npmrc"] {
        assert!(!listing.contains(name), "{name} listed: {listing}");
    }
    assert!(listing.contains(".env.example"), "{listing}");
    assert!(s.read(".env.local").is_none());
}

#[test]
fn an_isolated_folder_keeps_out_everything_in_it() {
    let s = Scratch::with(&[
        (".gitignore", ".venv/\n"),
        ("loaf.yml", "stage:\n  isolate: [\".venv\"]\n"),
        ("a.txt", "a\n"),
    ]);
    s.write(".venv/pyvenv.cfg", "home = /usr/bin\n");
    s.write(".venv/lib/site.py", "# site\n");
    let reply = [
        block("r1a", "file_read", &[("path", "/repo/.venv/pyvenv.cfg")]),
        block("r2b", "ls", &[("path", "/repo/.venv/lib")]),
        block(
            "w3c",
            "file_write",
            &[("path", "/repo/.venv/new.py"), ("content", "x")],
        ),
        block(
            "r4d",
            "file_read",
            &[("path", "/repo/sub/../.venv/pyvenv.cfg")],
        ),
    ]
    .concat();
    let out = s.apply(&reply);
    let report = s.redact(&out.stdout);
    for id in ["r1a", "r2b", "w3c", "r4d"] {
        let l = line(&report, id);
        assert!(
            l.contains("❌") && l.contains("stage.isolate in loaf.yml (pattern `.venv`)"),
            "{l}"
        );
    }
    assert!(s.read(".venv/new.py").is_none());
}

#[test]
fn the_local_report_follows_an_amended_commit_by_its_apply_id() {
    let s = project("");
    s.assert_exit(&s.apply(&reply()), 0);
    s.write("a.txt", "amended\n");
    s.git(&["commit", "-qa", "--amend", "--no-edit"]);
    let shown = s.loaf(&["show"], "");
    s.assert_exit(&shown, 0);
    assert!(stdout(&shown).contains(SECRET), "{}", stdout(&shown));
    assert!(
        shown.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
}

/// Every object in the repository's database, contents included (loose and packed,
/// reachable or not).
fn every_object(s: &Scratch) -> String {
    let out = crate::scratch::git_cmd(&s.root, &["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .expect("git cat-file runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An untracked `.env` and key the user forgot to ignore never enter an object git-loaf
/// writes (checkpoints, the stage's start, what step-back keeps aside), with the fast
/// checkpoint and with libgit2's `add_all` (forced by `core.fileMode false`); apply, undo
/// and step-back leave them in place.
#[test]
fn untracked_secret_files_never_enter_an_object_and_stay_in_place() {
    for file_mode in ["true", "false"] {
        let s = Scratch::with(&[("a.txt", "a\n")]);
        s.git(&["config", "core.fileMode", file_mode]);
        s.write(".env", &format!("TOKEN={SECRET}\n"));
        s.write("deploy/id_rsa", &format!("{SECRET}-key\n"));
        s.write("notes.txt", "my notes\n");
        s.write("a.txt", "a\nmine\n");
        let write =
            |id: &str, path: &str| block(id, "file_write", &[("path", path), ("content", "x\n")]);
        s.assert_exit(&s.apply(&write("w1a", "/repo/b.txt")), 0);
        s.assert_exit(&s.apply(&write("w2b", "/repo/c.txt")), 0);
        s.assert_exit(&s.loaf(&["undo"], ""), 0);
        s.assert_exit(&s.loaf(&["step-back"], ""), 0);
        s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
        let objects = every_object(&s);
        assert!(!objects.contains(SECRET), "core.fileMode {file_mode}");
        assert!(
            objects.contains("my notes"),
            "other untracked work is recorded"
        );
        assert_eq!(s.read(".env"), Some(format!("TOKEN={SECRET}\n")));
        assert_eq!(s.read("deploy/id_rsa"), Some(format!("{SECRET}-key\n")));
        let status = s.git(&["status", "--porcelain", "--untracked-files=all"]);
        assert!(
            status.contains("?? .env") && status.contains("?? deploy/id_rsa"),
            "{status}"
        );
    }
}
