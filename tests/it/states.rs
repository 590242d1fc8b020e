//! Repository states (DESIGN §2): an operation the user is in the middle of is refused by
//! apply, undo and redo with nothing changed; sparse checkouts, nested repositories,
//! separate git dirs, split indexes and a file replaced by a folder; and a block aimed at the
//! git directory is one refused block, not a failed reply (issue 8 items 5 and 8).

use std::process::Output;

use crate::scratch::{Scratch, block, git_cmd};

/// A git command that may fail (a merge that stops on a conflict): its output.
fn git_may_fail(s: &Scratch, args: &[&str]) -> Output {
    git_cmd(&s.root, args).output().expect("git runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The bytes of every file in the git dir that records an operation in progress, and the
/// index: what a refused command must leave exactly as it was.
fn git_dir_bytes(s: &Scratch) -> Vec<(String, Option<Vec<u8>>)> {
    let git_dir = s.root.join(".git");
    [
        "index",
        "HEAD",
        "ORIG_HEAD",
        "MERGE_HEAD",
        "MERGE_MSG",
        "MERGE_MODE",
        "CHERRY_PICK_HEAD",
        "REVERT_HEAD",
        "BISECT_LOG",
        "BISECT_START",
        "rebase-merge/done",
        "rebase-merge/git-rebase-todo",
        "rebase-apply/next",
        "sequencer/todo",
    ]
    .iter()
    .map(|name| (name.to_string(), std::fs::read(git_dir.join(name)).ok()))
    .collect()
}

/// `a.txt` (`base`), a branch `other` changing it to `theirs`, and `main` changing it to
/// `ours` by a git-loaf apply (so that undo has something to undo).
fn diverged() -> Scratch {
    let s = Scratch::with(&[("a.txt", "base\n"), ("b.txt", "b\n")]);
    s.git(&["checkout", "-q", "-b", "other"]);
    s.write("a.txt", "theirs\n");
    s.commit_all("theirs");
    s.git(&["checkout", "-q", "main"]);
    let out = s.apply(&block(
        "aa1",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "ours\n")],
    ));
    s.assert_exit(&out, 0);
    s
}

/// Runs apply, undo and redo: each must exit 3 naming `what` and `way_out`, and leave the
/// state files, the index and every file byte-identical.
fn all_refused(s: &Scratch, what: &str, way_out: &str) {
    let reply = s.reply(&block(
        "bb1",
        "file_write",
        &[
            ("path", "/repo/b.txt"),
            ("content", "changed by the reply\n"),
        ],
    ));
    for args in [&["apply"][..], &["undo"], &["redo"]] {
        let before = git_dir_bytes(s);
        let out = s.loaf(args, &reply);
        let after = git_dir_bytes(s);
        s.assert_exit(&out, 3);
        let err = stderr(&out);
        assert!(
            err.contains(what) && err.contains(way_out),
            "{args:?}: names {what:?} and {way_out:?}: {err}"
        );
        assert!(
            !err.contains("finish or abort the merge/rebase"),
            "the specific message, not the generic hint: {err}"
        );
        assert!(
            err.contains(&format!("git loaf {}", args[0])),
            "says what to run again: {err}"
        );
        assert_eq!(before, after, "{args:?} changed git's state files or index");
    }
    assert_eq!(
        s.read("b.txt").as_deref(),
        Some("b\n"),
        "the reply did not run"
    );
}

#[test]
fn a_resolved_but_uncommitted_merge_is_refused_and_kept_byte_identical() {
    let s = diverged();
    let merge = git_may_fail(&s, &["merge", "-q", "other"]);
    assert!(!merge.status.success(), "the merge stops on a conflict");
    s.write("a.txt", "resolved\n");
    s.git(&["add", "a.txt"]);
    let state = s.state();
    all_refused(&s, "a merge is in progress", "git merge --continue");
    assert!(stderr(&s.apply("")).contains("git merge --abort"));
    assert_eq!(s.state(), state, "HEAD, index and files as they were");
    assert!(s.root.join(".git/MERGE_HEAD").exists(), "the merge goes on");
    s.git(&["commit", "-q", "--no-edit"]);
    let parents = s.git(&["rev-list", "--parents", "-n1", "HEAD"]);
    assert_eq!(
        parents.split_whitespace().count(),
        3,
        "the user's merge commit keeps both parents: {parents}"
    );
    assert_eq!(s.read("a.txt").as_deref(), Some("resolved\n"));
}

