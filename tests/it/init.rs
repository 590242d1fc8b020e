//! `git loaf init`: a repository set up in one command, safely run again.

use crate::scratch::{Scratch, block};

const EXAMPLE: &str = include_str!("../../loaf.yml.example");

#[test]
fn init_writes_the_documented_config_and_sets_the_repository_up() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let sub = scratch.root.join("src");
    std::fs::create_dir_all(&sub).expect("mkdir");
    let out = scratch.loaf_in(&sub, &["init"], "");
    scratch.assert_exit(&out, 0);
    assert_eq!(scratch.read("loaf.yml").as_deref(), Some(EXAMPLE));
    assert_eq!(
        scratch.git(&["config", "--get-all", "notes.rewriteRef"]),
        "refs/notes/loaf\n"
    );
    let exclude = std::fs::read_to_string(scratch.root.join(".git/info/exclude")).expect("exclude");
    assert_eq!(exclude.lines().filter(|l| *l == "/.loaf/").count(), 1);
    let text = scratch.redact(&out.stdout);
    assert!(text.starts_with("git-loaf is set up in /repo:\n"), "{text}");
    for step in [
        "wrote loaf.yml",
        "git loaf instructions | xclip -selection clipboard",
        "pbcopy",
        "git loaf watch",
        "git loaf apply < reply.md",
    ] {
        assert!(text.contains(step), "{step} missing in:\n{text}");
    }
    // The config it wrote is the one apply uses.
    let reply = scratch.reply(&block(
        "k1m",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "x")],
    ));
    let dry = scratch.loaf(&["apply", "--dry-run"], &reply);
    scratch.assert_exit(&dry, 0);
}

#[test]
fn init_again_changes_nothing_and_never_overwrites_loaf_yml() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    scratch.assert_exit(&scratch.loaf(&["init"], ""), 0);
    scratch.write("loaf.yml", "version: 1\n# mine\n");
    let exclude = scratch.root.join(".git/info/exclude");
    let before = (
        std::fs::read_to_string(&exclude).expect("exclude"),
        scratch.git(&["config", "--list", "--local"]),
    );
    let again = scratch.loaf(&["init"], "");
    scratch.assert_exit(&again, 0);
    assert_eq!(
        scratch.read("loaf.yml").as_deref(),
        Some("version: 1\n# mine\n")
    );
    let after = (
        std::fs::read_to_string(&exclude).expect("exclude"),
        scratch.git(&["config", "--list", "--local"]),
    );
    assert_eq!(after, before, "nothing set twice");
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        text.contains("kept your loaf.yml as it is (init never overwrites it"),
        "{text}"
    );
    assert!(
        text.contains("/.loaf/ is already in .git/info/exclude"),
        "{text}"
    );
}

#[test]
fn init_outside_a_repository_says_to_make_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = crate::support::git_loaf()
        .current_dir(dir.path())
        .envs(crate::scratch::ENV)
        .env("GIT_CEILING_DIRECTORIES", dir.path())
        .arg("init")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not inside a git repository"), "{err}");
    assert!(
        err.contains("hint: cd into your repository, or make one with `git init`"),
        "{err}"
    );
    assert!(!dir.path().join("loaf.yml").exists());
}
