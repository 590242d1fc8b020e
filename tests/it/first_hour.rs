//! A newcomer's first hour (issue 37): errors in git's words with what to do, even on a
//! machine where git does not know who you are.

use std::process::Output;

use crate::scratch::{ENV, Scratch, block};
use crate::support::git_loaf;

/// `git loaf args` in `s` as on a fresh machine: `HOME` an empty folder, no system, global
/// or repository identity, no `GIT_AUTHOR_*`/`GIT_COMMITTER_*`.
fn loaf_without_identity(s: &Scratch, args: &[&str], stdin: &str) -> Output {
    let home = s.sibling("empty-home");
    std::fs::create_dir_all(&home).expect("an empty home");
    let mut cmd = git_loaf();
    for (key, value) in ENV {
        if !key.starts_with("GIT_AUTHOR_") && !key.starts_with("GIT_COMMITTER_") {
            cmd.env(key, value);
        }
        if key.ends_with("_NAME") || key.ends_with("_EMAIL") {
            cmd.env_remove(key);
        }
    }
    cmd.env_remove("GIT_CONFIG_GLOBAL")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .current_dir(&s.root)
        .args(args)
        .write_stdin(stdin.to_owned())
        .output()
        .expect("git-loaf runs")
}

/// A scratch repository whose own config names nobody.
fn nobody() -> Scratch {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    s.git(&["config", "--unset", "user.name"]);
    s.git(&["config", "--unset", "user.email"]);
    s
}

/// The text a user reads of `out`: stdout then stderr.
fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn without_an_identity_apply_says_what_git_says_and_changes_nothing() {
    let s = nobody();
    s.write("a.txt", "mine\n");
    let before = s.state();
    let reply = s.reply(&block(
        "id1",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "b")],
    ));
    let out = loaf_without_identity(&s, &["apply"], &reply);
    s.assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Author identity unknown"), "{stderr}");
    assert!(
        stderr.contains("git config --global user.name \"Your Name\"")
            && stderr.contains("git config --global user.email \"you@example.com\""),
        "{stderr}"
    );
    assert!(
        !stderr.contains("class=") && !stderr.contains("code="),
        "{stderr}"
    );
    assert_eq!(s.state(), before, "nothing changed");
    assert!(s.read("b.txt").is_none());
}

/// Every error below, as the user reads it, is in git's words: libgit2's
/// `class=…; code=…` never shows.
#[test]
fn no_error_shows_libgit2_class_or_code() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    for (id, path) in [("aa1", "/repo/b.txt"), ("aa2", "/repo/c.txt")] {
        s.assert_exit(
            &s.apply(&block(
                id,
                "file_write",
                &[("path", path), ("content", "x")],
            )),
            0,
        );
    }
    s.git(&["config", "--unset", "user.name"]);
    s.git(&["config", "--unset", "user.email"]);
    let before = s.state();
    let reply = s.reply(&block(
        "id2",
        "file_write",
        &[("path", "/repo/d.txt"), ("content", "d")],
    ));
    let mut outputs = vec![
        loaf_without_identity(&s, &["apply"], &reply),
        loaf_without_identity(&s, &["squash"], ""),
        loaf_without_identity(&s, &["record", "begin", "--prompt", "Add e"], ""),
        loaf_without_identity(&s, &["undo", "--to", "0123456789abcdef"], ""),
    ];
    assert_eq!(s.state(), before, "nothing changed without an identity");
    let known = Scratch::with(&[("a.txt", "1\n")]);
    outputs.push(known.loaf(&["undo", "--to", "nonesuch"], ""));
    outputs.push(known.loaf(&["show", "deadbeef"], ""));
    std::fs::write(known.root.join(".git/refs/heads/main"), "not a hash\n").expect("ref");
    outputs.push(known.apply(&block(
        "id3",
        "file_write",
        &[("path", "/repo/c.txt"), ("content", "c")],
    )));
    outputs.push(known.loaf(&["squash"], ""));
    for out in &outputs {
        let text = said(out);
        assert!(!out.status.success(), "an error: {text}");
        assert!(
            !text.contains("class=") && !text.contains("code="),
            "libgit2's codes reached the user: {text}"
        );
    }
}

/// HEAD's subject.
fn subject(s: &Scratch) -> String {
    s.git(&["log", "-1", "--format=%s"]).trim().to_owned()
}

/// A reply that opens with a sentence saying what it does is committed under that sentence;
/// one that opens with its blocks under the summary of what they did.
#[test]
fn the_subject_is_the_replys_opening_sentence_else_what_its_actions_did() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    let write = block(
        "su1",
        "file_write",
        &[("path", "/repo/tqdm/utils.py"), ("content", "x = 1\n")],
    );
    let with_prose = format!(
        "Make the terminal width fall back to 80 columns when stty fails. Tests follow.\n\n```sh\n{write}```\n"
    );
    s.assert_exit(&s.apply(&with_prose), 0);
    assert_eq!(
        subject(&s),
        "AI: Make the terminal width fall back to 80 columns when stty fails"
    );
    let long = format!(
        "I'll rewrite the pager so that it keeps the screen's last line free for the prompt and redraws it on resize.\n{}",
        block(
            "su2",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "b")]
        )
    );
    s.assert_exit(&s.apply(&long), 0);
    assert_eq!(
        subject(&s),
        "AI: I'll rewrite the pager so that it keeps the screen's last line…"
    );
    assert!(subject(&s).chars().count() <= 72);
    s.assert_exit(
        &s.apply(&block(
            "su3",
            "file_write",
            &[("path", "/repo/c.txt"), ("content", "c")],
        )),
        0,
    );
    assert_eq!(subject(&s), "AI: file_write c.txt");
}

