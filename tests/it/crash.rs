//! Crash safety and concurrency: applies killed at named moments (abort) and at many random
//! moments (SIGKILL: during a slow `exec`, inside publish), then one more command; the user's
//! branch, index and working tree must be exactly as before or exactly as after, and the
//! repository tidy. And four applies at once: each commits or exits 3, nothing lost.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::scratch::{ENV, Scratch, block};

/// The reply every trial applies: writes, an edit of a file the user changed, a deletion, a
/// slow `exec` (`SLOW` seconds) that writes too, and a final write.
fn reply(slow: &str) -> String {
    [
        block(
            "w1a",
            "file_write",
            &[
                ("path", "/repo/src/new.rs"),
                ("content", "pub fn new() {}\n"),
            ],
        ),
        block(
            "w2b",
            "file_replace_text",
            &[
                ("path", "/repo/a.txt"),
                ("old_text", "dirty"),
                ("new_text", "edited by AI"),
            ],
        ),
        block("d3c", "file_delete", &[("path", "/repo/old.txt")]),
        block(
            "e4d",
            "exec",
            &[
                ("lang", "bash"),
                (
                    "code",
                    &format!("touch exec-started; sleep {slow}; printf built > out.txt"),
                ),
            ],
        ),
        block(
            "w5e",
            "file_write",
            &[("path", "/repo/docs/z.md"), ("content", "# z\n")],
        ),
    ]
    .concat()
}

/// A repository with uncommitted work of every kind, where exec is allowed.
fn scene() -> Scratch {
    let s = Scratch::with(&[
        (
            "loaf.yml",
            "allowed-actions: [file_write, file_replace_text, file_delete, file_read, exec]\n",
        ),
        (".gitignore", "*.log\n"),
        ("a.txt", "clean\n"),
        ("old.txt", "old\n"),
        ("keep.txt", "keep\n"),
    ]);
    s.write("a.txt", "dirty\n");
    s.write("keep.txt", "keep staged\n");
    s.git(&["add", "keep.txt"]);
    s.write("keep.txt", "keep staged\nand unstaged\n");
    s.write("untracked.txt", "mine\n");
    s.write("build.log", "ignored\n");
    s
}

/// The user's state without commit ids (they contain the time): subjects and trees of the
/// history, status, diffs and every file's content.
fn content_state(s: &Scratch) -> String {
    let state = s.state();
    let rest = state.split_once('\n').map(|x| x.1).unwrap_or("");
    let history = if s.head() == "unborn" {
        String::new()
    } else {
        s.git(&["log", "--format=%s %T"])
    };
    format!("{history}{rest}")
}

/// The state after an uninterrupted apply, from an identical scene.
fn expected_after(slow: &str) -> String {
    let s = scene();
    let out = s.loaf(&["apply"], &s.reply(&reply(slow)));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    content_state(&s)
}

pub(crate) fn spawn_apply(s: &Scratch, text: &str, env: &[(&str, &str)]) -> Child {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("git-loaf"))
        .arg("apply")
        .current_dir(&s.root)
        .envs(ENV)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("git-loaf starts");
    use std::io::Write as _;
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(text.as_bytes()).expect("reply written");
    drop(stdin);
    child
}

