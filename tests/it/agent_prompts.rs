//! Record mode takes any prompt (DESIGN §3b): NUL bytes, control characters and bytes that
//! are not UTF-8 are stored escaped (the begun turn, the commit's subject, `show`), the turn
//! commits at `Stop`, and the next prompt finds no unfinished turn to forget.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::process::Output;

use crate::scratch::{ENV, Scratch};
use crate::support::{fixture, git_loaf, read};

const SESSION: &str = "9a1b7c3e-2f4d-4e5a-8b6c-0d1e2f3a4b5c";

/// Claude Code's documented event `file` for this repository, as JSON text.
fn event(scratch: &Scratch, file: &str) -> serde_json::Value {
    let text = scratch.reply(&read(&fixture(&format!("agents/claude-code/{file}"))));
    serde_json::from_str(&text).expect("fixture is JSON")
}

/// `git loaf agent-hook claude-code` with `input` (any bytes) on stdin.
fn hook(scratch: &Scratch, input: Vec<u8>) -> Output {
    git_loaf()
        .current_dir(&scratch.root)
        .envs(ENV)
        .args(["agent-hook", "claude-code"])
        .write_stdin(input)
        .output()
        .expect("git-loaf runs")
}

/// The UserPromptSubmit event with `prompt` (JSON-escaped) in it.
fn prompt_event(scratch: &Scratch, prompt: &str) -> Vec<u8> {
    let mut value = event(scratch, "user_prompt_submit.json");
    value["prompt"] = prompt.into();
    value.to_string().into_bytes()
}

fn stop(scratch: &Scratch) -> Output {
    hook(
        scratch,
        event(scratch, "stop.json").to_string().into_bytes(),
    )
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The raw bytes of HEAD's commit object hold no control character but newlines.
fn assert_commit_is_inert(scratch: &Scratch, rev: &str) {
    let raw = scratch.git(&["cat-file", "commit", rev]);
    assert!(!raw.chars().any(|c| c.is_control() && c != '\n'), "{raw:?}");
}

#[test]
fn a_prompt_with_a_nul_and_escapes_commits_at_stop_and_the_next_prompt_keeps_the_turn() {
    let scratch = Scratch::with(&[("a.txt", "a\n")]);
    let initial = scratch.head();
    let prompt = "Fix\0 the \x1b[2J\x1b]0;pwned\x07parser\nand more";
    let begin = hook(&scratch, prompt_event(&scratch, prompt));
    scratch.assert_exit(&begin, 0);
    // The begun turn holds the prompt escaped.
    let turn = scratch.git(&[
        "log",
        "-1",
        "--format=%B",
        &format!("refs/loaf/record/{SESSION}"),
    ]);
    let turn: serde_json::Value = serde_json::from_str(&turn).expect("the turn is JSON");
    assert_eq!(
        turn["prompt"],
        "Fix\\0 the \\e[2J\\e]0;pwned\\x07parser\nand more"
    );
    scratch.write("hello.txt", "hello\n");
    let end = stop(&scratch);
    scratch.assert_exit(&end, 0);
    assert!(
        stderr(&end).contains("record: committed"),
        "{}",
        stderr(&end)
    );
    assert_eq!(
        scratch.git(&["log", "-1", "--format=%s"]),
        "AI: Fix\\0 the \\e[2J\\e]0;pwned\\x07parser\n"
    );
    assert_eq!(scratch.git(&["rev-parse", "HEAD~1"]).trim(), initial);
    assert_commit_is_inert(&scratch, "HEAD");
    let show = scratch.loaf(&["show", "HEAD"], "");
    scratch.assert_exit(&show, 0);
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown.contains("  Fix\\0 the \\e[2J\\e]0;pwned\\x07parser\n  and more\n"),
        "{shown}"
    );
    assert!(
        !shown.contains('\x1b') && !shown.contains('\0'),
        "{shown:?}"
    );
    // The next prompt finds nothing unfinished: nothing forgotten, its own commit.
    let next = hook(&scratch, prompt_event(&scratch, "Now the README"));
    scratch.assert_exit(&next, 0);
    assert_eq!(stderr(&next), "", "no unfinished turn to finish or forget");
    scratch.write("README.md", "read me\n");
    scratch.assert_exit(&stop(&scratch), 0);
    assert_eq!(
        scratch.git(&["log", "-3", "--format=%s"]),
        "AI: Now the README\nAI: Fix\\0 the \\e[2J\\e]0;pwned\\x07parser\ninitial\n"
    );
    scratch.assert_tidy();
}

/// The UserPromptSubmit event whose prompt is `before`, then `raw` exactly as bytes of the
/// event's JSON text, then `after`.
fn raw_prompt_event(scratch: &Scratch, before: &str, raw: &[u8], after: &str) -> Vec<u8> {
    let mut event = prompt_event(scratch, &format!("{before}PLACEHOLDER{after}"));
    let at = event
        .windows(11)
        .position(|w| w == b"PLACEHOLDER")
        .expect("placeholder");
    event.splice(at..at + 11, raw.iter().copied());
    event
}

#[test]
fn a_prompt_that_is_not_utf8_begins_and_commits_a_turn() {
    let scratch = Scratch::with(&[("a.txt", "a\n")]);
    let begin = raw_prompt_event(&scratch, "Make it ", b"caf\xe9\xff", " au lait");
    assert!(
        std::str::from_utf8(&begin).is_err(),
        "the event is not UTF-8"
    );
    scratch.assert_exit(&hook(&scratch, begin), 0);
    scratch.write("menu.txt", "coffee\n");
    scratch.assert_exit(&stop(&scratch), 0);
    assert_eq!(
        scratch.git(&["log", "-1", "--format=%s"]),
        "AI: Make it caf\\xe9\\xff au lait\n"
    );
    assert_commit_is_inert(&scratch, "HEAD");
}

#[test]
fn a_prompt_cut_inside_an_emoji_begins_and_commits_a_turn() {
    let scratch = Scratch::with(&[("a.txt", "a\n")]);
    // What JavaScript's JSON.stringify writes for half of 😀.
    let begin = raw_prompt_event(&scratch, "Smile ", b"\\ud83d", " please");
    scratch.assert_exit(&hook(&scratch, begin), 0);
    scratch.write("smile.txt", "yes\n");
    scratch.assert_exit(&stop(&scratch), 0);
    assert_eq!(
        scratch.git(&["log", "-1", "--format=%s"]),
        "AI: Smile \\ud83d please\n"
    );
}

#[test]
fn record_begin_takes_a_prompt_argument_that_is_not_utf8() {
    let scratch = Scratch::with(&[("a.txt", "a\n")]);
    let out = git_loaf()
        .current_dir(&scratch.root)
        .envs(ENV)
        .args(["record", "begin", "--session", "s1", "--prompt"])
        .arg(OsStr::from_bytes(b"Tidy \xff\x1b[2J up"))
        .output()
        .expect("git-loaf runs");
    scratch.assert_exit(&out, 0);
    scratch.write("a.txt", "tidy\n");
    let commit = scratch.loaf(&["record", "commit", "--session", "s1"], "");
    scratch.assert_exit(&commit, 0);
    assert_eq!(
        scratch.git(&["log", "-1", "--format=%s"]),
        "AI: Tidy \\xff\\e[2J up\n"
    );
}
