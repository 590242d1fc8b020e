//! Where git-loaf's output goes and how it looks, for every command: results on stdout,
//! errors on stderr as `error:` then `hint:`, colour only on a terminal (never with
//! `NO_COLOR`), and the progress line of a long `exec` only on a terminal, erased when done.
//!
//! The terminal is a real pseudo-terminal made by util-linux `script`; those tests are
//! skipped, saying why, where `script` is missing (and fail when `CI` is set).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::scratch::{ENV, Scratch, block};
use crate::support::git_loaf;

const ESC: u8 = 0x1b;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `git-loaf args` in `dir` with the output piped, colour allowed by the environment
/// (`NO_COLOR` unset, a colour terminal type).
fn piped(dir: &Path, args: &[&str]) -> Output {
    git_loaf()
        .current_dir(dir)
        .envs(ENV)
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap_or(dir))
        .args(args)
        .write_stdin("")
        .output()
        .expect("git-loaf runs")
}

fn assert_error_format(what: &str, out: &Output) {
    let stderr = text(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(2 | 3)),
        "{what}: exit {:?}\n{stderr}",
        out.status.code()
    );
    assert!(
        out.stdout.is_empty(),
        "{what}: an error prints nothing on stdout: {}",
        text(&out.stdout)
    );
    assert!(stderr.starts_with("error: "), "{what}:\n{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("hint: ") && l.len() > 10),
        "{what}: a hint line:\n{stderr}"
    );
    assert!(
        !out.stderr.contains(&ESC),
        "{what}: no colour into a pipe:\n{stderr:?}"
    );
}

#[test]
fn every_command_reports_errors_on_stderr_with_a_hint_and_nothing_on_stdout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = dir.path().join("not-a-repo");
    std::fs::create_dir(&outside).expect("mkdir");
    let reply = block(
        "a1b",
        "file_write",
        &[("path", "/x/a.txt"), ("content", "a")],
    );
    std::fs::write(outside.join("reply.md"), reply).expect("reply");
    let bad_config = dir.path().join("bad-config");
    std::fs::create_dir(&bad_config).expect("mkdir");
    std::fs::write(bad_config.join("loaf.yml"), "allowed-actions: [nope\n").expect("yml");
    let cases: &[(&Path, &[&str])] = &[
        (&outside, &["apply", "reply.md"]),
        (&outside, &["apply", "missing.md"]),
        (&outside, &["apply", "--bogus"]),
        (&outside, &["parse", "missing.md"]),
        (&outside, &["undo"]),
        (&outside, &["undo", "--to", "x"]),
        (&outside, &["redo"]),
        (&outside, &["log"]),
        (&outside, &["show"]),
        (&outside, &["take", "3f2a1c"]),
        (&outside, &["drop", "3f2a1c"]),
        (&outside, &["step-back"]),
        (&outside, &["step-forward"]),
        (&outside, &["squash"]),
        (&outside, &["squash", "--after", "soon"]),
        (&bad_config, &["instructions"]),
        (&bad_config, &["apply", "--dry-run", "-"]),
        (&outside, &["completions", "tcsh"]),
        (&outside, &["install-man-pages", "--dir", "/dev/null/man1"]),
        (&outside, &["no-such-command"]),
    ];
    for (dir, args) in cases {
        let out = piped(dir, args);
        assert_error_format(&format!("git loaf {}", args.join(" ")), &out);
    }
}

