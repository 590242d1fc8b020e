//! Record mode driven by agents' hooks (DESIGN §3b): each turn of an agent that edits files
//! itself becomes one commit holding exactly its edits, the user's uncommitted work stays
//! out of it, and undo and `squash --session` are exact; `init --agent` wires the settings.

use std::process::Output;

use crate::scratch::{Scratch, trailer};
use crate::support::{fixture, read};

const CLAUDE_SESSION: &str = "9a1b7c3e-2f4d-4e5a-8b6c-0d1e2f3a4b5c";

/// An agent's documented event from `fixtures/agents/`, for this repository, with the
/// prompt replaced when one is given.
pub(crate) fn event(scratch: &Scratch, file: &str, prompt: Option<&str>) -> String {
    let text = scratch.reply(&read(&fixture(&format!("agents/{file}"))));
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("fixture is JSON");
    if let Some(prompt) = prompt {
        value["prompt"] = prompt.into();
    }
    value.to_string()
}

/// `git loaf agent-hook AGENT` with `input` on stdin.
pub(crate) fn hook(scratch: &Scratch, agent: &str, input: &str) -> Output {
    scratch.loaf(&["agent-hook", agent], input)
}

/// One Claude Code turn: the prompt, the agent's edits, the stop.
fn claude_turn(scratch: &Scratch, prompt: &str, edits: impl FnOnce()) {
    let begin = hook(
        scratch,
        "claude-code",
        &event(scratch, "claude-code/user_prompt_submit.json", Some(prompt)),
    );
    scratch.assert_exit(&begin, 0);
    assert_eq!(
        begin.stdout, b"",
        "UserPromptSubmit's stdout goes to the model: nothing"
    );
    edits();
    let stop = hook(
        scratch,
        "claude-code",
        &event(scratch, "claude-code/stop.json", None),
    );
    scratch.assert_exit(&stop, 0);
    assert_eq!(stop.stdout, b"");
}

/// A repository where the user has work of every kind uncommitted: a staged change, an
/// unstaged one, an untracked file.
fn dirty_repo() -> Scratch {
    let scratch = Scratch::with(&[
        ("a.txt", "a\n"),
        ("b.txt", "b\n"),
        ("c.txt", "c\n"),
        ("keep.txt", "keep\n"),
    ]);
    scratch.write("b.txt", "b staged\n");
    scratch.git(&["add", "b.txt"]);
    scratch.write("a.txt", "a unstaged\n");
    scratch.write("notes.txt", "my notes\n");
    scratch
}

/// Two Claude Code turns on [`dirty_repo`]: the first creates hello.txt and changes
/// c.txt, the second deletes c.txt and changes hello.txt.
fn two_turns(scratch: &Scratch) {
    claude_turn(scratch, "Add a greeting to hello.txt\nand tidy c", || {
        scratch.write("hello.txt", "hello\n");
        scratch.write("c.txt", "c tidied\n");
    });
    claude_turn(scratch, "Remove c.txt", || {
        std::fs::remove_file(scratch.root.join("c.txt")).expect("rm");
        scratch.write("hello.txt", "hello, world\n");
    });
}

/// What a commit changed, as `git show --name-status` says.
pub(crate) fn changed(scratch: &Scratch, rev: &str) -> String {
    scratch.git(&["show", "--format=", "--name-status", rev])
}

/// The user's uncommitted work, as git shows it.
fn uncommitted(scratch: &Scratch) -> String {
    format!(
        "{}{}{}",
        scratch.git(&["diff", "--cached"]),
        scratch.git(&["diff"]),
        scratch.git(&["ls-files", "--others", "--exclude-standard"])
    )
}

