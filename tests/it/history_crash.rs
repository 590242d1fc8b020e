//! `undo`, `redo`, `squash` and `take` killed at each named moment (abort), then one more
//! command (step-back and step-forward: `step_crash.rs`; apply: `crash.rs`): HEAD,
//! index and working tree are all as before or all as after, the lock and journal are gone,
//! and the history goes on (a finished operation is undone exactly; an unfinished one runs
//! again to the same result). A `take` finished by recovery no longer lists its commit as
//! kept: taking it twice would apply it twice.

use std::process::Command;

use crate::scratch::{ENV, Scratch, block};

/// `git loaf ARGS` aborted at `moment`.
fn crash(s: &Scratch, args: &[&str], moment: &str) {
    let out = Command::new(assert_cmd::cargo::cargo_bin("git-loaf"))
        .args(args)
        .current_dir(&s.root)
        .envs(ENV)
        .env("LOAF_CRASH_AT", moment)
        .output()
        .expect("git-loaf runs");
    assert!(
        !out.status.success(),
        "{args:?} aborted at {moment}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The next command (a read-only apply): it works and returns what it said on stderr.
fn next_command(s: &Scratch) -> String {
    let out = s.apply(&block("r9z", "file_read", &[("path", "/repo/a.txt")]));
    s.assert_exit(&out, 0);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The user's state with HEAD named by its tree and the subjects of its history: apply ids
/// (in the trailers) differ from scene to scene, so commit ids do too.
fn view(s: &Scratch) -> String {
    let state = s.state();
    let (head, rest) = state.split_once('\n').unwrap_or((&state, ""));
    let branch = head.split_whitespace().nth(2).unwrap_or("(detached)");
    let tree = s.git(&["rev-parse", "HEAD^{tree}"]);
    let subjects = s.git(&["log", "--format=%s"]);
    format!("HEAD {} {branch}\n{subjects}{rest}", tree.trim())
}

fn run(s: &Scratch, args: &[&str]) {
    let out = s.loaf(args, "");
    s.assert_exit(&out, 0);
}

/// Uncommitted work of every kind: staged, unstaged, untracked.
fn dirty(s: &Scratch) {
    s.write("a.txt", "1\nstaged\n");
    s.git(&["add", "a.txt"]);
    s.write("a.txt", "1\nstaged\nunstaged\n");
    s.write("u.txt", "untracked\n");
}

/// Two applies on `main`, then the user's uncommitted work.
fn two_applies() -> Scratch {
    let s = Scratch::with(&[("a.txt", "1\n"), ("b.txt", "b\n")]);
    applies(&s);
    dirty(&s);
    s
}

/// The user's uncommitted work, then two applies on `main` (undo may take them back).
fn dirty_then_two_applies() -> Scratch {
    let s = Scratch::with(&[("a.txt", "1\n"), ("b.txt", "b\n")]);
    dirty(&s);
    applies(&s);
    s
}

fn applies(s: &Scratch) {
    for (id, path) in [("k1a", "/repo/x.txt"), ("k2b", "/repo/y.txt")] {
        let out = s.apply(&block(
            id,
            "file_write",
            &[("path", path), ("content", "AI\n")],
        ));
        s.assert_exit(&out, 0);
    }
}

/// The moments of undo (redo: the same walk without the first three): its own before the
/// publish, then the publish's (no detach); whether a crash there leaves it done.
const UNDO_MOMENTS: [(&str, bool); 10] = [
    ("locked", false),
    ("logged", false),
    ("pushed-checked", false),
    ("scanned", false),
    ("journal", false),
    ("ref", true),
    ("index", true),
    ("files", true),
    ("oplog", true),
    ("attached", true),
];

/// Whether the next command must say an operation was interrupted: only when a journal
/// was left.
fn leaves_a_journal(moment: &str) -> bool {
    ["journal", "ref", "index", "files", "oplog", "attached"].contains(&moment)
}

#[test]
fn undo_killed_at_each_moment_is_all_before_or_all_after() {
    let reference = dirty_then_two_applies();
    let before = view(&reference);
    run(&reference, &["undo"]);
    let after = view(&reference);
    assert_ne!(before, after);
    for (moment, done) in UNDO_MOMENTS {
        let s = dirty_then_two_applies();
        assert_eq!(view(&s), before, "identical scenes");
        crash(&s, &["undo"], moment);
        let said = next_command(&s);
        let expected = if done { &after } else { &before };
        assert_eq!(&view(&s), expected, "after an abort at {moment}: {said}");
        assert_eq!(
            said.contains("interrupted"),
            leaves_a_journal(moment),
            "{moment}: {said}"
        );
        s.assert_tidy();
        if done {
            run(&s, &["redo"]);
            assert_eq!(view(&s), before, "{moment}: redo after recovery");
        } else {
            run(&s, &["undo"]);
            assert_eq!(view(&s), after, "{moment}: undo again");
        }
    }
}

#[test]
fn redo_killed_at_each_moment_is_all_before_or_all_after() {
    let undone = || {
        let s = dirty_then_two_applies();
        run(&s, &["undo"]);
        s
    };
    let reference = undone();
    let before = view(&reference);
    run(&reference, &["redo"]);
    let after = view(&reference);
    assert_ne!(before, after);
    let moments = UNDO_MOMENTS
        .into_iter()
        .filter(|(m, _)| !["locked", "logged", "pushed-checked"].contains(m));
    for (moment, done) in moments {
        let s = undone();
        assert_eq!(view(&s), before, "identical scenes");
        crash(&s, &["redo"], moment);
        let said = next_command(&s);
        let expected = if done { &after } else { &before };
        assert_eq!(&view(&s), expected, "after an abort at {moment}: {said}");
        assert_eq!(
            said.contains("interrupted"),
            leaves_a_journal(moment),
            "{moment}: {said}"
        );
        s.assert_tidy();
        if done {
            run(&s, &["undo"]);
            assert_eq!(view(&s), before, "{moment}: undo after recovery");
        } else {
            run(&s, &["redo"]);
            assert_eq!(view(&s), after, "{moment}: redo again");
        }
    }
}

/// The moments of squash: its own before the publish, then the publish's (HEAD stays
/// attached: no detach), then its own after; whether a crash there leaves it done.
const SQUASH_MOMENTS: [(&str, bool); 12] = [
    ("locked", false),
    ("planned", false),
    ("scanned", false),
    ("commit", false),
    ("committed", false),
    ("journal", false),
    ("ref", true),
    ("index", true),
    ("files", true),
    ("oplog", true),
    ("attached", true),
    ("published", true),
];

#[test]
fn squash_killed_at_each_moment_is_all_before_or_all_after() {
    let reference = two_applies();
    let before = view(&reference);
    run(&reference, &["squash"]);
    let after = view(&reference);
    assert_ne!(before, after);
    for (moment, done) in SQUASH_MOMENTS {
        let s = two_applies();
        assert_eq!(view(&s), before, "identical scenes");
        crash(&s, &["squash"], moment);
        let said = next_command(&s);
        let expected = if done { &after } else { &before };
        assert_eq!(&view(&s), expected, "after an abort at {moment}: {said}");
        assert_eq!(
            said.contains("interrupted"),
            leaves_a_journal(moment),
            "{moment}: {said}"
        );
        s.assert_tidy();
        if done {
            run(&s, &["undo"]);
            assert_eq!(view(&s), before, "{moment}: undo after recovery");
        } else {
            run(&s, &["squash"]);
            assert_eq!(view(&s), after, "{moment}: squash again");
        }
    }
}

/// A commit kept (not applied: the branch moved while the apply ran), then the user's
/// uncommitted work; returns the scene and the kept id.
fn kept() -> (Scratch, String) {
    let s = Scratch::with(&[("a.txt", "1\n"), ("b.txt", "b\n")]);
    let reply = block(
        "k7m",
        "file_write",
        &[("path", "/repo/new.txt"), ("content", "AI\n")],
    );
    let out = s.apply_pausing(&reply, "committed", || {
        s.git(&["commit", "-q", "--allow-empty", "-m", "meanwhile"]);
    });
    s.assert_exit(&out, 3);
    let id = kept_ids(&s).pop().expect("a kept commit");
    dirty(&s);
    (s, id)
}

/// The ids under refs/loaf/ that name kept commits (`refs/loaf/<hex id>`).
fn kept_ids(s: &Scratch) -> Vec<String> {
    s.git(&["for-each-ref", "--format=%(refname:lstrip=2)", "refs/loaf/"])
        .lines()
        .filter(|l| l.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_owned)
        .collect()
}

/// The moments of take: the publish's (no detach); it ends with the publish (the kept ref
/// goes with the log entry).
const TAKE_MOMENTS: [(&str, bool); 6] = [
    ("journal", false),
    ("ref", true),
    ("index", true),
    ("files", true),
    ("oplog", true),
    ("attached", true),
];

#[test]
fn take_killed_at_each_moment_is_all_before_or_all_after() {
    let (reference, id) = kept();
    let before = view(&reference);
    run(&reference, &["take", &id]);
    let after = view(&reference);
    assert_ne!(before, after);
    assert!(kept_ids(&reference).is_empty(), "taken: no longer kept");
    for (moment, done) in TAKE_MOMENTS {
        let (s, id) = kept();
        assert_eq!(view(&s), before, "identical scenes");
        crash(&s, &["take", &id], moment);
        let said = next_command(&s);
        let expected = if done { &after } else { &before };
        assert_eq!(&view(&s), expected, "after an abort at {moment}: {said}");
        assert!(said.contains("interrupted"), "{moment}: says so: {said}");
        s.assert_tidy();
        if done {
            assert!(
                kept_ids(&s).is_empty(),
                "{moment}: a take finished by recovery is no longer kept"
            );
            run(&s, &["undo"]);
            assert_eq!(view(&s), before, "{moment}: undo after recovery");
        } else {
            assert_eq!(kept_ids(&s), vec![id.clone()], "{moment}: still kept");
            run(&s, &["take", &id]);
            assert_eq!(view(&s), after, "{moment}: take again");
        }
    }
}