/// Runs the next command (a read-only apply) and returns the state it leaves, after checking
/// it worked and left the repository tidy.
fn next_command(s: &Scratch) -> String {
    let out = s.apply(&block("r9z", "file_read", &[("path", "/repo/a.txt")]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "the next command works: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.assert_tidy();
    content_state(s)
}

#[test]
fn an_abort_at_each_named_moment_leaves_all_before_or_all_after() {
    let after = expected_after("0");
    let moments = [
        ("checkpoint", false),
        ("stage", false),
        ("executed", false),
        ("committed", false),
        ("journal", false),
        ("ref", true),
        ("checkout", true),
        ("index", true),
        ("files", true),
        ("oplog", true),
    ];
    for (moment, committed) in moments {
        let s = scene();
        let before = content_state(&s);
        let status = spawn_apply(&s, &s.reply(&reply("0")), &[("LOAF_CRASH_AT", moment)])
            .wait()
            .expect("waits");
        assert!(!status.success(), "{moment}: aborted");
        let state = next_command(&s);
        let expected = if committed { &after } else { &before };
        assert_eq!(&state, expected, "after an abort at {moment}");
        if committed {
            let undo = s.loaf(&["undo"], "");
            assert_eq!(
                undo.status.code(),
                Some(0),
                "{moment}: {}",
                String::from_utf8_lossy(&undo.stderr)
            );
            assert_eq!(
                content_state(&s),
                before,
                "{moment}: undo restores the state before"
            );
        }
    }
}

/// Killed after the branch moved and before the index was written, git-loaf leaves git's
/// own `index.lock` behind: plain git cannot build a commit on the half-published state.
/// A user who removes the lock and commits anyway is told what happened, not that nothing
/// had changed.
#[test]
fn plain_git_cannot_build_on_a_half_published_state() {
    let s = scene();
    let status = spawn_apply(&s, &s.reply(&reply("0")), &[("LOAF_CRASH_AT", "checkout")])
        .wait()
        .expect("waits");
    assert!(!status.success());
    let commit = crate::scratch::git_cmd(&s.root, &["commit", "-q", "--allow-empty", "-m", "x"])
        .output()
        .expect("git runs");
    assert!(!commit.status.success(), "git commit refuses: index.lock");
    assert!(
        String::from_utf8_lossy(&commit.stderr).contains("index.lock"),
        "{}",
        String::from_utf8_lossy(&commit.stderr)
    );
    std::fs::remove_file(s.root.join(".git/index.lock")).expect("the user removes the lock");
    s.git(&["commit", "-q", "--allow-empty", "-m", "the user's commit"]);
    let out = s.apply(&block("r9z", "file_read", &[("path", "/repo/a.txt")]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("before it changed anything") && err.contains("branch has moved on"),
        "{err}"
    );
    assert!(!s.root.join(".git/loaf/journal.json").exists());
}

#[test]
fn sigkill_at_many_moments_leaves_all_before_or_all_after() {
    let slow = "0.3";
    let after = expected_after(slow);
    // How long one apply takes here, to spread the kills over it.
    let probe = scene();
    let started = Instant::now();
    spawn_apply(&probe, &probe.reply(&reply(slow)), &[])
        .wait()
        .expect("waits");
    let span = started.elapsed() + Duration::from_millis(50);
    // 24 in CI; `LOAF_CRASH_TRIALS=500` for a long run.
    let trials: u32 = std::env::var("LOAF_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    // Kills one apply after `delay`; true when it had published (all after).
    let kill_at = |s: &Scratch, delay: Duration, trial: u32| -> bool {
        let before = content_state(s);
        let mut child = spawn_apply(s, &s.reply(&reply(slow)), &[]);
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        let state = next_command(s);
        if state != before {
            assert_eq!(state, after, "trial {trial}: neither before nor after");
        }
        state != before
    };
    let mut published = Vec::new();
    for trial in 0..trials {
        let delay = span * (trial % 24) / 24 + Duration::from_micros(u64::from(trial * 397 % 1000));
        published.push(kill_at(&scene(), delay, trial));
    }
    // On a loaded machine one apply can take much longer than the probe did, so that every
    // kill lands before the publish: then wait longer (doubling) until one lands after, so
    // both sides are always exercised.
    let mut late = span;
    for trial in trials..trials + 8 {
        if published.contains(&true) {
            break;
        }
        late *= 2;
        published.push(kill_at(&scene(), late, trial));
    }
    let afters = published.iter().filter(|p| **p).count();
    let befores = published.len() - afters;
    assert!(
        befores > 0 && afters > 0,
        "kills landed on both sides: {befores} before, {afters} after"
    );
}

/// Waits until `ready` holds (or fails after 20 s).
fn wait_for(what: &str, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn sigkill_during_a_slow_exec_and_inside_publish() {
    let after = expected_after("0");
    // During the exec: nothing of the user's has changed yet.
    let s = scene();
    let before = content_state(&s);
    let mut child = spawn_apply(&s, &s.reply(&reply("30")), &[]);
    let started = s.root.join(".git/loaf/stage/exec-started");
    wait_for("the exec", || started.exists());
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(next_command(&s), before, "killed during exec");
    // Inside publish: after the branch moved, before the files; and after the files, before
    // the index.
    for moment in ["ref", "checkout"] {
        let s = scene();
        let head = s.head();
        let mut child = spawn_apply(
            &s,
            &s.reply(&reply("0")),
            &[("LOAF_PAUSE_AT", moment), ("LOAF_PAUSE_MS", "30000")],
        );
        let journal = s.root.join(".git/loaf/journal.json");
        wait_for("publish", || journal.exists() && s.head() != head);
        if moment == "checkout" {
            wait_for("the files", || s.read("docs/z.md").is_some());
        }
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(next_command(&s), after, "killed inside publish at {moment}");
    }
}

#[test]
fn four_applies_at_once_each_commit_or_exit_3_and_nothing_is_lost() {
    let s = Scratch::with(&[
        ("loaf.yml", "allowed-actions: [file_write, exec]\n"),
        ("a.txt", "a\n"),
    ]);
    let children: Vec<(usize, Child)> = (0..4)
        .map(|i| {
            let text = [
                block(
                    "w1a",
                    "file_write",
                    &[
                        ("path", &format!("/repo/c{i}.txt")),
                        ("content", &format!("{i}\n")),
                    ],
                ),
                block("e2b", "exec", &[("lang", "bash"), ("code", "sleep 0.2")]),
            ]
            .concat();
            (i, spawn_apply(&s, &s.reply(&text), &[]))
        })
        .collect();
    let mut committed = Vec::new();
    for (i, mut child) in children {
        let code = child.wait().expect("waits").code();
        match code {
            Some(0) => committed.push(i),
            Some(3) => {}
            other => panic!("apply {i} exited {other:?}"),
        }
    }
    assert!(!committed.is_empty(), "at least the first one commits");
    let commits = s.git(&["rev-list", "--count", "HEAD"]);
    assert_eq!(commits.trim(), (1 + committed.len()).to_string());
    let tree = s.git(&["ls-tree", "--name-only", "HEAD"]);
    for i in 0..4 {
        let name = format!("c{i}.txt");
        assert_eq!(
            tree.lines().any(|l| l == name),
            committed.contains(&i),
            "c{i}.txt is in HEAD exactly when its apply committed: {tree}"
        );
        assert_eq!(s.read(&name).is_some(), committed.contains(&i));
    }
    assert_eq!(s.git(&["status", "--porcelain"]), "");
    let ops = s.git(&["rev-list", "--first-parent", "--count", "refs/loaf/oplog"]);
    assert_eq!(
        ops.trim(),
        (committed.len() + 1).to_string(),
        "one log entry per commit, and the root of the log"
    );
    s.assert_tidy();
}

#[test]
fn a_crash_in_an_undo_that_does_not_move_the_branch_rolls_forward() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let out = s.apply(&block(
        "w1a",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "model\n")],
    ));
    assert_eq!(out.status.code(), Some(0));
    let before = s.git(&["rev-parse", "HEAD~1"]);
    s.git(&["reset", "-q", "--soft", "HEAD~1"]);
    let crashed = Command::new(assert_cmd::cargo::cargo_bin("git-loaf"))
        .args(["undo", "--force"])
        .current_dir(&s.root)
        .envs(ENV)
        .env("LOAF_CRASH_AT", "checkout")
        .status()
        .expect("runs");
    assert!(!crashed.success());
    next_command(&s);
    assert_eq!(s.git(&["rev-parse", "HEAD"]), before);
    assert_eq!(
        s.git(&["status", "--porcelain"]),
        "",
        "files and index both as before the apply"
    );
    assert_eq!(s.read("a.txt").as_deref(), Some("a\n"));
}

#[test]
fn a_lock_on_the_private_index_copy_left_by_a_kill_does_not_stop_the_next_apply() {
    let s = Scratch::with(&[("a.txt", "0\n")]);
    s.write("a.txt", "dirty\n");
    // What libgit2 leaves when git-loaf is killed while writing its copy of the index.
    std::fs::write(s.root.join(".git/loaf-index.new.lock"), "").expect("write");
    let out = s.apply(&block(
        "w1a",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "b")],
    ));
    s.assert_exit(&out, 0);
    assert_eq!(s.read("b.txt").as_deref(), Some("b"));
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("dirty\n"),
        "the user's edit stays"
    );
}
