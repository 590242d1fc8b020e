//! `git loaf review` on real repositories: one hunk of three rejected (the tip rewritten,
//! the working tree following, the user's uncommitted work untouched, undo and redo), a
//! commit below the tip reverted by a new commit, the walk on a pseudo-terminal, the report
//! delivered once to Claude Code's next prompt and to the next MCP `apply` answer, and the
//! refusals (a path outside, a line no hunk holds, a commit that is not an AI commit, a turn
//! being recorded, a stepped-back HEAD, an edit of the user's under a rejected hunk).

use std::process::{Command, Output, Stdio};

use crate::scratch::{ENV, Scratch, block};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// 1 to 30, one a line, with `changes` (line number, text) made.
fn lines(changes: &[(usize, &str)]) -> String {
    (1..=30)
        .map(|n| {
            changes
                .iter()
                .find(|(at, _)| *at == n)
                .map_or(n.to_string(), |(_, t)| (*t).to_owned())
                + "\n"
        })
        .collect()
}

/// A repository with a.txt and b.txt (1 to 30) and an apply making three hunks: a.txt lines
/// 2 and 25, b.txt line 10.
fn three_hunks() -> Scratch {
    let s = Scratch::with(&[
        ("a.txt", &lines(&[])),
        ("b.txt", &lines(&[])),
        ("other.txt", "other\n"),
    ]);
    let reply = block(
        "k1a",
        "file_write",
        &[
            ("path", "/repo/a.txt"),
            ("content", &lines(&[(2, "two"), (25, "twenty-five")])),
        ],
    ) + &block(
        "k2b",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", &lines(&[(10, "ten")]))],
    );
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    s
}

fn hunk_count(s: &Scratch, range: &str) -> usize {
    s.git(&["diff", range]).matches("\n@@ ").count()
        + usize::from(s.git(&["diff", range]).starts_with("@@"))
}

#[test]
fn one_hunk_of_three_rejected_leaves_the_commit_and_the_files_with_two_and_undo_brings_it_back() {
    let s = three_hunks();
    assert_eq!(hunk_count(&s, "HEAD~1..HEAD"), 3);
    let listed = s.loaf(&["review", "--list"], "");
    s.assert_exit(&listed, 0);
    assert_eq!(
        stdout(&listed),
        "1  a.txt:1-5  +1 -1\n2  a.txt:22-28  +1 -1\n3  b.txt:7-13  +1 -1\n"
    );
    // The user's uncommitted work: another file, and a part of a.txt the review leaves.
    s.write("other.txt", "mine\n");
    s.write("notes.txt", "untracked\n");
    s.write(
        "a.txt",
        &lines(&[(2, "two"), (15, "fifteen, mine"), (25, "twenty-five")]),
    );
    let before = s.head();

    let out = s.loaf(
        &[
            "review",
            "--reject",
            "a.txt:25",
            "--reason",
            "keep the number",
        ],
        "",
    );
    s.assert_exit(&out, 0);
    let report = stdout(&out);
    assert!(report.contains("+twenty-five"), "{report}");
    assert!(report.contains("Reason: keep the number"), "{report}");
    assert!(report.contains("Do not reintroduce"), "{report}");
    assert_ne!(s.head(), before, "the tip is rewritten");
    assert_eq!(
        s.git(&["rev-parse", "HEAD~1"]),
        s.git(&["rev-parse", &format!("{before}~1")])
    );
    assert_eq!(
        hunk_count(&s, "HEAD~1..HEAD"),
        2,
        "the commit holds two hunks"
    );
    let message = s.git(&["log", "-1", "--format=%B"]);
    assert!(message.contains("Loaf-Review: "), "{message}");
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some(lines(&[(2, "two"), (15, "fifteen, mine")]).as_str()),
        "the file loses the hunk and keeps the user's line"
    );
    assert_eq!(
        s.read("b.txt").as_deref(),
        Some(lines(&[(10, "ten")]).as_str())
    );
    assert_eq!(s.read("other.txt").as_deref(), Some("mine\n"));
    assert_eq!(s.read("notes.txt").as_deref(), Some("untracked\n"));
    assert_eq!(
        s.git(&["diff", "--name-only"]),
        "a.txt\nother.txt\n",
        "the user's edits stay uncommitted"
    );
    let reviewed = s.state();

    let undo = s.loaf(&["undo"], "");
    s.assert_exit(&undo, 0);
    assert_eq!(s.head(), before);
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some(lines(&[(2, "two"), (15, "fifteen, mine"), (25, "twenty-five")]).as_str()),
        "undo brings the hunk back"
    );
    let redo = s.loaf(&["redo"], "");
    s.assert_exit(&redo, 0);
    assert_eq!(s.state(), reviewed, "redo removes it again");
    s.assert_tidy();
}

