//! step-back and step-forward killed at each named moment of their publish (abort), then
//! one more command: HEAD (and whether it is on the branch), index and working tree are all
//! as before or all as after, the next command works and says what recovery did, and the
//! walk goes on (a step-back finished by recovery is undone or stepped forward exactly).
//! And step-forward when the walk is still owed its kept work but cannot go on: exit 3 with
//! the way to get the work back.

use std::process::{Command, Output};

use crate::scratch::{ENV, Scratch, block};

/// `main` with c1..c4, and uncommitted work at c4 of every kind: staged, unstaged, both,
/// untracked.
fn scene() -> Scratch {
    let s = Scratch::with(&[("a.txt", "1\n2\n3\n"), ("b.txt", "b\n")]);
    for (n, file) in [(2, "c2.txt"), (3, "c3.txt"), (4, "c4.txt")] {
        s.write(file, &format!("{n}\n"));
        s.commit_all(&format!("c{n}"));
    }
    s.write("a.txt", "1\n2\n3\nstaged\n");
    s.git(&["add", "a.txt"]);
    s.write("a.txt", "1\n2\n3\nstaged\nunstaged\n");
    s.write("b.txt", "b\nmine\n");
    s.write("u.txt", "untracked\n");
    s
}

/// `git loaf ARGS` aborted at `moment`.
fn crash(s: &Scratch, args: &[&str], moment: &str) {
    let status = Command::new(assert_cmd::cargo::cargo_bin("git-loaf"))
        .args(args)
        .current_dir(&s.root)
        .envs(ENV)
        .env("LOAF_CRASH_AT", moment)
        .output()
        .expect("git-loaf runs");
    assert!(
        !status.status.success(),
        "{args:?} aborted at {moment}: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

/// The next command (a read-only apply): it works and returns what it said on stderr.
fn next_command(s: &Scratch) -> String {
    let out = s.apply(&block("r9z", "file_read", &[("path", "/repo/c2.txt")]));
    s.assert_exit(&out, 0);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn run(s: &Scratch, args: &[&str]) -> Output {
    let out = s.loaf(args, "");
    s.assert_exit(&out, 0);
    out
}

/// The moments of a move of HEAD, and whether a crash there leaves it done (after the
/// commit point: the move of HEAD itself).
const MOMENTS: [(&str, bool); 7] = [
    ("journal", false),
    ("detached", false),
    ("ref", true),
    ("index", true),
    ("files", true),
    ("oplog", true),
    ("attached", true),
];

#[test]
fn step_back_killed_at_each_moment_is_all_before_or_all_after() {
    let reference = scene();
    let before = reference.state();
    run(&reference, &["step-back"]);
    let after = reference.state();
    assert_ne!(before, after);
    for (moment, done) in MOMENTS {
        let s = scene();
        assert_eq!(s.state(), before, "identical scenes");
        crash(&s, &["step-back"], moment);
        let said = next_command(&s);
        let expected = if done { &after } else { &before };
        assert_eq!(&s.state(), expected, "after an abort at {moment}: {said}");
        assert!(said.contains("interrupted"), "{moment}: says so: {said}");
        assert!(
            !done || !said.contains("before it changed anything"),
            "{moment}: {said}"
        );
        s.assert_tidy();
        if done {
            // The walk goes on: forward brings the kept work back, on main again.
            run(&s, &["step-forward"]);
            assert_eq!(s.state(), before, "{moment}: step-forward after recovery");
        } else {
            run(&s, &["step-back"]);
            assert_eq!(s.state(), after, "{moment}: step-back again");
        }
    }
}

#[test]
fn step_forward_killed_at_each_moment_is_all_before_or_all_after() {
    let stepped_back = || {
        let s = scene();
        run(&s, &["step-back"]);
        s.write("c2.txt", "edited while back\n");
        s
    };
    let reference = stepped_back();
    let before = reference.state();
    run(&reference, &["step-forward"]);
    let after = reference.state();
    assert!(after.contains("refs/heads/main"), "attached: {after}");
    // No detach in a step-forward: that moment is never reached.
    for (moment, done) in MOMENTS.into_iter().filter(|(m, _)| *m != "detached") {
        let s = stepped_back();
        assert_eq!(s.state(), before, "identical scenes");
        crash(&s, &["step-forward"], moment);
        let said = next_command(&s);
        let expected = if done { &after } else { &before };
        assert_eq!(&s.state(), expected, "after an abort at {moment}: {said}");
        assert!(said.contains("interrupted"), "{moment}: says so: {said}");
        s.assert_tidy();
        if done {
            // Undo takes the finished step back exactly.
            run(&s, &["undo"]);
            assert_eq!(s.state(), before, "{moment}: undo after recovery");
        } else {
            run(&s, &["step-forward"]);
            assert_eq!(s.state(), after, "{moment}: step-forward again");
        }
    }
}

/// The id of the saved work the refusal prints `git loaf restore` for.
fn restore_id(err: &str) -> String {
    err.split('`')
        .find_map(|c| c.strip_prefix("git loaf restore "))
        .unwrap_or_else(|| panic!("a command to get the kept work back: {err}"))
        .to_owned()
}

#[test]
fn step_forward_after_an_apply_made_while_back_refuses_with_the_kept_work() {
    let s = scene();
    s.write("c4.txt", "4\nmine\n"); // in a file the step changes: kept aside
    run(&s, &["step-back"]);
    let out = s.apply(&block(
        "w1a",
        "file_write",
        &[("path", "/repo/new.txt"), ("content", "new\n")],
    ));
    s.assert_exit(&out, 0);
    let before = s.state();
    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 3);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        err.contains("`git loaf apply` ran while stepped back"),
        "{err}"
    );
    assert_eq!(s.state(), before, "nothing changed");
    let id = restore_id(&err);
    // The work in files the step did not touch stayed in place all along.
    assert_eq!(s.read("b.txt").as_deref(), Some("b\nmine\n"));
    assert_eq!(s.read("u.txt").as_deref(), Some("untracked\n"));
    // The way out the message gives: back on main, then the kept work into the files.
    s.git(&["switch", "-q", "main"]);
    s.assert_exit(&s.loaf(&["restore", &id], ""), 0);
    assert_eq!(s.read("c4.txt").as_deref(), Some("4\nmine\n"));
    assert_eq!(s.read("b.txt").as_deref(), Some("b\nmine\n"));
}

#[test]
fn step_forward_after_the_branch_was_switched_to_and_rebased_refuses_with_the_kept_work() {
    let s = scene();
    s.write("c4.txt", "4\nmine\n"); // in a file the step changes: kept aside
    run(&s, &["step-back"]);
    s.git(&["switch", "-q", "main"]);
    s.git(&["commit", "-q", "--amend", "-m", "c4 reworded"]);
    let before = s.state();
    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 3);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("HEAD is on main again"), "{err}");
    assert_eq!(s.state(), before, "nothing changed");
    let id = restore_id(&err);
    s.assert_exit(&s.loaf(&["restore", &id], ""), 0);
    assert_eq!(s.read("c4.txt").as_deref(), Some("4\nmine\n"));
}
