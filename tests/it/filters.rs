//! Blobs exactly as `git add` stores them, files exactly as `git checkout` writes them
//! (DESIGN §2 "Blobs and filters"): external clean/smudge drivers, a long-running process
//! filter, `ident` and eol attributes, a required driver that fails, and file modes. Each
//! check asks the git CLI: after an apply (and after its undo) `git status` is clean, the
//! committed blob is what `git hash-object --path` makes of the file, and the file is what a
//! fresh `git checkout` writes.

use std::path::Path;

use crate::scratch::{Scratch, block};

/// A reply writing `content` to each `(path, content)`.
fn writes(files: &[(&str, &str)]) -> String {
    files
        .iter()
        .enumerate()
        .map(|(i, (path, content))| {
            block(
                &format!("w{i}a"),
                "file_write",
                &[("path", &format!("/repo/{path}")), ("content", content)],
            )
        })
        .collect()
}

/// What git says about `path` matches what git-loaf did: nothing to commit, HEAD holds what
/// `git add` would store for the file, and the file is what `git checkout` writes.
fn assert_like_git(s: &Scratch, path: &str) {
    assert_eq!(
        s.git(&["status", "--porcelain"]),
        "",
        "clean after git-loaf"
    );
    let committed = s.git(&["rev-parse", &format!("HEAD:{path}")]);
    let added = s.git(&["hash-object", &format!("--path={path}"), path]);
    assert_eq!(committed, added, "{path}: HEAD holds what `git add` stores");
    let ours = std::fs::read(s.root.join(path)).expect("the file exists");
    std::fs::remove_file(s.root.join(path)).expect("rm");
    s.git(&["checkout", "--", path]);
    let theirs = std::fs::read(s.root.join(path)).expect("checked out");
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs),
        "{path}: the file is what `git checkout` writes"
    );
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `*.txt filter=up`: stored uppercase, checked out lowercase.
fn tr_repo() -> Scratch {
    let s = Scratch::empty();
    s.git(&["config", "filter.up.clean", "tr a-z A-Z"]);
    s.git(&["config", "filter.up.smudge", "tr A-Z a-z"]);
    s.write(".gitattributes", "*.txt filter=up\n");
    s.write("a.txt", "hello\n");
    s.write("c.txt", "see\n");
    s.commit_all("initial");
    s
}

#[test]
fn a_clean_smudge_driver_is_applied_both_ways_and_undone() {
    let s = tr_repo();
    assert_eq!(
        s.git(&["show", "HEAD:a.txt"]),
        "HELLO\n",
        "git stored it cleaned"
    );
    // The replace matches only if the stage holds the smudged (lowercase) file.
    let reply = format!(
        "{}{}",
        block(
            "r1a",
            "file_replace_text",
            &[
                ("path", "/repo/a.txt"),
                ("old_text", "hello"),
                ("new_text", "hello there")
            ]
        ),
        writes(&[("b.txt", "new file\n")])
    );
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:a.txt"]), "HELLO THERE\n");
    assert_eq!(s.read("a.txt").as_deref(), Some("hello there\n"));
    assert_eq!(s.git(&["show", "HEAD:b.txt"]), "NEW FILE\n");
    assert_like_git(&s, "a.txt");
    assert_like_git(&s, "b.txt");
    let undo = s.loaf(&["undo"], "");
    s.assert_exit(&undo, 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("hello\n"));
    assert_eq!(s.read("b.txt"), None);
    assert_like_git(&s, "a.txt");

    // A later commit by the user reaches the reused stage smudged too.
    s.write("c.txt", "see you\n");
    s.commit_all("user");
    let out = s.apply(&block(
        "r2a",
        "file_replace_text",
        &[
            ("path", "/repo/c.txt"),
            ("old_text", "see you"),
            ("new_text", "see you later"),
        ],
    ));
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:c.txt"]), "SEE YOU LATER\n");
    assert_like_git(&s, "c.txt");
    let undo = s.loaf(&["undo"], "");
    s.assert_exit(&undo, 0);
    assert_eq!(s.read("c.txt").as_deref(), Some("see you\n"));
    assert_like_git(&s, "c.txt");
    s.assert_tidy();
}

