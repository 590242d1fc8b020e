//! `git loaf watch` driven as a user drives it: a real watcher process, replies saved into
//! its file the way editors save (a temporary file renamed over it, partial writes, two saves
//! in a row), a file standing in for the clipboard, `git loaf undo` and a second watcher run
//! beside it, and SIGINT in the middle of an apply.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::scratch::{ENV, Scratch, block};

/// How long a test waits for the watcher before failing.
const PATIENCE: Duration = Duration::from_secs(60);
/// Long enough for the watcher to have acted on a save if it were going to (debounce is
/// 150 ms, the periodic check 1 s).
const SETTLE: Duration = Duration::from_millis(1500);

/// A running `git loaf watch`.
struct Watching {
    child: Child,
    out: PathBuf,
    err: PathBuf,
    stop: PathBuf,
    clip: PathBuf,
}

impl Watching {
    /// Starts `git loaf watch args` at the root with the fake clipboard, and waits until it
    /// watches.
    fn start(scratch: &Scratch, args: &[&str]) -> Watching {
        Watching::start_with(scratch, args, &[], true)
    }

    fn start_with(
        scratch: &Scratch,
        args: &[&str],
        env: &[(&str, &Path)],
        fake_clipboard: bool,
    ) -> Watching {
        let n = std::fs::read_dir(scratch.sibling(""))
            .map(|d| d.count())
            .unwrap_or(0);
        let dir = scratch.sibling(&format!("watcher-{n}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let (out, err) = (dir.join("out"), dir.join("err"));
        let (stop, clip) = (dir.join("stop"), dir.join("clipboard"));
        let mut command = Command::new(assert_cmd::cargo::cargo_bin("git-loaf"));
        command
            .arg("watch")
            .args(args)
            .current_dir(&scratch.root)
            .envs(ENV)
            .env("NO_COLOR", "1")
            .env("LOAF_WATCH_STOP_FILE", &stop)
            .env("LOAF_WATCH_POLL_MS", "50")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("out"))
            .stderr(std::fs::File::create(&err).expect("err"));
        if fake_clipboard {
            command.env("LOAF_CLIPBOARD_FILE", &clip);
        }
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command.spawn().expect("git-loaf watch starts");
        let watching = Watching {
            child,
            out,
            err,
            stop,
            clip,
        };
        watching.wait_for("the watcher to start", |w| w.err().contains("watching "));
        watching
    }

    fn out(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    fn err(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// The status lines printed so far (one per apply).
    fn applies(&self) -> usize {
        self.out()
            .lines()
            .filter(|l| l.starts_with("apply "))
            .count()
    }

    fn clipboard(&self) -> String {
        std::fs::read_to_string(&self.clip).unwrap_or_default()
    }

    /// Waits until `done` holds, failing the test with the watcher's output after a while.
    fn wait_for(&self, what: &str, done: impl Fn(&Watching) -> bool) {
        let until = Instant::now() + PATIENCE;
        while !done(self) {
            assert!(
                Instant::now() < until,
                "waited in vain for {what}\nstdout:\n{}\nstderr:\n{}",
                self.out(),
                self.err()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the `n`th apply's status line.
    fn wait_applies(&self, n: usize) {
        self.wait_for(&format!("{n} applies"), |w| w.applies() >= n);
    }

    /// Asks it to stop (as the test-only stop file does) and returns its exit code.
    fn stop(mut self) -> (Option<i32>, String, String) {
        std::fs::write(&self.stop, "").expect("stop file");
        let until = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return (status.code(), self.out(), self.err());
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                panic!("the watcher did not stop\nstderr:\n{}", self.err());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        // A failed test must not leave a watcher running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Saves `text` to `path` as editors do: a temporary file renamed over it.
fn save(path: &Path, text: &str) {
    let temp = path.with_file_name(".reply.md.swp");
    std::fs::write(&temp, text).expect("write");
    std::fs::rename(&temp, path).expect("rename");
}

/// A reply writing `content` to `a.txt`, with prose around the block.
fn reply_writing(scratch: &Scratch, id: &str, content: &str) -> String {
    let path = scratch.root.join("a.txt");
    format!(
        "Sure, here it is.\n\n{}\nTell me the results.\n",
        block(
            id,
            "file_write",
            &[("path", &path.to_string_lossy()), ("content", content)]
        )
    )
}

/// The number of commits git-loaf made.
fn loaf_commits(scratch: &Scratch) -> usize {
    scratch
        .git(&["log", "--format=%s"])
        .lines()
        .filter(|s| s.starts_with("AI: "))
        .count()
}

fn reply_file(scratch: &Scratch) -> PathBuf {
    scratch.root.join(".loaf/reply.md")
}

#[test]
fn a_saved_reply_is_applied_once_and_its_results_come_back() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let watching = Watching::start(&scratch, &[]);
    let file = reply_file(&scratch);
    assert!(
        std::fs::read_to_string(&file)
            .expect("created")
            .starts_with("<!-- git loaf watch:"),
        "the file is created with a header"
    );
    let reply = reply_writing(&scratch, "k1m", "hello\n");
    save(&file, &reply);
    watching.wait_applies(1);
    assert_eq!(scratch.read("a.txt").as_deref(), Some("hello\n"));
    let results = std::fs::read_to_string(scratch.root.join(".loaf/results.md")).expect("results");
    assert!(
        results.starts_with("=== LOAF RESULTS === apply "),
        "{results}"
    );
    assert!(results.contains("k1m ✅ file_write"), "{results}");
    assert_eq!(
        watching.clipboard(),
        results,
        "the results are on the clipboard"
    );
    // Saved again, twice in a row, then with other prose around the same block: the same
    // reply, never run again.
    save(&file, &reply);
    save(&file, &reply);
    std::thread::sleep(SETTLE);
    save(&file, &reply.replace("Sure, here it is.", "Here you go!"));
    std::thread::sleep(SETTLE);
    let (code, out, err) = watching.stop();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(loaf_commits(&scratch), 1, "{out}\n{err}");
    let status: Vec<&str> = out.lines().collect();
    assert_eq!(status.len(), 1, "{out}");
    let commit = scratch.git(&["rev-parse", "--short=7", "HEAD"]);
    assert!(
        status[0].contains("1 ✅ 0 ❌") && status[0].contains(&format!("commit {}", commit.trim())),
        "{out}"
    );
    assert!(err.contains("was already applied as apply "), "{err}");
    // The watcher's folder stays out of git; the apply is recorded with its reply's key.
    assert_eq!(scratch.git(&["status", "--porcelain"]), "");
    let entry = scratch.git(&["show", "refs/loaf/oplog:entry.json"]);
    assert!(entry.contains("\"reply_key\""), "{entry}");
    scratch.assert_tidy();
}

#[test]
fn a_restarted_watcher_never_reruns_a_reply_and_a_new_block_runs_once() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let file = reply_file(&scratch);
    let reply = reply_writing(&scratch, "k1m", "one\n");
    let first = Watching::start(&scratch, &[]);
    save(&file, &reply);
    first.wait_applies(1);
    let (code, ..) = first.stop();
    assert_eq!(code, Some(0));
    // The watcher's own record gone (as if it died right after the commit): the operation
    // log still knows the reply.
    std::fs::remove_file(scratch.root.join(".git/loaf/watch-applied")).expect("record");
    // A restart finds the same reply in the file: it says so and runs nothing.
    let second = Watching::start(&scratch, &[]);
    second.wait_for("the already-applied notice", |w| {
        w.err().contains("was already applied as apply ")
    });
    assert_eq!(second.applies(), 0);
    // A new block appended to the reply: it runs, once.
    let more = format!(
        "{reply}{}",
        block(
            "q2w",
            "file_write",
            &[
                ("path", &scratch.root.join("b.txt").to_string_lossy()),
                ("content", "two")
            ]
        )
    );
    save(&file, &more);
    second.wait_applies(1);
    save(&file, &more);
    std::thread::sleep(SETTLE);
    let (code, out, err) = second.stop();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert_eq!(loaf_commits(&scratch), 2);
    assert_eq!(scratch.read("b.txt").as_deref(), Some("two"));
}

#[test]
fn a_partial_write_waits_for_the_rest_of_the_reply() {
    use std::io::Write as _;
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let watching = Watching::start(&scratch, &[]);
    let reply = reply_writing(&scratch, "k1m", "line 1\nline 2\n");
    let cut = reply.find("line 2").expect("body");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(reply_file(&scratch))
        .expect("open");
    file.write_all(&reply.as_bytes()[..cut]).expect("write");
    file.flush().expect("flush");
    watching.wait_for("the wait notice", |w| {
        w.err()
            .contains("waiting: in .loaf/reply.md, block k1m (line 3) is not closed yet")
    });
    std::thread::sleep(SETTLE);
    assert_eq!(watching.applies(), 0, "half a reply never runs");
    assert_eq!(scratch.read("a.txt"), None);
    file.write_all(&reply.as_bytes()[cut..]).expect("write");
    drop(file);
    watching.wait_applies(1);
    std::thread::sleep(SETTLE);
    let (code, out, err) = watching.stop();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert_eq!(scratch.read("a.txt").as_deref(), Some("line 1\nline 2\n"));
}

#[test]
fn undo_works_while_watching_and_the_undone_reply_is_not_run_again() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let before = scratch.state();
    let watching = Watching::start(&scratch, &[]);
    let file = reply_file(&scratch);
    let reply = reply_writing(&scratch, "k1m", "hello\n");
    save(&file, &reply);
    watching.wait_applies(1);
    let undo = scratch.loaf(&["undo"], "");
    scratch.assert_exit(&undo, 0);
    assert_eq!(scratch.state(), before, "undone while the watcher runs");
    // The reply is still in the file and saved again: it stays undone.
    save(&file, &reply);
    std::thread::sleep(SETTLE);
    let (code, out, err) = watching.stop();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert_eq!(scratch.state(), before);
    scratch.assert_tidy();
}

#[test]
fn a_reply_applied_by_hand_after_the_watcher_started_is_not_run_again() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let watching = Watching::start(&scratch, &[]);
    let reply = reply_writing(&scratch, "k1m", "by hand\n");
    let by_hand = scratch.loaf(&["apply"], &reply);
    scratch.assert_exit(&by_hand, 0);
    save(&reply_file(&scratch), &reply);
    watching.wait_for("the already-applied notice", |w| {
        w.err().contains("was already applied as apply ")
    });
    std::thread::sleep(SETTLE);
    let (code, out, err) = watching.stop();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "", "nothing ran");
    assert_eq!(loaf_commits(&scratch), 1);
}

#[test]
fn a_reply_applied_by_hand_while_the_watcher_is_about_to_apply_it_runs_once() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let handshake = scratch.sibling("watch-handshake");
    // The watcher stops after reading its record, before taking the lock.
    let watching = Watching::start_with(
        &scratch,
        &[],
        &[
            ("LOAF_PAUSE_AT", Path::new("watch-recorded")),
            ("LOAF_PAUSE_FILE", &handshake),
        ],
        true,
    );
    let reply = reply_writing(&scratch, "k1m", "once\n");
    save(&reply_file(&scratch), &reply);
    watching.wait_for("the watcher to reach its apply", |_| handshake.exists());
    let by_hand = scratch.loaf(&["apply"], &reply);
    scratch.assert_exit(&by_hand, 0);
    std::fs::remove_file(&handshake).expect("resume");
    watching.wait_for("the just-applied notice", |w| {
        w.err()
            .contains("was just applied by another git loaf command, as apply ")
    });
    let (code, out, err) = watching.stop();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "", "nothing ran twice");
    assert_eq!(loaf_commits(&scratch), 1);
}

#[test]
fn an_apply_that_commits_the_users_uncommitted_edits_says_so_on_the_terminal() {
    let scratch = Scratch::with(&[("a.txt", "one\ntwo\nthree\n")]);
    scratch.write("a.txt", "ONE\ntwo\nthree\n");
    let watching = Watching::start(&scratch, &[]);
    let path = scratch.root.join("a.txt");
    let reply = block(
        "k1m",
        "file_replace_text",
        &[
            ("path", &path.to_string_lossy()),
            ("old_text", "ONE"),
            ("new_text", "1"),
        ],
    );
    save(&reply_file(&scratch), &reply);
    watching.wait_applies(1);
    let (code, out, err) = watching.stop();
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains(" · includes your uncommitted changes in a.txt (line 1)"),
        "{out}"
    );
    assert!(
        err.contains("note: the commit includes uncommitted lines of yours that the reply changed: a.txt (line 1)"),
        "{err}"
    );
    assert_eq!(scratch.git(&["show", "HEAD:a.txt"]), "1\ntwo\nthree\n");
}

