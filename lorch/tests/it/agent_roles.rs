//! The reviewer and spec-maintainer agents: verdicts read from canned replies, written to
//! `reviews/<task>.json` and `spec_notes/<task>.json`; SPEC.md edited only in the sections
//! §10.5 allows, any other edit refused and named.

use std::os::unix::fs::PermissionsExt as _;

use serde_json::{Value, json};

use crate::agent::{Agent, Workspace, command, sha256};

fn replies(ws: &Workspace, files: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = ws.scratch("replies");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for (name, text) in files {
        std::fs::write(dir.join(format!("{name}.md")), text).expect("write");
    }
    dir
}

fn prompt(ws: &Workspace) -> String {
    std::fs::read_to_string(ws.scratch("prompt")).expect("prompt")
}

#[test]
fn the_reviewer_reads_the_verdict_and_writes_the_review_file() {
    let ws = Workspace::with(&[("src/a.rs", "fn a() {}\n")]);
    ws.write("src/a.rs", "fn a() {}\nfn b() {}\n");
    ws.git(&["commit", "-q", "-am", "add b"]);
    let add_b = ws.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let dir = replies(
        &ws,
        &[
            (
                "c-1",
                "b has no test.\n```json\n{\"status\": \"changes_requested\", \"summary\": \"Test b.\", \"findings\": [{\"path\": \"src/a.rs\", \"line\": 2, \"comment\": \"add a test for b\"}]}\n```\n",
            ),
            ("c-2", "All good now.\nVERDICT: approved\n"),
            ("c-3", "Hmm, hard to say.\n"),
        ],
    );
    let mut agent = Agent::start(&ws, "reviewer", &[], &dir, &[]);
    agent.send(&command(
        "reviewer",
        "review",
        "c-1",
        "ik-review-T-0042-001",
        json!({}),
    ));
    let answer = agent.answer();
    assert_eq!(answer.len(), 1);
    let done = &answer[0];
    assert_eq!(done["event"], "review.completed");
    assert_eq!(done["status"], "changes_requested");
    assert_eq!(done["payload"]["review"], "reviews/T-0042.json");
    let text = ws.read("reviews/T-0042.json");
    assert_eq!(
        done["artifacts"],
        json!([{"path": "reviews/T-0042.json", "sha256": sha256(text.as_bytes()), "size": text.len()}])
    );
    let mut review: Value = serde_json::from_str(&text).expect("json");
    assert!(
        review["created_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    review.as_object_mut().expect("object").remove("created_at");
    assert_eq!(
        review,
        json!({
            "task_id": "T-0042",
            "status": "changes_requested",
            "findings": [{"path": "src/a.rs", "line": 2, "comment": "add a test for b"}],
            "summary": "Test b."
        })
    );
    let mode = std::fs::metadata(ws.root.join("reviews/T-0042.json"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let seen = prompt(&ws);
    assert!(seen.contains("# Task T-0042 (review)"), "{seen}");
    assert!(
        seen.contains("+fn b() {}") && seen.contains("below is HEAD's own commit"),
        "HEAD's diff, said to be only that: {seen}"
    );
    assert!(
        seen.contains("\"status\": \"approved\""),
        "the verdict format: {seen}"
    );

    // The task's commits can be named: its change is from the first one's parent to HEAD;
    // the VERDICT line is read too.
    agent.send(&command(
        "reviewer",
        "review",
        "c-2",
        "ik-review-T-0042-002",
        json!({"commits": [add_b]}),
    ));
    let approved = agent.answer();
    assert_eq!(approved[0]["status"], "approved");
    let seen = prompt(&ws);
    assert!(
        seen.contains("+fn b() {}") && !seen.contains("+fn a() {}"),
        "{seen}"
    );
    let review: Value = serde_json::from_str(&ws.read("reviews/T-0042.json")).expect("json");
    assert_eq!(review["status"], "approved");
    assert_eq!(review["summary"], "All good now.");

    // No verdict: an error, and the review file stays as it was.
    agent.send(&command(
        "reviewer",
        "review",
        "c-3",
        "ik-review-T-0042-003",
        json!({}),
    ));
    let none = agent.answer();
    assert_eq!(none[0]["event"], "error");
    assert_eq!(none[0]["payload"]["code"], "no_verdict");
    let review: Value = serde_json::from_str(&ws.read("reviews/T-0042.json")).expect("json");
    assert_eq!(review["status"], "approved");
}

const SPEC: &str = "# Spec\n\n## Requirements\n\n- The tool says hello.\n\n## Status\n\n| Task | State |\n|------|-------|\n| T-0042 | todo |\n\n## Changelog\n\n- 2026-01-01: created\n";

#[test]
fn the_spec_maintainer_edits_only_the_allowed_sections() {
    let ws = Workspace::with(&[("SPEC.md", SPEC)]);
    let dir = replies(
        &ws,
        &[
            (
                "c-1",
                "STATUS: updated\nSUMMARY: T-0042 meets the requirements.\n\n```spec-section\n## Status\n\n| Task | State |\n|------|-------|\n| T-0042 | done |\n```\n\n```spec-section\n## Changelog\n\n- 2026-01-01: created\n- 2026-01-02: T-0042 done\n```\n\n```spec-section\n## Open Questions\n\n- Greet in French too?\n```\n",
            ),
            (
                "c-2",
                "STATUS: updated\nSUMMARY: relaxed it.\n```spec-section\n## Requirements\n\n- The tool may say hello.\n```\n",
            ),
            (
                "c-3",
                "STATUS: updated\nSUMMARY: tidied.\n```spec-section\n## Status\n\n| T-0042 | done |\n\n## Requirements\n\n- none\n```\n",
            ),
            (
                "c-4",
                "STATUS: no_changes_needed\nSUMMARY: nothing to record.\n",
            ),
            (
                "c-5",
                "STATUS: changes_requested\nSUMMARY: hello must end with a newline.\n",
            ),
        ],
    );
    let mut agent = Agent::start(&ws, "spec_maintainer", &[], &dir, &[]);
    let update = |c: &str| {
        command(
            "spec_maintainer",
            "update_spec",
            c,
            &format!("ik-update-spec-T-0042-{c}"),
            json!({}),
        )
    };
    agent.send(&update("c-1"));
    let updated = agent.answer();
    let expected = "# Spec\n\n## Requirements\n\n- The tool says hello.\n\n## Status\n\n| Task | State |\n|------|-------|\n| T-0042 | done |\n\n## Changelog\n\n- 2026-01-01: created\n- 2026-01-02: T-0042 done\n\n## Open Questions\n\n- Greet in French too?\n";
    assert_eq!(ws.read("SPEC.md"), expected);
    let done = &updated[0];
    assert_eq!(done["event"], "spec.updated", "{done:#}");
    assert_eq!(
        done["payload"]["sections_changed"],
        json!(["Status", "Changelog", "Open Questions"])
    );
    let notes = ws.read("spec_notes/T-0042.json");
    assert_eq!(
        done["artifacts"],
        json!([
            {"path": "SPEC.md", "sha256": sha256(expected.as_bytes()), "size": expected.len()},
            {"path": "spec_notes/T-0042.json", "sha256": sha256(notes.as_bytes()), "size": notes.len()}
        ])
    );
    let notes: Value = serde_json::from_str(&notes).expect("json");
    assert_eq!(
        (&notes["status"], &notes["summary"]),
        (&json!("approved"), &json!("T-0042 meets the requirements."))
    );
    let seen = prompt(&ws);
    assert!(
        seen.contains(SPEC) && seen.contains("## What you may change"),
        "{seen}"
    );
    // Written through git-loaf: one commit, nothing left uncommitted (spec_notes/ is
    // excluded), and `git loaf undo` can take it back.
    let message = ws.git(&["log", "-1", "--format=%B"]);
    assert!(
        message.contains("Assisted-by: lorch spec_maintainer (sh)"),
        "{message}"
    );
    assert_eq!(
        done["payload"]["commit"],
        json!(ws.git(&["rev-parse", "HEAD"]).trim())
    );
    assert_eq!(ws.git(&["status", "--porcelain"]), "");

    // Edits elsewhere, directly or smuggled inside an allowed section, are refused whole.
    for (c, sections) in [
        ("c-2", json!(["Requirements"])),
        ("c-3", json!(["Requirements"])),
    ] {
        agent.send(&update(c));
        let refused = agent.answer();
        assert_eq!(refused[0]["event"], "error", "{refused:#?}");
        assert_eq!(refused[0]["payload"]["code"], "forbidden_spec_edit");
        assert_eq!(refused[0]["payload"]["sections"], sections);
        assert!(
            refused[0]["payload"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Requirements")),
            "{refused:#?}"
        );
        assert_eq!(ws.read("SPEC.md"), expected, "SPEC.md untouched");
    }

    agent.send(&update("c-4"));
    let none = agent.answer();
    assert_eq!(none[0]["event"], "spec.no_changes_needed");
    agent.send(&update("c-5"));
    let requested = agent.answer();
    assert_eq!(requested[0]["event"], "spec.changes_requested");
    assert_eq!(requested[0]["status"], "changes_requested");
    let notes: Value = serde_json::from_str(&ws.read("spec_notes/T-0042.json")).expect("json");
    assert_eq!(notes["status"], "changes_requested");
    assert_eq!(notes["summary"], "hello must end with a newline.");
    assert_eq!(ws.read("SPEC.md"), expected);
    assert_eq!(
        ws.git(&["rev-list", "--count", "HEAD"]).trim(),
        "2",
        "one spec commit"
    );

    let undo = std::process::Command::new(crate::binaries::git_loaf())
        .arg("undo")
        .current_dir(&ws.root)
        .envs(crate::agent::ENV)
        .output()
        .expect("git loaf undo");
    assert!(
        undo.status.success(),
        "{}",
        String::from_utf8_lossy(&undo.stderr)
    );
    assert_eq!(ws.read("SPEC.md"), SPEC);
}

#[test]
fn a_long_review_summary_is_whole_in_the_file_and_clipped_in_the_event() {
    let ws = Workspace::with(&[("src/a.rs", "fn a() {}\n")]);
    let summary = "all good. ".repeat(40_000);
    let dir = replies(
        &ws,
        &[(
            "c-1",
            &format!(
                "```json\n{}\n```\n",
                json!({"status": "approved", "summary": summary})
            ),
        )],
    );
    let mut agent = Agent::start(&ws, "reviewer", &[], &dir, &[]);
    agent.send(&command(
        "reviewer",
        "review",
        "c-1",
        "ik-review-long-0001",
        json!({}),
    ));
    let answer = agent.answer();
    assert_eq!(answer[0]["event"], "review.completed", "{:.500}", answer[0]);
    let shown = answer[0]["payload"]["summary"].as_str().expect("summary");
    assert!(shown.len() < 17 * 1024 && shown.ends_with("… [cut at 16384 bytes]"));
    let review: Value = serde_json::from_str(&ws.read("reviews/T-0042.json")).expect("json");
    assert_eq!(review["summary"], json!(summary));
}
