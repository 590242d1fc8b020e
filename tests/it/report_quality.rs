//! The report as the model receives it, one snapshot per way a reply goes wrong (issue 9,
//! items 1, 2 and 8): no block at all, things that looked like a block, blocks in the
//! reply's order, a block swallowed by an unclosed heredoc, action targets, the header's
//! verdict, and a dry run that honours loaf.yml. Every line must tell the model what to do.

use std::process::Output;

use insta::assert_snapshot;

use crate::scratch::{Scratch, block, trailer};

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

/// stdout as the model sees it, with the repository at `/repo` and the apply's id and
/// commit replaced by `<id>` and `<commit>`.
fn report(s: &Scratch, out: &Output) -> String {
    let mut text = s.redact(&out.stdout);
    let head = s.head();
    if head != "unborn" {
        let id = trailer(s, "HEAD", "Loaf-Apply");
        if !id.is_empty() {
            text = text.replace(&id, "<id>");
        }
        text = text.replace(&head[..7], "<commit>");
    }
    // An apply that committed nothing has an id no trailer holds.
    if let Some(at) = text.find("=== apply ").map(|at| at + "=== apply ".len())
        && text
            .get(at..at + 6)
            .is_some_and(|id| id.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        text.replace_range(at..at + 6, "<id>");
    }
    text
}

/// `#!nesl` block text with a heredoc parameter last (`key = <<'EOT_id'` … `EOT_id`).
fn heredoc_block(id: &str, action: &str, path: &str, key: &str, body: &str) -> String {
    format!(
        "#!nesl [@three-char-SHA-256: {id}]\naction = \"{action}\"\npath = \"{path}\"\n{key} = <<'EOT_{id}'\n{body}EOT_{id}\n#!end_{id}\n"
    )
}

/// Neither the user's state nor git-loaf's own folder changed: no transaction began.
fn assert_untouched(s: &Scratch, before: &str) {
    assert_eq!(s.state(), before, "nothing of the user's changed");
    let common = s.git(&["rev-parse", "--git-common-dir"]);
    assert!(
        !s.root.join(common.trim()).join("loaf").exists(),
        "no lock, stage or operation log was made"
    );
}

#[test]
fn an_empty_reply_says_no_block_was_found_and_exits_1() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let before = s.state();
    let out = s.apply("");
    assert_eq!(code(&out), Some(1), "not a silent success");
    assert_snapshot!(report(&s, &out), @r#"
    === LOAF RESULTS === NOTHING APPLIED
    FATAL: the reply is empty: no NESL block found, nothing ran. A block looks like this (any 3-letter id, the same in all three places):
        #!nesl [@three-char-SHA-256: abc]
        action = "file_write"
        path = "/absolute/path/to/file"
        content = <<'EOT_abc'
        …file contents…
        EOT_abc
        #!end_abc
    === END ===
    "#);
    assert_untouched(&s, &before);
    for mode in ["--no-commit", "--dry-run"] {
        let out = s.loaf(&["apply", mode], "");
        assert_eq!(code(&out), Some(1), "{mode}");
        assert!(
            s.redact(&out.stdout)
                .contains("FATAL: the reply is empty: no NESL block found"),
            "{mode}: {}",
            s.redact(&out.stdout)
        );
    }
    assert_untouched(&s, &before);
}

#[test]
fn prose_with_a_headerless_nesl_fence_names_the_fence() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let before = s.state();
    let reply = "I'll update the file:\n\n```nesl\naction = \"file_write\"\npath = \"/repo/a.txt\"\ncontent = \"b\"\n```\n\nDone.\n";
    let out = s.apply(reply);
    assert_eq!(code(&out), Some(1));
    assert_snapshot!(report(&s, &out), @r#"
    === LOAF RESULTS === NOTHING APPLIED: 0 ✅ 1 ❌
    FATAL: no NESL block found in the reply, nothing ran; what looked like one is listed below. A block looks like this (any 3-letter id, the same in all three places):
        #!nesl [@three-char-SHA-256: abc]
        action = "file_write"
        path = "/absolute/path/to/file"
        content = <<'EOT_abc'
        …file contents…
        EOT_abc
        #!end_abc
    unknown ❌ ERROR: a ```nesl fence (lines 3-7) with no `#!nesl` header line, so nothing in it ran; a block starts with a line `#!nesl [@three-char-SHA-256: abc]` and ends with `#!end_abc` (any 3-letter id, the same in both) (line 3)
    === END ===
    "#);
    assert_untouched(&s, &before);
}

