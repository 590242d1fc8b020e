//! Undo leaves what is the user's as it was (DESIGN §3): their folders, empty or not, stay;
//! a symlink the operation made is removed, never read or written through; and a refusal
//! names the paths that changed.

use std::process::Output;

use crate::scratch::{Scratch, block};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn write(id: &str, path: &str, content: &str) -> String {
    block(id, "file_write", &[("path", path), ("content", content)])
}

/// A reply writes into the user's empty folders (one nested in another, one beside): undo
/// removes the files and the folders the apply created, and leaves the user's folders.
#[test]
fn undo_leaves_the_users_empty_folders_and_removes_only_those_the_apply_made() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    std::fs::create_dir_all(s.root.join("docs/empty")).expect("mkdir");
    std::fs::create_dir_all(s.root.join("tmp")).expect("mkdir");
    let reply = [
        write("f1a", "/repo/docs/empty/n.txt", "new\n"),
        write("f2b", "/repo/tmp/made/deeper/m.txt", "new\n"),
        write("f3c", "/repo/fresh/o.txt", "new\n"),
    ]
    .concat();
    s.assert_exit(&s.apply(&reply), 0);
    assert!(s.root.join("docs/empty/n.txt").is_file());

    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 0);
    assert!(
        s.root.join("docs/empty").is_dir(),
        "the user's empty folder stays"
    );
    assert!(!s.root.join("docs/empty/n.txt").exists());
    assert!(s.root.join("tmp").is_dir(), "the user's folder stays");
    assert!(!s.root.join("tmp/made").exists(), "the apply's folder goes");
    assert!(!s.root.join("fresh").exists(), "the apply's folder goes");
    assert!(!stderr(&out).contains("left"), "{}", stderr(&out));

    // Redo and undo again: the same.
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert!(s.root.join("tmp/made/deeper/m.txt").is_file());
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert!(s.root.join("docs/empty").is_dir());
    assert!(s.root.join("tmp").is_dir());
    assert!(!s.root.join("tmp/made").exists());
    s.assert_tidy();
}

/// undo and redo refusals name what changed: a few paths, then how many more.
#[test]
fn refusals_name_the_paths_that_changed() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    s.assert_exit(&s.apply(&write("w1a", "/repo/b.txt", "ai\n")), 0);
    for n in 1..=7 {
        s.write(&format!("edit{n}.txt"), "mine\n");
    }
    s.write("b.txt", "mine too\n");
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains(
            "b.txt, edit1.txt, edit2.txt, edit3.txt, edit4.txt and 3 more changed since apply"
        ),
        "{err}"
    );
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));

    // Staged only: the index changed, the file did not.
    for n in 1..=7 {
        std::fs::remove_file(s.root.join(format!("edit{n}.txt"))).expect("rm");
    }
    s.write("b.txt", "ai\n");
    s.write("c.txt", "staged\n");
    s.git(&["add", "c.txt"]);
    std::fs::remove_file(s.root.join("c.txt")).expect("rm");
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("c.txt changed since apply"),
        "{}",
        stderr(&out)
    );

    s.git(&["reset", "-q", "--", "c.txt"]);
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    s.write("z.txt", "after the undo\n");
    let out = s.loaf(&["redo"], "");
    s.assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("z.txt changed since"),
        "{}",
        stderr(&out)
    );
}