#[test]
fn each_claude_code_turn_is_one_commit_of_exactly_the_agents_edits() {
    let scratch = dirty_repo();
    let initial = scratch.head();
    let work_before = uncommitted(&scratch);
    two_turns(&scratch);
    assert_eq!(scratch.git(&["rev-parse", "HEAD~2"]).trim(), initial);
    assert_eq!(changed(&scratch, "HEAD~1"), "M\tc.txt\nA\thello.txt\n");
    assert_eq!(changed(&scratch, "HEAD"), "D\tc.txt\nM\thello.txt\n");
    assert_eq!(
        scratch.git(&["log", "-2", "--format=%s"]),
        "AI: Remove c.txt\nAI: Add a greeting to hello.txt\n"
    );
    assert_eq!(trailer(&scratch, "HEAD", "Loaf-Session"), CLAUDE_SESSION);
    assert_eq!(trailer(&scratch, "HEAD", "Assisted-by"), "claude-code");
    assert_eq!(trailer(&scratch, "HEAD~1", "Assisted-by"), "claude-code");
    // The user's staged, unstaged and untracked work is still exactly that, uncommitted.
    assert_eq!(uncommitted(&scratch), work_before);
    assert_eq!(scratch.read("hello.txt").as_deref(), Some("hello, world\n"));
    // `log` lists them as applies; `show` prints the record with the whole prompt.
    let log = scratch.loaf(&["log"], "");
    scratch.assert_exit(&log, 0);
    assert_eq!(String::from_utf8_lossy(&log.stdout).lines().count(), 2);
    let show = scratch.loaf(&["show", "HEAD~1"], "");
    scratch.assert_exit(&show, 0);
    let text = String::from_utf8_lossy(&show.stdout);
    for line in [
        "session 9a1b7c3e-2f4d-4e5a-8b6c-0d1e2f3a4b5c · agent claude-code",
        "  Add a greeting to hello.txt\n  and tidy c\n",
        "M c.txt\nA hello.txt\n",
    ] {
        assert!(text.contains(line), "{line:?} missing in:\n{text}");
    }
    scratch.assert_tidy();
}

#[test]
fn undo_of_turns_gives_back_the_files_as_they_were_at_begin() {
    let scratch = dirty_repo();
    let before = scratch.state();
    claude_turn(&scratch, "Add a greeting", || {
        scratch.write("hello.txt", "hello\n");
    });
    let after_first = scratch.state();
    claude_turn(&scratch, "Remove c.txt", || {
        std::fs::remove_file(scratch.root.join("c.txt")).expect("rm");
    });
    scratch.assert_exit(&scratch.loaf(&["undo"], ""), 0);
    assert_eq!(
        scratch.state(),
        after_first,
        "the second turn undone exactly"
    );
    scratch.assert_exit(&scratch.loaf(&["undo"], ""), 0);
    assert_eq!(scratch.state(), before, "the first turn undone exactly");
    scratch.assert_exit(&scratch.loaf(&["redo"], ""), 0);
    assert_eq!(scratch.state(), after_first, "redo puts it back");
}

#[test]
fn a_turn_that_changed_a_file_the_user_had_changed_commits_it_as_it_is_and_undo_gives_the_users_version_back()
 {
    let scratch = dirty_repo();
    let before = scratch.state();
    claude_turn(&scratch, "Extend a", || {
        scratch.write("a.txt", "a unstaged\nand the agent's line\n");
    });
    assert_eq!(changed(&scratch, "HEAD"), "M\ta.txt\n");
    assert_eq!(
        scratch.git(&["show", "HEAD:a.txt"]),
        "a unstaged\nand the agent's line\n"
    );
    let show = scratch.loaf(&["show"], "");
    assert!(
        String::from_utf8_lossy(&show.stdout)
            .contains("your uncommitted lines the agent's edits overlapped, committed with them: a.txt (line 1)"),
        "{}",
        String::from_utf8_lossy(&show.stdout)
    );
    scratch.assert_exit(&scratch.loaf(&["undo"], ""), 0);
    assert_eq!(scratch.state(), before);
}

#[test]
fn squash_session_folds_that_sessions_turns_exactly() {
    let scratch = dirty_repo();
    let initial = scratch.head();
    two_turns(&scratch);
    let tree = scratch.git(&["rev-parse", "HEAD^{tree}"]);
    let state = scratch.state();
    let work = uncommitted(&scratch);
    // A turn of another session on top ends the run.
    let other = scratch.loaf(
        &["record", "begin", "--session", "other", "--prompt", "Other"],
        "",
    );
    scratch.assert_exit(&other, 0);
    scratch.write("other.txt", "o\n");
    scratch.assert_exit(
        &scratch.loaf(&["record", "commit", "--session", "other"], ""),
        0,
    );
    let refused = scratch.loaf(&["squash", "--session", CLAUDE_SESSION], "");
    scratch.assert_exit(&refused, 2);
    scratch.assert_exit(&scratch.loaf(&["undo"], ""), 0);
    assert_eq!(scratch.state(), state);
    let squashed = scratch.loaf(&["squash", "--session", CLAUDE_SESSION], "");
    scratch.assert_exit(&squashed, 0);
    assert_eq!(scratch.git(&["rev-parse", "HEAD~1"]).trim(), initial);
    assert_eq!(scratch.git(&["rev-parse", "HEAD^{tree}"]), tree);
    assert_eq!(uncommitted(&scratch), work, "the user's work is untouched");
    let message = scratch.git(&["log", "-1", "--format=%B"]);
    assert!(
        message.contains("- AI: Add a greeting to hello.txt"),
        "{message}"
    );
    assert!(message.contains("- AI: Remove c.txt"), "{message}");
    scratch.assert_exit(&scratch.loaf(&["undo"], ""), 0);
    assert_eq!(scratch.state(), state, "undo of the squash is exact");
}

