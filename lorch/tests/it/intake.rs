//! `lorch run` without `--task` (Phase 2: §4.1.2, §14.1, §17.2, §17.3): lorch asks what to
//! do, the orchestration agent (`lorch agent orchestration` over a scripted model) proposes
//! a task from the user's words, the plan files it was shown and `git ls-files`; the user's
//! answer is recorded as `system.user_decision`; on yes the task is added to lorch.json and
//! built in the same run, on no nothing is.

use serde_json::{Value, json};

use crate::deterministic::git_in as git;
use crate::harness::{Ws, config, stderr, stdout};

fn intake_llm() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/llm/intake-llm.sh").to_owned()
}

/// A git workspace with PLAN.md, fake agents for the run, and the orchestration agent
/// `lorch agent orchestration -- sh intake-llm.sh` keeping its prompt in `prompt`.
fn workspace(prompt: &std::path::Path, mode: &str) -> Ws {
    let mut c = config();
    c["agents"]["orchestration"] = json!({
        "cmd": [env!("CARGO_BIN_EXE_lorch"), "agent", "orchestration", "--", "sh", intake_llm()],
        "heartbeat_interval_s": 1.0,
        "env": { "FAKE_PROMPT": prompt.display().to_string(), "FAKE_INTAKE": mode }
    });
    let ws = Ws::new(&c);
    ws.write("PLAN.md", "# Plan\n\n1. Greet the user by name.\n");
    ws.write("src/main.txt", "hello\n");
    git(ws.path(), &["init", "-q", "-b", "main"]);
    git(ws.path(), &["add", "-A"]);
    git(ws.path(), &["commit", "-q", "-m", "start"]);
    ws
}

/// The console with the run id and snapshot ids replaced.
fn normalized(ws: &Ws, text: &str) -> String {
    let mut out = text.replace(&ws.run_id(), "RUN");
    while let Some(at) = out.find("snap-") {
        if out[at..].starts_with("snap-XXXXXXXX") {
            break;
        }
        out.replace_range(at..(at + 13).min(out.len()), "snap-XXXXXXXX");
    }
    out
}

fn events<'a>(ledger: &'a [Value], name: &str) -> Vec<&'a Value> {
    ledger.iter().filter(|m| m["event"] == name).collect()
}