/// Code that runs past `exec.timeout` is reported as timed out, not as `exit code: null`.
#[test]
fn an_exec_timeout_says_timed_out_after_its_seconds() {
    let s = Scratch::with(&[(
        "loaf.yml",
        "allowed-actions: [defaults, exec]\nexec:\n  timeout: 1\n",
    )]);
    let out = s.apply(&block(
        "to1",
        "exec",
        &[("lang", "bash"), ("code", "sleep 30")],
    ));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("timed out after 1 s"), "{report}");
    assert!(!report.contains("exit code: null"), "{report}");
}

/// A heredoc opened without quotes is one error: its text and closing delimiter are not
/// counted as more malformed lines, so the summary counts one failure for one slip.
#[test]
fn an_unquoted_heredoc_delimiter_counts_as_one_error() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    let reply = format!(
        "{}#!nesl [@three-char-SHA-256: hd2]\naction = \"file_write\"\npath = \"/repo/c.txt\"\ncontent = <<EOT_hd2\nline one\nline two\nEOT_hd2\n#!end_hd2\n",
        block(
            "ok1",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "b")]
        )
    );
    let out = s.apply(&reply);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("PARTIAL: 1 ✅ 1 ❌"), "{report}");
    assert!(!report.contains("Invalid line format"), "{report}");
    assert!(
        report.contains("<<'EOT_hd2'"),
        "says what to write: {report}"
    );
}

/// `git loaf log` shows a recorded turn as a turn (no ✅0 ❌0: it ran no actions), and a
/// squash by what it folded in.
#[test]
fn log_shows_turns_as_turns_and_a_squash_by_what_it_folded() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    s.assert_exit(
        &s.apply(&block(
            "lg1",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "b")],
        )),
        0,
    );
    for (prompt, file) in [("Add c", "c.txt"), ("Add d", "d.txt")] {
        s.assert_exit(&s.loaf(&["record", "begin", "--prompt", prompt], ""), 0);
        s.write(file, "x\n");
        s.assert_exit(&s.loaf(&["record", "commit"], ""), 0);
    }
    let log = String::from_utf8_lossy(&s.loaf(&["log"], "").stdout).into_owned();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 3, "{log}");
    assert!(lines[0].ends_with(" turn AI: Add d"), "{log}");
    assert!(lines[1].ends_with(" turn AI: Add c"), "{log}");
    assert!(lines[2].contains(" ✅1 ❌0 AI: file_write b.txt"), "{log}");
    assert!(!log.contains("✅0 ❌0"), "{log}");

    s.assert_exit(&s.loaf(&["squash"], ""), 0);
    let log = String::from_utf8_lossy(&s.loaf(&["log"], "").stdout).into_owned();
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(
        log.contains(" squash of 1 apply ✅1 ❌0 and 2 turns AI: squashed 1 apply and 2 turns"),
        "{log}"
    );
    let json = String::from_utf8_lossy(&s.loaf(&["log", "--json"], "").stdout).into_owned();
    let entries: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(
        entries[0]["folded"],
        serde_json::json!({"applies": 1, "turns": 2})
    );
}

/// With a `.venv` at the root, `lang = "python"` runs its interpreter (the packages the
/// project installed), and `instructions` says which Python runs.
#[test]
fn python_runs_the_projects_venv_and_instructions_say_which() {
    let s = Scratch::with(&[
        ("loaf.yml", "allowed-actions: [defaults, exec]\n"),
        (".gitignore", ".venv/\n"),
    ]);
    let system = String::from_utf8_lossy(&s.loaf(&["instructions"], "").stdout).into_owned();
    assert!(
        system.contains("`lang = \"python\"` runs `python3` from PATH"),
        "{system}"
    );
    s.write(".venv/bin/python", "#!/bin/sh\necho \"venv python $1\"\n");
    s.sh("chmod +x .venv/bin/python");
    let venv = String::from_utf8_lossy(&s.loaf(&["instructions"], "").stdout).into_owned();
    let python = s.root.join(".venv/bin/python");
    assert!(
        venv.contains(&format!(
            "`lang = \"python\"` runs the project's virtualenv, `{}`",
            python.display()
        )),
        "{venv}"
    );
    let out = s.apply(&block(
        "py1",
        "exec",
        &[("lang", "python"), ("code", "print(1)")],
    ));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("venv python -c"), "{report}");
}