#[test]
fn log_and_show_still_work_during_a_merge() {
    let s = diverged();
    assert!(!git_may_fail(&s, &["merge", "-q", "other"]).status.success());
    let log = s.loaf(&["log"], "");
    s.assert_exit(&log, 0);
    assert!(
        stdout(&log).contains("AI: file_write a.txt"),
        "{}",
        stdout(&log)
    );
    let show = s.loaf(&["show", "HEAD"], "");
    s.assert_exit(&show, 0);
}

#[test]
fn unresolved_conflicts_are_refused() {
    let s = diverged();
    assert!(!git_may_fail(&s, &["merge", "-q", "other"]).status.success());
    all_refused(&s, "a merge is in progress", "git merge --abort");
    // Conflicts left by something that records no operation (a stash that did not apply).
    s.git(&["merge", "--abort"]);
    s.write("a.txt", "stashed\n");
    s.git(&["stash", "-q"]);
    s.write("a.txt", "committed meanwhile\n");
    s.commit_all("meanwhile");
    assert!(!git_may_fail(&s, &["stash", "pop", "-q"]).status.success());
    all_refused(&s, "unresolved conflicts (a.txt)", "git add");
}

#[test]
fn rebase_cherry_pick_revert_and_bisect_are_refused() {
    let rebase = diverged();
    assert!(
        !git_may_fail(&rebase, &["rebase", "-q", "other"])
            .status
            .success()
    );
    all_refused(&rebase, "a rebase is in progress", "git rebase --continue");

    let apply_rebase = diverged();
    assert!(
        !git_may_fail(&apply_rebase, &["rebase", "-q", "--apply", "other"])
            .status
            .success()
    );
    all_refused(&apply_rebase, "is in progress", "git rebase --abort");

    let pick = diverged();
    assert!(
        !git_may_fail(&pick, &["cherry-pick", "other"])
            .status
            .success()
    );
    all_refused(
        &pick,
        "a cherry-pick is in progress",
        "git cherry-pick --continue",
    );

    let revert = diverged();
    revert.write("a.txt", "later\n");
    revert.commit_all("later");
    assert!(
        !git_may_fail(&revert, &["revert", "--no-edit", "HEAD~1"])
            .status
            .success()
    );
    all_refused(&revert, "a revert is in progress", "git revert --continue");

    let bisect = diverged();
    bisect.git(&["bisect", "start"]);
    all_refused(&bisect, "a bisect is in progress", "git bisect reset");
}

#[test]
fn a_cherry_pick_sequence_between_two_commits_is_refused() {
    // The first pick conflicts and is committed by hand: CHERRY_PICK_HEAD is gone, but the
    // sequencer still holds the second pick.
    let s = diverged();
    s.git(&["checkout", "-q", "other"]);
    s.write("c.txt", "c\n");
    s.commit_all("second on other");
    s.git(&["checkout", "-q", "main"]);
    assert!(
        !git_may_fail(&s, &["cherry-pick", "other~1", "other"])
            .status
            .success()
    );
    s.write("a.txt", "resolved\n");
    s.git(&["add", "a.txt"]);
    s.git(&["commit", "-q", "--no-edit"]);
    assert!(!s.root.join(".git/CHERRY_PICK_HEAD").exists());
    all_refused(
        &s,
        "a cherry-pick is in progress",
        "git cherry-pick --continue",
    );
}

#[test]
fn a_split_index_is_refused_by_name() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    s.git(&["update-index", "--split-index"]);
    let state = s.state();
    let out = s.apply(&block(
        "aa1",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "b\n")],
    ));
    s.assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("split index") && err.contains("git update-index --no-split-index"),
        "{err}"
    );
    assert!(!err.contains("merge"), "not the merge hint: {err}");
    assert_eq!(s.state(), state);
}

