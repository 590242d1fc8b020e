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

/// An exec replaced a folder by a symlink to a folder outside the repository that holds a
/// file of the same name: undo removes the link and restores the folder and its files,
/// never reading or writing through the link (the outside folder is untouched).
#[test]
fn undo_removes_a_symlink_that_replaced_a_folder_and_restores_the_folder() {
    let s = Scratch::with(&[
        ("loaf.yml", "allowed-actions: [defaults, exec]\n"),
        ("lib/x.txt", "x\n"),
        ("lib/y.txt", "y\n"),
    ]);
    let outside = s.sibling("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("x.txt"), "outside x\n").expect("write");
    let before = s.state();
    let code = format!("rm -rf lib && ln -s {} lib", outside.display());
    let out = s.apply(&block("x1a", "exec", &[("lang", "bash"), ("code", &code)]));
    s.assert_exit(&out, 0);
    let lib = s.root.join("lib");
    assert!(
        std::fs::symlink_metadata(&lib).is_ok_and(|m| m.file_type().is_symlink()),
        "the apply made the link: {}",
        s.redact(&out.stdout)
    );

    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 0);
    assert!(!stderr(&out).contains("left"), "{}", stderr(&out));
    assert!(
        std::fs::symlink_metadata(&lib).is_ok_and(|m| m.is_dir()),
        "a folder again"
    );
    assert_eq!(s.state(), before);
    assert_eq!(
        std::fs::read_to_string(outside.join("x.txt")).expect("read"),
        "outside x\n",
        "nothing written through the link"
    );
    assert!(
        !outside.join("y.txt").exists(),
        "nothing written through the link"
    );

    // Redo makes the link again, and removes nothing through it.
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert!(std::fs::symlink_metadata(&lib).is_ok_and(|m| m.file_type().is_symlink()));
    assert_eq!(
        std::fs::read_to_string(outside.join("x.txt")).expect("read"),
        "outside x\n"
    );
    s.assert_tidy();
}

/// A commit made since the apply that changes no file (an empty commit): HEAD moved while
/// the working tree and index stayed as the apply left them. Undo refuses as for any
/// commit made since, and the user's commit stays on the branch.
#[test]
fn undo_refuses_when_only_head_moved_since() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    s.assert_exit(&s.apply(&write("w1a", "/repo/b.txt", "ai\n")), 0);
    s.git(&["commit", "-q", "--allow-empty", "-m", "mine"]);
    let mine = s.git(&["rev-parse", "HEAD"]);
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 3);
    assert!(stderr(&out).contains("HEAD moved"), "{}", stderr(&out));
    assert_eq!(s.git(&["rev-parse", "HEAD"]), mine);
    assert_eq!(s.read("b.txt").as_deref(), Some("ai\n"));
}

/// HEAD moved since, but not by a commit on top (the user reset back past the apply): the
/// hint is to go back, never "you committed since" with a `git revert`.
#[test]
fn undo_after_head_moved_back_says_to_go_back_not_to_revert() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    s.assert_exit(&s.apply(&write("w1a", "/repo/b.txt", "ai\n")), 0);
    let applied = s.git(&["rev-parse", "--short=7", "HEAD"]);
    s.git(&["reset", "-q", "--hard", "HEAD~1"]);
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("git reset --keep {}", applied.trim())),
        "{err}"
    );
    assert!(!err.contains("you committed since"), "{err}");
}

/// The user switched to another branch at the same commit since the apply: the trees are
/// as the apply left them, but undo refuses rather than move the other branch, and says
/// how to go back.
#[test]
fn undo_refuses_on_another_branch_than_the_apply_left() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    s.assert_exit(&s.apply(&write("w1a", "/repo/b.txt", "ai\n")), 0);
    let applied = s.git(&["rev-parse", "HEAD"]);
    let branch = s.git(&["branch", "--show-current"]);
    s.git(&["switch", "-q", "-c", "other"]);
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("but you are now on other"), "{err}");
    assert!(
        err.contains(&format!("git switch {}", branch.trim())),
        "{err}"
    );
    assert_eq!(s.git(&["rev-parse", "HEAD"]), applied);
    assert_eq!(s.git(&["rev-parse", branch.trim()]), applied);
    assert_eq!(s.read("b.txt").as_deref(), Some("ai\n"));
}

/// The apply turned file `d` into folder `d/`; the user's build then wrote an ignored file
/// there. Undo must put the file `d` back, which would delete `d/x.log` (nothing else keeps
/// it): refused before anything moves, naming it, even with `--force`; once it is moved away,
/// undo goes through.
#[test]
fn undo_never_deletes_an_ignored_file_in_a_folder_it_turns_back_into_a_file() {
    let s = Scratch::with(&[(".gitignore", "*.log\n"), ("d", "a file\n")]);
    let reply = [
        block("d1a", "file_delete", &[("path", "/repo/d")]),
        write("w2b", "/repo/d/f.txt", "in a folder\n"),
    ]
    .concat();
    s.assert_exit(&s.apply(&reply), 0);
    assert_eq!(s.read("d/f.txt").as_deref(), Some("in a folder\n"));
    s.write("d/x.log", "the user's build output\n");
    let before = s.state();
    for args in [&["undo"][..], &["undo", "--force"][..]] {
        let out = s.loaf(args, "");
        s.assert_exit(&out, 3);
        assert!(
            stderr(&out).contains("d/x.log would be deleted"),
            "{}",
            stderr(&out)
        );
        assert_eq!(
            s.read("d/x.log").as_deref(),
            Some("the user's build output\n")
        );
        assert_eq!(s.state(), before, "nothing moved");
    }
    std::fs::rename(s.root.join("d/x.log"), s.root.join("x.log")).expect("moved away");
    // An empty folder of the user's there is theirs as well.
    std::fs::create_dir(s.root.join("d/keep")).expect("mkdir");
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("d/keep/ would be deleted"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir(s.root.join("d/keep")).expect("rmdir");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.read("d").as_deref(), Some("a file\n"));
    s.assert_tidy();
}
