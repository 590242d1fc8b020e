//! Tests of the stage: creation, resets, snapshots, the record of a run in flight, and a
//! repository moved or copied.

use super::*;
use crate::git::testing::{git, init_repo};
use crate::tx::stage_records::forget_written;

/// A repository with two commits: `a.txt`+`keep.txt`, then `a.txt` changed and `b.txt`.
fn repo() -> (tempfile::TempDir, Repository, Oid, Oid) {
    let dir = init_repo();
    let root = dir.path();
    std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
    std::fs::write(root.join("a.txt"), "one\n").expect("write");
    std::fs::write(root.join("keep.txt"), "keep\n").expect("write");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "first"]);
    let first = git(root, &["rev-parse", "HEAD"]);
    std::fs::write(root.join("a.txt"), "two\n").expect("write");
    std::fs::write(root.join("b.txt"), "b\n").expect("write");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "second"]);
    let second = git(root, &["rev-parse", "HEAD"]);
    let repo = Repository::open(root).expect("open");
    let oid = |s: String| Oid::from_str(s.trim()).expect("oid");
    (dir, repo, oid(first), oid(second))
}

#[test]
fn created_once_detached_locked_and_without_a_branch() {
    let (dir, repo, _, second) = repo();
    let stage = Stage::open_or_create(&repo, second).expect("created");
    assert_eq!(stage.head().expect("head"), second);
    assert_eq!(
        std::fs::read_to_string(stage.path().join("a.txt"))
            .ok()
            .as_deref(),
        Some("two\n")
    );
    assert_eq!(
        git(dir.path(), &["branch", "--format=%(refname:short)"]),
        "main\n"
    );
    let list = git(dir.path(), &["worktree", "list", "--porcelain"]);
    assert!(
        list.contains("detached") && list.contains("locked"),
        "{list}"
    );
    git(dir.path(), &["worktree", "prune"]);
    assert!(
        git(dir.path(), &["worktree", "list"]).contains("loaf/stage"),
        "prune keeps it"
    );
    std::fs::write(stage.path().join("marker"), "x").expect("write");
    let again = Stage::open_or_create(&repo, second).expect("reopened");
    assert!(
        again.path().join("marker").exists(),
        "reused, not recreated"
    );
    assert_eq!(
        git(dir.path(), &["status", "--porcelain"]),
        "",
        "the user's tree is untouched"
    );
}

#[test]
fn reset_moves_by_the_difference_and_clears_leftovers() {
    let (_dir, repo, first, second) = repo();
    let stage = Stage::open_or_create(&repo, second).expect("created");
    // A crashed run's leftovers: a change, an untracked file, and ignored build output.
    std::fs::write(stage.path().join("keep.txt"), "changed by a run\n").expect("write");
    std::fs::write(stage.path().join("stray.txt"), "untracked\n").expect("write");
    std::fs::create_dir_all(stage.path().join("target")).expect("mkdir");
    std::fs::write(stage.path().join("target/cache"), "build\n").expect("write");
    stage.reset_to(first, true).expect("reset");
    let read = |p: &str| std::fs::read_to_string(stage.path().join(p)).ok();
    assert_eq!(stage.head().expect("head"), first);
    assert_eq!(read("a.txt").as_deref(), Some("one\n"));
    assert_eq!(read("b.txt"), None, "removed: not in the first commit");
    assert_eq!(
        read("keep.txt").as_deref(),
        Some("keep\n"),
        "the run's change undone"
    );
    assert_eq!(read("stray.txt"), None, "untracked leftovers removed");
    assert_eq!(
        read("target/cache"),
        None,
        "ignored leftovers removed: the user's show through instead"
    );
    assert!(stage.dirty_paths().expect("status").is_empty());
    stage.reset_to(second, false).expect("reset back");
    assert_eq!(read("b.txt").as_deref(), Some("b\n"));
}