#[test]
fn a_separate_git_dir_applies_undoes_and_redoes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().canonicalize().expect("canonical");
    let (work, git_dir) = (base.join("work"), base.join("gitdir"));
    let git = |args: &[&str]| crate::scratch::git_in(&work, args);
    crate::scratch::git_in(
        &base,
        &[
            "init",
            "-q",
            "-b",
            "main",
            "--separate-git-dir",
            &git_dir.to_string_lossy(),
            "work",
        ],
    );
    // A sibling the workdir must not be mistaken for (libgit2's discover picks the git
    // dir's parent, `base`, as the working tree).
    std::fs::write(work.join("a.txt"), "one\n").expect("write");
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "initial"]);
    let s = Scratch::empty();
    let reply = block(
        "aa1",
        "file_write",
        &[
            ("path", &work.join("a.txt").to_string_lossy()),
            ("content", "two\n"),
        ],
    );
    let run = |args: &[&str], stdin: &str| {
        let out = s.loaf_in(&work, args, stdin);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        out
    };
    let out = run(&["apply"], &reply);
    assert!(!stdout(&out).contains("gitdir"), "{}", stdout(&out));
    let read = || std::fs::read_to_string(work.join("a.txt")).ok();
    assert_eq!(read().as_deref(), Some("two\n"));
    assert_eq!(git(&["status", "--porcelain"]), "");
    assert_eq!(git(&["show", "HEAD:a.txt"]), "two\n");
    run(&["undo"], "");
    assert_eq!(read().as_deref(), Some("one\n"));
    assert_eq!(git(&["status", "--porcelain"]), "");
    run(&["redo"], "");
    assert_eq!(read().as_deref(), Some("two\n"));
    assert_eq!(git(&["status", "--porcelain"]), "");
    assert!(git_dir.join("loaf").is_dir() && !work.join(".git").is_dir());
}

/// What each line of a report says, the root shown as `/repo`.
fn report(s: &Scratch, out: &Output) -> String {
    s.redact(&out.stdout)
}

#[test]
fn a_write_into_git_is_one_refused_block_among_good_ones() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let config = s.read(".git/config");
    let reply = [
        block(
            "aa1",
            "file_write",
            &[("path", "/repo/one.txt"), ("content", "1\n")],
        ),
        block(
            "aa2",
            "file_write",
            &[("path", "/repo/.git/config"), ("content", "[core]\n")],
        ),
        block(
            "aa3",
            "file_write",
            &[("path", "/repo/two.txt"), ("content", "2\n")],
        ),
    ]
    .concat();
    let out = s.apply(&reply);
    s.assert_exit(&out, 1);
    let text = report(&s, &out);
    assert!(text.contains("aa1 ✅") && text.contains("aa3 ✅"), "{text}");
    let refused = text
        .lines()
        .find(|l| l.starts_with("aa2 ❌"))
        .unwrap_or_default();
    assert!(
        refused.contains("fs-guard") && refused.contains("'/repo/.git/config'"),
        "{text}"
    );
    for output in [&out.stdout, &out.stderr] {
        let output = String::from_utf8_lossy(output);
        assert!(!output.contains("loaf/stage"), "no stage path: {output}");
    }
    // The refused block left it alone; git-loaf itself only appends its notes.rewriteRef
    // setting (once, on a first commit).
    let now = s.read(".git/config").unwrap_or_default();
    assert!(
        now.starts_with(config.as_deref().unwrap_or("-")),
        ".git/config kept: {now}"
    );
    assert_eq!(
        s.git(&["show", "--name-only", "--format=", "HEAD"]),
        "one.txt\ntwo.txt\n"
    );
    assert_eq!(s.git(&["status", "--porcelain"]), "");
}

