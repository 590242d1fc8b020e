//! Damaged state found before anything is published (DESIGN §2 "Crash safety"): an
//! operation log whose ref names a blob or a missing object is refused with how to repair
//! it, nothing changed; a journal left empty or cut short (a power loss) is decided by what
//! the refs say, finished or dropped, and the message says which — never "nothing changed"
//! when HEAD moved.

use std::process::Command;

use crate::scratch::{ENV, Scratch, block};

fn write_new(s: &Scratch) -> std::process::Output {
    s.apply(&block(
        "w1a",
        "file_write",
        &[("path", "/repo/new.txt"), ("content", "new\n")],
    ))
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A damaged log is refused (exit 3) before the branch or a file moves, with the repair
/// that then works.
fn refuses_then_repairs(s: &Scratch) {
    let before = s.state();
    let out = write_new(s);
    s.assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("operation log (refs/loaf/oplog) is damaged"),
        "{err}"
    );
    assert!(err.contains("git update-ref -d refs/loaf/oplog"), "{err}");
    assert!(!err.contains("nothing of yours"), "{err}");
    assert_eq!(s.state(), before, "nothing published");
    assert!(s.read("new.txt").is_none());
    s.git(&["update-ref", "-d", "refs/loaf/oplog"]);
    s.assert_exit(&write_new(s), 0);
    assert_eq!(s.read("new.txt").as_deref(), Some("new\n"));
}

#[test]
fn an_op_log_pointing_at_a_blob_is_refused_before_publishing() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    s.write("a.txt", "dirty\n");
    let blob = s.sh("echo junk | git hash-object -w --stdin");
    let blob = String::from_utf8_lossy(&blob.stdout).trim().to_owned();
    s.git(&["update-ref", "refs/loaf/oplog", &blob]);
    refuses_then_repairs(&s);
}

#[test]
fn an_op_log_pointing_at_a_missing_object_is_refused_before_publishing() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    s.assert_exit(&write_new(&s), 0);
    s.git(&["reset", "-q", "--hard", "HEAD~1"]);
    std::fs::write(
        s.root.join(".git/refs/loaf/oplog"),
        "1234567890123456789012345678901234567890\n",
    )
    .expect("damage the log");
    refuses_then_repairs(&s);
}

/// An apply aborted at `moment` whose journal is then cut to `journal` bytes, as a power
/// loss before it reached the disk would leave it.
fn crashed_with_journal(moment: &str, journal: &str) -> (Scratch, String) {
    let s = Scratch::with(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    s.write("b.txt", "mine\n");
    let before = s.state();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("git-loaf"))
        .arg("apply")
        .current_dir(&s.root)
        .envs(ENV)
        .env("LOAF_CRASH_AT", moment)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starts");
    let reply = block(
        "w1a",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "by the reply\n")],
    );
    use std::io::Write as _;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(s.reply(&reply).as_bytes())
        .expect("reply");
    assert!(
        !child.wait().expect("waits").success(),
        "aborted at {moment}"
    );
    let path = s.root.join(".git/loaf/journal.json");
    assert!(path.exists(), "a journal at {moment}");
    std::fs::write(&path, journal).expect("cut the journal");
    (s, before)
}

#[test]
fn an_empty_journal_after_the_branch_moved_is_finished_by_the_refs_and_said() {
    for journal in ["", "{\"workdir\":\"/rep"] {
        let (s, _) = crashed_with_journal("ref", journal);
        let moved_to = s.head();
        assert_eq!(
            s.read("a.txt").as_deref(),
            Some("a\n"),
            "files not yet written"
        );
        let out = s.apply(&block("r9z", "file_read", &[("path", "/repo/a.txt")]));
        s.assert_exit(&out, 0);
        let err = stderr(&out);
        assert!(
            err.contains("interrupted after it moved HEAD") && err.contains("now written"),
            "{err}"
        );
        assert!(!err.contains("before it changed anything"), "{err}");
        assert!(
            err.contains("git reset --keep"),
            "says how to take it back: {err}"
        );
        assert_eq!(s.head(), moved_to, "finished, not rolled back");
        assert_eq!(s.read("a.txt").as_deref(), Some("by the reply\n"));
        assert_eq!(
            s.git(&["status", "--porcelain"]),
            " M b.txt\n",
            "index and files as the commit, the user's edit kept"
        );
        assert_eq!(s.read("b.txt").as_deref(), Some("mine\n"));
        s.assert_tidy();
    }
}

#[test]
fn an_empty_journal_before_the_branch_moved_is_dropped_and_said() {
    let (s, before) = crashed_with_journal("journal", "");
    let out = s.apply(&block("r9z", "file_read", &[("path", "/repo/a.txt")]));
    s.assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("journal was empty") && err.contains("did not move HEAD"),
        "{err}"
    );
    assert_eq!(s.state(), before);
    s.assert_tidy();
}