#[test]
fn reset_removes_the_ignored_files_a_run_wrote_and_their_folders_only() {
    let (dir, repo, first, second) = repo();
    let stage = Stage::open_or_create(&repo, second).expect("created");
    let write = |p: &str, text: &str| {
        let full = stage.path().join(p);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(full, text).expect("write");
    };
    // Left by an earlier run that had exec: not recorded below, so kept by a paths reset.
    write("target/old", "exec output\n");
    // This run's actions: an ignored file in a new folder, an empty folder, a change to a
    // tracked file (committed: the stage's HEAD moves to it).
    write("target/deep/new.o", "written\n");
    std::fs::create_dir_all(stage.path().join("empty")).expect("mkdir");
    write("a.txt", "changed\n");
    let touched = Touched::Paths(
        ["target/deep/new.o", "empty", "a.txt", "never"]
            .map(PathBuf::from)
            .to_vec(),
    );
    let tree = stage.snapshot(&touched, &repo).expect("snapshot");
    let parent = repo.find_commit(second).expect("commit");
    let sig = git2::Signature::now("Ada", "ada@example.com").expect("sig");
    let commit = repo
        .commit(
            None,
            &sig,
            &sig,
            "run",
            &repo.find_tree(tree).expect("tree"),
            &[&parent],
        )
        .expect("commit");
    stage.set_head(commit).expect("head");
    stage.reset_to(first, false).expect("reset");
    let exists = |p: &str| stage.path().join(p).symlink_metadata().is_ok();
    assert!(
        !exists("target/deep/new.o"),
        "the ignored file this run wrote"
    );
    assert!(!exists("target/deep"), "its folder, left empty");
    assert!(!exists("empty"), "an empty folder from dir_create");
    assert!(
        exists("target/old"),
        "not this run's: no scan needed for a paths run"
    );
    assert_eq!(
        std::fs::read_to_string(stage.path().join("a.txt"))
            .ok()
            .as_deref(),
        Some("one\n")
    );
    // A run with exec or hooks may have left ignored content anywhere: the next reset
    // scans for it.
    write("target/exec", "x\n");
    stage.snapshot(&Touched::Anything, &repo).expect("snapshot");
    stage.reset_to(first, false).expect("reset");
    assert!(!exists("target"), "every ignored entry removed");
    assert_eq!(
        git(dir.path(), &["status", "--porcelain"]),
        "",
        "the user's tree untouched"
    );
}

#[test]
fn snapshot_sees_what_the_actions_did() {
    let (_dir, repo, _, second) = repo();
    let stage = Stage::open_or_create(&repo, second).expect("created");
    std::fs::write(stage.path().join("a.txt"), "three\n").expect("write");
    std::fs::remove_file(stage.path().join("b.txt")).expect("rm");
    std::fs::write(stage.path().join("new.txt"), "new\n").expect("write");
    std::fs::create_dir_all(stage.path().join("target")).expect("mkdir");
    std::fs::write(stage.path().join("target/out"), "ignored\n").expect("write");
    let tree = repo
        .find_tree(stage.snapshot(&Touched::Anything, &repo).expect("snapshot"))
        .expect("tree");
    let names: Vec<String> = tree
        .iter()
        .filter_map(|e| e.name().ok().map(str::to_owned))
        .collect();
    assert_eq!(names, [".gitignore", "a.txt", "keep.txt", "new.txt"]);
    let base = repo
        .find_commit(second)
        .and_then(|c| c.tree())
        .expect("base tree");
    assert_ne!(tree.id(), base.id());
}

/// A run that did not end (killed, refused) is found by the next one, which then scans;
/// one that ended is not; the record of where ignored content may be survives both, and
/// a publish forgetting that record keeps the run in flight.
#[test]
fn a_run_that_did_not_end_is_found_by_the_next() {
    let (_dir, repo, first, second) = repo();
    let stage = Stage::open_or_create(&repo, second).expect("created");
    assert!(!stage.begin_run(), "a new stage has no unfinished run");
    stage.reset_to(first, false).expect("reset");
    let touched = Touched::Paths(vec![PathBuf::from("target/x.o")]);
    stage.snapshot(&touched, &repo).expect("snapshot");
    // Killed here: the next apply opens the stage anew.
    let next = Stage::open_or_create(&repo, first).expect("reopened");
    assert_eq!(
        next.written(),
        touched,
        "the record is read past the run's line"
    );
    assert!(next.begin_run(), "the killed run is found");
    next.reset_to(first, true).expect("reset");
    forget_written(&repo).expect("forget");
    let after_forget = Stage::open_or_create(&repo, first).expect("reopened");
    assert_eq!(after_forget.written(), Touched::Anything);
    assert!(
        after_forget.begin_run(),
        "forgetting the paths keeps the run in flight"
    );
    after_forget.reset_to(first, true).expect("reset");
    after_forget.snapshot(&touched, &repo).expect("snapshot");
    after_forget.end_run().expect("ended");
    let ended = Stage::open_or_create(&repo, first).expect("reopened");
    assert!(!ended.begin_run(), "a run that ended is not found");
    assert_eq!(ended.written(), touched, "its record kept");
    // A marker an earlier git-loaf left counts, once.
    let old = repo.commondir().join("loaf").join(OLD_IN_FLIGHT_MARKER);
    std::fs::write(&old, "id").expect("old marker");
    assert!(
        Stage::open_or_create(&repo, first)
            .expect("reopened")
            .begin_run()
    );
    assert!(!old.exists(), "the record says it from now on");
}