#[test]
fn a_second_watcher_is_refused_naming_the_first() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let first = Watching::start(&scratch, &[]);
    let second = scratch.loaf(&["watch", "--clipboard"], "");
    scratch.assert_exit(&second, 3);
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains(&format!(
            "another `git loaf watch` is running for this repository: pid {}, started ",
            first.child.id()
        )) && err.contains("watching .loaf/reply.md\nhint: "),
        "{err}"
    );
    // Refused, it created nothing: not the file it was asked to watch, nor its folder.
    let other = scratch.loaf(&["watch", "notes/other.md"], "");
    scratch.assert_exit(&other, 3);
    assert!(!scratch.root.join("notes").exists());
    let (code, ..) = first.stop();
    assert_eq!(code, Some(0));
    // Its lock went with it.
    let again = Watching::start(&scratch, &[]);
    assert_eq!(again.stop().0, Some(0));
}

#[test]
fn sigint_during_an_apply_lets_it_finish_then_stops() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let handshake = scratch.sibling("pause-handshake");
    let watching = Watching::start_with(
        &scratch,
        &[],
        &[
            ("LOAF_PAUSE_AT", Path::new("executed")),
            ("LOAF_PAUSE_FILE", &handshake),
        ],
        true,
    );
    save(
        &reply_file(&scratch),
        &reply_writing(&scratch, "k1m", "hello\n"),
    );
    watching.wait_for("the apply to be under way", |_| handshake.exists());
    let pid = watching.child.id().to_string();
    let kill = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(kill.success());
    std::thread::sleep(Duration::from_millis(300));
    let mut watching = watching;
    assert!(
        watching.child.try_wait().expect("wait").is_none(),
        "still applying"
    );
    std::fs::remove_file(&handshake).expect("resume");
    let until = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = watching.child.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < until, "stopped after the apply");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{}", watching.err());
    assert_eq!(watching.applies(), 1, "{}", watching.out());
    assert!(watching.err().contains("stopped after 1 apply"));
    assert_eq!(scratch.read("a.txt").as_deref(), Some("hello\n"));
    assert_eq!(loaf_commits(&scratch), 1);
    assert_eq!(scratch.git(&["status", "--porcelain"]), "");
    scratch.assert_tidy();
}

