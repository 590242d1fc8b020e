//! Version pinning (§6.2, §8.2): commands carry `code_hash` and `specs_hash` beside the
//! snapshot; an agent checks them, the whole snapshot under `policy.strict_version_pinning`
//! (the default) or only the content when it is false.

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::agent::{Agent, Workspace, command, sha256};
use crate::harness::{Ws, config, stderr};

const REVIEW_APPROVED: &str = "Fine.\n```json\n{\"status\":\"approved\",\"summary\":\"ok\"}\n```\n";

/// A review command pinned to `version`, with `inputs`.
fn review(n: u32, version: &Value, inputs: Value) -> Value {
    let mut c = command(
        "reviewer",
        "review",
        &format!("c-{n}"),
        &format!("ik-pinning-{n:04}-0001"),
        inputs,
    );
    c["version"] = version.clone();
    c
}

fn touch(path: &std::path::Path) {
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000))
        .expect("mtime");
}

#[test]
fn agents_check_the_hashes_strictly_with_the_snapshot_or_by_content_only() {
    let ws = Workspace::with(&[("a.txt", "a\n"), ("SPEC.md", "# Spec\n")]);
    let reply = ws.reply("review.md", REVIEW_APPROVED);
    let mut agent = Agent::start(&ws, "reviewer", &[], &reply, &[]);
    let (pinned, _) = lorch::version::version_of(&ws.root, Some("SPEC.md")).expect("version");
    let pinned_json = serde_json::to_value(&pinned).expect("JSON");
    assert_eq!(
        pinned.specs_hash.as_deref(),
        Some(sha256(b"# Spec\n").as_str())
    );
    // a.txt touched, not changed: another snapshot, the same content.
    touch(&ws.root.join("a.txt"));
    let (touched, _) = lorch::version::version_of(&ws.root, Some("SPEC.md")).expect("version");
    assert_ne!(touched.snapshot_id, pinned.snapshot_id);

    agent.send(&review(1, &pinned_json, json!({"spec": "SPEC.md"})));
    let strict = agent.answer();
    assert_eq!(
        strict[0]["payload"]["code"], "version_mismatch",
        "{strict:#?}"
    );
    assert_eq!(strict[0]["payload"]["mismatched"], json!(["snapshot_id"]));
    assert_eq!(ws.runs(), 0, "strict: the model was not asked");

    let lenient = json!({"spec": "SPEC.md", "strict_version_pinning": false});
    agent.send(&review(2, &pinned_json, lenient.clone()));
    let done = agent.answer();
    assert_eq!(done[0]["event"], "review.completed", "{done:#?}");
    assert_eq!(
        done[0]["observed_version"],
        serde_json::to_value(&touched).expect("JSON"),
        "it reports what it saw: the touched snapshot, the same hashes"
    );
    assert_eq!(ws.runs(), 1);

    // Content is pinned either way: the spec changed is a mismatch, lenient too.
    ws.write("SPEC.md", "# Spec\n\nChanged.\n");
    agent.send(&review(3, &pinned_json, lenient));
    let changed = agent.answer();
    assert_eq!(changed[0]["payload"]["code"], "version_mismatch");
    assert_eq!(changed[0]["payload"]["mismatched"], json!(["specs_hash"]));
    let (now, _) = lorch::version::version_of(&ws.root, Some("SPEC.md")).expect("version");
    assert_eq!(
        changed[0]["observed_version"]["specs_hash"],
        json!(now.specs_hash)
    );
    assert_eq!(ws.runs(), 1, "the model was not asked again");
    let _ = agent.finish();
}

#[test]
fn commands_carry_the_code_and_spec_hashes_and_the_pinning_policy() {
    let ws = Ws::new(&config());
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The same files elsewhere: the same content hashes (mtimes are not in them).
    let twin = Ws::new(&Value::Null);
    let (start, _) =
        lorch::version::version_of(twin.path(), Some("specs/MASTER-SPEC.md")).expect("version");
    let commands: Vec<Value> = ws
        .ledger()
        .into_iter()
        .filter(|m| m["kind"] == "command")
        .collect();
    let first = &commands[0]["version"];
    assert_eq!(first["code_hash"], json!(start.code_hash));
    assert_eq!(
        first["specs_hash"],
        json!(sha256(b"# Spec\n\n## Status\n\n## Changelog\n"))
    );
    for c in &commands {
        assert!(c["version"]["code_hash"].is_string(), "{c:#}");
        assert_eq!(c["inputs"]["spec"], "specs/MASTER-SPEC.md");
        assert_eq!(c["inputs"].get("strict_version_pinning"), None, "strict");
    }
    // The builder's work changed the code; the snapshot after it says so.
    assert_ne!(
        commands[1]["version"]["code_hash"], first["code_hash"],
        "{commands:#?}"
    );
    // A copy of the spec as the run found it, for `lorch validate --run`.
    let hex = start.specs_hash.as_deref().expect("hash");
    let copy = lorch::store::spec_copy_path(ws.path(), hex);
    assert_eq!(
        std::fs::read_to_string(copy).expect("copy"),
        "# Spec\n\n## Status\n\n## Changelog\n"
    );

    let mut lenient = config();
    lenient["policy"]["strict_version_pinning"] = false.into();
    let ws = Ws::new(&lenient);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let commands: Vec<Value> = ws
        .ledger()
        .into_iter()
        .filter(|m| m["kind"] == "command")
        .collect();
    assert!(!commands.is_empty());
    for c in &commands {
        assert_eq!(c["inputs"]["strict_version_pinning"], false, "{c:#}");
    }
}