#[test]
fn a_malformed_header_shows_the_expected_form_in_text_and_json() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let reply = "Here:\n#!nesl [@three-char-SHA-256:k2p]\naction = \"file_write\"\npath = \"/repo/a.txt\"\ncontent = \"b\"\n#!end_k2p\n#!nesl[@three-char-SHA-256: k3q]\naction = \"file_delete\"\npath = \"/repo/a.txt\"\n#!end_k3q\n";
    let out = s.apply(reply);
    assert_eq!(code(&out), Some(1));
    assert_snapshot!(report(&s, &out), @r#"
    === LOAF RESULTS === NOTHING APPLIED: 0 ✅ 2 ❌
    FATAL: no NESL block found in the reply, nothing ran; what looked like one is listed below. A block looks like this (any 3-letter id, the same in all three places):
        #!nesl [@three-char-SHA-256: abc]
        action = "file_write"
        path = "/absolute/path/to/file"
        content = <<'EOT_abc'
        …file contents…
        EOT_abc
        #!end_abc
    unknown ❌ ERROR: `#!nesl [@three-char-SHA-256:k2p]` is not a NESL header: it needs a space after the colon; write `#!nesl [@three-char-SHA-256: k2p]` (and end the block with `#!end_k2p`) (line 2)
    unknown ❌ ERROR: `#!nesl[@three-char-SHA-256: k3q]` is not a NESL header: it needs a space after `#!nesl`; write `#!nesl [@three-char-SHA-256: k3q]` (and end the block with `#!end_k3q`) (line 7)
    === END ===
    "#);
    let json = s.loaf(&["apply", "--json"], &s.reply(reply));
    assert_eq!(code(&json), Some(1));
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(value["success"], false);
    assert!(
        value["fatalError"]
            .as_str()
            .is_some_and(|f| f.starts_with("no NESL block found")),
        "{value}"
    );
    assert_eq!(value["parseErrors"][0]["blockStartLine"], 2);
    assert_eq!(value["parseErrors"][1]["blockStartLine"], 7);
    let dry = s.loaf(&["apply", "--dry-run", "--json"], &s.reply(reply));
    assert_eq!(code(&dry), Some(1));
    let value: serde_json::Value = serde_json::from_slice(&dry.stdout).expect("JSON");
    assert!(value["fatalError"].is_string(), "{value}");
    assert_eq!(s.git(&["log", "--format=%s"]), "initial\n");
}