#[test]
fn a_commit_below_the_tip_gets_a_commit_that_reverts_the_hunk() {
    let s = three_hunks();
    let ai = s.head();
    s.write("later.txt", "later\n");
    s.commit_all("mine, later");
    let out = s.loaf(&["review", &ai, "--reject", "b.txt"], "");
    s.assert_exit(&out, 0);
    let subject = s.git(&["log", "-1", "--format=%s", &ai]);
    assert_eq!(
        s.git(&["log", "-1", "--format=%s"]).trim(),
        format!("AI review: rejected 1 hunk of {}", subject.trim())
    );
    assert_eq!(s.git(&["rev-parse", "HEAD~2"]).trim(), ai, "history kept");
    assert_eq!(s.read("b.txt").as_deref(), Some(lines(&[]).as_str()));
    assert_eq!(s.git(&["status", "--porcelain"]), "");
    let undo = s.loaf(&["undo"], "");
    s.assert_exit(&undo, 0);
    assert_eq!(
        s.read("b.txt").as_deref(),
        Some(lines(&[(10, "ten")]).as_str())
    );
}

#[test]
fn on_a_terminal_it_asks_hunk_by_hunk_and_takes_a_reason() {
    if !crate::cli_output::have_script() {
        return;
    }
    let s = three_hunks();
    let shown = review_in_terminal(&s, b"y\nn\nnot this one\n?\ny\n", &[]);
    assert!(
        shown.contains("(1/3) Keep this hunk [y,n,e,q,?]?"),
        "{shown}"
    );
    assert!(shown.contains("Why (one line"), "{shown}");
    assert!(shown.contains("s - split"), "the help: {shown}");
    assert!(shown.contains("Reason: not this one"), "{shown}");
    assert_eq!(hunk_count(&s, "HEAD~1..HEAD"), 2);
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some(lines(&[(2, "two")]).as_str())
    );
}

/// Colour as `git add -p` takes it: git's `color.interactive` (else `color.ui`) first, the
/// terminal and `NO_COLOR` only when git's setting is `auto`.
#[test]
fn on_a_terminal_colour_follows_gits_setting() {
    if !crate::cli_output::have_script() {
        return;
    }
    let s = three_hunks();
    s.git(&["config", "color.interactive", "always"]);
    let shown = review_in_terminal(&s, b"q\n", &[]);
    assert!(
        shown.contains("\u{1b}["),
        "coloured although NO_COLOR is set: {shown}"
    );
    s.git(&["config", "color.interactive", "never"]);
    let shown = review_in_terminal(&s, b"q\n", &[("NO_COLOR", "")]);
    assert!(!shown.contains("\u{1b}["), "never: {shown}");
}

/// `git-loaf review` on a pseudo-terminal in `s`, with `typed` as the keyboard; what the
/// terminal showed.
fn review_in_terminal(s: &Scratch, typed: &[u8], env: &[(&str, &str)]) -> String {
    use std::io::Write as _;
    let bin = assert_cmd::cargo::cargo_bin("git-loaf");
    let mut child = Command::new("script")
        .args(["-qec", &format!("'{}' review", bin.display()), "/dev/null"])
        .current_dir(&s.root)
        .envs(ENV)
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .env("SHELL", "/bin/sh")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(typed)
        .expect("typed");
    stdout(&child.wait_with_output().expect("script ends"))
}