#[test]
fn a_turn_that_changed_nothing_makes_no_commit() {
    let scratch = dirty_repo();
    let before = scratch.state();
    claude_turn(&scratch, "Explain the code", || {});
    assert_eq!(scratch.state(), before);
    let by_hand = scratch.loaf(&["record", "begin"], "");
    scratch.assert_exit(&by_hand, 0);
    let commit = scratch.loaf(&["record", "commit"], "");
    scratch.assert_exit(&commit, 0);
    assert_eq!(
        String::from_utf8_lossy(&commit.stdout),
        "record: nothing changed in this turn of session default; no commit\n"
    );
    assert_eq!(scratch.state(), before);
    assert_eq!(scratch.git(&["for-each-ref", "refs/loaf/record/"]), "");
}

#[test]
fn events_record_mode_does_not_use_are_ignored() {
    let scratch = dirty_repo();
    let before = scratch.state();
    let out = hook(
        &scratch,
        "claude-code",
        &event(&scratch, "claude-code/pre_tool_use.json", None),
    );
    scratch.assert_exit(&out, 0);
    assert_eq!(scratch.state(), before);
    assert_eq!(scratch.git(&["for-each-ref", "refs/loaf/"]), "");
}

#[test]
fn a_begin_that_never_ended_is_committed_by_the_next_begin() {
    let scratch = dirty_repo();
    let prompt = |text: &str| {
        hook(
            &scratch,
            "claude-code",
            &event(&scratch, "claude-code/user_prompt_submit.json", Some(text)),
        )
    };
    scratch.assert_exit(&prompt("First"), 0);
    scratch.write("first.txt", "1\n");
    // The agent was interrupted: no Stop. The next prompt finishes that turn first.
    let second = prompt("Second");
    scratch.assert_exit(&second, 0);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("never ended"), "{stderr}");
    assert_eq!(changed(&scratch, "HEAD"), "A\tfirst.txt\n");
    assert_eq!(scratch.git(&["log", "-1", "--format=%s"]), "AI: First\n");
    scratch.write("second.txt", "2\n");
    let stop = hook(
        &scratch,
        "claude-code",
        &event(&scratch, "claude-code/stop.json", None),
    );
    scratch.assert_exit(&stop, 0);
    assert_eq!(changed(&scratch, "HEAD"), "A\tsecond.txt\n");
    assert_eq!(scratch.git(&["log", "-1", "--format=%s"]), "AI: Second\n");
}

#[test]
fn a_begin_that_cannot_be_committed_is_forgotten_and_the_files_stay() {
    let scratch = dirty_repo();
    let begin = scratch.loaf(&["record", "begin", "--prompt", "Edit keep"], "");
    scratch.assert_exit(&begin, 0);
    scratch.write("keep.txt", "the agent's\n");
    // The user commits that very file meanwhile, then edits it again.
    scratch.git(&["commit", "-q", "-m", "mine", "--", "keep.txt"]);
    scratch.write("keep.txt", "mine again\n");
    let mine = scratch.head();
    let commit = scratch.loaf(&["record", "commit"], "");
    scratch.assert_exit(&commit, 3);
    assert_eq!(scratch.head(), mine, "refused: nothing committed");
    let state = scratch.state();
    let next = scratch.loaf(&["record", "begin", "--prompt", "Next"], "");
    scratch.assert_exit(&next, 0);
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert!(stderr.contains("forgotten"), "{stderr}");
    assert_eq!(scratch.state(), state, "the files stay as they are");
    assert_eq!(scratch.read("keep.txt").as_deref(), Some("mine again\n"));
}

#[test]
fn a_commit_the_user_made_during_the_turn_stays_under_the_turns_commit() {
    let scratch = dirty_repo();
    let begin = scratch.loaf(&["record", "begin", "--prompt", "Add x"], "");
    scratch.assert_exit(&begin, 0);
    scratch.write("x.txt", "x\n");
    scratch.write("y.txt", "y\n");
    scratch.git(&["add", "y.txt"]);
    scratch.git(&["commit", "-q", "-m", "mine", "--", "y.txt"]);
    let mine = scratch.head();
    scratch.assert_exit(&scratch.loaf(&["record", "commit"], ""), 0);
    assert_eq!(scratch.git(&["rev-parse", "HEAD~1"]).trim(), mine);
    assert_eq!(changed(&scratch, "HEAD"), "A\tx.txt\n");
}