#[test]
fn without_a_task_lorch_asks_proposes_records_the_yes_adds_the_task_and_builds_it() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let prompt = scratch.path().join("prompt.md");
    let ws = workspace(&prompt, "normal");
    let out = ws.lorch_typing(&[], "Manage the implementation of PLAN.md\ny\n");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let console = normalized(&ws, &stdout(&out));
    let (intake, run) = console
        .split_once("[lorch] run RUN task T-0100\n")
        .expect(&console);
    assert_eq!(
        intake.replace(&snap_lines(intake), ""),
        "\
lorch> What should I do? (e.g., \"Use PLAN.md and manage its implementation\") Manage the implementation of PLAN.md
[lorch→orchestration] command intake (corr intake-1)
[orchestration] orchestration.proposed_tasks proposed
lorch: the orchestration agent proposes:
  T-0100: Greet the user by name
    files: src/greet.txt
  plan: PLAN.md
  notes: PLAN.md asks for a greeting.
lorch> Add these tasks to lorch.json and build them? (y/n) y
[lorch] user_decision approved: T-0100
"
    );
    assert!(
        run.contains("[lorch→builder] command implement (corr T-0100-1)"),
        "{run}"
    );
    assert!(run.ends_with("[lorch] DONE\n"), "{run}");

    // The model was shown the words, the plan candidates (PLAN.md first, shown whole) and
    // the repository's files.
    let shown = std::fs::read_to_string(&prompt).expect("the model got a prompt");
    for expected in [
        "## What the user asks\n\nManage the implementation of PLAN.md\n",
        "- `PLAN.md` (",
        "1. Greet the user by name.",
        "## The repository's files (`git ls-files`)\n\n```\nPLAN.md\nlorch.json\nspecs/MASTER-SPEC.md\nsrc/main.txt\n```",
    ] {
        assert!(shown.contains(expected), "{expected}\n---\n{shown}");
    }

    // The ledger: intake, the proposal, the user's decision, then the run of the task.
    let ledger = ws.ledger();
    let position =
        |pred: &dyn Fn(&Value) -> bool| ledger.iter().position(pred).expect("in the ledger");
    let asked = position(&|m| m["action"] == "intake");
    let proposed = position(&|m| m["event"] == "orchestration.proposed_tasks");
    let decided = position(&|m| m["event"] == "system.user_decision");
    let started = position(&|m| m["event"] == "system.run_started");
    assert!(
        asked < proposed && proposed < decided && decided < started,
        "{ledger:?}"
    );
    assert_eq!(
        ledger[asked]["inputs"],
        json!({"user_instruction": "Manage the implementation of PLAN.md", "spec": "specs/MASTER-SPEC.md"})
    );
    assert_eq!(ledger[asked]["to"]["agent_type"], "orchestration");
    assert_eq!(
        ledger[proposed]["payload"]["plan_candidates"][0]["path"],
        "PLAN.md"
    );
    let decision = &ledger[decided];
    assert_eq!(decision["from"]["agent_type"], "system");
    assert_eq!(decision["status"], "approved");
    assert_eq!(decision["correlation_id"], "intake-1");
    assert_eq!(decision["payload"]["approved_tasks"], json!(["T-0100"]));
    assert_eq!(decision["payload"]["approved_plan"], "PLAN.md");
    assert_eq!(decision["payload"]["prompt"], "y");
    assert_eq!(ledger[started]["task_id"], "T-0100");
    let implement = ledger
        .iter()
        .find(|m| m["action"] == "implement")
        .expect("an implement command");
    assert_eq!(implement["inputs"]["goal"], "Greet the user by name");
    assert_eq!(implement["inputs"]["files"], json!(["src/greet.txt"]));

    // The task is in lorch.json now, after the one that was there.
    let tasks = &ws.json("lorch.json")["tasks"];
    assert_eq!(
        tasks[1],
        json!({"id": "T-0100", "goal": "Greet the user by name", "files": ["src/greet.txt"]})
    );
    // Every recorded message is valid, and the run passes §11.1's checks.
    let out = ws.lorch(&["validate", "--schemas", "--run", &ws.run_id()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

/// The `[lorch] snapshot …` lines of `text`, for removal.
fn snap_lines(text: &str) -> String {
    text.lines()
        .filter(|l| l.starts_with("[lorch] snapshot "))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn a_no_is_recorded_and_nothing_is_built_or_written() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let ws = workspace(&scratch.path().join("prompt.md"), "normal");
    let before = std::fs::read(ws.path().join("lorch.json")).expect("lorch.json");
    let out = ws.lorch_typing(&["run"], "Manage PLAN.md\nmaybe\nn\n");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let console = stdout(&out);
    assert!(
        console.contains(
            "(y/n) maybe\n  answer y or n\nlorch> Add these tasks to lorch.json and build them? (y/n) n\n[lorch] user_decision denied: no task\n[lorch] FAILED: you declined the proposed tasks: nothing was built\n"
        ),
        "{console}"
    );
    let ledger = ws.ledger();
    let decision = events(&ledger, "system.user_decision");
    assert_eq!(decision.len(), 1);
    assert_eq!(decision[0]["status"], "denied");
    assert_eq!(decision[0]["payload"]["proposed_tasks"], json!(["T-0100"]));
    assert!(events(&ledger, "system.run_started").is_empty());
    assert!(
        !ledger.iter().any(|m| m["to"]["agent_type"] == "builder"),
        "nothing built"
    );
    assert_eq!(
        std::fs::read(ws.path().join("lorch.json")).expect("lorch.json"),
        before
    );
}

#[test]
fn a_proposal_naming_a_file_outside_the_workspace_is_never_shown_nor_written() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let ws = workspace(&scratch.path().join("prompt.md"), "escape");
    let before = std::fs::read(ws.path().join("lorch.json")).expect("lorch.json");
    let out = ws.lorch_typing(&[], "Manage PLAN.md\ny\n");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let console = stdout(&out);
    assert!(
        console.contains("[orchestration] error failed no_proposal: the reply proposes no usable task: task T-0100: ../outside.txt"),
        "{console}"
    );
    // Retried as a failed step is, then the run fails.
    assert_eq!(
        console
            .matches("[lorch→orchestration] command intake")
            .count(),
        3,
        "{console}"
    );
    assert!(
        console.contains("[lorch] intake will be retried: intake failed: no_proposal"),
        "{console}"
    );
    assert!(!console.contains("proposes:"), "{console}");
    assert!(events(&ws.ledger(), "system.user_decision").is_empty());
    assert_eq!(
        std::fs::read(ws.path().join("lorch.json")).expect("lorch.json"),
        before
    );
}

#[test]
fn without_a_task_nor_an_orchestration_agent_lorch_says_what_to_set_and_starts_nothing() {
    let ws = Ws::new(&config());
    let out = ws.lorch_typing(&[], "Manage PLAN.md\n");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(
        err.starts_with("lorch: no --task given, and no orchestration agent to turn what you want into a task. Either set one in lorch.json, e.g. \"orchestration\": {\"cmd\": [\"lorch\", \"agent\", \"orchestration\", \"--\", \"llm\", \"-m\", \"MODEL\"]}")
            && err.ends_with("or run a task of lorch.json: lorch run --task ID (T-0042)\n"),
        "{err}"
    );
    assert!(!ws.path().join("events").exists(), "nothing started");
}

#[test]
fn questions_of_the_agent_are_put_to_the_user_and_the_answer_goes_back_with_the_same_key() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let prompt = scratch.path().join("prompt.md");
    let ws = workspace(&prompt, "ask");
    let out = ws.lorch_typing(&[], "Manage PLAN.md\n\nBy name\ny\n");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let console = stdout(&out);
    assert!(
        console.contains(
            "[orchestration] orchestration.needs_clarification needs_clarification\nlorch: the orchestration agent asks:\n  Greet by name or by title?\nlorch> Your answer: \n  an answer is needed (or end the input to stop)\nlorch> Your answer: By name\n"
        ),
        "{console}"
    );
    assert!(
        console.contains("[lorch] user_decision clarified: By name\n"),
        "{console}"
    );
    assert!(console.ends_with("[lorch] DONE\n"), "{console}");
    // The model's second prompt carries the answer.
    let shown = std::fs::read_to_string(&prompt).expect("prompt");
    assert!(
        shown.contains("## The user's answers to your questions\n\n- Greet by name or by title? Answer: By name\n"),
        "{shown}"
    );
    let ledger = ws.ledger();
    let intakes: Vec<&Value> = ledger.iter().filter(|m| m["action"] == "intake").collect();
    assert_eq!(intakes.len(), 2);
    assert_eq!(intakes[0]["idempotency_key"], intakes[1]["idempotency_key"]);
    assert_eq!(intakes[1]["message_id"], "intake-1.2");
    assert_eq!(
        intakes[1]["inputs"]["clarifications"],
        json!(["Greet by name or by title? Answer: By name"])
    );
    let decisions: Vec<&Value> = events(&ledger, "system.user_decision");
    assert_eq!(decisions.len(), 2);
    assert_eq!(decisions[0]["status"], "clarified");
    assert_eq!(decisions[0]["payload"]["prompt"], "By name");
    assert_eq!(decisions[1]["status"], "approved");
}

