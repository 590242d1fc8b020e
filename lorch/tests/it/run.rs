//! `lorch run --task` end to end with fake agents (§4, §9, §11.1, §15): the transcript, the
//! ledger with the same content, receipts that match the files, the failure criteria,
//! protocol errors recorded without a crash, artifacts checked, secrets redacted.

use std::os::unix::fs::PermissionsExt as _;

use lorch::canonical::sha256_hex;
use lorch::transcript::render;
use lorch::validate;
use serde_json::{Value, json};

use crate::harness::{Ws, config, stderr, stdout};

/// Replaces run ids and snapshot ids, which vary, by placeholders.
fn normalize(text: &str, run_id: &str) -> String {
    let text = text.replace(run_id, "RUN");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("snap-") {
        out.push_str(&rest[..at]);
        out.push_str("snap-XXXXXXXX");
        rest = &rest[(at + 13).min(rest.len())..];
    }
    out.push_str(rest);
    out
}

fn with_plan(role: &str, plan: &str) -> Value {
    let mut c = config();
    c["agents"][role]["env"]["FAKE_PLAN"] = plan.into();
    c
}

#[test]
fn the_scenario_of_section_15_runs_to_done_with_the_transcript_ledger_and_receipts() {
    let ws = Ws::new(&with_plan("reviewer", "changes_requested,approved"));
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run_id = ws.run_id();
    assert_eq!(
        normalize(&stdout(&out), &run_id),
        "\
[lorch] run RUN task T-0042
[lorch] snapshot snap-XXXXXXXX
[lorch→builder] command implement (corr T-0042-1)
[builder] artifact.produced src/foo/bar.js (39 B)
[builder] artifact.produced tests/foo/bar.spec.js (16 B)
[builder] builder.completed success
[lorch] snapshot snap-XXXXXXXX
[lorch→reviewer] command review (corr T-0042-2)
[reviewer] review.completed changes_requested (reviews/T-0042.json)
[lorch] snapshot snap-XXXXXXXX
[lorch→builder] command implement_changes (corr T-0042-3)
[builder] artifact.produced src/foo/bar.js (39 B)
[builder] builder.completed success
[lorch] snapshot snap-XXXXXXXX
[lorch→reviewer] command review (corr T-0042-4)
[reviewer] review.completed approved (reviews/T-0042.json)
[lorch] snapshot snap-XXXXXXXX
[lorch→spec_maintainer] command update_spec (corr T-0042-5)
[spec_maintainer] spec.updated (spec_notes/T-0042.json)
[lorch] DONE
"
    );

    // The ledger carries the same content: its lines render to the transcript, and every
    // one of them is a valid protocol message.
    let ledger = std::fs::read_to_string(ws.ledger_path()).expect("ledger");
    let rendered: Vec<String> = ledger
        .lines()
        .map(|l| validate(l.as_bytes()).expect("ledger lines are valid messages"))
        .filter_map(|m| render(&m))
        .collect();
    assert_eq!(rendered.join("\n") + "\n", stdout(&out));
    let transcript =
        std::fs::read_to_string(ws.path().join(format!("transcripts/run-{run_id}.txt")))
            .expect("transcript");
    assert_eq!(transcript, stdout(&out));

    // state/run.json: completed, five steps; every step has a terminal event in the ledger.
    let state = ws.json("state/run.json");
    assert_eq!(state["status"], "completed");
    let results: Vec<(&str, &str)> = state["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["action"].as_str().expect("action"),
                s["result"].as_str().expect("result"),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("implement", "success"),
            ("review", "changes_requested"),
            ("implement_changes", "success"),
            ("review", "approved"),
            ("update_spec", "updated"),
        ]
    );
    let index = ws.json("state/index.json");
    assert_eq!(index["runs"][&run_id]["status"], "completed");

    // Receipts link artifacts (path, sha256, size) to the IK and message ids, and match the
    // files as they were then (the last receipt of each path matches the file now).
    let mut latest = std::collections::BTreeMap::new();
    for (i, step) in state["steps"].as_array().expect("steps").iter().enumerate() {
        let receipt = ws.json(&format!("receipts/T-0042/step-{}.json", i + 1));
        assert_eq!(receipt["idempotency_key"], step["idempotency_key"]);
        assert_eq!(receipt["idempotency_key"].as_str().map(str::len), Some(64));
        assert!(!receipt["events"].as_array().expect("events").is_empty());
        for a in receipt["artifacts"].as_array().expect("artifacts") {
            latest.insert(a["path"].as_str().expect("path").to_owned(), a.clone());
        }
    }
    assert_eq!(latest.len(), 4, "{latest:?}");
    for (path, a) in &latest {
        let bytes = std::fs::read(ws.path().join(path)).expect(path);
        assert_eq!(a["sha256"], format!("sha256:{}", sha256_hex(&bytes)));
        assert_eq!(a["size"], bytes.len());
    }
    // Snapshots: one manifest per id, named by the hash of its bytes; and the spec as each
    // found it, named by the hash of its bytes.
    for entry in std::fs::read_dir(ws.path().join("snapshots")).expect("snapshots") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("manifest");
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        if name.starts_with("spec-") {
            assert_eq!(name, format!("spec-{}.md", sha256_hex(&bytes)));
            continue;
        }
        let id = lorch::canonical::snapshot_id(&bytes);
        assert_eq!(name, format!("{id}.manifest.json"));
    }
    // §13: lorch's files 0600, its folders 0700.
    for rel in [
        "events",
        "state",
        "receipts/T-0042",
        "snapshots",
        "logs/builder",
    ] {
        let mode = std::fs::metadata(ws.path().join(rel))
            .expect(rel)
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{rel}");
    }
    for rel in [
        ws.ledger_path(),
        ws.path().join("state/run.json"),
        ws.path().join("receipts/T-0042/step-1.json"),
    ] {
        let mode = std::fs::metadata(&rel).expect("file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", rel.display());
    }

    // The recorded agent IO passes the schemas.
    let out = ws.lorch(&["validate", "--schemas"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains(" 0 invalid"), "{}", stdout(&out));
}

