//! What a run may spend and how it retries (issue 38): `policy.max_model_calls` per run and
//! per task stops the run with the reason and `lorch resume` goes on with a larger budget;
//! the console shows the calls; a failed command is retried after `policy.retry.backoff`,
//! a rate-limited model after the wait it asks for; several `--task` run in order in one
//! run, resumable.

use std::path::Path;

use serde_json::{Value, json};

use crate::failures::{real_agents, scripted_model};
use crate::harness::{Ws, assert_exit, stdout};

/// Writes the canned replies (by correlation id) into `dir`.
fn replies(dir: &Path, replies: &[(&str, &str)]) {
    for (id, text) in replies {
        std::fs::write(dir.join(format!("{id}.md")), text).expect("write reply");
    }
}

fn write(id: &str, file: &str) -> (String, String) {
    (
        id.to_owned(),
        format!(
            "#!nesl [@three-char-SHA-256: b1d]\naction = \"file_write\"\npath = \"@ROOT@/{file}\"\ncontent = \"{id}\\n\"\n#!end_b1d\n"
        ),
    )
}

/// A task's three steps: the builder writes `file`, the reviewer approves, the spec needs
/// no change.
fn a_task(task: &str, file: &str) -> Vec<(String, String)> {
    vec![
        write(&format!("{task}-1"), file),
        (format!("{task}-2"), "Fine.\nVERDICT: approved\n".to_owned()),
        (
            format!("{task}-3"),
            "STATUS: no_changes_needed\nSUMMARY: nothing to note.\n".to_owned(),
        ),
    ]
}

fn set_policy(ws: &Ws, key: &str, value: Value) {
    let mut config: Value = ws.json("lorch.json");
    config["policy"][key] = value;
    std::fs::write(ws.path().join("lorch.json"), config.to_string()).expect("write");
}

/// Two tasks of lorch.json, each three model calls, run with `policy` set as given.
fn two_tasks(scratch: &Path) -> (Ws, std::path::PathBuf) {
    let mut all = a_task("T-0042", "src/a.txt");
    all.extend(a_task("T-0043", "src/b.txt"));
    let pairs: Vec<(&str, &str)> = all.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    replies(scratch, &pairs);
    let folder = scratch.display().to_string();
    let (ws, root) = real_agents(&scripted_model(), &[("FAKE_REPLY", &folder)]);
    let mut config: Value = ws.json("lorch.json");
    config["tasks"] = json!([
        { "id": "T-0042", "goal": "Write src/a.txt", "files": ["src/a.txt"] },
        { "id": "T-0043", "goal": "Write src/b.txt", "files": ["src/b.txt"] },
    ]);
    std::fs::write(ws.path().join("lorch.json"), config.to_string()).expect("write");
    (ws, root)
}