#[test]
fn two_approved_tasks_are_both_added_and_built_one_run_each() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let ws = workspace(&scratch.path().join("prompt.md"), "two");
    let out = ws.lorch_typing(&[], "Manage PLAN.md\ny\n");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let console = stdout(&out);
    assert!(
        console.contains("  T-0100: Greet the user by name\n    files: src/greet.txt\n  T-0101: Say goodbye\n    files: src/bye.txt\n"),
        "{console}"
    );
    assert!(
        console.contains("[lorch] user_decision approved: T-0100, T-0101\n"),
        "{console}"
    );
    assert_eq!(console.matches("[lorch] DONE\n").count(), 2, "{console}");
    let config = ws.json("lorch.json");
    let tasks: Vec<&str> = config["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(tasks, ["T-0042", "T-0100", "T-0101"]);
    // Each task is a run of its own: two ledgers, each starting one of them.
    let mut started: Vec<String> = std::fs::read_dir(ws.path().join("events"))
        .expect("events/")
        .map(|e| {
            let text = std::fs::read_to_string(e.expect("entry").path()).expect("ledger");
            text.lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
                .filter(|m| m["event"] == "system.run_started")
                .map(|m| m["task_id"].as_str().unwrap_or("").to_owned())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    started.sort();
    assert_eq!(started, ["T-0100", "T-0101"]);
}
