//! `git loaf step-back` and `step-forward` on real repositories: every kind of uncommitted
//! change (staged, unstaged, partially staged, deleted, untracked) comes back exactly where it
//! was, undo takes a step back exactly, and a history that changed meanwhile is refused with
//! a way out that works.

use std::process::Output;

use crate::scratch::Scratch;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `main` with four commits: c1 (a.txt, b.txt), c2 (+c2.txt), c3 (+c3.txt, b.txt changed),
/// c4 (a.txt changed).
fn four_commits() -> Scratch {
    let s = Scratch::with(&[("a.txt", "1\n2\n3\n"), ("b.txt", "b\n")]);
    s.git(&["commit", "-q", "--amend", "-m", "c1"]);
    s.write("c2.txt", "two\n");
    s.commit_all("c2");
    s.write("c3.txt", "three\n");
    s.write("b.txt", "b\nc3\n");
    s.commit_all("c3");
    s.write("a.txt", "1\n2\n3\n4\n");
    s.commit_all("c4");
    s
}

/// The id of the one piece of saved work (`refs/loaf/saved/<id>`).
fn saved_id(s: &Scratch) -> String {
    let refs = s.git(&[
        "for-each-ref",
        "--format=%(refname:lstrip=3)",
        "refs/loaf/saved/",
    ]);
    let ids: Vec<&str> = refs.lines().collect();
    assert_eq!(ids.len(), 1, "one saved work: {refs}");
    ids[0].to_owned()
}

fn rev(s: &Scratch, rev: &str) -> String {
    s.git(&["rev-parse", rev]).trim().to_owned()
}

#[test]
fn three_steps_back_and_three_forward_bring_every_change_back_exactly() {
    let s = four_commits();
    let (c1, c2, c3, c4) = (
        rev(&s, "HEAD~3"),
        rev(&s, "HEAD~2"),
        rev(&s, "HEAD~1"),
        s.head(),
    );

    // At c4: a partially staged file (line 5 staged, line 6 not).
    s.write("a.txt", "1\n2\n3\n4\nstaged\n");
    s.git(&["add", "a.txt"]);
    s.write("a.txt", "1\n2\n3\n4\nstaged\nunstaged\n");
    let at_c4 = s.state();
    let out = s.loaf(&["step-back"], "");
    s.assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        format!(
            "HEAD now at {} c3 (1 step back from main {})\nKept aside for the commit stepped off (the step changes these files):\n  a.txt\n`git loaf step-forward` brings them back; `git loaf restore {}` puts them back here.\n",
            &c3[..7],
            &c4[..7],
            saved_id(&s)
        )
    );
    assert_eq!(s.head(), c3);
    assert_eq!(s.git(&["status", "--porcelain"]), "", "c3 exactly");
    assert_eq!(rev(&s, "main"), c4, "the branch stays at the tip");

    // At c3: an unstaged edit and a deletion.
    s.write("b.txt", "b\nc3\nmine\n");
    std::fs::remove_file(s.root.join("c3.txt")).expect("rm");
    let at_c3 = s.state();
    let out = s.loaf(&["step-back"], "");
    s.assert_exit(&out, 0);
    assert!(
        stdout(&out).starts_with(&format!(
            "HEAD now at {} c2 (2 steps back from main",
            &c2[..7]
        )),
        "{}",
        stdout(&out)
    );

    // At c2: an untracked file and a staged new file, which the step to c1 does not touch.
    s.write("u.txt", "untracked\n");
    s.write("n.txt", "new, staged\n");
    s.git(&["add", "n.txt"]);
    let at_c2 = s.state();
    let out = s.loaf(&["step-back"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.head(), c1);
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        "A  n.txt\n?? u.txt\n",
        "c1 with the work in untouched files in place, staged and untracked as they were"
    );
    assert!(
        stdout(&out)
            .contains("stay in place (the step does not touch these files):\n  n.txt\n  u.txt\n"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("Kept aside"), "{}", stdout(&out));

    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.state(), at_c2);
    assert!(
        !stdout(&out).contains("Brought back"),
        "nothing was kept aside for c2: {}",
        stdout(&out)
    );
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    assert_eq!(s.state(), at_c3);
    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 0);
    assert_eq!(
        s.state(),
        at_c4,
        "staged/unstaged split and the branch are back"
    );
    assert!(
        stdout(&out).starts_with(&format!("HEAD now at {} c4, on main again", &c4[..7])),
        "{}",
        stdout(&out)
    );
    assert_eq!(s.git(&["symbolic-ref", "HEAD"]), "refs/heads/main\n");
    assert_eq!(
        s.git(&["diff", "--cached"])
            .lines()
            .filter(|l| l.starts_with('+'))
            .count(),
        2,
        "only line 5 is staged: {}",
        s.git(&["diff", "--cached"])
    );

    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("nothing to step forward to"),
        "{}",
        stderr(&out)
    );
    s.assert_tidy();
}