#[test]
fn several_tasks_run_in_order_and_a_spent_budget_stops_the_run_until_it_is_raised() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let (ws, root) = two_tasks(scratch.path());
    set_policy(&ws, "max_model_calls", json!({ "per_run": 3 }));
    let out = ws.lorch(&["run", "--task", "T-0042", "--task", "T-0043"], &[]);
    assert_exit(&out, 1);
    let shown = stdout(&out);
    let run = ws.run_id();
    assert!(
        shown.starts_with(&format!("[lorch] run {run} task T-0042, then T-0043\n")),
        "{shown}"
    );
    // The console shows what each command may still spend, and what each answer cost.
    assert!(
        shown.contains(
            "[lorch→builder] command implement (corr T-0042-1) · model calls: 0 used, 3 left\n"
        ),
        "{shown}"
    );
    assert!(
        shown.contains(
            "[lorch→spec_maintainer] command update_spec (corr T-0042-3) · model calls: 2 used, 1 left\n"
        ),
        "{shown}"
    );
    assert!(
        shown.ends_with(&format!(
            "[lorch] FAILED: budget spent: 3 model calls made, policy.max_model_calls.per_run is 3; raise it in lorch.json, then `lorch resume --run {run}`\n"
        )),
        "{shown}"
    );
    assert!(
        shown.contains("[lorch] task T-0043 (after T-0042)\n"),
        "{shown}"
    );
    assert!(root.join("src/a.txt").exists());
    assert!(!root.join("src/b.txt").exists(), "the second task waits");

    // A larger budget, per task this time: each task's three calls fit.
    let mut config: Value = ws.json("lorch.json");
    config["policy"]["max_model_calls"] = json!({ "per_task": 3 });
    std::fs::write(ws.path().join("lorch.json"), config.to_string()).expect("write");
    let out = ws.lorch(&["resume", "--run", &run], &[]);
    assert_exit(&out, 0);
    let shown = stdout(&out);
    assert!(
        shown.contains(
            "[lorch→builder] command implement (corr T-0043-1) · model calls: 3 used, 3 left\n"
        ),
        "{shown}"
    );
    assert!(shown.ends_with("[lorch] DONE\n"), "{shown}");
    assert_eq!(
        std::fs::read_to_string(root.join("src/b.txt")).expect("second task built"),
        "T-0043-1\n"
    );
    let tasks: Vec<String> = ws
        .ledger()
        .iter()
        .filter(|m| m["kind"] == "command")
        .map(|m| {
            format!(
                "{} {}",
                m["task_id"].as_str().unwrap_or(""),
                m["action"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        tasks,
        [
            "T-0042 implement",
            "T-0042 review",
            "T-0042 update_spec",
            "T-0043 implement",
            "T-0043 review",
            "T-0043 update_spec"
        ]
    );
}

#[test]
fn a_task_given_twice_is_refused() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let (ws, _root) = two_tasks(scratch.path());
    let out = ws.lorch(&["run", "--task", "T-0042", "--task", "T-0042"], &[]);
    assert_exit(&out, 2);
    assert_eq!(
        crate::harness::stderr(&out),
        "lorch: task T-0042 is given twice: name each task once\n"
    );
}

#[test]
fn a_failed_command_is_retried_after_the_backoff() {
    let scratch = tempfile::tempdir().expect("tempdir");
    replies(scratch.path(), &[("T-0042-1", "I would rather not.\n")]);
    let folder = scratch.path().display().to_string();
    let (ws, _root) = real_agents(&scripted_model(), &[("FAKE_REPLY", &folder)]);
    set_policy(&ws, "max_turns", json!(1));
    set_policy(
        &ws,
        "retry",
        json!({ "max_attempts": 3, "backoff": { "initial_ms": 200, "max_ms": 300, "multiplier": 2.0, "jitter": "none" } }),
    );
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_exit(&out, 1);
    let delays: Vec<Value> = ws
        .system_events("system.step_completed")
        .iter()
        .filter(|e| e["status"] == "retry")
        .map(|e| e["payload"]["delay_ms"].clone())
        .collect();
    // initial, then × multiplier up to max.
    assert_eq!(delays, [json!(200), json!(300)]);
}

#[test]
fn a_rate_limited_model_is_waited_for_as_it_asks() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let replies_dir = scratch.path().join("replies");
    std::fs::create_dir_all(&replies_dir).expect("mkdir");
    let pairs = a_task("T-0042", "src/a.txt");
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    replies(&replies_dir, &pairs);
    // Rate-limited on its first call, as an API CLI says it: exit 75 and "retry after".
    let model = scratch.path().join("limited.sh");
    std::fs::write(
        &model,
        "cat > /dev/null\n\
         if [ ! -e \"$FAKE_LIMITED\" ]; then : > \"$FAKE_LIMITED\"; echo 'Error 429: rate limit reached, retry after 0.5 s' >&2; exit 75; fi\n\
         sed \"s|@ROOT@|$LORCH_WORKSPACE|g\" \"$FAKE_REPLY/$LORCH_CORRELATION_ID.md\"\n",
    )
    .expect("model");
    let folder = replies_dir.display().to_string();
    let flag = scratch.path().join("limited-once").display().to_string();
    let (ws, root) = real_agents(
        &["sh".to_owned(), model.display().to_string()],
        &[("FAKE_REPLY", &folder), ("FAKE_LIMITED", &flag)],
    );
    set_policy(
        &ws,
        "retry",
        json!({ "max_attempts": 3, "backoff": { "initial_ms": 10, "max_ms": 10, "multiplier": 1.0, "jitter": "none" },
                "rate_limit": { "exit_codes": [75], "wait_s": 30 } }),
    );
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_exit(&out, 0);
    let errors: Vec<Value> = ws
        .ledger()
        .into_iter()
        .filter(|m| m["event"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["payload"]["code"], "rate_limited");
    assert_eq!(errors[0]["payload"]["retry_after_ms"], 500);
    let retry: Vec<Value> = ws
        .system_events("system.step_completed")
        .into_iter()
        .filter(|e| e["status"] == "retry")
        .collect();
    assert_eq!(retry.len(), 1);
    assert_eq!(
        retry[0]["payload"]["delay_ms"], 500,
        "what the model asked, not the backoff's 10 ms"
    );
    assert_eq!(retry[0]["payload"]["rate_limited"], true);
    assert!(root.join("src/a.txt").exists());
}

#[test]
fn a_run_past_its_wall_time_stops_and_says_so() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let pairs = a_task("T-0042", "src/a.txt");
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    replies(scratch.path(), &pairs);
    let folder = scratch.path().display().to_string();
    let (ws, root) = real_agents(&scripted_model(), &[("FAKE_REPLY", &folder)]);
    // Less than it takes to start the agents: nothing is sent.
    set_policy(&ws, "max_wall_s", json!(0.001));
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_exit(&out, 1);
    let run = ws.run_id();
    let shown = stdout(&out);
    assert!(
        shown.contains("[lorch] FAILED: time spent: this lorch went on for ")
            && shown.contains(&format!(
                "policy.max_wall_s is 0.001; `lorch resume --run {run}` goes on\n"
            )),
        "{shown}"
    );
    assert!(!shown.contains("command implement"), "{shown}");
    // Each lorch has its own time: resumed with room, the run ends.
    set_policy(&ws, "max_wall_s", json!(600));
    let out = ws.lorch(&["resume", "--run", &run], &[]);
    assert_exit(&out, 0);
    assert!(root.join("src/a.txt").exists());
}