#[test]
fn spec_changes_requested_loops_through_builder_and_reviewer_back_to_the_spec_maintainer() {
    let ws = Ws::new(&with_plan(
        "spec_maintainer",
        "changes_requested,no_changes_needed",
    ));
    let out = ws.lorch(&["--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let commands: Vec<String> = stdout(&out)
        .lines()
        .filter(|l| l.contains("command"))
        .map(|l| l.split(" command ").nth(1).unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        commands,
        [
            "implement (corr T-0042-1)",
            "review (corr T-0042-2)",
            "update_spec (corr T-0042-3)",
            "implement_changes (corr T-0042-4)",
            "review (corr T-0042-5)",
            "update_spec (corr T-0042-6)",
        ]
    );
    assert!(stdout(&out).contains("[spec_maintainer] spec.changes_requested"));
    assert!(stdout(&out).ends_with(
        "[spec_maintainer] spec.no_changes_needed (spec_notes/T-0042.json)\n[lorch] DONE\n"
    ));
}

#[test]
fn a_builder_whose_tests_keep_failing_fails_the_run_after_its_attempts() {
    let ws = Ws::new(&with_plan("builder", "fail,fail,fail"));
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("[lorch] implement will be retried: builder.completed without passing tests"),
        "{text}"
    );
    assert!(text.ends_with("[lorch] FAILED: implement failed after 3 attempts: builder.completed without passing tests (tests fail)\n"), "{text}");
    let state = ws.json("state/run.json");
    assert_eq!(state["status"], "failed");
    assert_eq!(state["steps"], json!([]));
    // Attempts counted; the IK changes only when the workspace does (§5.4): the first
    // attempt wrote the files, the next two found them as they left them.
    let commands: Vec<Value> = ws
        .ledger()
        .into_iter()
        .filter(|m| m["kind"] == "command")
        .collect();
    assert_eq!(commands.len(), 3);
    for (i, c) in commands.iter().enumerate() {
        assert_eq!(c["retry"]["attempt"], i);
        assert_eq!(c["correlation_id"], "T-0042-1");
    }
    assert_ne!(
        commands[0]["idempotency_key"],
        commands[1]["idempotency_key"]
    );
    assert_eq!(
        commands[1]["idempotency_key"],
        commands[2]["idempotency_key"]
    );
    assert_eq!(commands[1]["version"], commands[2]["version"]);
}

#[test]
fn a_builder_step_without_test_results_is_refused() {
    let ws = Ws::new(&with_plan("builder", "untested,untested,untested"));
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).ends_with("[lorch] FAILED: implement failed after 3 attempts: builder.completed without test results (tests skipped): a step is accepted only with passing tests (§4); give the builder a check: lorch agent builder --check CMD -- …\n"), "{}", stdout(&out));
    assert_eq!(ws.json("state/run.json")["steps"], json!([]));
}