/// A repository copied whole carries the original's stage entry, whose paths lead to the
/// original's stage: the copy makes its own, and the original's stays as it was.
#[test]
fn a_copied_repository_makes_its_own_stage_and_leaves_the_originals() {
    let (dir, repo, _, second) = repo();
    let stage = Stage::open_or_create(&repo, second).expect("created");
    std::fs::write(stage.path().join("marker"), "the original's").expect("marker");
    let copies = tempfile::tempdir().expect("tempdir");
    let copy_root = copies.path().join("copy");
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(dir.path())
        .arg(&copy_root)
        .status()
        .expect("cp runs");
    assert!(copied.success());
    std::fs::write(copy_root.join("c.txt"), "only in the copy\n").expect("write");
    git(&copy_root, &["add", "c.txt"]);
    git(&copy_root, &["commit", "-q", "-m", "only in the copy"]);
    let copy = Repository::open(&copy_root).expect("copy");
    let only_in_copy = copy.head().expect("head").target().expect("commit");
    let theirs = Stage::open_or_create(&copy, only_in_copy).expect("the copy's stage");
    theirs.reset_to(only_in_copy, false).expect("reset");
    assert_eq!(
        theirs.repo().commondir().canonicalize().expect("path"),
        copy.commondir().canonicalize().expect("path")
    );
    assert!(!theirs.path().join("marker").exists(), "a stage of its own");
    let again = Stage::open_or_create(&repo, second).expect("the original's stage");
    assert_eq!(
        std::fs::read_to_string(again.path().join("marker"))
            .ok()
            .as_deref(),
        Some("the original's"),
        "the original's stage is the one it had"
    );
    assert_eq!(again.head().expect("head"), second);
    again.reset_to(second, false).expect("reset");
}

/// A stage whose HEAD names a commit the repository lacks (spoilt by a copy before
/// git-loaf told them apart) is made anew instead of failing every apply.
#[test]
fn a_stage_on_a_missing_commit_is_made_anew() {
    let (dir, repo, first, second) = repo();
    let stage = Stage::open_or_create(&repo, second).expect("created");
    let admin = dir.path().join(".git/worktrees").join(NAME).join("HEAD");
    std::fs::write(&admin, format!("{}\n", "ab".repeat(20))).expect("spoil");
    drop(stage);
    let made = Stage::open_or_create(&repo, first).expect("made anew");
    made.reset_to(first, false).expect("reset");
    assert_eq!(made.head().expect("head"), first);
}

/// A repository moved to another folder: its stage entry names the old place, which is
/// gone. The stage is made again there, and git sees it where it is.
#[test]
fn a_moved_repository_makes_its_stage_again() {
    let (dir, repo, _, second) = repo();
    Stage::open_or_create(&repo, second).expect("created");
    drop(repo);
    let moved_to = tempfile::tempdir().expect("tempdir");
    let moved = moved_to.path().join("moved");
    std::fs::rename(dir.path(), &moved).expect("moved");
    let repo = Repository::open(&moved).expect("the moved repository");
    let stage = Stage::open_or_create(&repo, second).expect("made again");
    stage.reset_to(second, false).expect("reset");
    assert_eq!(stage.head().expect("head"), second);
    let list = git(&moved, &["worktree", "list", "--porcelain"]);
    let expected = moved.canonicalize().expect("path").join(".git/loaf/stage");
    assert!(list.contains(&expected.display().to_string()), "{list}");
}
