//! `git loaf mcp` driven by rmcp's own client over stdio: the tools are listed, a NESL reply
//! and an `actions` array each become one commit, undo and redo walk them, and bad input is
//! answered (isError, what to do) without ending the server.

use std::path::Path;
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult, GetPromptRequestParams};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};

use crate::scratch::{ENV, Scratch, block};

type Client = RunningService<RoleClient, ()>;

/// `git-loaf mcp` started in `dir` (the deterministic environment), connected.
async fn connect(dir: &Path) -> Client {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_git-loaf"));
    command
        .arg("mcp")
        .current_dir(dir)
        .envs(ENV)
        .env("NO_COLOR", "1")
        .env_remove("LOAF_LOG");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("git-loaf mcp starts");
    ().serve(transport).await.expect("the handshake succeeds")
}

/// Calls `tool` with `arguments` (an object); the server must answer with a tool result.
async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool} answered with a tool result: {e}"))
}

/// A result's text.
fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.as_str())
        .collect()
}

fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

fn commits(s: &Scratch) -> usize {
    s.git(&["rev-list", "--count", "HEAD"])
        .trim()
        .parse()
        .expect("a count")
}

#[tokio::test(flavor = "current_thread")]
async fn lists_its_tools_and_the_instructions_prompt() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let client = connect(&s.root).await;
    let mut tools: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools listed")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        [
            "apply",
            "instructions",
            "log",
            "redo",
            "review",
            "show",
            "squash",
            "status",
            "undo"
        ]
    );
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("instructions"))
        .await
        .expect("the prompt is served");
    let shown = serde_json::to_string(&prompt.messages).expect("serializes");
    let cli = s.loaf(&["instructions"], "");
    let cli = String::from_utf8_lossy(&cli.stdout);
    assert!(
        shown.contains(&serde_json::to_string(cli.as_ref()).expect("a string")[1..40]),
        "the prompt is the instructions the command prints: {shown}"
    );
    let tool = call(&client, "instructions", json!({})).await;
    assert_eq!(text(&tool), cli, "the tool answers as the command prints");
    client.cancel().await.expect("closed");
}

#[tokio::test(flavor = "current_thread")]
async fn a_reply_and_an_actions_array_are_one_commit_each_and_undo_redo_walk_them() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.write("mine.txt", "my uncommitted work\n");
    let client = connect(&s.root).await;
    let root = s.root.display().to_string();
    let before = commits(&s);

    let reply = s.reply(&block(
        "k1",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "bee\n")],
    ));
    let applied = call(
        &client,
        "apply",
        json!({"reply": reply, "model": "test-model"}),
    )
    .await;
    assert!(!is_error(&applied), "{}", text(&applied));
    assert_eq!(commits(&s), before + 1, "the reply is one commit");
    assert_eq!(s.read("b.txt").as_deref(), Some("bee\n"));
    assert!(
        s.git(&["log", "-1", "--format=%B"])
            .contains("Assisted-by: test-model"),
        "the model is recorded"
    );
    // The answer is the report the command line prints for that apply, then its notes.
    let shown = s.loaf(&["show"], "");
    let answer = text(&applied);
    let report = String::from_utf8_lossy(&shown.stdout);
    assert!(answer.starts_with(report.as_ref()), "{answer}");
    assert!(answer[report.len()..].starts_with("note: "), "{answer}");
    let structured = applied.structured_content.clone().expect("the JSON result");
    assert_eq!(structured["success"], json!(true));

    let applied = call(
        &client,
        "apply",
        json!({"actions": [
            {"action": "file_write", "path": format!("{root}/c.txt"), "content": "a := b\r\nsea\n"},
            {"action": "file_replace_text", "path": format!("{root}/a.txt"), "old_text": "one", "new_text": "two"},
        ]}),
    )
    .await;
    assert!(!is_error(&applied), "{}", text(&applied));
    assert!(
        text(&applied).contains("a1 ✅ file_write"),
        "{}",
        text(&applied)
    );
    assert!(
        text(&applied).contains("a2 ✅ file_replace_text"),
        "{}",
        text(&applied)
    );
    assert_eq!(commits(&s), before + 2, "the array is one commit");
    assert_eq!(
        s.git(&["show", "--name-only", "--format=", "HEAD"]),
        "a.txt\nc.txt\n"
    );
    assert_eq!(
        s.read("c.txt").as_deref(),
        Some("a := b\r\nsea\n"),
        "exactly the text given"
    );
    assert_eq!(s.read("a.txt").as_deref(), Some("two\n"));

    // The command line works beside the server: the lock is taken per call.
    let log = s.loaf(&["log"], "");
    s.assert_exit(&log, 0);
    let listed = call(&client, "log", json!({"n": 5})).await;
    assert_eq!(text(&listed), String::from_utf8_lossy(&log.stdout));
    let entries = &listed.structured_content.expect("the JSON log")["entries"];
    assert_eq!(entries.as_array().map(Vec::len), Some(2));

    let undone = call(&client, "undo", json!({})).await;
    assert!(!is_error(&undone), "{}", text(&undone));
    assert!(text(&undone).starts_with("Undid "), "{}", text(&undone));
    assert_eq!(commits(&s), before + 1);
    assert_eq!(s.read("a.txt").as_deref(), Some("one\n"));
    assert_eq!(s.read("c.txt"), None);
    let redone = call(&client, "redo", json!({})).await;
    assert!(text(&redone).starts_with("Redid "), "{}", text(&redone));
    assert_eq!(commits(&s), before + 2);
    assert_eq!(s.read("a.txt").as_deref(), Some("two\n"));
    let undone = call(&client, "undo", json!({"to": 2})).await;
    assert!(!is_error(&undone), "{}", text(&undone));
    assert_eq!(commits(&s), before);
    assert_eq!(s.read("b.txt"), None);
    assert_eq!(
        s.read("mine.txt").as_deref(),
        Some("my uncommitted work\n"),
        "the user's work is untouched"
    );
    assert_eq!(s.git(&["status", "--porcelain"]), "?? mine.txt\n");
    client.cancel().await.expect("closed");
}