#[test]
fn an_error_event_is_retried_with_the_same_key_and_the_run_goes_on() {
    let ws = Ws::new(&with_plan("builder", "error"));
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("[builder] error failed tool_failed\n[lorch] implement will be retried: error tool_failed\n[lorch→builder] command implement (corr T-0042-1) retry 2/3\n"), "{}", stdout(&out));
}

#[test]
fn bad_lines_from_an_agent_are_recorded_protocol_errors_never_a_crash() {
    let mut c = config();
    c["agents"]["builder"]["env"]["FAKE_MODE"] = "bad_lines".into();
    let ws = Ws::new(&c);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let errors = ws.system_events("system.protocol_error");
    let texts: Vec<&str> = errors
        .iter()
        .map(|e| e["payload"]["error"].as_str().expect("error"))
        .collect();
    assert_eq!(texts.len(), 6, "{texts:?}");
    assert!(texts[0].starts_with("line is not JSON"), "{texts:?}");
    assert!(
        texts[1].contains("\"correlation_id\" is a required property"),
        "{texts:?}"
    );
    assert!(texts[2].contains("\"tester\" is not one of"), "{texts:?}");
    assert!(
        texts[3].starts_with("line of 307200 bytes is over the 262144-byte limit"),
        "{texts:?}"
    );
    assert!(stdout(&out).contains("[lorch] protocol error from builder: line is not JSON"));
    // validate --schemas names the agent's bad lines and fails.
    let out = ws.lorch(&["validate", "--schemas"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("6 invalid"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("builder sent an invalid line: line is not JSON"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn artifacts_whose_checksum_does_not_match_or_that_leave_the_workspace_are_refused() {
    for (mode, why) in [
        ("bad_artifact", "src/foo/bar.js: checksum mismatch"),
        ("escape", "../outside.js: `..` is not allowed"),
    ] {
        let mut c = config();
        c["agents"]["builder"]["env"]["FAKE_MODE"] = mode.into();
        let ws = Ws::new(&c);
        let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
        assert_eq!(out.status.code(), Some(1), "{mode}: {}", stdout(&out));
        assert!(
            stdout(&out).contains(&format!("[lorch] implement will be retried: {why}")),
            "{mode}: {}",
            stdout(&out)
        );
        assert!(
            !ws.path().join("receipts").exists(),
            "{mode}: no receipt for a refused step"
        );
    }
}

#[test]
fn secret_values_never_reach_the_ledger_the_transcript_or_the_logs() {
    let mut c = config();
    c["agents"]["builder"]["env"]["FAKE_MODE"] = "leak".into();
    c["agents"]["builder"]["env"]["API_TOKEN"] = "tok-3141592653".into();
    let ws = Ws::new(&c);
    let out = ws.lorch(
        &["run", "--task", "T-0042"],
        &[("OTHER_SECRET", "zz-not-this-either")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let mut seen = 0;
    for entry in walk(ws.path()) {
        let rel = entry
            .strip_prefix(ws.path())
            .expect("inside")
            .display()
            .to_string();
        if rel == "lorch.json" || rel.starts_with(".fake") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&entry).expect("read")).into_owned();
        assert!(!text.contains("tok-3141592653"), "{rel}");
        seen += usize::from(text.contains("[REDACTED]"));
    }
    assert!(
        seen >= 2,
        "the ledger and the builder's stderr log show the redaction"
    );
    assert!(!stdout(&out).contains("tok-3141592653"));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_version_mismatch_is_retried_on_a_new_snapshot_with_a_new_key() {
    let mut c = config();
    c["agents"]["builder"]["env"]["FAKE_MODE"] = "mismatch_once".into();
    let ws = Ws::new(&c);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let implements: Vec<Value> = ws
        .ledger()
        .into_iter()
        .filter(|m| m["action"] == "implement")
        .collect();
    assert_eq!(implements.len(), 2);
    assert_ne!(implements[0]["version"], implements[1]["version"]);
    assert_ne!(
        implements[0]["idempotency_key"],
        implements[1]["idempotency_key"]
    );
    assert_eq!(
        implements[1]["correlation_id"],
        implements[0]["correlation_id"]
    );
    let state = ws.json("state/run.json");
    assert_eq!(
        state["steps"][0]["idempotency_key"],
        implements[1]["idempotency_key"]
    );
}
