//! `git loaf saved` and `git loaf restore`: the work a forced undo moved away is listed, and
//! comes back exactly as it was (untracked untracked, unstaged unstaged, staged staged),
//! never over a change of the user's, which the refusal names.

use std::process::Output;

use crate::scratch::{Scratch, block};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// An apply (b.txt), then the user's work of every kind, then `undo --force`, which moves
/// it away; returns the saved work's id.
fn forced_undo_over_work(s: &Scratch) -> String {
    let reply = block(
        "k1a",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "ai\n")],
    );
    s.assert_exit(&s.apply(&reply), 0);
    s.write("u.txt", "untracked\n");
    s.write("s.txt", "staged\n");
    s.git(&["add", "s.txt"]);
    s.write("a.txt", "one\nunstaged\n");
    let out = s.loaf(&["undo", "--force"], "");
    s.assert_exit(&out, 0);
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    let text = stdout(&out);
    text.split('`')
        .find_map(|c| c.strip_prefix("git loaf restore "))
        .unwrap_or_else(|| panic!("names the restore: {text}"))
        .to_owned()
}

#[test]
fn restore_puts_back_untracked_untracked_staged_staged_and_unstaged_unstaged() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let id = forced_undo_over_work(&s);

    let listed = s.loaf(&["saved"], "");
    s.assert_exit(&listed, 0);
    let text = stdout(&listed);
    assert!(
        text.starts_with(&format!("{id} ")) && text.contains(&format!("`git loaf restore {id}`")),
        "{text}"
    );
    assert!(
        text.contains("\n  a.txt\n  s.txt\n  u.txt\n"),
        "the user's paths only, not the AI's b.txt: {text}"
    );
    let after_undo = s.state();

    let out = s.loaf(&["restore", &id], "");
    s.assert_exit(&out, 0);
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        " M a.txt\nA  s.txt\n?? u.txt\n"
    );
    assert_eq!(s.read("a.txt").as_deref(), Some("one\nunstaged\n"));
    assert_eq!(s.read("b.txt"), None, "the AI's edit stays undone");
    assert!(
        stdout(&out).contains("  a.txt (unstaged)\n  u.txt (untracked)\n  s.txt (staged)\n"),
        "{}",
        stdout(&out)
    );
    assert_eq!(stdout(&s.loaf(&["saved"], "")), "No saved work.\n");

    // A restore is an operation of the log: undo takes it back exactly, and the work is
    // listed again; redo restores it again.
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), after_undo);
    assert!(stdout(&s.loaf(&["saved"], "")).starts_with(&format!("{id} ")));
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert_eq!(stdout(&s.loaf(&["saved"], "")), "No saved work.\n");
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        " M a.txt\nA  s.txt\n?? u.txt\n"
    );
}

#[test]
fn restore_refuses_to_overwrite_the_users_changes_and_names_the_files() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let id = forced_undo_over_work(&s);
    s.write("u.txt", "written since\n");
    s.write("a.txt", "one\nedited since\n");
    let before = s.state();

    let out = s.loaf(&["restore", &id], "");
    s.assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("would overwrite your uncommitted changes in a.txt, u.txt"),
        "{err}"
    );
    assert!(
        err.contains(&format!("`git loaf restore {id}` again")),
        "{err}"
    );
    assert_eq!(s.state(), before, "nothing changed");
    assert!(
        stdout(&s.loaf(&["saved"], "")).starts_with(&id),
        "still saved"
    );

    // Out of the way, it goes back; a file already as saved is no obstacle.
    s.write("u.txt", "untracked\n");
    s.git(&["checkout", "--", "a.txt"]);
    s.assert_exit(&s.loaf(&["restore", &id], ""), 0);
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        " M a.txt\nA  s.txt\n?? u.txt\n"
    );
}

#[test]
fn restore_of_an_unknown_id_says_where_to_find_them() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let out = s.loaf(&["restore", "abcdef"], "");
    s.assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("there is no saved work 'abcdef'"), "{err}");
    assert!(err.contains("`git loaf saved`"), "{err}");
    assert_eq!(stdout(&s.loaf(&["saved"], "")), "No saved work.\n");
}
