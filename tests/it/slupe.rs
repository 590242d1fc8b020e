//! slupe compatibility: replies written for slupe, the successor tool, run under git-loaf.
//! Its verb-first action names are accepted and reported under the schema's names; the
//! defects its test cases found (line-ending-only replaces that changed nothing, an empty
//! file read numbered) stay fixed.

use std::fs;
use std::path::Path;

use git_loaf::actions::{self, ALIASES};
use git_loaf::exec::{AllowAll, PathMap, Workspace, fs as fs_actions};
use git_loaf::nesl;
use insta::assert_snapshot;
use serde_json::{Value, json};

use crate::support::git_loaf;

/// One block running `action` with `params` (values written as NESL quoted strings).
fn block(id: &str, action: &str, params: &[(&str, &str)]) -> String {
    let mut text = format!("#!nesl [@three-char-SHA-256: {id}]\naction = \"{action}\"\n");
    for (key, value) in params {
        let quoted = serde_json::to_string(value).expect("a string serializes");
        text.push_str(&format!("{key} = {quoted}\n"));
    }
    text.push_str(&format!("#!end_{id}\n"));
    text
}

#[test]
fn every_slupe_name_validates_as_its_schema_action() {
    for (i, (alias, name)) in ALIASES.iter().enumerate() {
        let params: Vec<(&str, &str)> = actions::Schema::get()
            .tool(name)
            .expect("the alias names a schema action")
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| {
                let value = match p.name.as_str() {
                    "lines" => "1",
                    "path" | "old_path" | "new_path" | "base_path" => "/repo/a.txt",
                    "paths" => "/repo/a.txt\n/repo/b.txt",
                    _ => "x",
                };
                (p.name.as_str(), value)
            })
            .collect();
        let reply = block(&format!("a{i:02}"), alias, &params);
        let plan = actions::plan(&reply, &nesl::parse(&reply), Path::new("/repo"));
        assert!(plan.errors.is_empty(), "{alias}: {:?}", plan.errors);
        assert_eq!(plan.actions.len(), 1, "{alias}");
        assert_eq!(plan.actions[0].name, *name, "{alias} is reported as {name}");
    }
}

#[test]
fn a_slupe_reply_runs_and_is_reported_under_the_schema_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let r = root.display().to_string();
    let reply = [
        "Here are the changes.\n\n```sh nesl\n".to_owned(),
        block(
            "w1a",
            "write_file",
            &[("path", &format!("{r}/a.txt")), ("content", "one\ntwo\n")],
        ),
        "```\n\n".to_owned(),
        block(
            "r2b",
            "replace_text_in_file",
            &[
                ("path", &format!("{r}/a.txt")),
                ("old_text", "two"),
                ("new_text", "2"),
            ],
        ),
        block(
            "a3c",
            "append_to_file",
            &[("path", &format!("{r}/a.txt")), ("content", "three\n")],
        ),
        block(
            "n4d",
            "read_file_numbered",
            &[("path", &format!("{r}/a.txt")), ("lines", "2-3")],
        ),
        block(
            "m5e",
            "move_file",
            &[
                ("old_path", &format!("{r}/a.txt")),
                ("new_path", &format!("{r}/b.txt")),
            ],
        ),
        block("d6f", "delete_file", &[("path", &format!("{r}/b.txt"))]),
    ]
    .concat();
    let out = git_loaf()
        .current_dir(&root)
        .args(["apply", "--no-commit"])
        .write_stdin(reply)
        .output()
        .expect("runs");
    let report = String::from_utf8_lossy(&out.stdout).replace(&r, "/repo");
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_snapshot!(report, @r"
    === LOAF RESULTS === all 6 ✅
    w1a ✅ file_write /repo/a.txt
    r2b ✅ file_replace_text /repo/a.txt
    a3c ✅ file_append /repo/a.txt
    n4d ✅ file_read_numbered /repo/a.txt
    m5e ✅ file_move /repo/a.txt → /repo/b.txt
    d6f ✅ file_delete /repo/b.txt
    === OUTPUTS ===
    [n4d] file_read_numbered /repo/a.txt:
    2: 2
    3: three
    === END ===
    ");
    assert!(!root.join("a.txt").exists() && !root.join("b.txt").exists());
}

