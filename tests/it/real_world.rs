//! Repositories as users have them: empty, detached HEAD, a linked worktree checkout, a
//! submodule, CRLF line endings by `.gitattributes` and by `core.autocrlf`, large and binary
//! files next to the edited ones, and paths with spaces and non-ASCII characters. Each is
//! applied to and undone with the binary, and checked with the git CLI. Also: a repository
//! copied whole or moved to another folder.

use std::os::unix::fs::MetadataExt as _;

use crate::scratch::{Scratch, block, git_in};

#[test]
fn an_empty_repository_gets_a_root_commit_and_undo_makes_it_empty_again() {
    let s = Scratch::empty();
    let before = s.state();
    let out = s.apply(&block(
        "k7m",
        "file_write",
        &[("path", "/repo/src/main.rs"), ("content", "fn main() {}\n")],
    ));
    s.assert_exit(&out, 0);
    assert_eq!(
        s.git(&["rev-list", "--count", "HEAD"]),
        "1\n",
        "a root commit"
    );
    assert_eq!(
        s.git(&["ls-tree", "-r", "--name-only", "HEAD"]),
        "src/main.rs\n"
    );
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.head(), "unborn");
    assert_eq!(s.state(), before);
    assert!(
        !s.root.join("src").exists(),
        "the folder the apply made is gone"
    );
    s.assert_tidy();
}

/// An apply of `new.txt` in an unborn repository: the root commit holds that file alone.
fn apply_the_root_commit(s: &Scratch) {
    let out = s.apply(&block(
        "k7m",
        "file_write",
        &[("path", "/repo/new.txt"), ("content", "ai")],
    ));
    s.assert_exit(&out, 0);
    assert_eq!(
        s.git(&["ls-tree", "-r", "--name-only", "HEAD"]),
        "new.txt\n",
        "the root commit holds only what the apply wrote"
    );
}

#[test]
fn an_empty_repository_with_uncommitted_files_keeps_them_through_apply_and_undo() {
    let s = Scratch::empty();
    s.write("notes.txt", "mine\n");
    s.write("staged.txt", "staged\n");
    s.git(&["add", "staged.txt"]);
    let before = s.state();
    apply_the_root_commit(&s);
    assert_eq!(s.git(&["log", "--format=%s"]), "AI: file_write new.txt\n");
    assert_eq!(
        s.git(&["status", "--porcelain"]),
        "A  staged.txt\n?? notes.txt\n",
        "the user's files stay uncommitted"
    );
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(
        s.state(),
        before,
        "unborn again, one file staged and one untracked"
    );
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert_eq!(s.read("new.txt").as_deref(), Some("ai"));
}

/// Only staged files before the first commit (the working tree is exactly the index, so the
/// quick scan finds nothing): they are still uncommitted work, kept out of the root commit
/// and staged again after undo.
#[test]
fn an_empty_repository_with_only_staged_files_keeps_them_staged_through_apply_and_undo() {
    let s = Scratch::empty();
    s.write("staged.txt", "staged\n");
    s.git(&["add", "staged.txt"]);
    let before = s.state();
    apply_the_root_commit(&s);
    assert_eq!(s.git(&["status", "--porcelain"]), "A  staged.txt\n");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), before, "unborn again, the file staged");
}

#[test]
fn a_detached_head_moves_alone_and_the_branch_stays() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    s.write("a.txt", "2\n");
    s.commit_all("second");
    let main = s.head();
    s.git(&["checkout", "-q", "--detach", "HEAD~1"]);
    let before = s.state();
    let detached = s.head();
    s.assert_exit(
        &s.apply(&block(
            "k7m",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "b")],
        )),
        0,
    );
    assert_eq!(s.git(&["rev-parse", "HEAD~1"]).trim(), detached);
    assert_eq!(
        s.git(&["rev-parse", "main"]).trim(),
        main,
        "the branch did not move"
    );
    assert!(
        s.state().starts_with(&format!("HEAD {} \n", s.head())),
        "still detached"
    );
    let undo = s.loaf(&["undo"], "");
    s.assert_exit(&undo, 0);
    assert!(
        s.redact(&undo.stdout).contains("detached HEAD"),
        "{}",
        s.redact(&undo.stdout)
    );
    assert_eq!(s.state(), before);
    s.assert_tidy();
}