#[tokio::test(flavor = "current_thread")]
async fn bad_input_is_answered_and_the_server_goes_on() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let client = connect(&s.root).await;
    let root = s.root.display().to_string();
    let before = commits(&s);
    let cases = [
        (
            "apply",
            json!({"reply": "Sure, here is the fix."}),
            "no NESL block",
        ),
        (
            "apply",
            json!({"reply": 5}),
            "invalid type: integer `5`, expected a string",
        ),
        ("apply", json!({"replay": "x"}), "unknown field `replay`"),
        ("apply", json!({}), "nothing to apply"),
        (
            "apply",
            json!({"actions": [{"action": "file_wrte", "path": format!("{root}/b.txt"), "content": "x"}]}),
            "did you mean 'file_write'",
        ),
        (
            "apply",
            json!({"actions": [{"path": "/x"}]}),
            "actions[0] has no \"action\"",
        ),
        (
            "apply",
            json!({"actions": "file_write"}),
            "expected a sequence",
        ),
        (
            "apply",
            json!({"actions": [{"action": "file_write", "path": "/etc/loaf-escape", "content": "x"}]}),
            "write access denied for '/etc/loaf-escape'",
        ),
        (
            "apply",
            json!({"actions": [{"action": "file_write", "path": format!("{root}/../escape.txt"), "content": "x"}]}),
            "escape.txt",
        ),
        ("undo", json!({"to": "zzzzzz"}), "zzzzzz"),
        ("show", json!({"id": "no-such-apply"}), "no-such-apply"),
        ("log", json!({"n": "many"}), "invalid type"),
        ("frobnicate", json!({}), "there is no tool \"frobnicate\""),
    ];
    for (tool, arguments, says) in cases {
        let answer = call(&client, tool, arguments.clone()).await;
        assert!(
            is_error(&answer),
            "{tool} {arguments}: isError: {}",
            text(&answer)
        );
        assert!(
            text(&answer).contains(says),
            "{tool} {arguments}: says {says:?}: {}",
            text(&answer)
        );
    }
    assert_eq!(commits(&s), before, "nothing was applied");
    assert!(!s.sibling("escape.txt").exists() && !Path::new("/etc/loaf-escape").exists());
    let good = call(
        &client,
        "apply",
        json!({"actions": [{"action": "file_write", "path": format!("{root}/b.txt"), "content": "bee\n"}]}),
    )
    .await;
    assert!(!is_error(&good), "{}", text(&good));
    assert_eq!(commits(&s), before + 1, "a good call still works");
    client.cancel().await.expect("closed");
}

#[tokio::test(flavor = "current_thread")]
async fn outside_a_repository_every_call_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let client = connect(dir.path()).await;
    let answer = call(
        &client,
        "apply",
        json!({"actions": [{"action": "file_write", "path": format!("{}/x", dir.path().display()), "content": "x"}]}),
    )
    .await;
    assert!(is_error(&answer), "{}", text(&answer));
    assert!(
        text(&answer).contains("not inside a git repository"),
        "{}",
        text(&answer)
    );
    assert!(text(&answer).contains("hint:"), "{}", text(&answer));
    let log = call(&client, "log", json!({})).await;
    assert!(is_error(&log), "{}", text(&log));
    assert!(!dir.path().join("x").exists());
    client.cancel().await.expect("closed");
}

