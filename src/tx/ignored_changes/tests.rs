use std::os::unix::fs::PermissionsExt as _;

use super::*;
use crate::git::testing::write_file;
use crate::tx::visible_ignored::tests::repo;

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("meta").permissions().mode() & 0o7777
}

/// A run in `stage` that wrote `.env` (mode 600 kept), a new file in a new folder of the
/// user's `.venv`, an empty folder, and deleted the user's `top.log`.
fn extras_of_a_run(repo: &Repository) -> (tempfile::TempDir, Extras) {
    let root = repo.workdir().expect("workdir");
    std::fs::set_permissions(root.join(".env"), std::fs::Permissions::from_mode(0o600))
        .expect("chmod");
    let stage = tempfile::tempdir().expect("tempdir");
    write_file(stage.path(), ".env", "PASSWORD=2\n");
    std::fs::set_permissions(
        stage.path().join(".env"),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    write_file(stage.path(), ".venv/new/mod.py", "x = 1\n");
    std::fs::create_dir_all(stage.path().join("newdir")).expect("mkdir");
    write_file(stage.path(), "src/a.txt", "committed, not an extra\n");
    let tree = repo
        .head()
        .and_then(|h| h.peel_to_tree())
        .expect("tree")
        .id();
    let touched = [
        ".env",
        ".venv/new/mod.py",
        "newdir",
        "src/a.txt",
        "top.log",
        "never.log",
    ]
    .map(PathBuf::from);
    let copied = BTreeSet::from([PathBuf::from(".env"), PathBuf::from("top.log")]);
    let extras = extras(repo, stage.path(), tree, &touched, &copied).expect("extras");
    (stage, extras)
}

#[test]
fn extras_record_what_git_will_not_commit_both_ways() {
    let (_dir, repo) = repo();
    let (_stage, extras) = extras_of_a_run(&repo);
    let blob = |text: &str| {
        Oid::hash_object(ObjectType::Blob, text.as_bytes())
            .expect("hash")
            .to_string()
    };
    let file = |text: &str, mode| State::File {
        blob: blob(text),
        mode,
    };
    let change = |path: &str, before, after| Change {
        path: path.into(),
        before,
        after,
    };
    assert_eq!(
        extras.changes,
        [
            change(
                ".env",
                file("PASSWORD=1\n", 0o600),
                file("PASSWORD=2\n", 0o600)
            ),
            change(".venv/new", State::Absent, State::Dir),
            change(".venv/new/mod.py", State::Absent, file("x = 1\n", 0o644)),
            change("newdir", State::Absent, State::Dir),
            change("top.log", file("log\n", 0o644), State::Absent),
        ]
    );
    // Both sides are in the object database, and one tree keeps them.
    let kept = repo
        .find_tree(extras.keep_tree(&repo).expect("tree"))
        .expect("kept");
    assert_eq!(kept.len(), 4);
    assert!(
        repo.find_blob(Oid::from_str(&blob("PASSWORD=1\n")).expect("oid"))
            .is_ok()
    );
    // The operation log can hold it.
    let json = serde_json::to_string(&extras).expect("json");
    assert!(json.contains(r#""kind":"absent""#), "{json}");
    let back: Extras = serde_json::from_str(&json).expect("parse");
    assert_eq!(back, extras);
}

#[test]
fn publish_undo_and_redo_move_the_user_tree_and_keep_the_users_folders() {
    let (dir, repo) = repo();
    let root = dir.path();
    let (_stage, extras) = extras_of_a_run(&repo);
    let read = |p: &str| std::fs::read_to_string(root.join(p)).ok();
    assert_eq!(
        extras.publish(&repo, root).expect("publish"),
        Vec::<PathBuf>::new()
    );
    assert_eq!(read(".env").as_deref(), Some("PASSWORD=2\n"));
    assert_eq!(mode(&root.join(".env")), 0o600);
    assert_eq!(read(".venv/new/mod.py").as_deref(), Some("x = 1\n"));
    assert!(root.join("newdir").is_dir());
    assert_eq!(read("top.log"), None);
    assert_eq!(
        extras.publish(&repo, root).expect("again"),
        Vec::<PathBuf>::new(),
        "repeating a publish (after a crash) is harmless"
    );
    assert_eq!(
        extras.undo(&repo, root).expect("undo"),
        Vec::<PathBuf>::new()
    );
    assert_eq!(read(".env").as_deref(), Some("PASSWORD=1\n"));
    assert_eq!(mode(&root.join(".env")), 0o600);
    assert!(
        !root.join(".venv/new").exists(),
        "the folder the apply made is gone"
    );
    assert_eq!(
        read(".venv/pyvenv.cfg").as_deref(),
        Some("home = /usr/bin\n")
    );
    assert!(!root.join("newdir").exists());
    assert_eq!(read("top.log").as_deref(), Some("log\n"));
    assert_eq!(
        extras.redo(&repo, root).expect("redo"),
        Vec::<PathBuf>::new()
    );
    assert_eq!(read(".env").as_deref(), Some("PASSWORD=2\n"));
    assert!(root.join("newdir").is_dir());
}

#[test]
fn undo_and_publish_skip_what_the_user_changed_since() {
    let (dir, repo) = repo();
    let root = dir.path();
    let (_stage, extras) = extras_of_a_run(&repo);
    extras.publish(&repo, root).expect("publish");
    // The user edits `.env`, puts a file in the new folder, recreates `top.log`.
    write_file(root, ".env", "PASSWORD=mine\n");
    write_file(root, "newdir/mine.txt", "mine\n");
    write_file(root, "top.log", "new log\n");
    let skipped = extras.undo(&repo, root).expect("undo");
    assert_eq!(skipped, [".env", "newdir", "top.log"].map(PathBuf::from));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).ok();
    assert_eq!(read(".env").as_deref(), Some("PASSWORD=mine\n"));
    assert_eq!(read("newdir/mine.txt").as_deref(), Some("mine\n"));
    assert_eq!(read("top.log").as_deref(), Some("new log\n"));
    assert!(!root.join(".venv/new").exists(), "the rest is undone");
    // A publish does not overwrite a file the user changed either.
    write_file(root, ".venv/new/mod.py", "user's\n");
    let skipped = extras.redo(&repo, root).expect("redo");
    assert!(
        skipped.contains(&PathBuf::from(".venv/new/mod.py")),
        "{skipped:?}"
    );
    assert_eq!(read(".venv/new/mod.py").as_deref(), Some("user's\n"));
}
