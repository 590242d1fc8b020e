//! The builder agent: a canned NESL reply applied through git-loaf as one commit (with its
//! trailers, undoable by `git loaf undo`), artifacts and checks reported, and idempotency
//! keys answered from the receipt without running the model or touching the repository.

use std::process::Command;

use serde_json::{Value, json};

use crate::agent::{Agent, ENV, Workspace, command, sha256};

const HELLO: &str = "Here is the change.\n\n#!nesl [@three-char-SHA-256: a1b]\naction = \"file_write\"\npath = \"@ROOT@/src/hello.txt\"\ncontent = <<'EOT_a1b'\nhello from the builder\n\nEOT_a1b\n#!end_a1b\n";

fn implement(correlation: &str, ik: &str) -> Value {
    let mut command = command(
        "builder",
        "implement",
        correlation,
        ik,
        json!({"goal": "Say hello in src/hello.txt", "files": ["src/hello.txt", "README.md"]}),
    );
    command["expected_outputs"] = json!([
        {"path": "src/hello.txt", "description": "the greeting"},
        {"path": "docs/optional.md", "required": false}
    ]);
    command
}

fn head(ws: &Workspace) -> String {
    ws.git(&["rev-parse", "HEAD"]).trim().to_owned()
}

#[test]
fn a_builder_step_is_one_git_loaf_commit_that_git_loaf_undo_reverts() {
    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    let initial = head(&ws);
    let reply = ws.reply("hello.md", HELLO);
    let mut agent = Agent::start(
        &ws,
        "builder",
        &[
            "--check",
            "grep -q builder src/hello.txt",
            "--check",
            "true",
        ],
        &reply,
        &[],
    );
    let (pinned, _) = lorch::manifest::snapshot_of(&ws.root).expect("snapshot");
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let answer = agent.answer();
    let content = "hello from the builder\n";
    assert_eq!(ws.read("src/hello.txt"), content);
    assert_eq!(answer.len(), 2, "{answer:#?}");
    assert_eq!(answer[0]["event"], "artifact.produced");
    assert_eq!(
        answer[0]["artifacts"],
        json!([{"path": "src/hello.txt", "sha256": sha256(content.as_bytes()), "size": content.len()}])
    );
    let done = &answer[1];
    assert_eq!(done["event"], "builder.completed");
    assert_eq!(done["status"], "success", "{done:#}");
    assert_eq!(done["correlation_id"], "c-1");
    assert_eq!(done["observed_version"]["snapshot_id"], pinned.as_str());
    let payload = &done["payload"];
    assert_eq!(payload["commit"], json!(head(&ws)));
    assert_eq!(
        (&payload["succeeded"], &payload["failed"]),
        (&json!(1), &json!(0))
    );
    assert_eq!(payload["changed"], json!(["src/hello.txt"]));
    assert_eq!(payload["tests"]["status"], "pass");
    assert_eq!(
        payload["tests"]["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .map(|c| (c["command"].clone(), c["exit_code"].clone()))
            .collect::<Vec<_>>(),
        [
            (json!("grep -q builder src/hello.txt"), json!(0)),
            (json!("true"), json!(0))
        ]
    );
    let report = payload["report"].as_str().expect("report");
    assert!(
        report.starts_with("=== LOAF RESULTS === apply "),
        "{report}"
    );
    assert!(report.contains("a1b ✅ file_write"), "{report}");

    // One commit, with git-loaf's trailers and the agent named as the assistant.
    assert_eq!(ws.git(&["rev-list", "--count", "HEAD"]).trim(), "2");
    let message = ws.git(&["log", "-1", "--format=%B"]);
    let apply_id = payload["apply_id"].as_str().expect("apply id");
    assert!(
        message.contains(&format!("Loaf-Apply: {apply_id}")),
        "{message}"
    );
    assert!(
        message.contains("Assisted-by: lorch builder (sh)"),
        "{message}"
    );

    // The prompt: the task, the files it names, and git-loaf's instructions for this repo.
    let prompt = std::fs::read_to_string(ws.scratch("prompt")).expect("prompt");
    for part in [
        "# Task T-0042 (implement)",
        "## Goal\n\nSay hello in src/hello.txt",
        "### src/hello.txt\n\n(does not exist yet)",
        "## Expected outputs\n\n- `src/hello.txt`: the greeting\n- `docs/optional.md` (optional)\n",
        "### README.md\n\n````\n# demo\n\n````",
        "# Changing files with git-loaf",
        &format!("You work on the repository at {}.", ws.root.display()),
        "## NESL syntax",
        "### file_write",
    ] {
        assert!(prompt.contains(part), "prompt lacks {part:?}:\n{prompt}");
    }

    // git-loaf sees a step of its own: `git loaf undo` takes it back.
    let log = Command::new(crate::binaries::git_loaf())
        .args(["log"])
        .current_dir(&ws.root)
        .envs(ENV)
        .output()
        .expect("git loaf log");
    assert!(
        String::from_utf8_lossy(&log.stdout).contains(apply_id),
        "{}",
        String::from_utf8_lossy(&log.stdout)
    );
    let undo = Command::new(crate::binaries::git_loaf())
        .arg("undo")
        .current_dir(&ws.root)
        .envs(ENV)
        .output()
        .expect("git loaf undo");
    assert!(
        undo.status.success(),
        "{}",
        String::from_utf8_lossy(&undo.stderr)
    );
    assert_eq!(head(&ws), initial);
    assert!(!ws.root.join("src/hello.txt").exists());
}

#[test]
fn a_repeated_idempotency_key_is_answered_from_the_receipt_without_running_anything() {
    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    let reply = ws.reply("hello.md", HELLO);
    let mut agent = Agent::start(&ws, "builder", &[], &reply, &[]);
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let first = agent.answer();
    let after_first = head(&ws);
    assert_eq!(first[1]["status"], "success");
    assert_eq!(first[1]["payload"]["tests"]["status"], "skipped");
    // The user changes the file meanwhile: a replay must not write it back.
    ws.write("src/hello.txt", "edited by the user\n");

    agent.send(&implement("c-2", "ik-implement-T-0042-1"));
    let second = agent.answer();
    drop(agent);
    // A new process remembers too: the receipt is on disk.
    let mut agent = Agent::start(&ws, "builder", &[], &reply, &[]);
    agent.send(&implement("c-3", "ik-implement-T-0042-1"));
    let third = agent.answer();

    assert_eq!(ws.runs(), 1, "the model ran once");
    assert_eq!(head(&ws), after_first, "no new commit");
    assert_eq!(ws.read("src/hello.txt"), "edited by the user\n");
    for (again, correlation) in [(&second, "c-2"), (&third, "c-3")] {
        assert_eq!(again.len(), first.len());
        for (old, new) in first.iter().zip(again.iter()) {
            assert_eq!(new["correlation_id"], correlation);
            assert_ne!(new["message_id"], old["message_id"]);
            assert_eq!(new["payload"]["replayed"], true);
            assert_eq!(new["payload"]["original_message_id"], old["message_id"]);
            let strip = |e: &Value| {
                let mut e = e.clone();
                for key in ["message_id", "correlation_id", "occurred_at"] {
                    e.as_object_mut().expect("object").remove(key);
                }
                for key in ["replayed", "original_message_id", "receipt"] {
                    e["payload"].as_object_mut().expect("payload").remove(key);
                }
                e
            };
            assert_eq!(strip(new), strip(old), "the same answer");
        }
    }
}

#[test]
fn failing_checks_fail_the_step_and_leave_no_receipt_so_a_retry_runs_again() {
    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    let reply = ws.reply("hello.md", HELLO);
    let mut agent = Agent::start(
        &ws,
        "builder",
        &[
            "--check",
            "true",
            "--check",
            "echo boom; exit 3",
            "--max-turns",
            "1",
        ],
        &reply,
        &[],
    );
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let first = agent.answer();
    let done = first.last().expect("completed");
    assert_eq!(done["event"], "builder.completed");
    assert_eq!(done["status"], "failed");
    let tests = &done["payload"]["tests"];
    assert_eq!(tests["status"], "fail");
    assert_eq!(tests["checks"][1]["exit_code"], 3);
    assert_eq!(tests["checks"][1]["status"], "fail");
    assert_eq!(tests["checks"][1]["output_tail"], "boom\n");
    assert_eq!(
        done["payload"]["problems"],
        json!([
            "checks failed: echo boom; exit 3",
            "not done after 1 turn(s): its 1 commit(s) were undone through git-loaf"
        ])
    );
    assert_eq!(done["payload"]["commit"], Value::Null);
    assert_eq!(commits(&ws), "1", "a failed step leaves no commit");

    agent.send(&implement("c-2", "ik-implement-T-0042-1"));
    let second = agent.answer();
    assert_eq!(ws.runs(), 2, "a failure is retried for real");
    assert_eq!(second.last().expect("completed")["status"], "failed");
    assert!(
        second
            .iter()
            .all(|e| e["payload"].get("replayed").is_none())
    );
}

#[test]
fn a_reply_without_blocks_or_with_failing_blocks_is_a_failed_step() {
    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    let replies = ws.scratch("replies");
    std::fs::create_dir(&replies).expect("mkdir");
    std::fs::write(replies.join("c-1.md"), "I would write a hello file.\n").expect("write");
    std::fs::write(
        replies.join("c-2.md"),
        "#!nesl [@three-char-SHA-256: b2c]\naction = \"file_replace_text\"\npath = \"@ROOT@/README.md\"\nold_text = \"# nothing like this\"\nnew_text = \"# x\"\n#!end_b2c\n",
    )
    .expect("write");
    let mut agent = Agent::start(&ws, "builder", &["--max-turns", "1"], &replies, &[]);
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let none = agent.answer();
    agent.send(&implement("c-2", "ik-implement-T-0042-2"));
    let failing = agent.answer();
    assert_eq!(none.len(), 1);
    assert_eq!(none[0]["status"], "failed");
    assert_eq!(
        none[0]["payload"]["problems"],
        json!([
            "the reply has no NESL blocks",
            "no file is changed yet: the task needs changes to the files",
            "expected output src/hello.txt is missing",
            "not done after 1 turn(s)"
        ]),
        "{none:#?}"
    );
    assert_eq!(failing[0]["status"], "failed");
    assert_eq!(failing[0]["payload"]["failed"], 1);
    assert_eq!(failing[0]["payload"]["commit"], Value::Null);
    assert_eq!(ws.git(&["rev-list", "--count", "HEAD"]).trim(), "1");
}

#[test]
fn implement_changes_shows_the_model_the_review_and_spec_notes() {
    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    ws.write(
        "reviews/T-0042.json",
        "{\"status\": \"changes_requested\", \"summary\": \"say it louder\"}\n",
    );
    ws.write(
        "spec_notes/T-0042.json",
        "{\"summary\": \"mention the spec\"}\n",
    );
    let reply = ws.reply("hello.md", HELLO);
    let mut agent = Agent::start(&ws, "builder", &[], &reply, &[]);
    let mut changes = implement("c-9", "ik-implement-changes-T-0042-1");
    changes["action"] = json!("implement_changes");
    agent.send(&changes);
    assert_eq!(agent.answer().last().expect("done")["status"], "success");
    let prompt = std::fs::read_to_string(ws.scratch("prompt")).expect("prompt");
    assert!(
        prompt.contains("# Task T-0042 (implement_changes)"),
        "{prompt}"
    );
    assert!(
        prompt.contains("## Review findings to address (reviews/T-0042.json)")
            && prompt.contains("say it louder"),
        "{prompt}"
    );
    assert!(
        prompt.contains("## Spec-maintainer notes to address (spec_notes/T-0042.json)")
            && prompt.contains("mention the spec"),
        "{prompt}"
    );
}

#[test]
fn the_builder_needs_a_git_repository() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_lorch"))
        .args(["agent", "builder", "--workspace"])
        .arg(dir.path())
        .args(["--", "true"])
        .envs(ENV)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("lorch agent: workspace ")
            && stderr.contains("is not in a git repository"),
        "{stderr}"
    );
}