#[test]
fn clipboard_replies_run_once_and_their_results_replace_them() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    // A file that itself holds a NESL block: reading it puts that block in the results,
    // which must never be applied back from the clipboard.
    let quoted = block(
        "x9z",
        "file_write",
        &[
            ("path", &scratch.root.join("never.txt").to_string_lossy()),
            ("content", "applied back!"),
        ],
    );
    scratch.write("example.md", &quoted);
    scratch.commit_all("example");
    let watching = Watching::start(&scratch, &["--clipboard"]);
    std::fs::write(&watching.clip, "some unrelated copied text").expect("copy");
    std::thread::sleep(SETTLE);
    let reply = format!(
        "Reading it:\n{}",
        block(
            "r2d",
            "file_read",
            &[("path", &scratch.root.join("example.md").to_string_lossy())]
        )
    );
    std::fs::write(&watching.clip, &reply).expect("copy");
    watching.wait_applies(1);
    watching.wait_for("the results on the clipboard", |w| {
        w.clipboard().starts_with("=== LOAF RESULTS ===")
    });
    assert!(
        watching
            .clipboard()
            .contains("#!nesl [@three-char-SHA-256: x9z]")
    );
    std::thread::sleep(SETTLE);
    // Copied again: the same reply.
    std::fs::write(&watching.clip, format!("{reply}\n")).expect("copy");
    watching.wait_for("the already-applied notice", |w| {
        w.err()
            .contains("the reply on the clipboard was already applied")
    });
    let (code, out, err) = watching.stop();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains("from clipboard"), "{out}");
    assert_eq!(scratch.read("never.txt"), None, "our own results never run");
    assert!(!err.contains("unrelated"), "{err}");
    assert!(
        std::fs::read_to_string(scratch.root.join(".loaf/results.md"))
            .expect("results")
            .starts_with("=== LOAF RESULTS ==="),
        "results are written beside the file too"
    );
}