/// `git loaf ARGS` paused at `moment` (handshake file) while `meanwhile` looks at or acts
/// in the repository; then let go. Returns its output.
fn pausing(
    s: &Scratch,
    args: &[&str],
    stdin: &str,
    moment: &str,
    meanwhile: impl FnOnce(),
) -> std::process::Output {
    use std::io::Write as _;
    let handshake = s.sibling("pause-handshake");
    let _ = std::fs::remove_file(&handshake);
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("git-loaf"))
        .args(args)
        .current_dir(&s.root)
        .envs(ENV)
        .env("LOAF_PAUSE_AT", moment)
        .env("LOAF_PAUSE_FILE", &handshake)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("stdin written");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !handshake.exists() {
        // Ended without pausing (refused or failed before the moment): say so now.
        if let Ok(Some(_)) = child.try_wait() {
            let out = child.wait_with_output().expect("ends");
            panic!(
                "ended before {moment}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(std::time::Instant::now() < until, "never reached {moment}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    meanwhile();
    std::fs::remove_file(&handshake).expect("resume");
    child.wait_with_output().expect("ends")
}

/// The journal as it is on disk now, parsed: it must be whole.
fn journal(s: &Scratch) -> Option<serde_json::Value> {
    let text = std::fs::read(s.root.join(".git/loaf/journal.json")).ok()?;
    Some(serde_json::from_slice(&text).expect("a whole journal"))
}

/// The order itself, not only the names of the moments: the journal is on disk, whole and
/// naming the move, before the ref moves; it is still there once the ref has moved and
/// until the log entry is written.
#[test]
fn the_journal_is_written_before_the_ref_moves_and_kept_until_the_log_entry() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let old = s.head();
    let reply = s.reply(&block(
        "w1a",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "new\n")],
    ));
    let out = pausing(&s, &["apply"], &reply, "journal", || {
        let j = journal(&s).expect("the journal is there before the ref moves");
        assert_eq!(j["old"], old.as_str());
        assert_eq!(s.head(), old, "the ref has not moved yet");
    });
    s.assert_exit(&out, 0);
    s.git(&["reset", "-q", "--hard", &old]);
    let out = pausing(&s, &["apply"], &reply, "ref", || {
        assert_ne!(s.head(), old, "the ref has moved");
        let j = journal(&s).expect("the journal is still there");
        assert_eq!(j["new"], s.head().as_str());
    });
    s.assert_exit(&out, 0);
    s.git(&["reset", "-q", "--hard", &old]);
    let out = pausing(&s, &["apply"], &reply, "oplog", || {
        let newest = s.git(&["show", "refs/loaf/oplog:entry.json"]);
        let j = journal(&s).expect("the journal outlives the log entry");
        assert!(
            newest.contains(j["op"]["id"].as_str().expect("an id")),
            "the log entry is written: {newest}"
        );
    });
    s.assert_exit(&out, 0);
    assert!(journal(&s).is_none(), "dropped at the end");
}

/// step-back detaches HEAD only once the journal (naming the branch it leaves) is there.
#[test]
fn step_back_detaches_only_after_its_journal_names_the_branch() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    s.write("a.txt", "b\n");
    s.commit_all("second");
    let tip = s.head();
    let out = pausing(&s, &["step-back"], "", "journal", || {
        let j = journal(&s).expect("the journal first");
        assert_eq!(j["detach_from"], "refs/heads/main");
        assert_eq!(s.git(&["symbolic-ref", "HEAD"]), "refs/heads/main\n");
    });
    s.assert_exit(&out, 0);
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    let out = pausing(&s, &["step-back"], "", "detached", || {
        assert!(journal(&s).is_some(), "the journal is there");
        assert_eq!(s.head(), tip, "detached where it was");
        let attached = Command::new("git")
            .args(["symbolic-ref", "-q", "HEAD"])
            .current_dir(&s.root)
            .envs(ENV)
            .status()
            .expect("git runs");
        assert!(!attached.success(), "detached");
    });
    s.assert_exit(&out, 0);
}