/// An exec edits the smudged file in the stage (sed sees lowercase) and creates another; the
/// commit holds both cleaned.
#[test]
fn files_an_exec_changes_are_cleaned_too() {
    let s = tr_repo();
    s.write("loaf.yml", "allowed-actions: [exec]\n");
    s.commit_all("allow exec");
    let out = s.apply(&block(
        "e1x",
        "exec",
        &[
            ("lang", "bash"),
            ("code", "sed -i s/hello/bye/ a.txt && echo made > d.txt"),
        ],
    ));
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:a.txt"]), "BYE\n");
    assert_eq!(s.git(&["show", "HEAD:d.txt"]), "MADE\n");
    assert_like_git(&s, "a.txt");
    assert_like_git(&s, "d.txt");
}

/// A long-running filter (protocol version 2) that uppercases on clean, lowercases on
/// smudge, and logs its pid at start.
const PROCESS_FILTER: &str = r#"
import os, sys
inp, out = sys.stdin.buffer, sys.stdout.buffer
with open(sys.argv[1], "a") as log:
    log.write("%d\n" % os.getpid())
def read_pkt():
    head = inp.read(4)
    if len(head) < 4:
        sys.exit(0)
    n = int(head, 16)
    return None if n == 0 else inp.read(n - 4)
def read_list():
    items = []
    while True:
        p = read_pkt()
        if p is None:
            return items
        items.append(p)
def write_pkt(b):
    out.write(b"%04x" % (len(b) + 4) + b)
def flush():
    out.write(b"0000")
    out.flush()
assert read_list() == [b"git-filter-client\n", b"version=2\n"]
write_pkt(b"git-filter-server\n"); write_pkt(b"version=2\n"); flush()
read_list()
write_pkt(b"capability=clean\n"); write_pkt(b"capability=smudge\n"); flush()
while True:
    head = read_list()
    command = head[0].strip().split(b"=", 1)[1]
    data = b"".join(read_list())
    data = data.upper() if command == b"clean" else data.lower()
    write_pkt(b"status=success\n"); flush()
    for i in range(0, len(data), 65516):
        write_pkt(data[i:i + 65516])
    flush(); flush()
"#;

#[test]
fn a_process_filter_is_started_once_and_applied_both_ways() {
    let s = Scratch::empty();
    let script = s.sibling("filter.py");
    let log = s.sibling("starts.log");
    std::fs::write(&script, PROCESS_FILTER).expect("write");
    let command = format!("python3 {} {}", script.display(), log.display());
    s.git(&["config", "filter.proc.process", &command]);
    s.git(&["config", "filter.proc.required", "true"]);
    s.write(".gitattributes", "*.md filter=proc\n");
    s.write("a.md", "alpha\n");
    s.commit_all("initial");
    assert_eq!(s.git(&["show", "HEAD:a.md"]), "ALPHA\n");
    std::fs::write(&log, "").expect("truncate");
    let reply = format!(
        "{}{}",
        block(
            "r1a",
            "file_replace_text",
            &[
                ("path", "/repo/a.md"),
                ("old_text", "alpha"),
                ("new_text", "alpha beta")
            ]
        ),
        writes(&[("b.md", "gamma\n"), ("c.md", "delta\n")])
    );
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    let starts = std::fs::read_to_string(&log).expect("log");
    assert_eq!(
        starts.lines().count(),
        1,
        "one process for the whole apply: {starts}"
    );
    assert_eq!(s.git(&["show", "HEAD:a.md"]), "ALPHA BETA\n");
    assert_eq!(s.git(&["show", "HEAD:c.md"]), "DELTA\n");
    assert_eq!(s.read("b.md").as_deref(), Some("gamma\n"));
    for path in ["a.md", "b.md", "c.md"] {
        assert_like_git(&s, path);
    }
    let undo = s.loaf(&["undo"], "");
    s.assert_exit(&undo, 0);
    assert_eq!(s.read("a.md").as_deref(), Some("alpha\n"));
    assert_like_git(&s, "a.md");
}

#[test]
fn ident_is_expanded_in_the_file_and_collapsed_in_the_blob() {
    let s = Scratch::empty();
    s.write(".gitattributes", "*.c ident\n");
    s.write("a.c", "/* $Id$ */\nint a;\n");
    s.commit_all("initial");
    assert!(s.read("a.c").is_some_and(|c| c.contains("$Id$")));
    let out = s.apply(&writes(&[
        ("a.c", "/* $Id$ */\nint a = 1;\n"),
        ("b.c", "/* $Id$ */\nint b;\n"),
    ]));
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:a.c"]), "/* $Id$ */\nint a = 1;\n");
    let expanded = s.read("b.c").expect("written");
    assert!(
        expanded.starts_with("/* $Id: ") && expanded.len() > 50,
        "expanded in the file: {expanded}"
    );
    assert_like_git(&s, "a.c");
    assert_like_git(&s, "b.c");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_like_git(&s, "a.c");
}