#[test]
fn a_usage_error_hints_at_the_commands_short_help() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = piped(dir.path(), &["squash", "--hour", "3"]);
    assert_error_format("squash --hour", &out);
    let stderr = text(&out.stderr);
    assert!(
        stderr.ends_with("hint: `git loaf squash -h` shows the options, with examples\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("For more information"), "{stderr}");
}

#[test]
fn results_go_to_stdout_and_stderr_has_only_notes() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let reply = s.reply(&block(
        "a1b",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "b")],
    ));
    std::fs::write(s.sibling("reply.md"), &reply).expect("reply");
    let reply_path = s.sibling("reply.md");
    let reply_path = reply_path.to_str().expect("utf-8 path");
    let cases: &[&[&str]] = &[
        &["parse", reply_path],
        &["apply", "--dry-run", reply_path],
        &["apply", reply_path],
        &["log"],
        &["show"],
        &["undo"],
        &["redo"],
        &["squash", "--dry-run", "--containing", ""],
        &["instructions"],
        &["completions", "bash"],
        &["-h"],
        &["help", "log"],
        &["--version"],
    ];
    for args in cases {
        let out = piped(&s.root, args);
        let what = format!("git loaf {}", args.join(" "));
        assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
        assert!(!out.stdout.is_empty(), "{what}: the result is on stdout");
        // stderr is for the user: notes about the repository, never the result.
        assert!(
            text(&out.stderr).lines().all(|l| l.starts_with("note: ")),
            "{what}: nothing but notes on stderr: {}",
            text(&out.stderr)
        );
        assert!(!out.stdout.contains(&ESC), "{what}: no colour into a pipe");
    }
}

#[test]
fn clicolor_force_colours_even_a_pipe_and_no_color_beats_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let forced = git_loaf()
        .current_dir(dir.path())
        .envs(ENV)
        .env_remove("NO_COLOR")
        .env("CLICOLOR_FORCE", "1")
        .args(["log"])
        .output()
        .expect("runs");
    assert!(
        text(&forced.stderr).starts_with("\x1b[1;31merror:\x1b[0m "),
        "{:?}",
        text(&forced.stderr)
    );
    let refused = git_loaf()
        .current_dir(dir.path())
        .envs(ENV)
        .env("NO_COLOR", "1")
        .env("CLICOLOR_FORCE", "1")
        .args(["log"])
        .output()
        .expect("runs");
    assert!(!refused.stderr.contains(&ESC), "{refused:?}");
}