#[test]
fn undo_takes_a_step_back_exactly_and_redo_steps_again() {
    let s = four_commits();
    s.write("a.txt", "changed\n");
    s.git(&["add", "a.txt"]);
    s.write("u.txt", "untracked\n");
    let before = s.state();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    let stepped = s.state();

    let kept = saved_id(&s);
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 0);
    assert_eq!(
        s.state(),
        before,
        "HEAD on main again, the work back as it was"
    );
    assert_eq!(
        s.git(&["for-each-ref", "refs/loaf/saved/"]),
        "",
        "the kept work is back in the files: nothing to restore"
    );
    assert!(
        stdout(&out).contains("HEAD is on main again"),
        "{}",
        stdout(&out)
    );
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert_eq!(s.state(), stepped);
    assert_eq!(saved_id(&s), kept, "kept aside again");

    // A step-forward is undone just as exactly, detached at c3 again.
    s.write("b.txt", "edited while back\n");
    let back_with_edit = s.state();
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    let forward = s.state();
    assert!(forward.contains("refs/heads/main"), "attached: {forward}");
    assert_eq!(s.read("b.txt").as_deref(), Some("edited while back\n"));
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), back_with_edit);
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert_eq!(s.state(), forward);
    s.assert_tidy();
}

/// Undoing a step-back re-attaches HEAD to the branch only where the branch still is the
/// tip the step left: moved meanwhile, HEAD stays detached at that tip, and undo says so
/// (and says nothing of the kind when it did attach).
#[test]
fn undo_of_a_step_back_stays_detached_when_the_branch_moved_and_says_so() {
    let s = four_commits();
    let c4 = rev(&s, "HEAD");
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 0);
    assert!(!stderr(&out).contains("detached"), "{}", stderr(&out));
    assert_eq!(s.git(&["symbolic-ref", "HEAD"]), "refs/heads/main\n");

    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    s.git(&["branch", "-f", "main", "HEAD"]);
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 0);
    assert_eq!(rev(&s, "HEAD"), c4);
    assert_eq!(
        rev(&s, "main"),
        rev(&s, "HEAD~1"),
        "the branch as the user left it"
    );
    assert!(
        stderr(&out).contains(&format!(
            "main moved since, so HEAD stays detached at {}: `git switch main` goes to where it is now",
            &c4[..7]
        )),
        "{}",
        stderr(&out)
    );
}

/// `four_commits` and c5, which changes a.txt and b.txt; at c5 the user's work in both.
fn c5_with_work() -> Scratch {
    let s = four_commits();
    s.write("a.txt", "1\n2\n3\n4\n5\n");
    s.write("b.txt", "b\nc3\nc5\n");
    s.commit_all("c5");
    s.write("a.txt", "1\n2\n3\n4\n5\nkept\n");
    s.write("b.txt", "b\nc3\nc5\nkept\n");
    s
}

/// Edits made while stepped back merge with the kept ones; where both changed the same lines
/// the file has both sides with conflict markers (and the message says so, for that file
/// only), and undo goes back to before the step exactly.
#[test]
fn edits_made_while_back_are_merged_and_a_conflict_keeps_both_sides() {
    let s = c5_with_work();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    // At c4: a.txt at its start (merges), b.txt where the kept change is (same lines).
    s.write("a.txt", "mine\n1\n2\n3\n4\n");
    s.write("b.txt", "b\nc3\nmine\n");
    let before = s.state();

    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 0);
    let text = stdout(&out);
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("mine\n1\n2\n3\n4\n5\nkept\n")
    );
    let b = s.read("b.txt").expect("b.txt");
    assert!(
        b.contains(
            "<<<<<<< b.txt (your edits)\nmine\n=======\nc5\nkept\n>>>>>>> b.txt (kept by step-back)\n"
        ),
        "{b}"
    );
    assert!(
        text.contains("both are in the file, between conflict markers:\n  b.txt\n"),
        "{text}"
    );
    assert!(!text.contains("your version stays"), "{text}");
    assert!(
        !text.contains("restore"),
        "nothing to restore: both sides are in the file: {text}"
    );
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(
        s.state(),
        before,
        "undo brings back the user's side exactly"
    );
}