#[test]
fn a_linked_worktree_checkout_is_applied_to_on_its_own_branch() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    let wt = s.sibling("feature-wt");
    s.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "feature",
        &wt.to_string_lossy(),
    ]);
    let wt = wt.canonicalize().expect("canonical");
    let main = s.head();
    let main_state = s.state();
    let reply = block(
        "k7m",
        "file_write",
        &[
            ("path", &format!("{}/a.txt", wt.display())),
            ("content", "feature\n"),
        ],
    );
    s.assert_exit(&s.loaf_in(&wt, &["apply"], &reply), 0);
    assert_eq!(
        std::fs::read_to_string(wt.join("a.txt")).ok().as_deref(),
        Some("feature\n")
    );
    assert_eq!(
        git_in(&wt, &["log", "-1", "--format=%s"]),
        "AI: file_write a.txt\n"
    );
    assert_eq!(s.head(), main, "main did not move");
    assert_eq!(s.state(), main_state, "the main worktree is untouched");
    assert_eq!(git_in(&wt, &["status", "--porcelain"]), "");
    let list = s.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(
        list.matches("worktree ").count(),
        3,
        "main, feature and the stage: {list}"
    );
    // Undo from the main worktree has nothing of its own to undo.
    assert_eq!(s.loaf(&["undo"], "").status.code(), Some(2));
    s.assert_exit(&s.loaf_in(&wt, &["undo"], ""), 0);
    assert_eq!(
        std::fs::read_to_string(wt.join("a.txt")).ok().as_deref(),
        Some("1\n")
    );
    assert_eq!(git_in(&wt, &["rev-parse", "HEAD"]).trim(), main);
    s.assert_tidy();
}

#[test]
fn a_repository_with_a_submodule_keeps_it_as_it_is() {
    let sub = Scratch::with(&[("lib.txt", "library\n")]);
    let s = Scratch::with(&[("a.txt", "1\n")]);
    s.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        &sub.root.to_string_lossy(),
        "vendor/lib",
    ]);
    s.commit_all("add submodule");
    let submodule_before = s.git(&["submodule", "status"]);
    let out = s.apply(&format!(
        "{}{}{}",
        block(
            "k7m",
            "file_write",
            &[("path", "/repo/a.txt"), ("content", "2\n")]
        ),
        block("r1d", "file_read", &[("path", "/repo/vendor/lib/lib.txt")]),
        block(
            "w2x",
            "file_write",
            &[("path", "/repo/vendor/lib/new.txt"), ("content", "x")]
        ),
    ));
    assert_eq!(
        out.status.code(),
        Some(1),
        "inside the submodule is refused"
    );
    let report = s.redact(&out.stdout);
    assert!(
        report.contains("'/repo/vendor/lib/new.txt' is inside the submodule 'vendor/lib'"),
        "{report}"
    );
    assert!(!report.contains(".git/loaf"), "{report}");
    assert_eq!(s.git(&["submodule", "status"]), submodule_before);
    assert_eq!(s.read("vendor/lib/lib.txt").as_deref(), Some("library\n"));
    assert_eq!(s.git(&["status", "--porcelain"]), "");
    assert_eq!(
        s.git(&["show", "--name-only", "--format=", "HEAD"]),
        "a.txt\n"
    );
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("1\n"));
    assert_eq!(s.read("vendor/lib/lib.txt").as_deref(), Some("library\n"));
    s.assert_tidy();
}

