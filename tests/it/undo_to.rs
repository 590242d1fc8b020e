//! `git loaf undo --to <id|N>`: a whole session undone in one step, exactly, with undo's
//! refusals, and itself undoable.

use std::process::Output;

use crate::scratch::{Scratch, block, trailer};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn write(id: &str, path: &str, content: &str) -> String {
    block(id, "file_write", &[("path", path), ("content", content)])
}

fn oplog_length(s: &Scratch) -> usize {
    s.git(&["rev-list", "--first-parent", "--count", "refs/loaf/oplog"])
        .trim()
        .parse()
        .expect("a count")
}

/// Uncommitted work, then three applies (the second rewriting a file the first wrote).
fn session() -> (Scratch, String, Vec<String>) {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.write("a.txt", "one\nmine, staged\n");
    s.git(&["add", "a.txt"]);
    s.write("u.txt", "untracked\n");
    let before = s.state();
    let mut ids = Vec::new();
    for (n, (path, content)) in [
        ("b.txt", "ai 1\n"),
        ("b.txt", "ai 2\n"),
        ("c.txt", "ai 3\n"),
    ]
    .into_iter()
    .enumerate()
    {
        let reply = write(&format!("k{n}a"), &format!("/repo/{path}"), content);
        s.assert_exit(&s.apply(&reply), 0);
        ids.push(trailer(&s, "HEAD", "Loaf-Apply"));
    }
    (s, before, ids)
}

#[test]
fn undoes_a_whole_session_in_one_step_and_a_plain_undo_redoes_it() {
    let (s, before, ids) = session();
    let after = s.state();
    let logged = oplog_length(&s);

    let out = s.loaf(&["undo", "--to", &ids[0]], "");
    s.assert_exit(&out, 0);
    assert_eq!(
        s.state(),
        before,
        "as before the first apply, uncommitted work included"
    );
    assert_eq!(oplog_length(&s), logged + 1, "one entry");
    let text = stdout(&out);
    assert!(text.contains("Undid 3 operations:"), "{text}");
    for id in &ids {
        assert!(text.contains(id.as_str()), "lists {id}: {text}");
    }

    let out = s.loaf(&["redo"], "");
    s.assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("a plain `git loaf undo`"),
        "{}",
        stderr(&out)
    );

    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), after, "all three back");
    // And the operations are still there to undo one by one.
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.read("c.txt"), None);
    assert_eq!(s.read("b.txt").as_deref(), Some("ai 2\n"));
    s.assert_tidy();
}

#[test]
fn a_count_undoes_the_last_n_operations() {
    let (s, _, ids) = session();
    s.assert_exit(&s.loaf(&["undo", "--to", "2"], ""), 0);
    assert_eq!(s.read("b.txt").as_deref(), Some("ai 1\n"));
    assert_eq!(s.read("c.txt"), None);
    assert_eq!(trailer(&s, "HEAD", "Loaf-Apply"), ids[0]);

    let out = s.loaf(&["undo", "--to", "9"], "");
    s.assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("cannot undo 9 operations"),
        "{}",
        stderr(&out)
    );
    let out = s.loaf(&["undo", "--to", "nosuch"], "");
    s.assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("no operation 'nosuch'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn refuses_when_things_changed_since_unless_forced() {
    let (s, before, ids) = session();
    s.write("c.txt", "edited since\n");
    let changed = s.state();
    let out = s.loaf(&["undo", "--to", &ids[0]], "");
    s.assert_exit(&out, 3);
    assert_eq!(s.state(), changed, "nothing changed");
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));

    let out = s.loaf(&["undo", "--to", &ids[0], "--force"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.state(), before);
    assert!(
        stdout(&out).contains("refs/loaf/saved/"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn refuses_to_remove_a_pushed_commit_in_the_run() {
    let (s, _, ids) = session();
    s.git(&["update-ref", "refs/remotes/origin/main", "HEAD~1"]);
    let out = s.loaf(&["undo", "--to", &ids[0]], "");
    s.assert_exit(&out, 3);
    assert!(stderr(&out).contains("origin/main"), "{}", stderr(&out));
    // The last one alone was not pushed.
    s.assert_exit(&s.loaf(&["undo", "--to", &ids[2]], ""), 0);
    assert_eq!(s.read("c.txt"), None);
}

/// A run of steps undone at once goes back to the commit the first step left, exactly; a run
/// that starts on the branch and ends detached is refused with a way that works.
#[test]
fn undoes_a_run_of_steps_and_refuses_one_that_changes_the_branch() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    for n in 2..=4 {
        s.write("a.txt", &format!("{n}\n"));
        s.commit_all(&format!("c{n}"));
    }
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.write("x.txt", "at c3\n");
    let at_c3 = s.state();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);

    s.assert_exit(&s.loaf(&["undo", "--to", "2"], ""), 0);
    assert_eq!(s.state(), at_c3);

    // The first step-back left main: undoing back to it would re-attach HEAD mid-run.
    let out = s.loaf(&["undo", "--to", "4"], "");
    s.assert_exit(&out, 3);
    assert!(stderr(&out).contains("step-forward"), "{}", stderr(&out));
}