/// A file the user deleted while stepped back, which the kept work changes: no conflict
/// markers are written and none are claimed; the user's version (deleted) stays, the kept
/// one is saved, and `git loaf restore` puts it back once the user's is out of the way,
/// refusing until then and naming the file.
#[test]
fn a_conflict_without_markers_says_so_and_restore_brings_the_kept_version() {
    let s = c5_with_work();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    std::fs::remove_file(s.root.join("b.txt")).expect("rm");
    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(!text.contains("conflict markers"), "{text}");
    assert!(
        text.contains("(not text, or deleted on one side); your version stays:\n  b.txt\n"),
        "{text}"
    );
    assert_eq!(s.read("b.txt"), None, "the user's version: deleted");
    let id = saved_id(&s);
    assert!(text.contains(&format!("`git loaf restore {id}`")), "{text}");

    let before = s.state();
    let refused = s.loaf(&["restore", &id], "");
    s.assert_exit(&refused, 3);
    assert!(stderr(&refused).contains("b.txt"), "{}", stderr(&refused));
    assert_eq!(s.state(), before, "nothing changed");

    s.git(&["checkout", "--", "b.txt"]);
    s.assert_exit(&s.loaf(&["restore", &id], ""), 0);
    assert_eq!(s.read("b.txt").as_deref(), Some("b\nc3\nc5\nkept\n"));
    assert_eq!(s.git(&["status", "--porcelain"]), " M a.txt\n M b.txt\n");
}

/// The user's work in files the step does not touch stays on disk, staged, unstaged and
/// untracked as it was; only the work in the file the step changes is kept aside, and
/// `git loaf restore` puts that back right here.
#[test]
fn step_back_leaves_work_in_untouched_files_on_disk() {
    let s = four_commits();
    s.write("b.txt", "b\nc3\nmine\n");
    s.write("c2.txt", "two, staged\n");
    s.git(&["add", "c2.txt"]);
    s.write("notes.txt", "my notes\n");
    s.write("a.txt", "1\n2\n3\n4\nmine\n");
    let before = s.state();

    let out = s.loaf(&["step-back"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.read("b.txt").as_deref(), Some("b\nc3\nmine\n"));
    assert_eq!(s.read("notes.txt").as_deref(), Some("my notes\n"));
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("1\n2\n3\n"),
        "c3's: c4 changes it"
    );
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        " M b.txt\nM  c2.txt\n?? notes.txt\n"
    );
    let text = stdout(&out);
    assert!(
        text.contains(
            "stay in place (the step does not touch these files):\n  b.txt\n  c2.txt\n  notes.txt\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "Kept aside for the commit stepped off (the step changes these files):\n  a.txt\n"
        ),
        "{text}"
    );

    // The edits made meanwhile and the kept work both come back at c4.
    s.write("notes.txt", "my notes\nmore\n");
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("1\n2\n3\n4\nmine\n"));
    assert_eq!(s.read("notes.txt").as_deref(), Some("my notes\nmore\n"));
    assert_eq!(
        s.git(&["for-each-ref", "refs/loaf/saved/"]),
        "",
        "what was kept aside is back: nothing left to restore"
    );
    s.write("notes.txt", "my notes\n");
    assert_eq!(s.state(), before);

    // Kept aside, then put back here while stepped back.
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    let id = saved_id(&s);
    let out = s.loaf(&["restore", &id], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("1\n2\n3\n4\nmine\n"));
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        " M a.txt\n M b.txt\nM  c2.txt\n?? notes.txt\n"
    );
    // And forward again: the kept work and the restored copy are one.
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    assert_eq!(s.state(), before);
}

/// A fix made two commits back travels forward to the tip, while the changes kept for the
/// commit in between stay with it.
#[test]
fn an_edit_made_while_back_is_carried_all_the_way_to_the_tip() {
    let s = four_commits();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.write("c3.txt", "three\nkept at c3\n");
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.write("a.txt", "fixed\n1\n2\n3\n");
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    assert_eq!(s.read("c3.txt").as_deref(), Some("three\nkept at c3\n"));
    assert_eq!(s.read("a.txt").as_deref(), Some("fixed\n1\n2\n3\n"));
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("fixed\n1\n2\n3\n4\n"),
        "carried on"
    );
    assert_eq!(
        s.read("c3.txt").as_deref(),
        Some("three\n"),
        "stays with c3"
    );
    assert_eq!(s.git(&["status", "--porcelain"]), " M a.txt\n");
}