#[test]
fn every_way_into_the_git_dir_is_refused_per_block() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    // Real paths: `/repo` would be replaced twice in `/repo/../repo/...`.
    let root = s.root.to_string_lossy().into_owned();
    let name = s
        .root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let targets = [
        format!("{root}/.GIT/config"),
        format!("{root}/.Git"),
        format!("{root}/../{name}/.git/config"),
        format!("{root}/../{name}/.git/loaf/stage/x.txt"),
        format!("{root}/sub/../.git/hooks/pre-commit"),
        format!("{root}/../x.txt"),
        format!("{root}/nested/.git/config"),
    ];
    let mut reply = String::new();
    for (i, target) in targets.iter().enumerate() {
        reply.push_str(&block(
            &format!("b{i:02}"),
            "file_write",
            &[("path", target), ("content", "x\n")],
        ));
    }
    reply.push_str(&block(
        "ok1",
        "file_write",
        &[("path", &format!("{root}/ok.txt")), ("content", "ok\n")],
    ));
    let out = s.loaf(&["apply"], &reply);
    s.assert_exit(&out, 1);
    let text = stdout(&out);
    assert!(text.contains("ok1 ✅"), "{text}");
    for (i, target) in targets.iter().enumerate() {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("b{i:02} ❌")))
            .unwrap_or_default();
        assert!(
            line.contains("fs-guard") && line.contains(&format!("'{target}'")),
            "{target}: {text}"
        );
    }
    let stage = format!("{root}/.git/loaf/stage");
    assert!(!stdout(&out).contains(&stage) && !stderr(&out).contains(&stage));
    let git_dir = s.root.join(".git");
    assert!(!git_dir.join("loaf/x.txt").exists() && !git_dir.join("loaf/stage/x.txt").exists());
    assert!(!s.sibling("x.txt").exists());
    assert_eq!(
        s.git(&["show", "--name-only", "--format=", "HEAD"]),
        "ok.txt\n"
    );
}

#[test]
fn a_file_replaced_by_a_folder_and_back_commits_publishes_and_undoes() {
    let s = Scratch::with(&[("a", "file\n"), ("d/x", "inner\n")]);
    let before = s.state();
    let reply = [
        block("aa1", "file_delete", &[("path", "/repo/a")]),
        block(
            "aa2",
            "file_write",
            &[("path", "/repo/a/b"), ("content", "now a folder\n")],
        ),
        block("aa3", "file_delete", &[("path", "/repo/d/x")]),
        block("aa4", "dir_delete", &[("path", "/repo/d")]),
        block(
            "aa5",
            "file_write",
            &[("path", "/repo/d"), ("content", "now a file\n")],
        ),
    ]
    .concat();
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["ls-tree", "-r", "--name-only", "HEAD"]), "a/b\nd\n");
    assert_eq!(s.read("a/b").as_deref(), Some("now a folder\n"));
    assert_eq!(s.read("d").as_deref(), Some("now a file\n"));
    assert_eq!(s.git(&["status", "--porcelain"]), "");
    let after = s.state();
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), before, "undo restores the file and the folder");
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert_eq!(s.state(), after);
    s.assert_tidy();
}

#[test]
fn an_untracked_nested_repository_is_an_untracked_folder() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let nested = s.root.join("nested");
    std::fs::create_dir(&nested).expect("mkdir");
    crate::scratch::git_in(&nested, &["init", "-q"]);
    std::fs::write(nested.join("f.txt"), "f\n").expect("write");
    crate::scratch::git_in(&nested, &["add", "f.txt"]);
    crate::scratch::git_in(&nested, &["commit", "-q", "-m", "nested"]);
    for dirty in [false, true] {
        if dirty {
            s.write("a.txt", "edited by the user\n");
        }
        let content = format!("dirty={dirty}\n");
        let out = s.apply(&block(
            "aa1",
            "file_write",
            &[("path", "/repo/one.txt"), ("content", &content)],
        ));
        s.assert_exit(&out, 0);
        let err = stderr(&out);
        assert!(
            !err.contains("invalid path") && !err.contains("merge"),
            "{err}"
        );
        assert_eq!(s.read("one.txt"), Some(content));
        let status = s.git(&["status", "--porcelain"]);
        assert!(status.contains("?? nested/"), "{status}");
    }
    assert!(
        !s.git(&["ls-tree", "-r", "--name-only", "HEAD"])
            .contains("nested"),
        "never committed"
    );
}

