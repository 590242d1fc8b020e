//! `lorch run` without `--task` (Phase 2: §4.1.2, §14.1, §17.2, §17.3): lorch asks what to
//! do, the orchestration agent (`lorch agent orchestration` over a scripted model) proposes
//! a task from the user's words, the plan files it was shown and `git ls-files`; the user's
//! answer is recorded as `system.user_decision`; on yes the task is added to lorch.json and
//! built in the same run, on no nothing is.

use serde_json::{Value, json};

use crate::deterministic::git_in as git;
use crate::harness::{Ws, assert_exit, config, stderr, stdout};

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
    assert_exit(&out, 0);
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
  other plans: specs/MASTER-SPEC.md, src/main.txt
  notes: PLAN.md asks for a greeting.
lorch> Add these tasks to lorch.json and build them? (y/n, or edit them) y
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
            "(y/n, or edit them) maybe\n  \"maybe\" is not an answer\n  answer y, n, or an edit: drop ID · goal ID TEXT · files ID PATH… (- for none) · plan PATH\nlorch> Add these tasks to lorch.json and build them? (y/n, or edit them) n\n[lorch] user_decision denied: no task\n[lorch] FAILED: you declined the proposed tasks: nothing was built\n"
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
    assert_exit(&out, 0);
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
fn the_user_drops_and_rewords_tasks_and_the_approved_ones_are_built_one_after_another_in_one_run() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let ws = workspace(&scratch.path().join("prompt.md"), "three");
    let out = ws.lorch_typing(
        &[],
        "Manage PLAN.md\ndrop T-0102\ngoal T-0101 Say goodbye warmly\nfiles T-0101 ../out.txt\ny\n",
    );
    assert_exit(&out, 0);
    let console = stdout(&out);
    assert!(
        console.contains(
            "(y/n, or edit them) drop T-0102\nlorch: the tasks now:\n  T-0100: Greet the user by name\n    files: src/greet.txt\n  T-0101: Say goodbye\n    files: src/bye.txt\n"
        ),
        "{console}"
    );
    assert!(
        console.contains("lorch: the tasks now:\n  T-0100: Greet the user by name\n    files: src/greet.txt\n  T-0101: Say goodbye warmly\n    files: src/bye.txt\n"),
        "{console}"
    );
    assert!(
        console.contains(
            "(y/n, or edit them) files T-0101 ../out.txt\n  ../out.txt: `..` is not allowed"
        ),
        "a file outside the workspace is refused: {console}"
    );
    assert!(
        console.contains("[lorch] user_decision approved: T-0100, T-0101\n"),
        "{console}"
    );
    let console = normalized(&ws, &console);
    assert!(
        console.contains("[lorch] run RUN task T-0100, then T-0101\n"),
        "{console}"
    );
    assert!(
        console.contains("[lorch] task T-0101 (after T-0100)\n"),
        "{console}"
    );
    assert_eq!(console.matches("[lorch] DONE\n").count(), 1, "{console}");

    // One run (one ledger) built both, in order, the second with the user's words.
    let ledger = ws.ledger();
    let decision = events(&ledger, "system.user_decision")[0];
    assert_eq!(
        decision["payload"]["proposed_tasks"],
        json!(["T-0100", "T-0101", "T-0102"])
    );
    assert_eq!(
        decision["payload"]["approved_tasks"],
        json!(["T-0100", "T-0101"])
    );
    assert_eq!(
        decision["payload"]["changes"],
        json!(["dropped T-0102", "goal of T-0101: Say goodbye warmly"])
    );
    let implements: Vec<(&str, &str)> = ledger
        .iter()
        .filter(|m| m["action"] == "implement")
        .map(|m| {
            (
                m["task_id"].as_str().unwrap_or(""),
                m["inputs"]["goal"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        implements,
        [
            ("T-0100", "Greet the user by name"),
            ("T-0101", "Say goodbye warmly")
        ]
    );
    let config = ws.json("lorch.json");
    let tasks: Vec<(&str, &str)> = config["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap_or(""),
                t["goal"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        tasks,
        [
            (
                "T-0042",
                "Implement sections 3.1–3.3 of /specs/MASTER-SPEC.md"
            ),
            ("T-0100", "Greet the user by name"),
            ("T-0101", "Say goodbye warmly")
        ]
    );
    // §11.1 holds for each task.
    let out = ws.lorch(&["validate", "--run", &ws.run_id()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(
            "ok   final review approved: T-0100 step 2: approved; T-0101 step 2: approved\n"
        ),
        "{}",
        stdout(&out)
    );
    assert_eq!(ws.json("state/run.json")["tasks_done"], json!(["T-0100"]));
}

#[test]
fn a_killed_multi_task_run_resumes_with_the_tasks_still_to_build() {
    let scratch = tempfile::tempdir().expect("tempdir");
    // Kill lorch after more and more durable writes until it dies in the second task.
    let ws = (10..)
        .step_by(6)
        .find_map(|n| {
            let ws = workspace(&scratch.path().join("prompt.md"), "two");
            let out = ws_lorch_typing_env(&ws, "Manage PLAN.md\ny\n", n);
            assert_eq!(
                out.status.code(),
                None,
                "n={n}: never killed in the second task"
            );
            let ledger = ws.ledger();
            (!events(&ledger, "system.task_started").is_empty()).then_some(ws)
        })
        .expect("killed in the second task");
    let out = ws.lorch(&["resume", "--run", &ws.run_id()], &[]);
    assert_exit(&out, 0);
    let state = ws.json("state/run.json");
    assert_eq!(state["status"], "completed");
    assert_eq!(state["task_id"], "T-0101");
    assert_eq!(state["tasks_done"], json!(["T-0100"]));
    let ledger = ws.ledger();
    let built: Vec<&str> = ledger
        .iter()
        .filter(|m| m["action"] == "implement")
        .map(|m| m["task_id"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        built.iter().filter(|t| **t == "T-0100").count(),
        1,
        "the first task, done before the kill, is not built again: {built:?}"
    );
    assert_eq!(built.last(), Some(&"T-0101"));
    let out = ws.lorch(&["validate", "--run", &ws.run_id()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

/// `lorch` typing `stdin`, killed by the crash hook after `n` durable writes.
fn ws_lorch_typing_env(ws: &Ws, stdin: &str, n: u32) -> std::process::Output {
    let mut cmd = assert_cmd::Command::cargo_bin("lorch").expect("lorch is built");
    cmd.current_dir(ws.path())
        .env("LORCH_CRASH_AFTER_WRITES", n.to_string())
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .write_stdin(stdin)
        .timeout(std::time::Duration::from_secs(120));
    cmd.output().expect("lorch runs")
}

#[test]
fn the_user_picks_another_plan_and_the_agent_is_asked_for_its_tasks_with_task_discovery() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let prompt = scratch.path().join("prompt.md");
    let ws = workspace(&prompt, "normal");
    ws.write("docs/plan_v2.md", "# Plan v2\n\n1. Build v2.\n");
    git(ws.path(), &["add", "-A"]);
    git(ws.path(), &["commit", "-q", "-m", "v2"]);
    let out = ws.lorch_typing(&[], "Manage the plan\nplan docs/plan_v2.md\ny\n");
    assert_exit(&out, 0);
    let console = stdout(&out);
    assert!(
        console.contains(
            "(y/n, or edit them) plan docs/plan_v2.md\n[lorch] user_decision plan_chosen: docs/plan_v2.md\n[lorch→orchestration] command task_discovery (corr intake-2)\n"
        ),
        "{console}"
    );
    assert!(
        console.contains(
            "  T-0200: Build what plan v2 says\n    files: src/v2.txt\n  plan: docs/plan_v2.md\n"
        ),
        "{console}"
    );
    assert!(console.ends_with("[lorch] DONE\n"), "{console}");
    // The agent was shown the chosen plan whole.
    let shown = std::fs::read_to_string(&prompt).expect("prompt");
    assert!(
        shown.contains("## The plan the user chose\n\nDerive the tasks from `docs/plan_v2.md`"),
        "{shown}"
    );
    assert!(shown.contains("1. Build v2."), "{shown}");
    let ledger = ws.ledger();
    let discovery: Vec<&Value> = ledger
        .iter()
        .filter(|m| m["action"] == "task_discovery")
        .collect();
    assert_eq!(discovery.len(), 1);
    assert_eq!(discovery[0]["inputs"]["plan"], "docs/plan_v2.md");
    assert_eq!(discovery[0]["to"]["agent_type"], "orchestration");
    let decisions = events(&ledger, "system.user_decision");
    let statuses: Vec<&str> = decisions
        .iter()
        .map(|d| d["status"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(statuses, ["plan_chosen", "approved"]);
    assert_eq!(decisions[1]["payload"]["approved_plan"], "docs/plan_v2.md");
    assert_eq!(decisions[1]["payload"]["approved_tasks"], json!(["T-0200"]));
    assert_eq!(
        events(&ledger, "system.run_started")[0]["task_id"],
        "T-0200"
    );
}

#[test]
fn a_conflict_the_agent_found_is_shown_and_the_user_decides() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let ws = workspace(&scratch.path().join("prompt.md"), "conflict");
    let out = ws.lorch_typing(&[], "Manage PLAN.md\nn\n");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let console = stdout(&out);
    assert!(
        console.contains(
            "[orchestration] orchestration.plan_conflict conflict\nlorch: the orchestration agent proposes, but found conflicts (lorch changes no plan or spec; you decide):\n  CONFLICT: T-0100 greets by name; specs/MASTER-SPEC.md says by title.\n  T-0100: Greet the user by name\n"
        ),
        "{console}"
    );
    let ledger = ws.ledger();
    let decision = events(&ledger, "system.user_decision");
    assert_eq!(decision.len(), 1);
    assert_eq!(decision[0]["status"], "denied");
    assert_eq!(
        decision[0]["payload"]["conflicts"],
        json!(["T-0100 greets by name; specs/MASTER-SPEC.md says by title."])
    );
    assert!(
        events(&ledger, "system.run_started").is_empty(),
        "nothing built"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("specs/MASTER-SPEC.md")).expect("spec"),
        "# Spec\n\n## Status\n\n## Changelog\n",
        "the spec is untouched"
    );

    // The same conflict, approved: the user's decision to go on is recorded, and it runs.
    let ws = workspace(&scratch.path().join("prompt2.md"), "conflict");
    let out = ws.lorch_typing(&[], "Manage PLAN.md\ny\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let decision = events(&ws.ledger(), "system.user_decision")[0].clone();
    assert_eq!(decision["status"], "approved");
    assert!(decision["payload"]["conflicts"].is_array());
}

#[test]
fn a_conflict_without_tasks_is_put_to_the_user_and_the_answer_goes_back_with_the_same_key() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let prompt = scratch.path().join("prompt.md");
    let ws = workspace(&prompt, "conflict_only");
    let out = ws.lorch_typing(&[], "Manage PLAN.md\nFollow the spec\ny\n");
    assert_exit(&out, 0);
    let console = stdout(&out);
    assert!(
        console.contains(
            "[orchestration] orchestration.plan_conflict unresolved\nlorch: the orchestration agent found a conflict (lorch changes no plan or spec; you decide how to go on):\n  PLAN.md asks for a greeting by title; specs/MASTER-SPEC.md by name.\nlorch> Your answer: Follow the spec\n[lorch] user_decision resolved: Follow the spec\n"
        ),
        "{console}"
    );
    let shown = std::fs::read_to_string(&prompt).expect("prompt");
    assert!(shown.contains("Answer: Follow the spec"), "{shown}");
    let ledger = ws.ledger();
    let intakes: Vec<&Value> = ledger.iter().filter(|m| m["action"] == "intake").collect();
    assert_eq!(intakes.len(), 2);
    assert_eq!(intakes[0]["idempotency_key"], intakes[1]["idempotency_key"]);
    let statuses: Vec<&str> = events(&ledger, "system.user_decision")
        .iter()
        .map(|d| d["status"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(statuses, ["resolved", "approved"]);
}
