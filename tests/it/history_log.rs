//! History that reads well in `git log` (issue 25, item 5): an apply's subject fits git's 72
//! characters however long its paths or many its blocks; `Loaf-Result` is one compact line of
//! JSON (each block's action, paths, outcome and output hashes) while the note keeps the
//! rest, so `git loaf show` and `git loaf log` read as before — old commits with the long
//! trailer included; a squash's message lists the folded subjects, not their records; and
//! squash's "N files changed" is `git diff --stat`'s, a rename counted once.

use std::process::Output;

use serde_json::Value;

use crate::scratch::{Scratch, block, trailer};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A folder deep enough that three of its files' paths do not fit one subject line.
/// (Not under `src/repo…`: the tests write `/repo` for the repository's root.)
const DEEP: &str = "src/render/templates/partials/widgets";

/// Blocks writing `n` files under [`DEEP`].
fn deep_writes(n: usize) -> String {
    (1..=n)
        .map(|i| {
            block(
                &format!("w{i:02}"),
                "file_write",
                &[
                    ("path", &format!("/repo/{DEEP}/module_number_{i}.rs")),
                    ("content", "pub fn f() {}\nfn g() {}\n"),
                ],
            )
        })
        .collect()
}

fn subject(s: &Scratch) -> String {
    s.git(&["log", "-1", "--format=%s"]).trim_end().to_owned()
}

#[test]
fn a_subject_fits_72_characters_and_still_names_the_action_and_the_file() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    for n in [5, 20] {
        let out = s.apply(&deep_writes(n).replace("module_number_", &format!("m{n}_")));
        s.assert_exit(&out, 0);
        let subject = subject(&s);
        assert!(subject.chars().count() <= 72, "{n} blocks: {subject}");
        assert!(subject.starts_with("AI: file_write src/"), "{subject}");
        assert!(
            subject.contains(&format!("m{n}_1.rs")),
            "the file's name: {subject}"
        );
        assert!(subject.ends_with(" more"), "the rest counted: {subject}");
    }
}

/// A typical five-block reply: a new file, two edits (one that fails), an append, a read.
fn five_blocks() -> String {
    [
        block(
            "k01",
            "file_write",
            &[
                ("path", &format!("/repo/{DEEP}/subject_line.rs")),
                (
                    "content",
                    "//! The subject.\npub fn subject() -> String {\n    String::new()\n}\n",
                ),
            ],
        ),
        block(
            "k02",
            "file_replace_text",
            &[
                ("path", &format!("/repo/{DEEP}/existing.rs")),
                ("old_text", "old();"),
                ("new_text", "new();\nmore();"),
            ],
        ),
        block(
            "k03",
            "file_replace_text",
            &[
                ("path", &format!("/repo/{DEEP}/existing.rs")),
                ("old_text", "not there"),
                ("new_text", "x"),
            ],
        ),
        block(
            "k04",
            "file_append",
            &[("path", "/repo/README.md"), ("content", "\nMore.\n")],
        ),
        block(
            "k05",
            "file_read",
            &[("path", &format!("/repo/{DEEP}/existing.rs"))],
        ),
    ]
    .concat()
}

fn with_existing() -> Scratch {
    Scratch::with(&[
        ("README.md", "# Title\n"),
        (&format!("{DEEP}/existing.rs"), "fn f() { old(); }\n"),
    ])
}