#[tokio::test(flavor = "current_thread")]
async fn a_loaf_yml_a_reply_widens_waits_and_every_apply_answer_says_so() {
    // DESIGN §2 "Config a reply writes waits for the user": through MCP too, the next apply
    // runs under the accepted loaf.yml, and its answer (text and JSON) says what waits.
    let s = Scratch::with(&[("loaf.yml", "allowed-actions: [defaults]\n")]);
    let client = connect(&s.root).await;
    let widen = s.reply(&block(
        "c1",
        "file_write",
        &[
            ("path", "/repo/loaf.yml"),
            ("content", "allowed-actions: [defaults, exec]\n"),
        ],
    ));
    let applied = call(&client, "apply", json!({"reply": widen})).await;
    assert!(!is_error(&applied), "{}", text(&applied));
    let run = block(
        "e2",
        "exec",
        &[("lang", "bash"), ("code", "echo ran > ran.txt")],
    );
    let next = call(&client, "apply", json!({"reply": run})).await;
    assert!(text(&next).contains("not enabled"), "{}", text(&next));
    assert!(
        text(&next).contains("`git loaf config accept`"),
        "{}",
        text(&next)
    );
    let structured = next.structured_content.clone().expect("the JSON result");
    let pending = structured["git"]["configPending"]
        .as_str()
        .unwrap_or_default();
    assert!(
        pending.contains("allowed-actions: adds exec"),
        "{structured}"
    );
    assert_eq!(s.read("ran.txt"), None);
    client.cancel().await.expect("closed");
}

/// The `status` tool answers as `git loaf status` prints, here while stepped back.
#[tokio::test(flavor = "current_thread")]
async fn the_status_tool_answers_as_the_command_prints() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.write("a.txt", "two\n");
    s.commit_all("two");
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    let client = connect(&s.root).await;
    let tool = call(&client, "status", json!({})).await;
    assert!(!is_error(&tool), "{}", text(&tool));
    let cli = s.loaf(&["status"], "");
    let cli = String::from_utf8_lossy(&cli.stdout);
    assert!(
        text(&tool).starts_with("Stepped back: HEAD at "),
        "{}",
        text(&tool)
    );
    assert_eq!(text(&tool), cli, "the tool answers as the command prints");
    client.cancel().await.expect("closed");
}

/// `apply`'s `message` is the commit's subject after `AI: `, whatever the reply opens with.
#[tokio::test(flavor = "current_thread")]
async fn apply_takes_a_message_for_the_commits_subject() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let client = connect(&s.root).await;
    let reply = format!(
        "Writing b.\n{}",
        s.reply(&block(
            "m1",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "bee\n")],
        ))
    );
    let applied = call(
        &client,
        "apply",
        json!({"reply": reply, "message": "Add the bee file the pager reads"}),
    )
    .await;
    assert!(!is_error(&applied), "{}", text(&applied));
    assert_eq!(
        s.git(&["log", "-1", "--format=%s"]).trim(),
        "AI: Add the bee file the pager reads"
    );
    client.cancel().await.expect("closed");
}

/// docs/mcp.md's table names every parameter of every tool the server lists.
#[tokio::test(flavor = "current_thread")]
async fn the_docs_table_names_every_parameter_of_every_tool() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let client = connect(&s.root).await;
    let docs = crate::support::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/mcp.md"));
    for tool in client.list_all_tools().await.expect("tools listed") {
        let row = docs
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", tool.name)))
            .unwrap_or_else(|| panic!("docs/mcp.md has no row for {}", tool.name));
        let properties = tool
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for name in properties.keys() {
            assert!(
                row.contains(&format!("`{name}`")),
                "docs/mcp.md's row for {} lacks `{name}`: {row}",
                tool.name
            );
        }
    }
    client.cancel().await.expect("closed");
}

/// The `review` tool lists and rejects as the command does, and the next `apply` answer
/// carries the report for the model, once.
#[tokio::test(flavor = "current_thread")]
async fn review_lists_and_rejects_and_the_next_apply_answer_carries_the_report_once() {
    let s = Scratch::with(&[("a.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n")]);
    let client = connect(&s.root).await;
    let reply = block(
        "r1a",
        "file_write",
        &[
            ("path", "/repo/a.txt"),
            ("content", "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n"),
        ],
    );
    let applied = call(&client, "apply", json!({ "reply": s.reply(&reply) })).await;
    assert!(!is_error(&applied), "{}", text(&applied));
    let listed = call(&client, "review", json!({})).await;
    assert!(
        text(&listed).contains("2  a.txt:9-12  +1 -1"),
        "{}",
        text(&listed)
    );
    let rejected = call(
        &client,
        "review",
        json!({ "reject": [2], "reason": "twelve stays a number" }),
    )
    .await;
    assert!(!is_error(&rejected), "{}", text(&rejected));
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n")
    );

    let other = block(
        "r2b",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "b\n")],
    );
    let next = call(&client, "apply", json!({ "reply": s.reply(&other) })).await;
    assert!(
        text(&next).contains("twelve stays a number"),
        "{}",
        text(&next)
    );
    assert!(text(&next).contains("+twelve"), "{}", text(&next));
    let third = block(
        "r3c",
        "file_write",
        &[("path", "/repo/c.txt"), ("content", "c\n")],
    );
    let after = call(&client, "apply", json!({ "reply": s.reply(&third) })).await;
    assert!(
        !text(&after).contains("twelve stays"),
        "once: {}",
        text(&after)
    );
    client.cancel().await.expect("closed");
}
