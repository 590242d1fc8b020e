//! Symlinks are followed where the user's tree would follow them (DESIGN §2 "Paths"), never
//! from where the stage happens to live (`.git/loaf/stage`, three folders down): a committed
//! `hk1 -> ../../hooks` is harmless in the user's tree but leads into `.git/hooks` from the
//! stage. No such link makes an apply or an undo fail, now or on every later run, nor brings
//! a git-dir file into the user's tree.

use crate::scratch::{Scratch, block};

fn link(s: &Scratch, target: &str, at: &str) {
    std::os::unix::fs::symlink(target, s.root.join(at)).expect("symlink");
}

fn hook_sample(s: &Scratch) -> Vec<u8> {
    std::fs::read(s.root.join(".git/hooks/pre-commit.sample")).unwrap_or_default()
}

/// A repository whose history holds links that climb out of the tree by two and three
/// folders: from the stage, into `.git/hooks` and onto `.git` itself.
fn with_climbing_links() -> Scratch {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    std::fs::create_dir_all(s.root.join(".git/hooks")).expect("hooks folder");
    std::fs::write(s.root.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n").expect("sample");
    link(&s, "../../hooks", "hk1");
    link(&s, "../../../.git", "hk3");
    s.commit_all("links");
    s
}

#[test]
fn a_write_through_a_link_into_the_git_dir_as_seen_from_the_stage_fails_alone_and_nothing_breaks() {
    let s = with_climbing_links();
    let sample = hook_sample(&s);
    let reply = [
        block(
            "hk1",
            "file_append",
            &[
                ("path", "/repo/hk1/pre-commit.sample"),
                ("content", "touch PWNED\n"),
            ],
        ),
        block(
            "hk3",
            "file_append",
            &[
                ("path", "/repo/hk3/config"),
                ("content", "[core]\n\tfsmonitor = x\n"),
            ],
        ),
        block(
            "ok1",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "b\n")],
        ),
    ]
    .concat();
    let out = s.apply(&reply);
    let report = s.redact(&out.stdout);
    s.assert_exit(&out, 1);
    assert!(report.contains("hk1 ❌ file_append"), "{report}");
    assert!(report.contains("hk3 ❌ file_append"), "{report}");
    assert!(report.contains("ok1 ✅ file_write /repo/b.txt"), "{report}");
    assert_eq!(hook_sample(&s), sample, "the git dir's hook is untouched");
    let config = s.read(".git/config").unwrap_or_default();
    assert!(
        !config.contains("fsmonitor"),
        "the git dir's config is untouched: {config}"
    );
    // Only the good block's file was committed, and the links are still links.
    assert_eq!(s.git(&["diff", "--name-only", "HEAD~1", "HEAD"]), "b.txt\n");
    assert_eq!(s.git(&["status", "--porcelain"]), "");
    assert!(s.root.join("hk1").is_symlink() && s.root.join("hk3").is_symlink());
    s.assert_tidy();

    // The next operations work, and once the user removes the links nothing of the git
    // dir shows up in the tree.
    s.assert_exit(
        &s.apply(&block(
            "ok2",
            "file_write",
            &[("path", "/repo/c.txt"), ("content", "c\n")],
        )),
        0,
    );
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    std::fs::remove_file(s.root.join("hk1")).expect("rm hk1");
    std::fs::remove_file(s.root.join("hk3")).expect("rm hk3");
    s.assert_exit(
        &s.apply(&block(
            "ok3",
            "file_write",
            &[("path", "/repo/d.txt"), ("content", "d\n")],
        )),
        0,
    );
    assert!(!s.root.join("hk1").exists() && !s.root.join("hk3").exists());
    assert_eq!(
        s.git(&[
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--ignored"
        ]),
        " D hk1\n D hk3\n"
    );
    s.assert_tidy();
}

#[test]
fn a_link_that_climbs_out_leads_where_it_does_in_the_users_tree_not_onto_the_users_own_file() {
    // From the stage, `up -> ../../../a.txt` is the user's real `a.txt`; from the user's
    // tree it is outside the repository. With the whole parent folder allowed, a write
    // through it must still not change the user's file behind the transaction's back.
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let parent = s.root.parent().expect("a parent").display().to_string();
    let allow = format!("{{ allow: [\"{parent}/**\"], deny: [] }}");
    s.write(
        "loaf.yml",
        &format!("fs-guard:\n  read: {allow}\n  write: {allow}\n"),
    );
    link(&s, "../../../a.txt", "up");
    s.commit_all("link");
    let out = s.apply(&block(
        "w1",
        "file_write",
        &[("path", "/repo/up"), ("content", "hijacked\n")],
    ));
    let report = s.redact(&out.stdout);
    assert_eq!(s.read("a.txt").as_deref(), Some("one\n"), "{report}");
    assert_eq!(s.git(&["show", "HEAD:a.txt"]), "one\n");
    assert_eq!(s.git(&["status", "--porcelain"]), "");
    s.assert_tidy();
}

#[test]
fn a_link_inside_the_tree_is_followed_to_the_stages_copy() {
    // `alias -> real.txt` and `abs -> <root>/real.txt`: a write through either changes
    // real.txt in the commit, and the links stay links.
    let s = Scratch::with(&[("real.txt", "one\n")]);
    link(&s, "real.txt", "alias");
    let absolute = s.root.join("real.txt");
    link(&s, absolute.to_str().expect("utf-8 path"), "abs");
    s.commit_all("links");
    let reply = [
        block(
            "r1",
            "file_append",
            &[("path", "/repo/alias"), ("content", "two\n")],
        ),
        block(
            "r2",
            "file_append",
            &[("path", "/repo/abs"), ("content", "three\n")],
        ),
    ]
    .concat();
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:real.txt"]), "one\ntwo\nthree\n");
    assert_eq!(s.read("real.txt").as_deref(), Some("one\ntwo\nthree\n"));
    assert!(s.root.join("alias").is_symlink() && s.root.join("abs").is_symlink());
    assert_eq!(s.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_link_the_replys_code_made_in_the_stage_leads_nowhere_into_the_git_dir_either() {
    // The link exists only in the stage (exec made it), not yet in the user's tree.
    let s = Scratch::with(&[
        ("a.txt", "one\n"),
        ("loaf.yml", "allowed-actions: [defaults, exec]\n"),
    ]);
    std::fs::create_dir_all(s.root.join(".git/hooks")).expect("hooks folder");
    std::fs::write(s.root.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n").expect("sample");
    let sample = hook_sample(&s);
    let reply = [
        block(
            "ln1",
            "exec",
            &[("lang", "bash"), ("code", "ln -s ../../hooks hk1")],
        ),
        block(
            "hk1",
            "file_append",
            &[
                ("path", "/repo/hk1/pre-commit.sample"),
                ("content", "touch PWNED\n"),
            ],
        ),
    ]
    .concat();
    let out = s.apply(&reply);
    let report = s.redact(&out.stdout);
    s.assert_exit(&out, 1);
    assert!(report.contains("ln1 ✅ exec"), "{report}");
    assert!(report.contains("hk1 ❌ file_append"), "{report}");
    assert_eq!(hook_sample(&s), sample, "the git dir's hook is untouched");
    assert!(
        s.root.join("hk1").is_symlink(),
        "the link is committed, as a link"
    );
    assert_eq!(s.git(&["status", "--porcelain"]), "");
    s.assert_exit(
        &s.apply(&block(
            "ok2",
            "file_write",
            &[("path", "/repo/c.txt"), ("content", "c\n")],
        )),
        0,
    );
    s.assert_tidy();
}
