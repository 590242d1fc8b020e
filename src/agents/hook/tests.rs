//! Unit tests of the event translation.
use super::*;

#[test]
fn claude_code_prompt_and_stop() {
    let begin = r#"{"session_id":"s1","transcript_path":"/t","cwd":"/r","hook_event_name":"UserPromptSubmit","prompt":"Fix it"}"#;
    assert_eq!(
        read(Agent::ClaudeCode, begin),
        Ok(Step::Begin {
            session: "s1".into(),
            prompt: Some("Fix it".into()),
            cwd: Some("/r".into())
        })
    );
    let stop =
        r#"{"session_id":"s1","cwd":"/r","hook_event_name":"Stop","stop_hook_active":false}"#;
    assert_eq!(
        read(Agent::ClaudeCode, stop),
        Ok(Step::Commit {
            session: "s1".into(),
            cwd: Some("/r".into())
        })
    );
    let other = r#"{"session_id":"s1","hook_event_name":"Notification"}"#;
    assert_eq!(
        read(Agent::ClaudeCode, other),
        Ok(Step::Ignored("Notification".into()))
    );
}

#[test]
fn tool_events_name_the_files_their_tools_write() {
    let event = |name: &str, tool: &str, input: &str| {
        format!(
            r#"{{"session_id":"s","cwd":"/r","hook_event_name":"{name}","tool_name":"{tool}","tool_input":{input}}}"#
        )
    };
    let named = |p: &str| Files::Named(vec![PathBuf::from(p)]);
    let start = |files| Step::ToolStart {
        session: "s".into(),
        cwd: Some("/r".into()),
        files,
    };
    let end = |files| Step::ToolEnd {
        session: "s".into(),
        cwd: Some("/r".into()),
        files,
    };
    let edit = event(
        "PreToolUse",
        "Edit",
        r#"{"file_path":"/r/a.rs","old_string":"x","new_string":"y"}"#,
    );
    assert_eq!(read(Agent::ClaudeCode, &edit), Ok(start(named("/r/a.rs"))));
    let notebook = event(
        "PostToolUse",
        "NotebookEdit",
        r#"{"notebook_path":"/r/n.ipynb"}"#,
    );
    assert_eq!(
        read(Agent::ClaudeCode, &notebook),
        Ok(end(named("/r/n.ipynb")))
    );
    let bash = event("PostToolUse", "Bash", r#"{"command":"make"}"#);
    assert_eq!(read(Agent::ClaudeCode, &bash), Ok(end(Files::Any)));
    let read_only = event("PreToolUse", "Read", r#"{"file_path":"/r/a.rs"}"#);
    assert_eq!(
        read(Agent::ClaudeCode, &read_only),
        Ok(Step::Ignored("PreToolUse Read".into()))
    );
    let gemini = event("BeforeTool", "replace", r#"{"file_path":"/r/b.rs"}"#);
    assert_eq!(read(Agent::Gemini, &gemini), Ok(start(named("/r/b.rs"))));
    let shell = event("AfterTool", "run_shell_command", r#"{"command":"ls"}"#);
    assert_eq!(read(Agent::Gemini, &shell), Ok(end(Files::Any)));
    let patch = r#"{"command":"*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: b.rs\n+b\n*** End Patch\n"}"#;
    assert_eq!(
        read(Agent::Codex, &event("PreToolUse", "apply_patch", patch)),
        Ok(start(Files::Named(vec!["src/a.rs".into(), "b.rs".into()])))
    );
    let no_name = r#"{"session_id":"s","hook_event_name":"PreToolUse"}"#;
    assert!(matches!(
        read(Agent::ClaudeCode, no_name),
        Err(HookError::Missing {
            field: "tool_name",
            ..
        })
    ));
}

#[test]
fn cursor_file_edits_and_shell_commands() {
    let edited = r#"{"hook_event_name":"afterFileEdit","conversation_id":"c","workspace_roots":["/w"],"file_path":"/w/a.ts","edits":[{"old_string":"x = 1","new_string":"x = 2"}]}"#;
    assert_eq!(
        read(Agent::Cursor, edited),
        Ok(Step::FileEdited {
            session: "c".into(),
            cwd: Some("/w".into()),
            file: "/w/a.ts".into(),
            edits: vec![("x = 1".into(), "x = 2".into())],
        })
    );
    let shell = r#"{"hook_event_name":"beforeShellExecution","conversation_id":"c","workspace_roots":["/w"],"command":"make","cwd":"/w"}"#;
    assert_eq!(
        read(Agent::Cursor, shell),
        Ok(Step::ToolStart {
            session: "c".into(),
            cwd: Some("/w".into()),
            files: Files::Any
        })
    );
}

#[test]
fn malformed_events_are_errors() {
    assert!(matches!(
        read(Agent::ClaudeCode, "{"),
        Err(HookError::NotJson { .. })
    ));
    assert_eq!(
        read(Agent::ClaudeCode, "[1]"),
        Err(HookError::NotAnObject(Agent::ClaudeCode))
    );
    assert_eq!(
        read(
            Agent::ClaudeCode,
            r#"{"hook_event_name":"UserPromptSubmit","session_id":"s"}"#
        ),
        Err(HookError::Missing {
            agent: Agent::ClaudeCode,
            event: "UserPromptSubmit".into(),
            field: "prompt"
        })
    );
    assert!(read(Agent::Gemini, r#"{"session_id":"s"}"#).is_err());
}

#[test]
fn bytes_that_are_not_utf8_read_as_escaped_text() {
    let event = b"{\"session_id\":\"s\",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"a\xff\xfe b\"}";
    let text = event_text(event);
    assert_eq!(
        read(Agent::ClaudeCode, &text),
        Ok(Step::Begin {
            session: "s".into(),
            prompt: Some("a\\xff\\xfe b".into()),
            cwd: None
        })
    );
    assert!(matches!(event_text(b"{}"), Cow::Borrowed("{}")));
}

#[test]
fn lone_surrogates_read_as_escaped_text_and_pairs_as_characters() {
    let event = br#"{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"cut \ud83d| \ude00| \ud83d\ude00| \\ud83d| \u00e9"}"#;
    let Ok(Step::Begin { prompt, .. }) = read(Agent::ClaudeCode, &event_text(event)) else {
        panic!("read")
    };
    assert_eq!(
        prompt.as_deref(),
        Some("cut \\ud83d| \\ude00| 😀| \\ud83d| é")
    );
}

#[test]
fn cursor_codex_and_gemini() {
    let cursor = r#"{"hook_event_name":"beforeSubmitPrompt","conversation_id":"c","generation_id":"g","workspace_roots":["/w"],"prompt":"p"}"#;
    assert_eq!(
        read(Agent::Cursor, cursor),
        Ok(Step::Begin {
            session: "c".into(),
            prompt: Some("p".into()),
            cwd: Some("/w".into())
        })
    );
    let notify = r#"{"type":"agent-turn-complete","thread-id":"t","turn-id":"1","cwd":"/r","input-messages":["x"]}"#;
    assert_eq!(
        read(Agent::Codex, notify),
        Ok(Step::Commit {
            session: "t".into(),
            cwd: Some("/r".into())
        })
    );
    let gemini = r#"{"session_id":"g","cwd":"/r","hook_event_name":"AfterAgent","prompt":"p","prompt_response":"r"}"#;
    assert_eq!(
        read(Agent::Gemini, gemini),
        Ok(Step::Commit {
            session: "g".into(),
            cwd: Some("/r".into())
        })
    );
}