#[test]
fn without_a_clipboard_the_watcher_says_so_once_and_goes_on() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let watching = Watching::start_with(&scratch, &[], &[], false);
    let file = reply_file(&scratch);
    save(&file, &reply_writing(&scratch, "k1m", "one\n"));
    watching.wait_applies(1);
    save(&file, &reply_writing(&scratch, "q2w", "two\n"));
    watching.wait_applies(2);
    let (code, _, err) = watching.stop();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        err.matches("cannot reach the clipboard").count(),
        1,
        "{err}"
    );
    assert_eq!(scratch.read("a.txt").as_deref(), Some("two\n"));
}

#[test]
fn a_failing_apply_is_reported_retried_and_never_stops_the_watcher() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let watching = Watching::start(&scratch, &[]);
    // Another loaf operation holds the lock (this test process plays it).
    let lock = scratch.root.join(".git/loaf/lock");
    std::fs::create_dir_all(lock.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &lock,
        format!(
            "{{\"pid\":{},\"command\":\"undo\",\"since\":{}}}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("time")
                .as_secs()
        ),
    )
    .expect("lock");
    save(
        &reply_file(&scratch),
        &reply_writing(&scratch, "k1m", "hello\n"),
    );
    watching.wait_for("the error", |w| {
        w.err()
            .contains("another git-loaf operation is running in this repository: `git loaf undo`")
    });
    assert_eq!(watching.applies(), 0);
    std::fs::remove_file(&lock).expect("unlock");
    watching.wait_applies(1);
    let (code, out, err) = watching.stop();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert_eq!(
        err.matches("another git-loaf operation is running").count(),
        1,
        "said once, retried quietly: {err}"
    );
    assert_eq!(scratch.read("a.txt").as_deref(), Some("hello\n"));
}