/// Whether util-linux `script` can give a command a pseudo-terminal (if not, the caller
/// skips the test, saying why, or fails it when `CI` is set).
pub(crate) fn have_script() -> bool {
    let works = Command::new("script")
        .args(["-qec", "true", "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|out| out.status.success());
    if !works {
        crate::support::unavailable(
            "util-linux `script` is not available to make a pseudo-terminal",
        );
    }
    works
}

/// Single-quoted for sh.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Runs the shell command line `command` (`git-loaf` in it is the binary under test) in a
/// pseudo-terminal in `dir`; returns what the terminal showed.
fn in_terminal(dir: &Path, command: &str, env: &[(&str, &str)]) -> String {
    let bin = assert_cmd::cargo::cargo_bin("git-loaf");
    let command = command.replace("git-loaf", &quoted(&bin.to_string_lossy()));
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir)
        .envs(ENV)
        .env("SHELL", "/bin/sh")
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("LOAF_LOG")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("script runs");
    text(&out.stdout)
}

#[test]
fn a_terminal_gets_colour_unless_no_color_is_set() {
    if !have_script() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let error = in_terminal(dir.path(), "git-loaf log", &[]);
    assert!(error.contains("\x1b[1;31merror:\x1b[0m "), "{error:?}");
    assert!(error.contains("\x1b[33mhint:\x1b[0m "), "{error:?}");
    let usage = in_terminal(dir.path(), "git-loaf log --bogus", &[]);
    assert!(usage.contains("\x1b[33mhint:\x1b[0m "), "{usage:?}");
    let help = in_terminal(dir.path(), "git-loaf apply -h", &[]);
    assert!(help.contains("\x1b[1m\x1b[4mExamples:"), "{help:?}");

    for (what, command) in [
        ("an error", "git-loaf log"),
        ("a usage error", "git-loaf log --bogus"),
        ("help", "git-loaf apply -h"),
    ] {
        let plain = in_terminal(dir.path(), command, &[("NO_COLOR", "1")]);
        assert!(
            plain.contains("Usage:") || plain.contains("error:"),
            "{plain:?}"
        );
        assert!(!plain.contains('\x1b'), "{what} with NO_COLOR: {plain:?}");
    }
}

/// A repository where exec may run, and a reply whose exec runs for two seconds.
fn sleeping_reply() -> (Scratch, std::path::PathBuf) {
    let s = Scratch::with(&[("loaf.yml", "allowed-actions: [file_read, exec]\n")]);
    let reply = block(
        "s2p",
        "exec",
        &[("lang", "bash"), ("code", "sleep 2; echo slept")],
    );
    let path = s.sibling("reply.md");
    std::fs::write(&path, reply).expect("reply");
    (s, path)
}

#[test]
fn a_long_exec_shows_a_progress_line_on_a_terminal_and_erases_it() {
    if !have_script() {
        return;
    }
    let (s, reply) = sleeping_reply();
    let report = s.sibling("report.txt");
    let command = format!(
        "git-loaf apply {} > {}",
        quoted(&reply.to_string_lossy()),
        quoted(&report.to_string_lossy())
    );
    // stdout goes to a file, so the terminal shows stderr alone.
    let shown = in_terminal(&s.root, &command, &[]);
    let drawn = "exec bash: sleep 2; echo slept · 1s";
    let at = shown
        .find(drawn)
        .unwrap_or_else(|| panic!("no progress line: {shown:?}"));
    assert!(
        shown.ends_with("\r\x1b[K"),
        "the line is erased at the end: {shown:?}"
    );
    assert!(
        shown[..at].ends_with("\r\x1b[K\x1b[2m"),
        "drawn from the line's start, dim: {shown:?}"
    );
    let report = std::fs::read_to_string(&report).expect("report");
    assert!(report.contains("s2p ✅ exec bash"), "{report}");
    assert!(
        !report.contains('\x1b') && !report.contains(" · 1s"),
        "{report:?}"
    );

    // NO_COLOR: the same line, without colour.
    let plain = in_terminal(&s.root, &command, &[("NO_COLOR", "1")]);
    assert!(plain.contains(&format!("\r\x1b[K{drawn}")), "{plain:?}");
    assert!(!plain.contains("\x1b[2m"), "{plain:?}");
}

#[test]
fn no_progress_line_into_a_pipe_or_with_json() {
    let (s, reply) = sleeping_reply();
    let reply = reply.to_string_lossy().into_owned();
    let out = piped(&s.root, &["apply", &reply]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("sleep 2"), "{out:?}");
    assert!(!out.stderr.contains(&ESC), "{out:?}");
    if !have_script() {
        return;
    }
    let json = s.sibling("report.json");
    let command = format!(
        "git-loaf apply --json {} > {}",
        quoted(&reply),
        quoted(&json.to_string_lossy())
    );
    let shown = in_terminal(&s.root, &command, &[]);
    assert!(!shown.contains("sleep 2"), "{shown:?}");
    let json = std::fs::read_to_string(&json).expect("json");
    assert!(json.contains("\"success\": true"), "{json}");
}

#[test]
fn a_long_hook_shows_its_command_on_the_progress_line() {
    if !have_script() {
        return;
    }
    let s = Scratch::with(&[(
        "loaf.yml",
        "hooks:\n  before:\n    - run: sleep 1.5 && true\n",
    )]);
    let reply = s.reply(&block("r1d", "file_read", &[("path", "/repo/loaf.yml")]));
    let path = s.sibling("reply.md");
    std::fs::write(&path, reply).expect("reply");
    let command = format!(
        "git-loaf apply {} > /dev/null",
        quoted(&path.to_string_lossy())
    );
    let shown = in_terminal(&s.root, &command, &[("NO_COLOR", "1")]);
    assert!(
        shown.contains("\r\x1b[Khook: sleep 1.5 && true · 1s"),
        "{shown:?}"
    );
    assert!(shown.ends_with("\r\x1b[K"), "{shown:?}");
}