#[test]
fn lines_follow_the_reply_and_name_their_targets() {
    let s = Scratch::with(&[
        ("src/a.rs", "fn a() {}\n"),
        ("notes.md", "# notes\n"),
        ("old.txt", "old\n"),
    ]);
    let reply = [
        block(
            "w1a",
            "file_write",
            &[("path", "/repo/src/b.rs"), ("content", "fn b() {}")],
        ),
        block("u2b", "file_frobnicate", &[("path", "/repo/src/a.rs")]),
        block(
            "r3c",
            "file_replace_text",
            &[
                ("path", "/repo/src/a.rs"),
                ("old_text", "fn zzz() {}"),
                ("new_text", "fn c() {}"),
            ],
        ),
        heredoc_block(
            "p4d",
            "file_append",
            "/repo/notes.md",
            "content",
            "- more\n",
        ),
        block(
            "m5e",
            "file_move",
            &[("old_path", "/repo/old.txt"), ("new_path", "/repo/new.txt")],
        ),
        block("v6f", "file_write", &[("path", "/repo/c.rs")]),
    ]
    .join("\nprose between blocks\n");
    let out = s.apply(&reply);
    assert_eq!(code(&out), Some(1));
    assert_snapshot!(report(&s, &out), @r#"
    === LOAF RESULTS === apply <id> · commit <commit> · PARTIAL: 3 ✅ 3 ❌
    w1a ✅ file_write /repo/src/b.rs
    u2b ❌ ERROR: Unknown action 'file_frobnicate'; available: file_write, file_replace_text, file_replace_text_range, file_replace_all_text, files_replace_all_text, file_append, file_delete, file_move, file_read, file_read_numbered, file_replace_lines, files_read, dir_create, dir_delete, ls, grep, glob, exec (line 8)
    r3c ❌ file_replace_text /repo/src/a.rs - old_text not found in file; closest match at line 1 (57% similar):
        1: fn a() {}
    p4d ✅ file_append /repo/notes.md
    m5e ✅ file_move /repo/old.txt → /repo/new.txt
    v6f ❌ ERROR: Missing required parameter for file_write: content (file_write takes: path, content) (line 38)
    === END ===
    "#);
    assert_eq!(s.read("new.txt").as_deref(), Some("old\n"));
    assert_eq!(s.read("old.txt"), None);
    // A heredoc's last line break ends the heredoc, it is not content.
    assert_eq!(s.read("notes.md").as_deref(), Some("# notes\n- more"));
}

#[test]
fn a_block_swallowed_by_an_unclosed_heredoc_is_named() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let before = s.state();
    // k6f's heredoc is never closed (`EOT_k6f` is missing), so everything after it,
    // k7g's header included, is k6f's content.
    let reply = "#!nesl [@three-char-SHA-256: k6f]\naction = \"file_write\"\npath = \"/repo/a.txt\"\ncontent = <<'EOT_k6f'\nnew a\n#!end_k6f\n\n#!nesl [@three-char-SHA-256: k7g]\naction = \"file_write\"\npath = \"/repo/b.txt\"\ncontent = \"b\"\n#!end_k7g\n";
    let out = s.apply(reply);
    assert_eq!(code(&out), Some(1));
    assert_snapshot!(report(&s, &out), @r"
    === LOAF RESULTS === NOTHING APPLIED: 0 ✅ 2 ❌
    k6f ❌ ERROR: Heredoc 'EOT_k6f' not closed before EOF; it took in everything after its opening line: end its content with a line `EOT_k6f` (line 4)
    k7g ❌ ERROR: block k7g (line 8) was swallowed by the unclosed heredoc of k6f (opened at line 4), so it did not run — close that heredoc with a line `EOT_k6f` before `#!end_k6f` (line 8)
    === END ===
    ");
    assert_eq!(s.state(), before);
}

#[test]
fn the_header_tells_all_from_partial_from_nothing() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let write = |id: &str, path: &str| block(id, "file_write", &[("path", path), ("content", "x")]);
    let failing = |id: &str| {
        block(
            id,
            "file_replace_text",
            &[
                ("path", "/repo/a.txt"),
                ("old_text", "zzz"),
                ("new_text", "y"),
            ],
        )
    };
    let header = |out: &Output| report(&s, out).lines().next().unwrap_or("").to_owned();
    let all = s.apply(&[write("a1b", "/repo/b.txt"), write("a2c", "/repo/c.txt")].join("\n"));
    assert_eq!(code(&all), Some(0));
    assert_snapshot!(header(&all), @"=== LOAF RESULTS === apply <id> · commit <commit> · all 2 ✅");
    let partial = s.apply(&[write("p1d", "/repo/d.txt"), failing("p2e")].join("\n"));
    assert_eq!(code(&partial), Some(1));
    assert_snapshot!(header(&partial), @"=== LOAF RESULTS === apply <id> · commit <commit> · PARTIAL: 1 ✅ 1 ❌");
    let head = s.head();
    let nothing = s.apply(&[failing("n1f"), failing("n2g")].join("\n"));
    assert_eq!(code(&nothing), Some(1));
    assert_eq!(s.head(), head, "no commit");
    // No commit, nothing recorded: no id that `show` could not find.
    assert_snapshot!(header(&nothing), @"=== LOAF RESULTS === NOTHING APPLIED: 0 ✅ 2 ❌");
}

#[test]
fn dry_run_refuses_actions_loaf_yml_does_not_enable() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let reply = s.reply(
        &[
            block("e1x", "exec", &[("lang", "bash"), ("code", "rm -rf /repo")]),
            block(
                "w2y",
                "file_write",
                &[("path", "/repo/b.txt"), ("content", "b")],
            ),
        ]
        .join("\n"),
    );
    let out = s.loaf(&["apply", "--dry-run"], &reply);
    assert_eq!(code(&out), Some(1), "exec is not enabled by default");
    assert_snapshot!(s.redact(&out.stdout), @r"
    === LOAF DRY RUN ===
    e1x ❌ ERROR: not enabled: exec runs code, so replies may use it only when loaf.yml allows it. To enable it, put `allowed-actions: [defaults, exec]` in /repo/loaf.yml (the default actions plus exec) (line 1)
    w2y file_write /repo/b.txt
    === 1 action would run; 1 error ===
    ");
    // The real apply says the same for the exec, and runs the rest.
    let applied = s.loaf(&["apply"], &reply);
    assert!(
        s.redact(&applied.stdout)
            .contains("e1x ❌ exec bash - not enabled: exec runs code"),
        "{}",
        s.redact(&applied.stdout)
    );
    s.write("loaf.yml", "allowed-actions: [file_write, file_read]\n");
    let out = s.loaf(&["apply", "--dry-run"], &reply);
    assert!(
        s.redact(&out.stdout).contains("e1x ❌ ERROR: not enabled"),
        "{}",
        s.redact(&out.stdout)
    );
    s.write("loaf.yml", "hooks: 5\n");
    let out = s.loaf(&["apply", "--dry-run"], &reply);
    assert_eq!(code(&out), Some(2), "a broken loaf.yml stops a dry run too");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("hooks"), "{err}");
    assert!(out.stdout.is_empty(), "no plan printed");
}

