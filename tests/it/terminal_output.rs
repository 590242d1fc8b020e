//! Output printed as text has control sequences neutralised (DESIGN §2 "Only what git-loaf
//! opened reaches code"): what an exec printed (a clipboard write by OSC 52, a screen
//! clear, a title change) shows escaped in the text report, on stdout and in `git loaf show`,
//! while `--json` keeps the bytes.

use std::process::Output;

use crate::scratch::{Scratch, block};

/// An exec that prints a clipboard write, a screen clear and a title change, then writes a
/// file (so the apply commits).
const SEQUENCES: &str = "printf 'copied\\033]52;c;cm0gLXJmIH4=\\007 cleared\\033[2J titled\\033]0;pwned\\007 nul\\000 del\\177 cr\\rover\\n' && printf 'x\\n' > out.txt";

fn scratch() -> Scratch {
    Scratch::with(&[("loaf.yml", "allowed-actions: [defaults, exec]\n")])
}

fn apply(scratch: &Scratch, args: &[&str]) -> Output {
    let reply = block("t1e", "exec", &[("lang", "bash"), ("code", SEQUENCES)]);
    scratch.loaf(args, &scratch.reply(&reply))
}

/// No byte a terminal would act on: only newlines and tabs among the controls.
fn assert_inert(text: &[u8]) {
    let text = String::from_utf8_lossy(text);
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{text:?}"
    );
}

#[test]
fn exec_output_in_the_text_report_shows_control_sequences_escaped() {
    let scratch = scratch();
    let out = apply(&scratch, &["apply"]);
    scratch.assert_exit(&out, 0);
    assert_inert(&out.stdout);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "copied\\e]52;c;cm0gLXJmIH4=\\x07 cleared\\e[2J titled\\e]0;pwned\\x07 nul\\0 del\\x7f cr\\rover\n"
        ),
        "{text}"
    );
    // `show` prints the report kept with the apply: the same.
    let show = scratch.loaf(&["show", "HEAD"], "");
    scratch.assert_exit(&show, 0);
    assert_inert(&show.stdout);
    assert!(
        String::from_utf8_lossy(&show.stdout).contains("cleared\\e[2J titled"),
        "{}",
        String::from_utf8_lossy(&show.stdout)
    );
}

#[test]
fn json_output_keeps_the_bytes_exec_printed() {
    let scratch = scratch();
    let out = apply(&scratch, &["apply", "--json"]);
    scratch.assert_exit(&out, 0);
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        result["results"][0]["data"]["stdout"],
        "copied\x1b]52;c;cm0gLXJmIH4=\x07 cleared\x1b[2J titled\x1b]0;pwned\x07 nul\0 del\x7f cr\rover\n"
    );
}

#[test]
fn a_path_holding_an_escape_shows_escaped_in_the_report_and_the_commit_subject() {
    let scratch = scratch();
    let reply = block(
        "p1e",
        "file_write",
        &[("path", "/repo/a\x1b]0;pwned\x07b.txt"), ("content", "x")],
    );
    let out = scratch.loaf(&["apply"], &scratch.reply(&reply));
    scratch.assert_exit(&out, 0);
    assert_inert(&out.stdout);
    assert!(
        scratch.root.join("a\x1b]0;pwned\x07b.txt").exists(),
        "the file has its name"
    );
    let subject = scratch.git(&["log", "-1", "--format=%s"]);
    assert_eq!(subject, "AI: file_write a\\e]0;pwned\\x07b.txt\n");
}