#[test]
fn loaf_result_is_one_compact_line_with_each_blocks_action_path_and_outcome() {
    let s = with_existing();
    let out = s.apply(&five_blocks());
    s.assert_exit(&out, 1);
    let value = trailer(&s, "HEAD", "Loaf-Result");
    assert!(value.len() < 1024, "{} bytes: {value}", value.len());
    assert!(!value.contains('\n'), "one line: {value}");
    let json: Value = serde_json::from_str(&value).expect("the trailer is JSON");
    let results = json["results"].as_array().expect("results");
    let got: Vec<(&str, &str, bool)> = results
        .iter()
        .map(|r| {
            (
                r["action"].as_str().unwrap_or("?"),
                r["path"].as_str().unwrap_or("?"),
                r["success"].as_bool().unwrap_or(true),
            )
        })
        .collect();
    let existing = format!("{DEEP}/existing.rs");
    let written = format!("{DEEP}/subject_line.rs");
    assert_eq!(
        got,
        [
            ("file_write", written.as_str(), true),
            ("file_replace_text", existing.as_str(), true),
            ("file_replace_text", existing.as_str(), false),
            ("file_append", "README.md", true),
            ("file_read", existing.as_str(), true),
        ],
        "paths relative to the repository: {value}"
    );
    assert_eq!(json["success"], false);
    assert_eq!(json["totalBlocks"], 5);
    // What was read: its size and hash, as before.
    assert_eq!(results[4]["data"]["content"]["bytes"], 26, "{value}");
    assert_eq!(
        results[4]["data"]["content"]["sha256"]
            .as_str()
            .map(str::len),
        Some(64)
    );
    // The rest is the note's: parameters and the failure's message.
    let note: Value =
        serde_json::from_str(&s.git(&["notes", "--ref=loaf", "show", "HEAD"])).expect("note");
    let failed = &note["result"]["results"][2];
    let error = failed["error"].as_str().unwrap_or("");
    assert!(error.contains("old_text not found"), "{note}");
    assert_eq!(failed["params"]["old_text"], "not there");
}

#[test]
fn show_and_log_read_as_before_from_the_note_and_old_long_trailers_still_read() {
    let s = with_existing();
    let applied = s.apply(&five_blocks());
    s.assert_exit(&applied, 1);
    assert!(
        trailer(&s, "HEAD", "Loaf-Result").len() < 1024,
        "the compact trailer"
    );
    let log = stdout(&s.loaf(&["log"], ""));
    assert!(log.contains(" ✅4 ❌1 AI: file_write "), "{log}");
    // `show` prints what apply printed, from the local report, then from the note alone.
    assert_eq!(stdout(&s.loaf(&["show"], "")), stdout(&applied));
    s.git(&["update-ref", "-d", "refs/loaf/reports"]);
    let shown = s.loaf(&["show", "--json"], "");
    s.assert_exit(&shown, 0);
    let json: Value = serde_json::from_slice(&shown.stdout).expect("json");
    let error = json["results"][2]["error"].as_str().unwrap_or("");
    assert!(error.contains("old_text not found"), "{json}");
    assert_eq!(json["results"][1]["params"]["new_text"], "new();\nmore();");
    assert_eq!(json["executedActions"], 5);

    // A squash: its message no longer carries the results, its counts come from its note.
    s.assert_exit(
        &s.apply(&block(
            "k06",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "b\n")],
        )),
        0,
    );
    s.assert_exit(&s.loaf(&["squash"], ""), 0);
    assert_eq!(
        trailer(&s, "HEAD", "Loaf-Result"),
        "",
        "results are in the note"
    );
    s.git(&["update-ref", "-d", "refs/loaf/reports"]);
    let log = stdout(&s.loaf(&["log"], ""));
    assert!(
        log.lines()
            .next()
            .is_some_and(|l| l.contains(" ✅5 ❌1 AI: squashed 2 applies")),
        "{log}"
    );
    let text = stdout(&s.loaf(&["show"], ""));
    assert_eq!(text.matches("=== LOAF RESULTS ===").count(), 2, "{text}");

    // Commits written before: an apply and a squash with the long trailers, no note.
    let old_result = r#"{"success":false,"totalBlocks":3,"executedActions":2,"results":[{"seq":1,"blockId":"a1","action":"file_write","params":{"path":"/r/a","content":{"bytes":3,"sha256":"x"}},"success":true,"data":{"path":"/r/a","bytesWritten":3}},{"seq":2,"blockId":"a2","action":"file_read","params":{"path":"/r/b"},"success":false,"error":"no such file"}],"parseErrors":[{"blockId":"a3","errorType":"validation","message":"bad"}],"git":{"base":"0"}}"#;
    s.write("c.txt", "c\n");
    s.git(&["add", "c.txt"]);
    s.git(&[
        "commit",
        "-q",
        "-m",
        &format!("AI: file_write a\n\nLoaf-Apply: 0ld001\nLoaf-Result: {old_result}"),
    ]);
    s.write("d.txt", "d\n");
    s.git(&["add", "d.txt"]);
    let squash = format!(
        "AI: squashed 2 applies\n\n- AI: x\n- AI: y\n\nLoaf-Squash: 0ld002\nLoaf-Squashed: 0ld003 {0}\nLoaf-Result: {old_result}\nLoaf-Squashed: 0ld004 {0}\nLoaf-Result: {old_result}",
        "0".repeat(40)
    );
    s.git(&["commit", "-q", "-m", &squash]);
    let log = stdout(&s.loaf(&["log", "-n", "2"], ""));
    let lines: Vec<&str> = log.lines().collect();
    assert!(
        lines[0].contains(" 0ld002 ") && lines[0].contains(" ✅2 ❌4 "),
        "{log}"
    );
    assert!(
        lines[1].contains(" 0ld001 ") && lines[1].contains(" ✅1 ❌2 "),
        "{log}"
    );
    let shown = s.loaf(&["show", "--json", "HEAD~1"], "");
    s.assert_exit(&shown, 0);
    let json: Value = serde_json::from_slice(&shown.stdout).expect("json");
    assert_eq!(
        json,
        serde_json::from_str::<Value>(old_result).expect("old")
    );
    let shown = s.loaf(&["show", "--json", "HEAD"], "");
    let json: Value = serde_json::from_slice(&shown.stdout).expect("json");
    assert_eq!(
        json["applies"][1]["result"]["results"][1]["error"],
        "no such file"
    );
}