#[test]
fn a_terminal_on_stdin_is_told_how_to_end_the_reply() {
    // util-linux `script` gives the command a pseudo-terminal; Ctrl-D ends the input.
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        crate::support::unavailable("no `script` to make a terminal");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = assert_cmd::cargo::cargo_bin("git-loaf");
    let mut child = std::process::Command::new("script")
        .args([
            "-qec",
            &format!("{} apply --no-commit", bin.display()),
            "/dev/null",
        ])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("script runs");
    // Give the command time to reach its read, then end the input as a user would.
    std::thread::sleep(std::time::Duration::from_millis(500));
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write as _;
        stdin.write_all(b"\x04").expect("Ctrl-D");
    }
    let out = child.wait_with_output().expect("finishes");
    let text = String::from_utf8_lossy(&out.stdout);
    let prompt = text.find("press Enter and Ctrl-D to finish");
    let fatal = text.find("FATAL: the reply is empty");
    assert!(
        prompt.is_some() && fatal.is_some() && prompt < fatal,
        "the prompt comes before the wait: {text}"
    );
}

#[test]
fn a_headerless_fence_next_to_real_blocks_is_not_silently_dropped() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let reply = format!(
        "{}\nAnd the second file:\n```nesl\naction = \"file_write\"\npath = \"/repo/c.txt\"\ncontent = \"c\"\n```\n",
        block(
            "b1k",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "b")]
        )
    );
    let out = s.apply(&reply);
    assert_eq!(code(&out), Some(1), "part of the reply did not run");
    assert_snapshot!(report(&s, &out), @r"
    === LOAF RESULTS === apply <id> · commit <commit> · PARTIAL: 1 ✅ 1 ❌
    b1k ✅ file_write /repo/b.txt
    unknown ❌ ERROR: a ```nesl fence (lines 8-12) with no `#!nesl` header line, so nothing in it ran; a block starts with a line `#!nesl [@three-char-SHA-256: abc]` and ends with `#!end_abc` (any 3-letter id, the same in both) (line 8)
    === END ===
    ");
    assert_eq!(s.read("b.txt").as_deref(), Some("b"));
    assert_eq!(s.read("c.txt"), None);
}

/// The issue's acceptance case: one reply mixing prose, good blocks, a slupe-named action,
/// an unquoted number, a misspelled action and an unclosed heredoc that swallows the next
/// block. Every line says what happened and, for failures, what to write instead.
#[test]
fn a_mixed_reply_gets_one_report_every_line_of_which_says_what_to_do() {
    let s = Scratch::with(&[
        ("src/greet.py", "print('Hello')\nprint('Hello again')\n"),
        ("NOTES.md", "# Notes\n"),
    ]);
    let reply = include_str!("../../fixtures/004_mixed_reply/reply.md");
    let out = s.apply(reply);
    assert_eq!(code(&out), Some(1), "some blocks failed");
    assert_snapshot!(report(&s, &out), @r#"
    === LOAF RESULTS === apply <id> · commit <commit> · PARTIAL: 3 ✅ 4 ❌
    k1a ✅ file_write /repo/src/util.py
    k2b ✅ file_append /repo/NOTES.md
    k3c ❌ ERROR: Value must be a quoted string or heredoc; write it quoted: `count = "2"` (line 27)
    k4d ❌ ERROR: Unknown action 'file_rewrite' (did you mean 'file_write'?) (line 30)
    k5e ✅ file_write /repo/src/__init__.py
    k6f ❌ ERROR: Heredoc 'EOT_k6f' not closed before EOF; it took in everything after its opening line: end its content with a line `EOT_k6f` (line 45)
    k7g ❌ ERROR: block k7g (line 50) was swallowed by the unclosed heredoc of k6f (opened at line 45), so it did not run — close that heredoc with a line `EOT_k6f` before `#!end_k6f` (line 50)
    === END ===
    "#);
    assert_eq!(
        s.read("NOTES.md").as_deref(),
        Some("# Notes\n- added util.shout\n")
    );
    assert_eq!(s.read("src/__init__.py").as_deref(), Some(""));
    assert_eq!(
        s.read("docs/usage.md"),
        None,
        "the unclosed heredoc's block did not run"
    );
}