#[test]
fn crlf_from_gitattributes_is_preserved_and_the_blob_stays_lf() {
    let s = Scratch::with(&[
        (".gitattributes", "*.txt text eol=crlf\n"),
        ("a.txt", "one\ntwo\nthree\n"),
    ]);
    std::fs::remove_file(s.root.join("a.txt")).expect("rm");
    s.git(&["checkout", "--", "a.txt"]);
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("one\r\ntwo\r\nthree\r\n"),
        "checked out with CRLF"
    );
    let out = s.apply(&format!(
        "{}{}",
        block(
            "k7m",
            "file_replace_text",
            &[
                ("path", "/repo/a.txt"),
                ("old_text", "two"),
                ("new_text", "TWO")
            ]
        ),
        block(
            "x9z",
            "file_write",
            &[("path", "/repo/new.txt"), ("content", "x\ny\n")]
        ),
    ));
    s.assert_exit(&out, 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("one\r\nTWO\r\nthree\r\n"));
    assert_eq!(
        s.git(&["show", "HEAD:a.txt"]),
        "one\nTWO\nthree\n",
        "normalized in the commit"
    );
    assert_eq!(s.git(&["show", "HEAD:new.txt"]), "x\ny\n");
    assert_eq!(s.git(&["status", "--porcelain"]), "", "git sees no change");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("one\r\ntwo\r\nthree\r\n"));
    assert_eq!(s.git(&["status", "--porcelain"]), "");
}

#[test]
fn core_autocrlf_files_keep_crlf() {
    let s = Scratch::with(&[("c.md", "alpha\nbeta\n")]);
    s.git(&["config", "core.autocrlf", "true"]);
    std::fs::remove_file(s.root.join("c.md")).expect("rm");
    s.git(&["checkout", "--", "c.md"]);
    assert_eq!(s.read("c.md").as_deref(), Some("alpha\r\nbeta\r\n"));
    s.assert_exit(
        &s.apply(&block(
            "k7m",
            "file_replace_text",
            &[
                ("path", "/repo/c.md"),
                ("old_text", "beta"),
                ("new_text", "gamma"),
            ],
        )),
        0,
    );
    assert_eq!(s.read("c.md").as_deref(), Some("alpha\r\ngamma\r\n"));
    assert_eq!(s.git(&["show", "HEAD:c.md"]), "alpha\ngamma\n");
    assert_eq!(s.git(&["status", "--porcelain"]), "");
}

#[test]
fn large_and_binary_files_next_to_the_edits_are_not_rewritten() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    let big: Vec<u8> = (0..20 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let binary: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    std::fs::write(s.root.join("big.bin"), &big).expect("write");
    std::fs::write(s.root.join("logo.png"), &binary).expect("write");
    s.commit_all("assets");
    let stat = |p: &str| {
        let m = std::fs::metadata(s.root.join(p)).expect("stat");
        (m.ino(), m.mtime(), m.mtime_nsec(), m.len())
    };
    let (big_stat, png_stat) = (stat("big.bin"), stat("logo.png"));
    let out = s.apply(&format!(
        "{}{}",
        block(
            "k7m",
            "file_write",
            &[("path", "/repo/a.txt"), ("content", "2\n")]
        ),
        block("r1d", "file_read", &[("path", "/repo/logo.png")]),
    ));
    assert_eq!(
        out.status.code(),
        Some(1),
        "reading a binary file is refused"
    );
    assert!(
        s.redact(&out.stdout).contains("Binary file"),
        "{}",
        s.redact(&out.stdout)
    );
    assert_eq!(
        s.git(&["show", "--name-only", "--format=", "HEAD"]),
        "a.txt\n"
    );
    assert_eq!(stat("big.bin"), big_stat, "not rewritten");
    assert_eq!(stat("logo.png"), png_stat, "not rewritten");
    assert_eq!(
        std::fs::read(s.root.join("logo.png")).expect("read"),
        binary
    );
    assert_eq!(s.git(&["status", "--porcelain"]), "");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(stat("big.bin"), big_stat, "undo leaves them alone too");
}