/// `dir1/a`, `dir2/b`, `dir2/sub/c`, `top.txt`, with a cone sparse checkout of `dir1`.
fn sparse() -> Scratch {
    let s = Scratch::with(&[
        ("dir1/a", "1\n"),
        ("dir2/b", "2\n"),
        ("dir2/sub/c", "3\n"),
        ("top.txt", "t\n"),
    ]);
    s.git(&["sparse-checkout", "set", "--cone", "dir1"]);
    assert!(!s.root.join("dir2").exists());
    s
}

#[test]
fn actions_outside_the_sparse_checkout_are_refused_with_a_hint() {
    let s = sparse();
    let reply = [
        block(
            "aa1",
            "file_write",
            &[("path", "/repo/dir1/new.txt"), ("content", "new\n")],
        ),
        block(
            "aa2",
            "file_write",
            &[("path", "/repo/dir2/sub/c"), ("content", "x\n")],
        ),
        block("aa3", "file_read", &[("path", "/repo/dir2/b")]),
        block(
            "aa4",
            "file_write",
            &[("path", "/repo/dir2/new.txt"), ("content", "x\n")],
        ),
    ]
    .concat();
    let out = s.apply(&reply);
    s.assert_exit(&out, 1);
    let text = report(&s, &out);
    assert!(text.contains("aa1 ✅"), "{text}");
    for id in ["aa2", "aa3", "aa4"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{id} ❌")))
            .unwrap_or_default();
        assert!(
            line.contains("outside your sparse checkout")
                && line.contains("git sparse-checkout add dir2"),
            "{id}: {text}"
        );
    }
    assert!(!text.contains("SECRET") && !text.contains("loaf/stage"));
}

#[test]
fn files_outside_the_sparse_checkout_are_never_committed_as_deleted() {
    let s = sparse();
    // Clean, then with uncommitted work, so that the user's state has to be recorded.
    for (file, status) in [("dir1/new.txt", ""), ("dir1/two.txt", " M top.txt\n")] {
        if !status.is_empty() {
            s.write("top.txt", "edited\n");
        }
        let out = s.apply(&block(
            "aa1",
            "file_write",
            &[("path", &format!("/repo/{file}")), ("content", "new\n")],
        ));
        s.assert_exit(&out, 0);
        let stat = s.git(&["show", "--stat", "--format=", "HEAD"]);
        assert!(
            stat.contains(file) && stat.contains("1 file changed"),
            "only {file}: {stat}"
        );
        assert_eq!(s.git(&["status", "--porcelain"]), status);
    }
    assert_eq!(
        s.git(&["ls-tree", "-r", "--name-only", "HEAD"]),
        "dir1/a\ndir1/new.txt\ndir1/two.txt\ndir2/b\ndir2/sub/c\ntop.txt\n"
    );
    assert!(!s.root.join("dir2").exists(), "still sparse");
    let flags = s.git(&["ls-files", "-t", "dir2"]);
    assert_eq!(flags, "S dir2/b\nS dir2/sub/c\n", "still skip-worktree");
}

/// In a sparse checkout, the user's unstaged edit of a tracked file is what the reply sees
/// and edits (recording the skip-worktree entries as the index has them must not put the
/// index's version of the other files in the checkpoint), and undo gives the edit back.
#[test]
fn in_a_sparse_checkout_a_reply_edits_the_users_unstaged_version() {
    let s = sparse();
    s.write("top.txt", "edited\n");
    let before = s.state();
    let out = s.apply(&block(
        "aa1",
        "file_replace_text",
        &[
            ("path", "/repo/top.txt"),
            ("old_text", "edited"),
            ("new_text", "edited twice"),
        ],
    ));
    s.assert_exit(&out, 0);
    assert_eq!(s.read("top.txt").as_deref(), Some("edited twice\n"));
    assert_eq!(s.git(&["show", "HEAD:top.txt"]), "edited twice\n");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), before, "the unstaged edit is back");
}