#[test]
fn on_a_terminal_a_hunk_splits_at_its_context_and_an_edit_is_what_is_kept() {
    if !crate::cli_output::have_script() {
        return;
    }
    let s = Scratch::with(&[("a.txt", &lines(&[]))]);
    // One hunk with two changes three lines apart (lines 5 and 9).
    let reply = block(
        "k1a",
        "file_write",
        &[
            ("path", "/repo/a.txt"),
            ("content", &lines(&[(5, "five"), (9, "nine")])),
        ],
    );
    s.assert_exit(&s.apply(&reply), 0);
    assert_eq!(
        stdout(&s.loaf(&["review", "--list"], "")),
        "1  a.txt:2-12  +2 -2\n"
    );
    let shown = review_in_terminal(&s, b"s\ny\nn\nnine stays\n", &[]);
    assert!(shown.contains("Split into 2 hunks."), "{shown}");
    assert!(
        shown.contains("(part 2/2 of hunk 1) Keep this part"),
        "{shown}"
    );
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some(lines(&[(5, "five")]).as_str())
    );
    assert!(shown.contains("The user kept this part of it"), "{shown}");

    // Back, then an edit: the editor turns `five` into `FIVE`.
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    let editor = s.sibling("editor.sh");
    std::fs::write(&editor, "sed -i 's/^+five$/+FIVE/' \"$1\"\n").expect("editor");
    let editor = format!("sh {}", editor.display());
    let shown = review_in_terminal(&s, b"e\nshouting\n", &[("GIT_EDITOR", &editor)]);
    assert!(shown.contains("Reason: shouting"), "{shown}");
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some(lines(&[(5, "FIVE"), (9, "nine")]).as_str())
    );
}

#[test]
fn copy_puts_the_report_on_the_clipboard() {
    let s = three_hunks();
    let clip = s.sibling("clipboard");
    let out = crate::support::git_loaf()
        .current_dir(&s.root)
        .envs(ENV)
        .env("LOAF_CLIPBOARD_FILE", &clip)
        .args(["review", "--reject", "3", "--reason", "no", "--copy"])
        .output()
        .expect("runs");
    s.assert_exit(&out, 0);
    let copied = crate::support::read(&clip);
    assert!(
        copied.starts_with("git-loaf review: the user rejected 1 hunk"),
        "{copied}"
    );
    assert!(
        copied.contains("+ten") && copied.contains("Reason: no"),
        "{copied}"
    );
}

#[test]
fn the_next_claude_prompt_carries_the_report_once() {
    let s = three_hunks();
    let out = s.loaf(
        &[
            "review",
            "--reject",
            "b.txt:10",
            "--reason",
            "ten stays a number",
        ],
        "",
    );
    s.assert_exit(&out, 0);
    let status = s.loaf(&["status"], "");
    s.assert_exit(&status, 0);
    assert!(
        stdout(&status).contains("A review report waits for the model"),
        "{}",
        stdout(&status)
    );
    let prompt = crate::agents::event(&s, "claude-code/user_prompt_submit.json", Some("go on"));
    let first = crate::agents::hook(&s, "claude-code", &prompt);
    s.assert_exit(&first, 0);
    let status = s.loaf(&["status", "--json"], "");
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(status["review_reports"], 0, "delivered: no longer waiting");
    let told = stdout(&first);
    assert!(told.contains("-10\n+ten"), "{told}");
    assert!(told.contains("ten stays a number"), "{told}");
    let stop = crate::agents::event(&s, "claude-code/stop.json", None);
    s.assert_exit(&crate::agents::hook(&s, "claude-code", &stop), 0);
    let second = crate::agents::hook(&s, "claude-code", &prompt);
    s.assert_exit(&second, 0);
    assert_eq!(stdout(&second), "", "delivered once");
    let last = s.root.join(".git/loaf/review/LAST.md");
    assert!(crate::support::read(&last).contains("ten stays a number"));
}