#[test]
fn malformed_events_exit_2_and_change_nothing() {
    let scratch = dirty_repo();
    let before = scratch.state();
    let missing_prompt = {
        let mut v: serde_json::Value = serde_json::from_str(&event(
            &scratch,
            "claude-code/user_prompt_submit.json",
            None,
        ))
        .expect("json");
        v.as_object_mut().map(|o| o.remove("prompt"));
        v.to_string()
    };
    for (input, reason) in [
        ("", "is not JSON"),
        ("{\"session_id\": ", "is not JSON"),
        ("[\"UserPromptSubmit\"]", "is not a JSON object"),
        (
            "{\"session_id\":\"s\"}",
            "no string field `hook_event_name`",
        ),
        (missing_prompt.as_str(), "no string field `prompt`"),
        (
            "{\"hook_event_name\":\"Stop\",\"session_id\":7}",
            "no string field `session_id`",
        ),
    ] {
        let out = hook(&scratch, "claude-code", input);
        scratch.assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(reason), "{input:?}: {stderr}");
        assert_eq!(scratch.state(), before, "{input:?} changed nothing");
        assert_eq!(scratch.git(&["for-each-ref", "refs/loaf/"]), "");
    }
    let unknown = hook(&scratch, "vim", "{}");
    scratch.assert_exit(&unknown, 2);
}

/// Cursor, Gemini CLI and Codex: their documented begin and end events make one commit.
#[test]
fn cursor_gemini_and_codex_turns_are_commits() {
    for (agent, begin, end, session, answer) in [
        (
            "cursor",
            "cursor/before_submit_prompt.json",
            "cursor/stop.json",
            "c0ffee00-1234-4abc-9def-0123456789ab",
            ("{\"continue\":true}\n", "{}\n"),
        ),
        (
            "gemini",
            "gemini/before_agent.json",
            "gemini/after_agent.json",
            "5f0c2d1e-8a7b-4c6d-9e0f-1a2b3c4d5e6f",
            ("{}\n", "{}\n"),
        ),
        (
            "codex",
            "codex/user_prompt_submit.json",
            "codex/stop.json",
            "0199a0b1-7c2d-7e3f-9a4b-5c6d7e8f9a0b",
            ("", ""),
        ),
    ] {
        let scratch = dirty_repo();
        let work_before = uncommitted(&scratch);
        let out = hook(&scratch, agent, &event(&scratch, begin, None));
        scratch.assert_exit(&out, 0);
        assert_eq!(String::from_utf8_lossy(&out.stdout), answer.0, "{agent}");
        scratch.write("hello.txt", "hello\n");
        let out = hook(&scratch, agent, &event(&scratch, end, None));
        scratch.assert_exit(&out, 0);
        assert_eq!(String::from_utf8_lossy(&out.stdout), answer.1, "{agent}");
        assert_eq!(changed(&scratch, "HEAD"), "A\thello.txt\n", "{agent}");
        assert_eq!(
            scratch.git(&["log", "-1", "--format=%s"]),
            "AI: Add a greeting to hello.txt\n"
        );
        assert_eq!(trailer(&scratch, "HEAD", "Assisted-by"), agent);
        assert_eq!(trailer(&scratch, "HEAD", "Loaf-Session"), session);
        assert_eq!(uncommitted(&scratch), work_before, "{agent}");
    }
}

/// Codex's `notify` program gets the event as its argument: `agent-turn-complete` ends the
/// turn its hooks began.
#[test]
fn codex_notify_ends_the_turn() {
    let scratch = dirty_repo();
    let begin = event(&scratch, "codex/user_prompt_submit.json", None);
    scratch.assert_exit(&hook(&scratch, "codex", &begin), 0);
    scratch.write("hello.txt", "hello\n");
    let notify = event(&scratch, "codex/notify.json", None);
    let out = scratch.loaf(&["agent-hook", "codex", &notify], "");
    scratch.assert_exit(&out, 0);
    assert_eq!(changed(&scratch, "HEAD"), "A\thello.txt\n");
}