#[test]
fn sigterm_stops_an_idle_watcher_and_frees_its_lock() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let mut watching = Watching::start(&scratch, &[]);
    let pid = watching.child.id().to_string();
    let kill = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(kill.success());
    let status = watching.child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "{}", watching.err());
    assert!(watching.err().contains("stopped after 0 applies"));
    assert!(!scratch.root.join(".git/loaf/watch.lock").exists());
}

#[test]
fn a_reply_that_changed_nothing_is_not_run_again_after_a_restart() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let file = reply_file(&scratch);
    let reply = block(
        "r2d",
        "file_read",
        &[("path", &scratch.root.join("README.md").to_string_lossy())],
    );
    let first = Watching::start(&scratch, &[]);
    save(&file, &reply);
    first.wait_applies(1);
    assert!(
        first.out().contains("no commit (nothing changed)"),
        "{}",
        first.out()
    );
    assert_eq!(first.stop().0, Some(0));
    let second = Watching::start(&scratch, &[]);
    second.wait_for("the already-applied notice", |w| {
        w.err()
            .contains("was already applied (it changed nothing, so it has no apply id)")
    });
    std::thread::sleep(SETTLE);
    let (code, out, err) = second.stop();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "", "nothing ran");
}

#[test]
fn a_reply_appended_below_one_that_ran_runs_only_its_own_blocks() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let watching = Watching::start(&scratch, &[]);
    let file = reply_file(&scratch);
    let log = scratch.root.join("log.txt");
    let append = |id: &str, line: &str| {
        block(
            id,
            "file_append",
            &[("path", &log.to_string_lossy()), ("content", line)],
        )
    };
    let first = format!("First reply.\n\n{}\n", append("a1a", "one\n"));
    save(&file, &first);
    watching.wait_applies(1);
    // The next reply pasted below the first, as a user keeping a running transcript would;
    // its second block fails, so its report must name the line it has in the file.
    let second = format!(
        "{first}\nSecond reply.\n\n{}\n{}\n",
        append("b2b", "two\n"),
        block(
            "c3c",
            "file_replace_text",
            &[
                ("path", &log.to_string_lossy()),
                ("old_text", "absent"),
                ("new_text", "x")
            ]
        )
    );
    save(&file, &second);
    watching.wait_applies(2);
    let (code, _out, err) = watching.stop();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        scratch.read("log.txt").as_deref(),
        Some("one\ntwo\n"),
        "the first reply's block ran once"
    );
    assert!(
        err.contains("the first block was applied already (apply ")
            && err.contains("running the 2 new ones"),
        "{err}"
    );
    let results = std::fs::read_to_string(scratch.root.join(".loaf/results.md")).expect("results");
    assert!(results.contains("b2b ✅ file_append"), "{results}");
    assert!(
        !results.contains("a1a"),
        "only the new blocks ran: {results}"
    );
    assert_eq!(loaf_commits(&scratch), 2);
}