#[test]
fn hostile_or_wrong_input_is_refused_and_changes_nothing() {
    let s = three_hunks();
    let state = s.state();
    for (args, code, says) in [
        (
            vec!["review", "--reject", "../outside.txt"],
            2,
            "outside the repository",
        ),
        (
            vec!["review", "--reject", "/etc/passwd"],
            2,
            "outside the repository",
        ),
        (
            vec!["review", "--reject", "a.txt/../../x"],
            2,
            "outside the repository",
        ),
        (
            vec!["review", "--reject", "a.txt:999"],
            2,
            "no hunk of a.txt holds line 999",
        ),
        (vec!["review", "--reject", "9"], 2, "there is no hunk 9"),
        (
            vec!["review", "--reject", "nope.txt"],
            2,
            "does not change nope.txt",
        ),
        (
            vec!["review", "HEAD~1", "--reject", "1"],
            2,
            "is not an AI commit",
        ),
        (vec!["review"], 2, "not on a terminal"),
    ] {
        let out = s.loaf(&args, "");
        s.assert_exit(&out, code);
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("hint:"), "{args:?}");
        assert_eq!(s.state(), state, "{args:?} changed nothing");
    }

    // The user's own uncommitted edit on a rejected hunk's lines.
    s.write("a.txt", &lines(&[(2, "two"), (25, "25, mine")]));
    let state = s.state();
    let out = s.loaf(&["review", "--reject", "a.txt:25"], "");
    s.assert_exit(&out, 3);
    assert!(stderr(&out).contains("a.txt"), "{}", stderr(&out));
    assert_eq!(s.state(), state);
}

#[test]
fn refused_while_a_turn_is_recorded_or_stepped_back() {
    let s = three_hunks();
    let prompt = crate::agents::event(&s, "claude-code/user_prompt_submit.json", Some("edit"));
    s.assert_exit(&crate::agents::hook(&s, "claude-code", &prompt), 0);
    let out = s.loaf(&["review", "--reject", "1"], "");
    s.assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("turn is being recorded"),
        "{}",
        stderr(&out)
    );
    let stop = crate::agents::event(&s, "claude-code/stop.json", None);
    s.assert_exit(&crate::agents::hook(&s, "claude-code", &stop), 0);

    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    let out = s.loaf(&["review", "--reject", "1"], "");
    s.assert_exit(&out, 3);
    assert!(stderr(&out).contains("step-forward"), "{}", stderr(&out));
}

#[test]
fn gemini_gets_the_report_as_additional_context_and_cursor_leaves_it_waiting() {
    let s = three_hunks();
    let out = s.loaf(&["review", "--reject", "3", "--reason", "ten stays"], "");
    s.assert_exit(&out, 0);
    let cursor = crate::agents::event(&s, "cursor/before_submit_prompt.json", None);
    let answer = crate::agents::hook(&s, "cursor", &cursor);
    s.assert_exit(&answer, 0);
    assert_eq!(
        stdout(&answer),
        "{\"continue\":true}\n",
        "Cursor cannot carry it"
    );
    s.assert_exit(
        &crate::agents::hook(
            &s,
            "cursor",
            &crate::agents::event(&s, "cursor/stop.json", None),
        ),
        0,
    );
    let gemini = crate::agents::event(&s, "gemini/before_agent.json", None);
    let answer = crate::agents::hook(&s, "gemini", &gemini);
    s.assert_exit(&answer, 0);
    let value: serde_json::Value = serde_json::from_slice(&answer.stdout).expect("JSON");
    let context = value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(
        context.contains("ten stays") && context.contains("+ten"),
        "{value}"
    );
}

#[test]
fn an_undone_review_is_not_reported_until_it_is_redone() {
    let s = three_hunks();
    let out = s.loaf(&["review", "--reject", "3", "--reason", "ten stays"], "");
    s.assert_exit(&out, 0);
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    let prompt = crate::agents::event(&s, "claude-code/user_prompt_submit.json", Some("go"));
    let stop = crate::agents::event(&s, "claude-code/stop.json", None);
    let told = crate::agents::hook(&s, "claude-code", &prompt);
    s.assert_exit(&told, 0);
    assert_eq!(stdout(&told), "", "the hunk is back: nothing to tell");
    s.assert_exit(&crate::agents::hook(&s, "claude-code", &stop), 0);
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    let told = crate::agents::hook(&s, "claude-code", &prompt);
    s.assert_exit(&told, 0);
    assert!(stdout(&told).contains("ten stays"), "{}", stdout(&told));
}
