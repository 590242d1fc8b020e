//! Tests of the ExecutionResult's two renderings: the text report and the JSON.

use insta::assert_snapshot;
use serde_json::json;

use super::*;
use crate::actions::ErrorType;
use std::path::Path;

fn params(v: Value) -> Params {
    v.as_object().cloned().unwrap_or_default()
}

fn sample() -> ExecutionResult {
    ExecutionResult {
        success: false,
        total_blocks: 4,
        executed_actions: 3,
        results: vec![
            ActionResult {
                seq: 1,
                block_id: "k7m".into(),
                action: "file_write".into(),
                params: params(json!({"path": "/repo/src/a.rs", "content": "fn a() {}"})),
                success: true,
                error: None,
                data: Some(json!({"path": "/repo/src/a.rs", "bytesWritten": 9})),
                start_line: 10,
            },
            ActionResult {
                seq: 2,
                block_id: "x9z".into(),
                action: "file_replace_text".into(),
                params: params(json!({"path": "/repo/src/b.rs", "old_text": "x", "new_text": "y"})),
                success: false,
                // fs errors name their action; the report line already does.
                error: Some("file_replace_text: old_text not found in /repo/src/b.rs; closest lines:\n41: fn b() {\n42:     y\n43: }".into()),
                data: None,
                start_line: 20,
            },
            ActionResult {
                seq: 3,
                block_id: "r2".into(),
                action: "file_read".into(),
                params: params(json!({"path": "/repo/README.md"})),
                success: true,
                error: None,
                data: Some(json!({"path": "/repo/README.md", "content": "# Title\ntext\n"})),
                start_line: 30,
            },
        ],
        parse_errors: vec![BlockError {
            block_id: "q1w".into(),
            action: Some("write_file".into()),
            error_type: ErrorType::Validation,
            message: "Unknown action 'write_file' (did you mean 'file_write'?)".into(),
            block_start_line: Some(25),
            nesl_content: None,
            line: None,
        }],
        fatal_error: None,
        hook_errors: None,
        git: Some(GitInfo {
            commit: Some("1a2b3c4d5e6f".into()),
            checkpoint: None,
            base: Some("0f0f0f0".into()),
            apply: "3f2a1c".into(),
            uncommitted: Vec::new(),
            kept: Vec::new(),
            not_written: Vec::new(),
            not_applied: None,
            refused_output: None,
            config_pending: None,
        }),
        warnings: Vec::new(),
    }
}