/// Runs one filesystem action on files in a fresh directory: the outcome (paths shown as
/// `/t`) and the file `name` afterwards.
fn run_on(
    files: &[(&str, &str)],
    action: &str,
    params: Value,
    name: &str,
) -> (Value, Option<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    for (file, text) in files {
        fs::write(root.join(file), text).expect("write");
    }
    let r = root.display().to_string();
    let params = serde_json::from_str(&params.to_string().replace("/t", &r)).expect("json");
    let paths = PathMap::identity(&root);
    let ws = Workspace::permissive(&AllowAll, &paths);
    let outcome = fs_actions::run(action, &params, &ws);
    let outcome = serde_json::from_str(
        &serde_json::to_string(&outcome)
            .expect("json")
            .replace(&r, "/t"),
    )
    .expect("json");
    (outcome, fs::read_to_string(root.join(name)).ok())
}

#[test]
fn a_replace_of_line_endings_only_makes_the_edit() {
    // CRLF → LF, every match: the case that reported `replacements: 2` and wrote nothing.
    let (outcome, after) = run_on(
        &[("a.txt", "a\r\nb\r\na\r\nb\r\n")],
        "file_replace_all_text",
        json!({"path": "/t/a.txt", "old_text": "a\r\nb", "new_text": "a\nb"}),
        "a.txt",
    );
    assert_eq!(
        outcome,
        json!({"success": true, "data": {"path": "/t/a.txt", "replacements": 2}})
    );
    assert_eq!(after.as_deref(), Some("a\nb\r\na\nb\r\n"));

    // LF → CRLF, the one match.
    let (outcome, after) = run_on(
        &[("a.txt", "x\ny\nz\n")],
        "file_replace_text",
        json!({"path": "/t/a.txt", "old_text": "x\ny", "new_text": "x\r\ny"}),
        "a.txt",
    );
    assert_eq!(
        outcome,
        json!({"success": true, "data": {"path": "/t/a.txt", "replacements": 1}})
    );
    assert_eq!(after.as_deref(), Some("x\r\ny\nz\n"));

    // Several files.
    let (outcome, after) = run_on(
        &[("a.txt", "p\r\nq\r\n")],
        "files_replace_all_text",
        json!({"paths": "/t/a.txt", "old_text": "p\r\nq", "new_text": "p\nq"}),
        "a.txt",
    );
    assert_eq!(outcome["success"], true, "{outcome}");
    assert_eq!(after.as_deref(), Some("p\nq\r\n"));
}

#[test]
fn a_line_ending_edit_the_file_already_has_fails_instead_of_claiming_replacements() {
    // The model wrote LF for a CRLF file and asks for CRLF: the file has it already.
    let (outcome, after) = run_on(
        &[("a.txt", "a\r\nb\r\n")],
        "file_replace_all_text",
        json!({"path": "/t/a.txt", "old_text": "a\nb", "new_text": "a\r\nb"}),
        "a.txt",
    );
    assert_snapshot!(outcome["error"].as_str().unwrap_or_default(), @"file_replace_all_text: old_text and new_text differ only in line endings, and the file already has new_text's line endings there: nothing to change");
    assert_eq!(outcome["success"], false);
    assert_eq!(after.as_deref(), Some("a\r\nb\r\n"));
}

#[test]
fn an_empty_file_reads_numbered_as_empty_content() {
    for params in [
        json!({"path": "/t/e.txt", "lines": "1"}),
        json!({"path": "/t/e.txt"}),
    ] {
        let (outcome, _) = run_on(&[("e.txt", "")], "file_read_numbered", params, "e.txt");
        assert_eq!(
            outcome,
            json!({"success": true, "data": {"path": "/t/e.txt", "content": ""}})
        );
    }
    let (outcome, _) = run_on(
        &[("e.txt", "")],
        "file_read_numbered",
        json!({"path": "/t/e.txt", "lines": "2-3"}),
        "e.txt",
    );
    assert_eq!(
        outcome["success"], false,
        "lines past an empty file: {outcome}"
    );
}