/// The sandbox section of `instructions` reads as sentences: no run of spaces inside a line.
#[test]
fn instructions_have_no_runs_of_spaces_mid_sentence() {
    let s = Scratch::with(&[("loaf.yml", "allowed-actions: [defaults, exec]\n")]);
    let text = String::from_utf8_lossy(&s.loaf(&["instructions"], "").stdout).into_owned();
    assert!(text.contains("## Where exec code runs"), "{text}");
    for line in text.lines() {
        assert!(
            !line.trim_start().contains("  "),
            "a run of spaces in: {line:?}"
        );
    }
}

/// `undo --to` takes the commit of an apply (as `git log` shows it) as well as its id.
#[test]
fn undo_to_takes_an_applys_commit() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    let initial = s.head();
    for (id, path) in [("ut1", "/repo/b.txt"), ("ut2", "/repo/c.txt")] {
        s.assert_exit(
            &s.apply(&block(
                id,
                "file_write",
                &[("path", path), ("content", "x")],
            )),
            0,
        );
    }
    let first = s.git(&["rev-parse", "--short", "HEAD~1"]);
    let out = s.loaf(&["undo", "--to", first.trim()], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.head(), initial, "both applies are undone");
    assert!(s.read("b.txt").is_none() && s.read("c.txt").is_none());
}

/// `init --agent claude-code` says what each file got (the hooks in one, the MCP server in
/// the other) and what to do next with an agent: start it, not paste NESL or watch.
#[test]
fn init_for_an_agent_says_what_each_file_got_and_to_start_the_agent() {
    let s = Scratch::empty();
    let out = s.loaf(&["init", "--agent", "claude-code"], "");
    s.assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = |file: &str| {
        text.lines()
            .find(|l| l.contains(file))
            .unwrap_or_else(|| panic!("a line for {file}: {text}"))
            .to_owned()
    };
    let settings = line(".claude/settings.json");
    assert!(
        settings.contains("hooks") && !settings.contains("MCP"),
        "{settings}"
    );
    let mcp = line(".mcp.json");
    assert!(
        mcp.contains("MCP server") && !mcp.contains("hooks"),
        "{mcp}"
    );
    let next = &text[text.find("Next:").expect("next steps")..];
    assert!(
        next.contains("Start the agent in this repository: claude"),
        "{next}"
    );
    assert!(
        !next.contains("git loaf watch") && !next.contains("instructions"),
        "{next}"
    );
    let plain = s.sibling("plain");
    std::fs::create_dir(&plain).expect("mkdir");
    crate::scratch::git_in(&plain, &["init", "-q"]);
    let out = s.loaf_in(&plain, &["init"], "");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("git loaf watch"),
        "without an agent, the NESL steps stay"
    );
}

/// Undoing a step forward that had reached the branch's tip leaves HEAD detached: the report
/// says so, and that the branch stays, rather than `main a -> b`.
#[test]
fn undoing_a_step_forward_to_the_tip_names_the_detached_head() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    for (id, path) in [("sf1", "/repo/b.txt"), ("sf2", "/repo/c.txt")] {
        s.assert_exit(
            &s.apply(&block(
                id,
                "file_write",
                &[("path", path), ("content", "x")],
            )),
            0,
        );
    }
    let tip = s.head();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    let back = s.head();
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    let undo = s.loaf(&["undo"], "");
    s.assert_exit(&undo, 0);
    let said = String::from_utf8_lossy(&undo.stdout).into_owned();
    let short = |oid: &str| oid[..7].to_owned();
    assert!(
        said.contains(&format!(
            ": main {} -> detached HEAD {}\n",
            short(&tip),
            short(&back)
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!("main stays at {}", short(&tip))),
        "{said}"
    );
    assert_eq!(
        s.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "HEAD",
        "detached"
    );
}

/// Undoing a `take` keeps the apply again, so `drop` (or another `take`) works on it; a
/// redo takes it again.
#[test]
fn after_take_then_undo_the_apply_is_kept_again_and_drop_works() {
    let s = Scratch::with(&[("a.txt", "0\n")]);
    let reply = block(
        "tk1",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "AI")],
    );
    let out = s.apply_pausing(&reply, "committed", || {
        s.git(&["commit", "-q", "--allow-empty", "-m", "meanwhile"]);
    });
    s.assert_exit(&out, 3);
    let kept = || {
        s.git(&["for-each-ref", "--format=%(refname:lstrip=2)", "refs/loaf/"])
            .lines()
            .filter(|l| l.len() == 6 && l.chars().all(|c| c.is_ascii_hexdigit()))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let id = kept().pop().expect("kept");
    s.assert_exit(&s.loaf(&["take", &id], ""), 0);
    assert!(kept().is_empty(), "taken: no longer kept");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(kept(), vec![id.clone()], "the undone take is kept again");
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert!(kept().is_empty(), "re-done: taken again");
    assert_eq!(s.read("b.txt").as_deref(), Some("AI"));
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    let drop = s.loaf(&["drop", &id], "");
    s.assert_exit(&drop, 0);
    assert!(kept().is_empty());
    assert_eq!(s.read("b.txt"), None);
}