#[test]
fn a_squash_message_lists_the_subjects_and_is_small() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let mut subjects = Vec::new();
    for i in 1..=10 {
        let reply = block(
            &format!("q{i:02}"),
            "file_write",
            &[
                ("path", &format!("/repo/{DEEP}/file_{i}.rs")),
                ("content", "fn f() {}\n"),
            ],
        );
        s.assert_exit(&s.apply(&reply), 0);
        subjects.push(subject(&s));
    }
    s.assert_exit(&s.loaf(&["squash"], ""), 0);
    let body = s.git(&["log", "-1", "--format=%B"]);
    assert!(body.len() < 1536, "{} bytes: {body}", body.len());
    let listed: Vec<&str> = body.lines().filter_map(|l| l.strip_prefix("- ")).collect();
    assert_eq!(listed, subjects, "{body}");
    assert!(
        body.lines()
            .all(|l| l.chars().count() <= 72 || l.starts_with("Loaf-")),
        "{body}"
    );
    let squashed = s.git(&[
        "log",
        "-1",
        "--format=%(trailers:key=Loaf-Squashed,valueonly)",
    ]);
    assert_eq!(
        squashed.lines().filter(|l| !l.is_empty()).count(),
        10,
        "{body}"
    );
    // The records are all in the squash's note.
    let text = stdout(&s.loaf(&["show"], ""));
    assert_eq!(text.matches("=== LOAF RESULTS ===").count(), 10, "{text}");
}

#[test]
fn squash_counts_files_changed_as_git_diff_stat_a_rename_once() {
    let body = "a line long enough for git to see the move as a rename\n".repeat(4);
    let s = Scratch::with(&[("docs/old_name.md", body.as_str()), ("a.txt", "one\n")]);
    let base = s.head();
    let moved = block(
        "m01",
        "file_move",
        &[
            ("old_path", "/repo/docs/old_name.md"),
            ("new_path", "/repo/docs/new_name.md"),
        ],
    );
    s.assert_exit(&s.apply(&moved), 0);
    let written = block(
        "m02",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "b\n")],
    );
    s.assert_exit(&s.apply(&written), 0);
    s.assert_exit(&s.loaf(&["squash"], ""), 0);
    let stat = s.git(&["diff", "--stat", &base, "HEAD"]);
    let counted = stat.lines().last().unwrap_or("").trim().to_owned();
    assert!(counted.starts_with("2 files changed"), "{stat}");
    assert!(
        subject(&s).ends_with(": 2 files changed"),
        "{}",
        subject(&s)
    );
}