#[test]
fn paths_with_spaces_and_non_ascii_characters() {
    let s = Scratch::with(&[("dir with space/naïve ☕.txt", "café\n")]);
    let before = s.state();
    let out = s.apply(&format!(
        "{}{}",
        block(
            "k7m",
            "file_replace_text",
            &[
                ("path", "/repo/dir with space/naïve ☕.txt"),
                ("old_text", "café"),
                ("new_text", "thé")
            ]
        ),
        block(
            "x9z",
            "file_write",
            &[
                ("path", "/repo/nouveau dossier/résumé 1.md"),
                ("content", "ok")
            ]
        ),
    ));
    s.assert_exit(&out, 0);
    assert!(
        s.redact(&out.stdout)
            .contains("/repo/nouveau dossier/résumé 1.md")
    );
    assert_eq!(
        s.read("dir with space/naïve ☕.txt").as_deref(),
        Some("thé\n")
    );
    let files = s.git(&[
        "-c",
        "core.quotepath=false",
        "show",
        "--name-only",
        "--format=",
        "HEAD",
    ]);
    assert_eq!(
        files,
        "dir with space/naïve ☕.txt\nnouveau dossier/résumé 1.md\n"
    );
    assert_eq!(s.git(&["status", "--porcelain"]), "");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), before);
    assert!(!s.root.join("nouveau dossier").exists());
}

/// A repository copied whole (`cp -a`, as when trying something on a copy) and one moved to
/// another folder keep applying: each with a stage of its own (the copy's entry led to the
/// original's stage, whose commits then went missing; the moved one's led nowhere and no
/// stage could be made), and the original keeps its own.
#[test]
fn a_copied_or_moved_repository_keeps_applying_and_the_original_too() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let write =
        |id: &str, path: &str| block(id, "file_write", &[("path", path), ("content", "AI\n")]);
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt")), 0);
    let copy = s.sibling("copy");
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(&s.root)
        .arg(&copy)
        .status()
        .expect("cp runs");
    assert!(copied.success());
    git_in(
        &copy,
        &["commit", "-q", "--allow-empty", "-m", "only in the copy"],
    );
    // An apply of a new file in the repository at `root`, which must land there.
    let applies_in = |root: &std::path::Path, id: &str, name: &str| {
        let out = s.loaf_in(
            root,
            &["apply"],
            &write(id, &format!("{}/{name}", root.display())),
        );
        s.assert_exit(&out, 0);
        assert_eq!(
            std::fs::read_to_string(root.join(name)).ok().as_deref(),
            Some("AI\n")
        );
    };
    applies_in(&copy, "k2b", "c.txt");
    s.assert_exit(&s.apply(&write("k3c", "/repo/d.txt")), 0);
    assert_eq!(s.read("d.txt").as_deref(), Some("AI\n"));
    assert_eq!(
        s.read("c.txt"),
        None,
        "nothing of the copy's in the original"
    );
    let moved = s.sibling("moved");
    std::fs::rename(&copy, &moved).expect("moved");
    applies_in(&moved, "k4d", "e.txt");
    let list = git_in(&moved, &["worktree", "list", "--porcelain"]);
    assert!(
        list.contains(&format!("{}/.git/loaf/stage", moved.display())),
        "{list}"
    );
}

/// A repository reached through a symlinked folder (`~/code` → `/data/code`): the model
/// writes the paths the user showed it, through the link, and they are the repository's.
#[test]
fn paths_through_a_symlink_to_the_root_are_the_repositorys() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let alias = s.sibling("alias");
    std::os::unix::fs::symlink(&s.root, &alias).expect("symlink");
    let through = |rel: &str| format!("{}/{rel}", alias.display());
    let reply = [
        block(
            "k1a",
            "file_write",
            &[("path", &through("b.txt")), ("content", "AI\n")],
        ),
        block("k2b", "file_read", &[("path", &through("a.txt"))]),
    ]
    .join("\n");
    let out = s.loaf_in(&alias, &["apply"], &reply);
    s.assert_exit(&out, 0);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("a\n"), "the read is served: {report}");
    assert_eq!(s.read("b.txt").as_deref(), Some("AI\n"));
    assert_eq!(s.git(&["show", "HEAD:b.txt"]), "AI\n");
    s.assert_tidy();
}