/// The last look at a file right before it is replaced: a file the user saves after the
/// first look is kept, and the message says so.
#[test]
fn a_file_saved_between_the_first_and_the_last_look_is_kept() {
    let s = Scratch::with(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let reply = s.reply(
        &[
            block(
                "w1a",
                "file_write",
                &[("path", "/repo/a.txt"), ("content", "by the reply\n")],
            ),
            block("d2b", "file_delete", &[("path", "/repo/b.txt")]),
        ]
        .concat(),
    );
    let out = pausing(&s, &["apply"], &reply, "replacing", || {
        s.write("a.txt", "saved just now\n");
        // An mtime well before the index is written, so that git trusts whatever stat
        // data the index gives a.txt instead of re-reading it as racily clean.
        let past = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
        std::fs::File::options()
            .write(true)
            .open(s.root.join("a.txt"))
            .and_then(|f| f.set_modified(past))
            .expect("set mtime");
        s.write("b.txt", "b saved just now\n");
    });
    s.assert_exit(&out, 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("saved just now\n"));
    assert_eq!(s.read("b.txt").as_deref(), Some("b saved just now\n"));
    let said = format!("{}{}", stderr(&out), String::from_utf8_lossy(&out.stdout));
    assert!(
        said.contains("changed them meanwhile") && said.contains("a.txt"),
        "{said}"
    );
    // The saves are changes git sees on top of the apply's commit, not hidden behind index
    // entries that claim the file is clean.
    assert_eq!(s.git(&["status", "--porcelain"]), " M a.txt\n?? b.txt\n");
    assert_eq!(s.git(&["diff", "--stat", "--", "a.txt"]).lines().count(), 2);
}

/// What `git loaf ARGS` says on stderr with `LOAF_LOG=debug`.
fn debug_log(s: &Scratch, args: &[&str]) -> String {
    let out = Command::new(assert_cmd::cargo::cargo_bin("git-loaf"))
        .args(args)
        .current_dir(&s.root)
        .envs(ENV)
        .env("LOAF_LOG", "debug")
        .output()
        .expect("git-loaf runs");
    s.assert_exit(&out, 0);
    stderr(&out)
}

/// The objects of an undo's log entry are made durable in the one batch before its journal
/// (the flushes that make the journal durable cover them): none is synced after the
/// journal, whose removal then waits only for the log's ref.
#[test]
fn an_undos_log_entry_is_durable_before_its_journal() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    s.assert_exit(&write_new(&s), 0);
    let log = debug_log(&s, &["undo"]);
    let journal = log.find("journal reached").expect("a journal moment");
    let synced: Vec<(usize, usize)> = log
        .match_indices(" new objects made durable")
        .map(|(at, _)| {
            let line_start = log[..at].rfind('\n').map_or(0, |n| n + 1);
            let count = log[line_start..at]
                .rsplit(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .expect("a count");
            (at, count)
        })
        .collect();
    assert!(
        synced.iter().any(|&(at, n)| at < journal && n >= 3),
        "the entry's commit, tree and blob before the journal:\n{log}"
    );
    assert!(
        synced.iter().all(|&(at, n)| at < journal || n == 0),
        "no object synced after the journal:\n{log}"
    );
}

/// A read-only apply: the next command, which finishes or drops a journal.
fn read_only(s: &Scratch) -> std::process::Output {
    s.apply(&block("r9z", "file_read", &[("path", "/repo/a.txt")]))
}

/// A journal a power loss brought back after its operation was logged (its removal is not
/// synced) changes no file: the user's edit since, even back to the content before the
/// operation, stays, and the log keeps one entry.
#[test]
fn a_journal_back_after_its_entry_was_logged_changes_no_file() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let apply = |moment: Option<&str>| {
        let mut command = Command::new(assert_cmd::cargo::cargo_bin("git-loaf"));
        command
            .arg("apply")
            .current_dir(&s.root)
            .envs(ENV)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Some(moment) = moment {
            command.env("LOAF_CRASH_AT", moment);
        }
        let mut child = command.spawn().expect("git-loaf runs");
        use std::io::Write as _;
        let reply = s.reply(&block(
            "w2b",
            "file_write",
            &[("path", "/repo/a.txt"), ("content", "model\n")],
        ));
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(reply.as_bytes())
            .expect("reply written");
        child.wait().expect("git-loaf ends")
    };
    // Aborted after the log, before the journal's removal: the journal as it was.
    assert!(!apply(Some("attached")).success());
    let journal = s.root.join(".git/loaf/journal.json");
    let kept = std::fs::read(&journal).expect("the journal stays");
    s.assert_exit(&read_only(&s), 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("model\n"));
    let entries = || s.git(&["rev-list", "--first-parent", "--count", "refs/loaf/oplog"]);
    let logged = entries();
    s.write("a.txt", "a\n");
    std::fs::write(&journal, &kept).expect("the journal back");
    s.assert_exit(&read_only(&s), 0);
    assert!(!journal.exists(), "dropped");
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("a\n"),
        "the user's edit stays"
    );
    assert_eq!(entries(), logged, "logged once");
}