#[test]
fn text_report_for_the_model() {
    assert_snapshot!(sample().to_text(), @r"
    === LOAF RESULTS === apply 3f2a1c · commit 1a2b3c4 · PARTIAL: 2 ✅ 2 ❌
    k7m ✅ file_write /repo/src/a.rs
    x9z ❌ file_replace_text /repo/src/b.rs - old_text not found in /repo/src/b.rs; closest lines:
        41: fn b() {
        42:     y
        43: }
    q1w ❌ ERROR: Unknown action 'write_file' (did you mean 'file_write'?) (line 25)
    r2 ✅ file_read /repo/README.md
    === OUTPUTS ===
    [r2] file_read /repo/README.md:
    # Title
    text
    === END ===
    ");
}

#[test]
fn listings_and_reads_render_as_text() {
    let render = |action: &str, data: Value| {
        let result = ActionResult {
            seq: 1,
            block_id: "b1".into(),
            action: action.into(),
            params: params(json!({"path": "/repo", "pattern": "x"})),
            success: true,
            error: None,
            data: Some(data),
            start_line: 40,
        };
        ExecutionResult {
            results: vec![result],
            ..ExecutionResult::default()
        }
        .to_text()
    };
    assert_snapshot!(render("ls", json!([
        {"name": "src", "type": "directory", "size": 0, "modified": "2026-01-01T00:00:00Z"},
        {"name": "a.txt", "type": "file", "size": 6, "modified": "2026-01-01T00:00:00Z"},
        {"name": "link", "type": "symlink", "size": 0, "modified": "2026-01-01T00:00:00Z"}
    ])), @r"
    === LOAF RESULTS === all 1 ✅
    b1 ✅ ls /repo
    === OUTPUTS ===
    [b1] ls /repo:
    src/
    a.txt (6 bytes)
    link (symlink)
    === END ===
    ");
    let grep = render(
        "grep",
        json!([{"file": "/repo/a.txt", "line_number": 3, "line": "x = 1"}]),
    );
    assert!(grep.contains("\n/repo/a.txt:3: x = 1\n"), "{grep}");
    let files = render(
        "files_read",
        json!({"paths": ["/repo/a", "/repo/b"], "content": ["A\n", "B"]}),
    );
    assert!(
        files.contains("=== /repo/a ===\nA\n\n=== /repo/b ===\nB\n"),
        "{files}"
    );
}

#[test]
fn the_trailer_holds_each_blocks_action_paths_outcome_and_output_hashes() {
    let mut result = sample();
    result.results[0]
        .params
        .insert("content".into(), json!("line 1\nline 2\n"));
    // Parameters, messages and the git facts are the note's; paths are the repository's.
    assert_snapshot!(result.to_trailer_json(Path::new("/repo")), @r#"{"success":false,"totalBlocks":4,"results":[{"blockId":"k7m","action":"file_write","path":"src/a.rs","success":true},{"blockId":"x9z","action":"file_replace_text","path":"src/b.rs","success":false},{"blockId":"r2","action":"file_read","path":"README.md","success":true,"data":{"content":{"bytes":13,"sha256":"a6eeeee84833cde48abfc99acc5139b83d65385ac3132663313878bf7fcb64de"}}}],"parseErrors":[{"blockId":"q1w","action":"write_file","errorType":"validation"}]}"#);
    let moved = ActionResult {
        action: "file_move".into(),
        params: params(json!({"old_path": "/repo/a", "new_path": "/elsewhere/b"})),
        ..result.results[0].clone()
    };
    let listed = ActionResult {
        action: "files_read".into(),
        params: params(json!({"paths": "/repo/a\n/repo/./c/../b\n"})),
        data: Some(json!({"paths": ["/repo/a", "/repo/b"], "content": ["A", "B"]})),
        ..result.results[0].clone()
    };
    result.results = vec![moved, listed];
    let trailer: Value =
        serde_json::from_str(&result.to_trailer_json(Path::new("/repo"))).expect("JSON");
    assert_eq!(trailer["results"][0]["old_path"], "a");
    assert_eq!(
        trailer["results"][0]["new_path"], "/elsewhere/b",
        "outside: as given"
    );
    assert_eq!(trailer["results"][1]["paths"], json!(["a", "b"]));
    assert_eq!(
        trailer["results"][1]["data"],
        json!({"content": [redact::digest("A"), redact::digest("B")]})
    );
}

#[test]
fn the_trailer_and_a_hashed_result_never_hold_what_was_read_or_printed() {
    let mut result = sample();
    // Short, one line: the old rule (bulky strings only) let it through.
    result.results[2].data = Some(json!({"path": "/repo/.env", "content": "TOKEN=s3cr3t"}));
    result.results.push(ActionResult {
        seq: 4,
        block_id: "ex1".into(),
        action: "exec".into(),
        params: params(json!({"lang": "bash", "code": "cat .env"})),
        success: true,
        error: None,
        data: Some(json!({"stdout": "TOKEN=s3cr3t", "stderr": "", "exit_code": 0})),
        start_line: 60,
    });
    assert!(
        !result
            .to_trailer_json(Path::new("/repo"))
            .contains("s3cr3t")
    );
    let hashed = result.outputs_hashed();
    assert!(!hashed.to_json().contains("s3cr3t"));
    let text = hashed.to_text();
    assert!(!text.contains("s3cr3t"), "{text}");
    assert!(
        text.contains("[r2] file_read /repo/README.md:\n(12 bytes, sha256 "),
        "{text}"
    );
    assert!(text.contains("stdout:\n(12 bytes, sha256 "), "{text}");
    // The write's facts stay.
    assert_eq!(hashed.results[0], result.results[0]);
}

#[test]
fn a_syntax_error_points_at_its_own_line() {
    let error = BlockError {
        block_id: "q1w".into(),
        action: Some("exec".into()),
        error_type: ErrorType::Syntax,
        message: "Unclosed quoted string".into(),
        block_start_line: Some(33),
        nesl_content: None,
        line: Some(36),
    };
    assert_eq!(
        block_error_line(&error),
        "q1w ❌ ERROR: Unclosed quoted string (line 36)\n"
    );
}

#[test]
fn json_has_the_seed_shape() {
    let mut result = sample();
    result.results.truncate(1);
    result.parse_errors.clear();
    result.git = None;
    assert_snapshot!(result.to_json(), @r#"
    {
      "success": false,
      "totalBlocks": 4,
      "executedActions": 3,
      "results": [
        {
          "seq": 1,
          "blockId": "k7m",
          "action": "file_write",
          "params": {
            "path": "/repo/src/a.rs",
            "content": "fn a() {}"
          },
          "success": true,
          "data": {
            "path": "/repo/src/a.rs",
            "bytesWritten": 9
          }
        }
      ],
      "parseErrors": []
    }
    "#);
}

#[test]
fn exec_output_shows_streams_unless_return_output_is_false() {
    let mut exec = ActionResult {
        seq: 1,
        block_id: "ex1".into(),
        action: "exec".into(),
        params: params(json!({"lang": "bash", "code": "echo hi"})),
        success: true,
        error: None,
        data: Some(json!({"stdout": "hi\n", "stderr": "", "exit_code": 0})),
        start_line: 50,
    };
    let report = |r: &ActionResult| {
        ExecutionResult {
            results: vec![r.clone()],
            ..ExecutionResult::default()
        }
        .to_text()
    };
    assert_snapshot!(report(&exec), @r"
    === LOAF RESULTS === all 1 ✅
    ex1 ✅ exec bash
    === OUTPUTS ===
    [ex1] exec bash:
    exit code: 0
    stdout:
    hi
    === END ===
    ");
    exec.params
        .insert("return_output".into(), Value::Bool(false));
    assert!(!report(&exec).contains("OUTPUTS"));
}