#[test]
fn a_loaf_yml_a_watched_reply_widens_waits_for_the_user() {
    // DESIGN §2 "Config a reply writes waits for the user": the watcher applies the next
    // reply under the accepted loaf.yml, says that a change waits, and never accepts it.
    let scratch = Scratch::with(&[("loaf.yml", "allowed-actions: [defaults]\n")]);
    let watching = Watching::start(&scratch, &[]);
    let file = reply_file(&scratch);
    let config = scratch.root.join("loaf.yml");
    let first = block(
        "c1a",
        "file_write",
        &[
            ("path", &config.to_string_lossy()),
            ("content", "allowed-actions: [defaults, exec]\n"),
        ],
    );
    save(&file, &first);
    watching.wait_applies(1);
    let second = format!(
        "{first}\n{}",
        block(
            "e2b",
            "exec",
            &[("lang", "bash"), ("code", "echo ran > ran.txt")]
        )
    );
    save(&file, &second);
    watching.wait_applies(2);
    let (code, out, err) = watching.stop();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(scratch.read("ran.txt"), None, "exec ran unaccepted: {out}");
    let results = std::fs::read_to_string(scratch.root.join(".loaf/results.md")).expect("results");
    assert!(results.contains("e2b ❌ exec"), "{results}");
    assert!(results.contains("`git loaf config accept`"), "{results}");
    assert!(err.contains("`git loaf config accept`"), "{err}");
    let shown = scratch.loaf(&["config"], "");
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("allowed-actions: adds exec"),
        "still waiting after the watcher"
    );
}

#[test]
fn a_review_report_goes_back_with_the_next_results_once() {
    let scratch = Scratch::with(&[("a.txt", "one\n")]);
    let first = crate::scratch::block(
        "r1a",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "ONE\n")],
    );
    scratch.assert_exit(&scratch.apply(&first), 0);
    let rejected = scratch.loaf(
        &["review", "--reject", "a.txt", "--reason", "keep it small"],
        "",
    );
    scratch.assert_exit(&rejected, 0);
    let watching = Watching::start(&scratch, &[]);
    let file = reply_file(&scratch);
    save(&file, &reply_writing(&scratch, "k1m", "hello\n"));
    watching.wait_applies(1);
    let results = std::fs::read_to_string(scratch.root.join(".loaf/results.md")).expect("results");
    assert!(results.contains("k1m ✅ file_write"), "{results}");
    assert!(
        results.contains("keep it small") && results.contains("+ONE"),
        "{results}"
    );
    save(&file, &reply_writing(&scratch, "k2m", "again\n"));
    watching.wait_applies(2);
    let results = std::fs::read_to_string(scratch.root.join(".loaf/results.md")).expect("results");
    assert!(!results.contains("keep it small"), "once: {results}");
    let (code, _, err) = watching.stop();
    assert_eq!(code, Some(0), "{err}");
}