#[test]
fn init_agent_merges_into_existing_settings_and_is_idempotent() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let settings = r#"{
  "permissions": { "allow": ["Bash(npm test)"] },
  "hooks": {
    "Stop": [ { "hooks": [ { "type": "command", "command": "say done" } ] } ]
  }
}
"#;
    scratch.write(".claude/settings.json", settings);
    scratch.write(
        ".mcp.json",
        r#"{"mcpServers": {"db": {"command": "db-mcp", "args": []}}}"#,
    );
    let out = scratch.loaf(&["init", "--agent", "claude-code"], "");
    scratch.assert_exit(&out, 0);
    let parsed = |path: &str| -> serde_json::Value {
        serde_json::from_str(&scratch.read(path).expect("written")).expect("JSON")
    };
    let claude = parsed(".claude/settings.json");
    assert_eq!(claude["permissions"]["allow"][0], "Bash(npm test)");
    let ours = serde_json::json!({"hooks": [{"type": "command", "command": "git loaf agent-hook claude-code"}]});
    assert_eq!(
        claude["hooks"]["Stop"][0]["hooks"][0]["command"],
        "say done"
    );
    assert_eq!(claude["hooks"]["Stop"][1], ours);
    for event in ["UserPromptSubmit", "PreToolUse", "PostToolUse"] {
        assert_eq!(claude["hooks"][event][0], ours, "{event}");
    }
    let mcp = parsed(".mcp.json");
    assert_eq!(mcp["mcpServers"]["db"]["command"], "db-mcp");
    assert_eq!(
        mcp["mcpServers"]["git-loaf"],
        serde_json::json!({"command": "git", "args": ["loaf", "mcp"]})
    );
    let files = |s: &Scratch| (s.read(".claude/settings.json"), s.read(".mcp.json"));
    let first = files(&scratch);
    let again = scratch.loaf(
        &["init", "--agent", "claude-code", "--agent", "claude-code"],
        "",
    );
    scratch.assert_exit(&again, 0);
    assert_eq!(files(&scratch), first, "running it again changes nothing");
    assert!(String::from_utf8_lossy(&again.stdout).contains("already set up"));
}

#[test]
fn init_agent_refuses_a_settings_file_that_is_not_json_and_writes_nothing() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    scratch.write(".claude/settings.json", "{ \"model\": \"opus\", }\n");
    let out = scratch.loaf(&["init", "--agent", "gemini", "--agent", "claude-code"], "");
    scratch.assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(".claude/settings.json is not valid JSON"),
        "{stderr}"
    );
    assert_eq!(
        scratch.read(".claude/settings.json").as_deref(),
        Some("{ \"model\": \"opus\", }\n")
    );
    assert_eq!(scratch.read(".mcp.json"), None);
    assert_eq!(
        scratch.read(".gemini/settings.json"),
        None,
        "nothing written"
    );
    assert_eq!(scratch.read("loaf.yml"), None, "nothing written");
}

#[test]
fn init_agent_writes_each_agents_documented_files() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    scratch.write(".codex/config.toml", "model = \"gpt-5-codex\"\n");
    let out = scratch.loaf(
        &[
            "init", "--agent", "cursor", "--agent", "gemini", "--agent", "codex",
        ],
        "",
    );
    scratch.assert_exit(&out, 0);
    let parsed = |path: &str| -> serde_json::Value {
        serde_json::from_str(&scratch.read(path).expect("written")).expect("JSON")
    };
    let cursor = parsed(".cursor/hooks.json");
    assert_eq!(cursor["version"], 1);
    for event in [
        "beforeSubmitPrompt",
        "stop",
        "afterFileEdit",
        "beforeShellExecution",
        "afterShellExecution",
    ] {
        assert_eq!(
            cursor["hooks"][event][0]["command"],
            "git loaf agent-hook cursor"
        );
    }
    assert_eq!(
        parsed(".cursor/mcp.json")["mcpServers"]["git-loaf"]["command"],
        "git"
    );
    let gemini = parsed(".gemini/settings.json");
    for event in ["BeforeAgent", "AfterAgent", "BeforeTool", "AfterTool"] {
        assert_eq!(
            gemini["hooks"][event][0]["hooks"][0]["command"],
            "git loaf agent-hook gemini"
        );
    }
    assert_eq!(gemini["mcpServers"]["git-loaf"]["args"][1], "mcp");
    let codex = parsed(".codex/hooks.json");
    for event in ["UserPromptSubmit", "Stop", "PreToolUse", "PostToolUse"] {
        assert_eq!(
            codex["hooks"][event][0]["hooks"][0]["command"],
            "git loaf agent-hook codex"
        );
    }
    assert_eq!(
        scratch.read(".codex/config.toml").as_deref(),
        Some(
            "model = \"gpt-5-codex\"\n\n[mcp_servers.git-loaf]\ncommand = \"git\"\nargs = [\"loaf\", \"mcp\"]\n"
        )
    );
    let config = scratch.read(".codex/config.toml");
    scratch.assert_exit(&scratch.loaf(&["init", "--agent", "codex"], ""), 0);
    assert_eq!(scratch.read(".codex/config.toml"), config);
}