#[test]
fn refuses_at_the_root_commit_and_when_not_stepped_back() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    let out = s.loaf(&["step-back"], "");
    s.assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("is the first commit"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("hint: the branch has only this commit"),
        "{}",
        stderr(&out)
    );
    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("hint: `git loaf step-back`"),
        "{}",
        stderr(&out)
    );
    // Stepped back onto the root: the way on is forward.
    s.write("a.txt", "2\n");
    s.commit_all("second");
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    let out = s.loaf(&["step-back"], "");
    s.assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("hint: `git loaf step-forward` goes back toward the tip"),
        "{}",
        stderr(&out)
    );
}

/// A walk begun on a detached HEAD ends detached where it began: there is no branch to
/// attach HEAD to.
#[test]
fn a_walk_begun_detached_ends_detached_at_its_tip() {
    let s = four_commits();
    let c4 = s.head();
    s.git(&["switch", "-q", "--detach"]);
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.head(), c4);
    assert!(
        !stdout(&out).contains("again"),
        "HEAD was attached to nothing: {}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("(the tip, detached)"),
        "{}",
        stdout(&out)
    );
    let attached = s.sh("git symbolic-ref -q HEAD");
    assert!(!attached.status.success(), "still detached");
}

/// A walk ends when the user goes back to the branch by hand: a step-back from there begins
/// a new walk from the branch's new tip (a commit made meanwhile included), and
/// step-forward comes back to it.
#[test]
fn a_step_back_after_switching_back_by_hand_begins_a_new_walk() {
    let s = four_commits();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.git(&["switch", "-q", "main"]);
    s.write("c5.txt", "five\n");
    s.commit_all("c5");
    let c5 = s.head();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.head(), c5);
    assert_eq!(s.git(&["symbolic-ref", "HEAD"]), "refs/heads/main\n");

    // Back on the branch where the last step left HEAD (the branch moved there by hand).
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    let c4 = s.head();
    s.git(&["branch", "-f", "main", "HEAD"]);
    s.git(&["switch", "-q", "main"]);
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    assert_eq!(s.head(), c4);
    assert_eq!(
        s.git(&["symbolic-ref", "HEAD"]),
        "refs/heads/main\n",
        "at the new walk's tip"
    );
}

/// The branch moved while stepped back: refused (exit 3), nothing changed, and the printed
/// commands work: `git switch main`, then the command that brings the kept changes back.
#[test]
fn refuses_when_the_branch_moved_and_says_how_to_get_the_kept_changes() {
    let s = four_commits();
    let c4 = s.head();
    s.write("a.txt", "kept\n");
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    // Someone commits on main meanwhile (another worktree would do the same).
    let tree = s.git(&["rev-parse", "main^{tree}"]);
    let moved = s.git(&["commit-tree", "-p", &c4, "-m", "elsewhere", tree.trim()]);
    s.git(&["update-ref", "refs/heads/main", moved.trim(), &c4]);
    let before = s.state();

    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("main moved since you stepped back"), "{err}");
    assert!(err.contains("`git switch main`"), "{err}");
    let state_after_refusal = s.state();
    assert_eq!(state_after_refusal, before, "nothing changed");
    let command = err
        .split('`')
        .find(|c| c.starts_with("git loaf restore "))
        .unwrap_or_else(|| panic!("a command to get the kept changes: {err}"));
    s.git(&["switch", "-q", "main"]);
    let id = command.trim_start_matches("git loaf restore ");
    s.assert_exit(&s.loaf(&["restore", id], ""), 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("kept\n"));
    assert_eq!(s.git(&["status", "--porcelain"]), " M a.txt\n");
}

#[test]
fn refuses_when_a_commit_was_made_while_stepped_back() {
    let s = four_commits();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.write("x.txt", "x\n");
    s.commit_all("made while back");
    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("a commit was made on top of"), "{err}");
    assert!(err.contains("git switch -c"), "{err}");
}

#[test]
fn refuses_during_a_merge() {
    let s = four_commits();
    s.git(&["switch", "-q", "-c", "side", "HEAD~1"]);
    s.write("a.txt", "side\n");
    s.commit_all("side");
    let merge = crate::scratch::git_cmd(&s.root, &["merge", "-q", "main"])
        .output()
        .expect("git runs");
    assert!(!merge.status.success(), "a conflict");
    let before = s.state();
    let out = s.loaf(&["step-back"], "");
    s.assert_exit(&out, 3);
    assert_eq!(s.state(), before);
}