fn git_loaf(ws: &Workspace, args: &[&str]) -> String {
    let out = Command::new(crate::binaries::git_loaf())
        .args(args)
        .current_dir(&ws.root)
        .envs(ENV)
        .output()
        .expect("git loaf runs");
    assert!(
        out.status.success(),
        "git loaf {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn git_loaf_log_squash_and_undo_work_on_a_run_with_reviews_in_between() {
    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    let initial = head(&ws);
    let replies = ws.scratch("replies");
    std::fs::create_dir(&replies).expect("mkdir");
    std::fs::write(replies.join("c-1.md"), HELLO).expect("write");
    std::fs::write(
        replies.join("c-2.md"),
        HELLO.replace("hello from the builder", "HELLO FROM THE BUILDER"),
    )
    .expect("write");
    std::fs::write(
        replies.join("c-r.md"),
        "VERDICT: changes_requested\nShout it.\n",
    )
    .expect("write");
    let mut builder = Agent::start(&ws, "builder", &[], &replies, &[]);
    let mut reviewer = Agent::start(&ws, "reviewer", &[], &replies, &[]);
    builder.send(&implement("c-1", "ik-implement-T-0042-1"));
    let first = builder.answer();
    reviewer.send(&command(
        "reviewer",
        "review",
        "c-r",
        "ik-review-T-0042-01",
        json!({}),
    ));
    assert_eq!(reviewer.answer()[0]["status"], "changes_requested");
    let mut changes = implement("c-2", "ik-implement-changes-T-0042-1");
    changes["action"] = json!("implement_changes");
    builder.send(&changes);
    let second = builder.answer();
    assert_eq!(
        second.last().expect("done")["status"],
        "success",
        "{second:#?}"
    );
    let ids: Vec<&str> = [&first, &second]
        .iter()
        .map(|a| {
            a.last().expect("done")["payload"]["apply_id"]
                .as_str()
                .expect("id")
        })
        .collect();
    let log = git_loaf(&ws, &["log"]);
    assert!(ids.iter().all(|id| log.contains(id)), "{log}");
    assert_eq!(ws.git(&["rev-list", "--count", "HEAD"]).trim(), "3");
    assert!(
        ws.read(".git/info/exclude")
            .lines()
            .any(|l| l == "/reviews/"),
        "the review is kept out of git's sight"
    );

    git_loaf(&ws, &["squash"]);
    assert_eq!(ws.git(&["rev-list", "--count", "HEAD"]).trim(), "2");
    assert_eq!(ws.git(&["rev-parse", "HEAD^"]).trim(), initial);
    git_loaf(&ws, &["undo"]);
    assert_eq!(ws.git(&["rev-list", "--count", "HEAD"]).trim(), "3");
    git_loaf(&ws, &["undo"]);
    assert_eq!(ws.read("src/hello.txt"), "hello from the builder\n");
    git_loaf(&ws, &["undo"]);
    assert_eq!(head(&ws), initial);
    assert!(!ws.root.join("src/hello.txt").exists());
    assert!(
        ws.root.join("reviews/T-0042.json").exists(),
        "the review stays"
    );
}

/// Deletes the builder's receipts, as if the shim had died before writing them.
fn lose_receipts(ws: &Workspace) {
    let receipts = ws.root.join(".git/lorch/agent/builder/receipts");
    assert!(receipts.is_dir(), "the step left a receipt to lose");
    std::fs::remove_dir_all(receipts).expect("remove receipts");
}

/// The parts of an answer that must not change when it is rebuilt: event, status, artifacts,
/// and the payload without what says how it was made (and git-loaf's notices to the user,
/// told once, by the apply itself).
fn essence(answer: &[Value]) -> Vec<Value> {
    answer
        .iter()
        .map(|e| {
            let mut payload = e["payload"].clone();
            for key in [
                "recovered",
                "replayed",
                "original_message_id",
                "receipt",
                "notices",
                "turns",
                // What each answer cost: the recovered one made no model call.
                "model_calls",
            ] {
                payload.as_object_mut().expect("payload").remove(key);
            }
            json!([e["event"], e["status"], e["artifacts"], payload])
        })
        .collect()
}

fn commits(ws: &Workspace) -> String {
    ws.git(&["rev-list", "--count", "HEAD"]).trim().to_owned()
}

#[test]
fn a_step_whose_receipt_was_lost_is_answered_from_its_commit_without_asking_the_model_again() {
    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    let reply = ws.scratch("replies");
    std::fs::create_dir(&reply).expect("mkdir");
    for correlation in ["c-1", "c-2", "c-3"] {
        std::fs::write(reply.join(format!("{correlation}.md")), HELLO).expect("write");
    }
    std::fs::write(
        reply.join("c-4.md"),
        HELLO.replace("from the builder", "again from the builder"),
    )
    .expect("write");
    let checks = ["--check", "grep -q builder src/hello.txt"];
    let mut agent = Agent::start(&ws, "builder", &checks, &reply, &[]);
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let first = agent.answer();
    assert_eq!(first.last().expect("done")["status"], "success");
    assert_eq!(commits(&ws), "2");
    drop(agent);
    lose_receipts(&ws);

    // lorch resends the same command to a new shim.
    let mut agent = Agent::start(&ws, "builder", &checks, &reply, &[]);
    agent.send(&implement("c-2", "ik-implement-T-0042-1"));
    let second = agent.answer();
    assert_eq!(ws.runs(), 1, "the model is not asked again");
    assert_eq!(commits(&ws), "2", "no second commit");
    assert_eq!(essence(&second), essence(&first), "{second:#?}");
    assert_eq!(first.last().expect("done")["payload"]["model_calls"], 1);
    assert_eq!(second.last().expect("done")["payload"]["model_calls"], 0);
    assert!(
        second
            .iter()
            .all(|e| e["payload"]["recovered"] == true && e["correlation_id"] == "c-2"),
        "{second:#?}"
    );
    assert_eq!(
        second.last().expect("done")["payload"]["tests"]["checks"][0]["status"],
        "pass",
        "the checks ran on the recovered step"
    );
    assert_logged(&agent, "answered from git-loaf apply");

    // The recovered answer has a receipt of its own now.
    agent.send(&implement("c-3", "ik-implement-T-0042-1"));
    let third = agent.answer();
    assert!(third.iter().all(|e| e["payload"]["replayed"] == true));
    assert_eq!(essence(&third), essence(&first));

    // Another key is another command: it runs.
    agent.send(&implement("c-4", "ik-implement-T-0042-2"));
    let other = agent.answer();
    assert_eq!(ws.runs(), 2);
    assert_eq!(commits(&ws), "3");
    assert!(
        other
            .iter()
            .all(|e| e["payload"].get("recovered").is_none())
    );
    assert_ne!(
        other.last().expect("done")["payload"]["apply_id"],
        first.last().expect("done")["payload"]["apply_id"]
    );
}

/// Kills the shim with SIGKILL while git-loaf is paused at `point` of the step's apply, then
/// resends the same command to a new shim; returns the two answers' last events (`None` for
/// the killed one when it had not answered) and the model's run count.
fn killed_at(ws: &Workspace, point: &str) -> (Value, usize) {
    let reply = ws.reply("hello.md", HELLO);
    let handshake = ws.scratch("paused");
    let handshake_str = handshake.display().to_string();
    let mut agent = Agent::start(
        ws,
        "builder",
        &[],
        &reply,
        &[
            ("LOAF_PAUSE_AT", point),
            ("LOAF_PAUSE_FILE", &handshake_str),
        ],
    );
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !handshake.exists() {
        assert!(
            std::time::Instant::now() < until,
            "the apply never reached {point}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    agent.kill();
    let _ = std::fs::remove_file(&handshake);
    assert!(
        !ws.root.join(".git/lorch/agent/builder/receipts").exists(),
        "killed before any receipt"
    );
    let mut agent = Agent::start(ws, "builder", &[], &reply, &[]);
    agent.send(&implement("c-2", "ik-implement-T-0042-1"));
    let answer = agent.answer();
    (answer.last().expect("done").clone(), ws.runs())
}

#[test]
fn a_shim_killed_after_the_step_was_published_answers_the_resent_command_from_it() {
    // After the log entry (the last moment inside the apply), and before it: the branch
    // moved and the files written, the entry not yet; the lookup finishes that publish first.
    for point in ["oplog", "files", "ref"] {
        let ws = Workspace::with(&[("README.md", "# demo\n")]);
        let (done, runs) = killed_at(&ws, point);
        assert_eq!(runs, 1, "{point}: the model is not asked again");
        assert_eq!(commits(&ws), "2", "{point}: one commit");
        assert_eq!(done["status"], "success", "{point}: {done:#}");
        assert_eq!(done["payload"]["recovered"], true, "{point}");
        assert_eq!(done["payload"]["commit"], json!(head(&ws)), "{point}");
        assert_eq!(done["payload"]["changed"], json!(["src/hello.txt"]));
        assert_eq!(ws.read("src/hello.txt"), "hello from the builder\n");
        assert_eq!(ws.git(&["status", "--porcelain"]), "", "{point}: clean");
    }
}

#[test]
fn a_shim_killed_before_the_step_was_published_makes_it_once_when_resent() {
    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    let initial = head(&ws);
    let (done, runs) = killed_at(&ws, "committed");
    assert_eq!(runs, 2, "nothing landed: the model is asked again");
    assert_eq!(done["status"], "success", "{done:#}");
    assert!(done["payload"].get("recovered").is_none());
    assert_eq!(commits(&ws), "2", "one step on the branch");
    assert_eq!(ws.git(&["rev-parse", "HEAD^"]).trim(), initial);
    assert_eq!(done["payload"]["commit"], json!(head(&ws)));
}

#[test]
fn a_lost_receipt_of_a_step_undone_since_runs_the_step_again() {
    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    let initial = head(&ws);
    let reply = ws.reply("hello.md", HELLO);
    let mut agent = Agent::start(&ws, "builder", &[], &reply, &[]);
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let first = agent.answer();
    lose_receipts(&ws);
    git_loaf(&ws, &["undo"]);
    assert_eq!(head(&ws), initial);

    agent.send(&implement("c-2", "ik-implement-T-0042-1"));
    let second = agent.answer();
    assert_eq!(ws.runs(), 2, "the undone step is made again");
    let done = second.last().expect("done");
    assert_eq!(done["status"], "success");
    assert!(done["payload"].get("recovered").is_none());
    assert_ne!(
        done["payload"]["apply_id"],
        first.last().expect("done")["payload"]["apply_id"]
    );
    assert_eq!(commits(&ws), "2");
    assert_eq!(ws.read("src/hello.txt"), "hello from the builder\n");
    assert_logged(&agent, "no longer in the workspace");

    // From now on the newest apply answers.
    lose_receipts(&ws);
    agent.send(&implement("c-3", "ik-implement-T-0042-1"));
    let third = agent.answer();
    assert_eq!(ws.runs(), 2);
    assert_eq!(third.last().expect("done")["payload"]["recovered"], true);
    assert_eq!(
        third.last().expect("done")["payload"]["apply_id"],
        done["payload"]["apply_id"]
    );
}

#[test]
fn a_resent_command_whose_apply_committed_nothing_or_partly_failed_runs_again() {
    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    let replies = ws.scratch("replies");
    std::fs::create_dir(&replies).expect("mkdir");
    let failing = "#!nesl [@three-char-SHA-256: b2c]\naction = \"file_replace_text\"\npath = \"@ROOT@/README.md\"\nold_text = \"# nothing like this\"\nnew_text = \"# x\"\n#!end_b2c\n";
    // Nothing committed: no log entry.
    std::fs::write(replies.join("c-1.md"), failing).expect("write");
    // One block applied, one failed: committed, and a failed step.
    std::fs::write(replies.join("c-2.md"), format!("{HELLO}\n{failing}")).expect("write");
    std::fs::write(
        replies.join("c-3.md"),
        HELLO.replace("from the builder", "again from the builder"),
    )
    .expect("write");
    let mut agent = Agent::start(&ws, "builder", &["--max-turns", "1"], &replies, &[]);
    for correlation in ["c-1", "c-2", "c-3"] {
        agent.send(&implement(correlation, "ik-implement-T-0042-1"));
        let answer = agent.answer();
        let done = answer.last().expect("done");
        assert!(done["payload"].get("recovered").is_none(), "{done:#}");
        let expected = if correlation == "c-3" {
            "success"
        } else {
            "failed"
        };
        assert_eq!(done["status"], expected, "{correlation}: {done:#}");
    }
    assert_eq!(ws.runs(), 3, "every failure was retried for real");
    assert_eq!(commits(&ws), "2", "the partial step was undone; its retry");
    assert_eq!(ws.read("src/hello.txt"), "hello again from the builder\n");
    assert_logged(&agent, "did not fully succeed");
}

/// The agent logged a line containing `text`.
fn assert_logged(agent: &Agent, text: &str) {
    assert!(
        agent
            .seen
            .iter()
            .any(|m| m["kind"] == "log" && m["message"].as_str().is_some_and(|t| t.contains(text))),
        "no log line with {text:?}: {:#?}",
        agent.seen
    );
}

#[test]
fn lint_commands_run_after_the_tests_and_a_failing_one_fails_the_step() {
    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    let reply = ws.reply("hello.md", HELLO);
    let flags = ["--check", "true", "--lint", "grep -q hello src/hello.txt"];
    let mut agent = Agent::start(&ws, "builder", &flags, &reply, &[]);
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let answer = agent.answer();
    let done = answer.last().expect("done");
    assert_eq!(done["status"], "success", "{done:#}");
    assert_eq!(done["payload"]["tests"]["status"], "pass");
    assert_eq!(done["payload"]["tests"]["checks"][0]["command"], "true");
    assert_eq!(done["payload"]["lint"]["status"], "pass", "{done:#}");
    assert_eq!(
        done["payload"]["lint"]["checks"][0]["command"],
        "grep -q hello src/hello.txt"
    );
    drop(agent);

    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    let reply = ws.reply("hello.md", HELLO);
    let flags = ["--check", "true", "--lint", "false", "--max-turns", "1"];
    let mut agent = Agent::start(&ws, "builder", &flags, &reply, &[]);
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let answer = agent.answer();
    let done = answer.last().expect("done");
    assert_eq!(done["status"], "failed", "{done:#}");
    assert_eq!(done["payload"]["lint"]["status"], "fail");
    let problems = done["payload"]["problems"].to_string();
    assert!(problems.contains("lint failed: false"), "{problems}");
}

#[test]
fn a_builder_stops_asking_the_model_when_the_commands_budget_is_spent() {
    let ws = Workspace::with(&[("README.md", "# demo\n")]);
    let reply = ws.reply("nothing.md", "I will think about it.\n");
    let mut agent = Agent::start(&ws, "builder", &["--check", "true"], &reply, &[]);
    let mut command = implement("c-1", "ik-implement-T-0042-1");
    command["inputs"]["max_model_calls"] = json!(2);
    agent.send(&command);
    let answer = agent.answer();
    let done = answer.last().expect("done");
    assert_eq!(done["event"], "error", "{done:#}");
    assert_eq!(done["payload"]["code"], "budget_spent");
    assert_eq!(done["payload"]["model_calls"], 2);
    assert_eq!(ws.runs(), 2, "two turns, not the four --max-turns allows");
}