#[test]
fn eol_attributes_and_autocrlf_convert_like_git() {
    let s = Scratch::empty();
    s.git(&["config", "core.autocrlf", "true"]);
    s.write(".gitattributes", "*.bat text eol=crlf\n*.txt text=auto\n");
    s.write("run.bat", "echo one\r\n");
    s.write("notes.txt", "one\r\n");
    s.commit_all("initial");
    assert_eq!(s.git(&["show", "HEAD:run.bat"]), "echo one\n", "stored LF");
    let out = s.apply(&writes(&[
        ("run.bat", "echo one\necho two\n"),
        ("notes.txt", "one\ntwo\n"),
        ("new.txt", "fresh\n"),
    ]));
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:run.bat"]), "echo one\necho two\n");
    assert_eq!(
        s.read("run.bat").as_deref(),
        Some("echo one\r\necho two\r\n")
    );
    assert_eq!(s.read("new.txt").as_deref(), Some("fresh\r\n"));
    for path in ["run.bat", "notes.txt", "new.txt"] {
        assert_like_git(&s, path);
    }
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.read("run.bat").as_deref(), Some("echo one\r\n"));
    assert_like_git(&s, "run.bat");
}

#[test]
fn a_required_filter_that_fails_is_an_error_naming_the_path_and_changes_nothing() {
    let s = Scratch::with(&[
        (".gitattributes", "*.secret filter=crypt\n"),
        ("k.secret", "x\n"),
    ]);
    s.git(&["config", "filter.crypt.clean", "no-such-filter-command"]);
    s.git(&["config", "filter.crypt.smudge", "cat"]);
    s.git(&["config", "filter.crypt.required", "true"]);
    // Not `Scratch::state`: `git status` itself dies on this filter.
    let state = || {
        format!(
            "{}\n{}{}\n{:?}\n{:?}",
            s.head(),
            s.git(&["ls-files", "--stage"]),
            s.git(&["for-each-ref"]),
            s.read("k.secret"),
            s.read("plain.md"),
        )
    };
    let before = state();
    let out = s.apply(&writes(&[
        ("k.secret", "new key\n"),
        ("plain.md", "fine\n"),
    ]));
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    let stderr = s.redact(&out.stderr);
    assert!(
        stderr.contains("k.secret") && stderr.contains("clean filter 'crypt' failed"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(".git/loaf"),
        "the stage's path never shows"
    );
    assert_eq!(state(), before, "nothing changed");
}

#[test]
fn a_failing_optional_filter_passes_the_content_through_like_git() {
    let s = Scratch::with(&[(".gitattributes", "*.x filter=broken\n"), ("a.x", "a\n")]);
    s.git(&["config", "filter.broken.clean", "exit 1"]);
    s.git(&["config", "filter.broken.smudge", "exit 1"]);
    let out = s.apply(&writes(&[("a.x", "b\n")]));
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:a.x"]), "b\n");
    assert_like_git(&s, "a.x");
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .expect("exists")
        .permissions()
        .mode()
        & 0o777
}

#[cfg(unix)]
fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[cfg(unix)]
#[test]
fn a_private_file_stays_private_when_rewritten_and_undone() {
    let s = Scratch::with(&[("secret.env", "A=1\n"), ("run.sh", "#!/bin/sh\n")]);
    chmod(&s.root.join("secret.env"), 0o600);
    chmod(&s.root.join("run.sh"), 0o700);
    s.git(&["add", "run.sh"]);
    s.git(&["commit", "-q", "-m", "executable"]);
    let out = s.apply(&writes(&[
        ("secret.env", "A=2\n"),
        ("run.sh", "#!/bin/sh\nexit 0\n"),
    ]));
    s.assert_exit(&out, 0);
    assert_eq!(s.read("secret.env").as_deref(), Some("A=2\n"));
    assert_eq!(mode(&s.root.join("secret.env")), 0o600);
    assert_eq!(
        mode(&s.root.join("run.sh")),
        0o700,
        "still executable, still private"
    );
    assert_eq!(s.git(&["status", "--porcelain"]), "");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.read("secret.env").as_deref(), Some("A=1\n"));
    assert_eq!(mode(&s.root.join("secret.env")), 0o600);
    assert_eq!(mode(&s.root.join("run.sh")), 0o700);
    assert_eq!(s.git(&["status", "--porcelain"]), "");
}
