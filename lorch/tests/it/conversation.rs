//! The builder's conversation (DESIGN §3c, issue 26 finding 1): a reply whose blocks fail
//! is not the end of the step; git-loaf's report goes back to the model as the next turn,
//! the step ends as one commit, and a step that never succeeds leaves none.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::agent::{Agent, ENV, Workspace, command};
use crate::deterministic::git_in as git;
use crate::harness::{Ws, assert_exit};

/// The model that slips once and fixes its slip when shown the report.
pub fn slipping_llm() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/llm/slipping-llm.sh").to_owned()
}

const SPEC: &str = "# Spec\n\n## Requirements\n\n- greeting.txt greets lorch.\n\n## Status\n\n| Task | State |\n|------|-------|\n| T-0042 | todo |\n\n## Changelog\n";

/// A git workspace whose lorch.json runs every role on `model` (a script run with `sh`),
/// with `env` given to the agents.
pub fn workspace(model: &str, env: &[(&str, &str)]) -> (Ws, PathBuf) {
    let lorch = assert_cmd::cargo::cargo_bin("lorch").display().to_string();
    let agent = |role: &str| {
        json!({
            // The builder's step is accepted only when a check passes (§4): the greeting's.
            "cmd": if role == "builder" {
                json!([lorch, "agent", role, "--check", "grep -q lorch greeting.txt", "--", "sh", model])
            } else {
                json!([lorch, "agent", role, "--", "sh", model])
            },
            "heartbeat_interval_s": 1.0,
            "timeouts_s": {},
            "env": ENV
                .iter()
                .chain(env)
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect::<serde_json::Map<_, _>>(),
        })
    };
    let mut config = crate::harness::config();
    config["agents"] = json!({
        "builder": agent("builder"),
        "reviewer": agent("reviewer"),
        "spec_maintainer": agent("spec_maintainer"),
    });
    // Not the default (4): the prompts show lorch.json's value reaching the builder.
    config["policy"]["max_turns"] = json!(5);
    config["tasks"] =
        json!([{"id": "T-0042", "goal": "Greet lorch in greeting.txt", "files": ["greeting.txt"]}]);
    let ws = Ws::new(&config);
    // Where the spec's own example keeps it (harness::config's spec_path).
    ws.write("specs/MASTER-SPEC.md", SPEC);
    ws.write("greeting.txt", "Hello, world\n");
    let root = ws.path().canonicalize().expect("canonical");
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "start"]);
    (ws, root)
}

/// The prompts the slipping model got, in order.
fn prompts(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split("=== prompt ===\n")
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_model_that_slips_once_is_shown_the_report_and_the_step_ends_as_one_commit() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let log = scratch.path().join("prompts");
    let log_str = log.display().to_string();
    let (ws, root) = workspace(&slipping_llm(), &[("SLIP_PROMPTS", &log_str)]);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_exit(&out, 0);
    assert_eq!(
        std::fs::read_to_string(root.join("greeting.txt")).expect("greeting"),
        "Hello, lorch\n",
        "the task is built"
    );
    // start, the builder's step (its two turns squashed), the spec update.
    assert_eq!(git(&root, &["rev-list", "--count", "HEAD"]), "3\n");
    assert_eq!(
        git(&root, &["diff", "--stat", "HEAD~2", "HEAD~1"]),
        " greeting.txt | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"
    );
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    assert!(
        std::fs::read_to_string(root.join("specs/MASTER-SPEC.md"))
            .expect("spec")
            .contains("| T-0042 | done |"),
        "the spec at lorch.json's spec_path is kept"
    );
    assert!(!root.join("SPEC.md").exists());
    let builder: Vec<Value> = ws
        .ledger()
        .into_iter()
        .filter(|m| m["event"] == "builder.completed")
        .collect();
    assert_eq!(builder.len(), 1, "{builder:#?}");
    assert_eq!(builder[0]["status"], "success");
    assert_eq!(builder[0]["payload"]["turns"], 2);
    assert_eq!(
        builder[0]["payload"]["commit"],
        json!(git(&root, &["rev-parse", "HEAD~1"]).trim())
    );
    let prompts = prompts(&log);
    let builder_prompts: Vec<&String> = prompts
        .iter()
        .filter(|p| p.starts_with("You are the builder"))
        .collect();
    assert_eq!(builder_prompts.len(), 2);
    assert!(
        builder_prompts[1].contains("### git-loaf's report of reply 1")
            && builder_prompts[1].contains("## Your reply (turn 2 of 5)"),
        "{}",
        builder_prompts[1]
    );
}

fn implement(correlation: &str, ik: &str) -> Value {
    command(
        "builder",
        "implement",
        correlation,
        ik,
        json!({"goal": "Greet lorch in greeting.txt", "files": ["greeting.txt"], "step": 1}),
    )
}

#[test]
fn a_model_that_never_fixes_its_slip_fails_the_step_leaving_no_commit_and_says_why() {
    let ws = Workspace::with(&[("greeting.txt", "Hello, world\n")]);
    let head = ws.git(&["rev-parse", "HEAD"]);
    let prompts = ws.scratch("prompts");
    let prompts_str = prompts.display().to_string();
    let mut agent = Agent::start_cmd(
        &ws,
        "builder",
        &["--max-turns", "3"],
        &["sh", &slipping_llm()],
        &ws.scratch("unused"),
        &[("SLIP_NEVER_FIX", "1"), ("SLIP_PROMPTS", &prompts_str)],
    );
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let answer = agent.answer();
    let done = answer.last().expect("done");
    assert_eq!(done["event"], "builder.completed");
    assert_eq!(done["status"], "failed");
    assert_eq!(done["payload"]["commit"], Value::Null);
    assert_eq!(done["payload"]["turns"], 3);
    let problems = done["payload"]["problems"].as_array().expect("problems");
    assert_eq!(
        problems.last().expect("why"),
        "not done after 3 turn(s)",
        "{problems:#?}"
    );
    assert!(
        problems[0]
            .as_str()
            .is_some_and(|p| p.starts_with("the apply did not fully succeed (NOTHING APPLIED")),
        "{problems:#?}"
    );
    assert!(
        done["payload"]["report"]
            .as_str()
            .is_some_and(|r| r.contains("sl1 ❌ file_replace_text")),
        "{done:#}"
    );
    assert_eq!(ws.git(&["rev-parse", "HEAD"]), head, "no commit left");
    assert_eq!(ws.read("greeting.txt"), "Hello, world\n");
    let asked = self::prompts(&prompts);
    assert_eq!(asked.len(), 3, "one prompt per turn");
    assert_ne!(
        asked[0], asked[1],
        "a retry carries why the last reply failed"
    );

    // lorch's retry of the same command: the model is told why the last attempt failed.
    agent.send(&implement("c-2", "ik-implement-T-0042-1"));
    let again = agent.answer();
    assert_eq!(again.last().expect("done")["status"], "failed");
    let asked = self::prompts(&prompts);
    assert!(
        asked[3].contains("## An earlier attempt at this step failed")
            && asked[3].contains("not done after 3 turn(s)"),
        "{}",
        asked[3]
    );
}

#[test]
fn a_step_whose_turns_commit_partly_and_then_give_up_leaves_no_commit() {
    let ws = Workspace::with(&[
        ("greeting.txt", "Hello, world\n"),
        ("README.md", "# demo\n"),
    ]);
    let head = ws.git(&["rev-parse", "HEAD"]);
    // Each reply writes a file (committed) and slips on greeting.txt: every turn commits
    // something, and the step never succeeds.
    let reply = ws.reply(
        "partial.md",
        "#!nesl [@three-char-SHA-256: w1a]\naction = \"file_write\"\npath = \"@ROOT@/notes.txt\"\ncontent = \"a note\"\n#!end_w1a\n\n#!nesl [@three-char-SHA-256: sl1]\naction = \"file_replace_text\"\npath = \"@ROOT@/greeting.txt\"\nold_text = \"Hello world\"\nnew_text = \"Hello, lorch\"\n#!end_sl1\n",
    );
    let mut agent = Agent::start(&ws, "builder", &["--max-turns", "2"], &reply, &[]);
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let answer = agent.answer();
    let done = answer.last().expect("done");
    assert_eq!(done["status"], "failed", "{done:#}");
    assert_eq!(
        done["payload"]["problems"]
            .as_array()
            .and_then(|p| p.last()),
        Some(&json!(
            "not done after 2 turn(s): its 1 commit(s) were undone through git-loaf"
        )),
        "{done:#}"
    );
    assert_eq!(ws.git(&["rev-parse", "HEAD"]), head, "no commit left");
    assert!(!ws.root.join("notes.txt").exists());
    assert_eq!(ws.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_reply_that_only_reads_is_a_turn_that_did_not_do_the_task_not_a_success() {
    let ws = Workspace::with(&[("greeting.txt", "Hello, world\n")]);
    let head = ws.git(&["rev-parse", "HEAD"]);
    let reply = ws.reply(
        "read.md",
        "#!nesl [@three-char-SHA-256: rd1]\naction = \"file_read\"\npath = \"@ROOT@/greeting.txt\"\n#!end_rd1\n",
    );
    let mut agent = Agent::start(&ws, "builder", &["--max-turns", "2"], &reply, &[]);
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let answer = agent.answer();
    let done = answer.last().expect("done");
    assert_eq!(done["status"], "failed", "{done:#}");
    assert_eq!(
        done["payload"]["problems"],
        json!([
            "no file is changed yet: the task needs changes to the files",
            "not done after 2 turn(s)"
        ])
    );
    assert_eq!(ws.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(ws.runs(), 2, "the read's report went back as a second turn");
    let prompt = std::fs::read_to_string(ws.scratch("prompt")).expect("prompt");
    assert!(
        prompt.contains("### git-loaf's report of reply 1") && prompt.contains("Hello, world"),
        "{prompt}"
    );
}

/// Waits until `path` holds `n` prompts.
fn wait_for_prompts(path: &Path, n: usize) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while prompts(path).len() < n {
        assert!(std::time::Instant::now() < until, "never got {n} prompts");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn an_agent_killed_mid_conversation_undoes_its_turns_before_the_step_is_made_afresh() {
    let ws = Workspace::with(&[("greeting.txt", "Hello, world\n")]);
    let head = ws.git(&["rev-parse", "HEAD"]);
    let prompts = ws.scratch("prompts");
    let prompts_str = prompts.display().to_string();
    let model = ["sh".to_owned(), slipping_llm()];
    let model: Vec<&str> = model.iter().map(String::as_str).collect();
    let env = [
        ("SLIP_ALSO_WRITE", "1"),
        ("SLIP_PROMPTS", prompts_str.as_str()),
    ];
    let hanging: Vec<(&str, &str)> = env
        .iter()
        .copied()
        .chain([("SLIP_HANG_AT_TURN", "2")])
        .collect();
    // lorch resends the same command, pinned to the workspace as it was before the step.
    let mut command = implement("c-1", "ik-implement-T-0042-1");
    let (before, _) = lorch::manifest::snapshot_of(&ws.root).expect("snapshot");
    command["version"]["snapshot_id"] = before.into();
    let mut agent = Agent::start_cmd(&ws, "builder", &[], &model, &ws.scratch("unused"), &hanging);
    agent.send(&command);
    wait_for_prompts(&prompts, 2);
    agent.kill();
    assert_eq!(
        ws.git(&["rev-list", "--count", "HEAD"]),
        "2\n",
        "turn 1 committed notes.txt"
    );

    let mut agent = Agent::start_cmd(&ws, "builder", &[], &model, &ws.scratch("unused"), &env);
    command["correlation_id"] = "c-2".into();
    command["message_id"] = "m-c-2".into();
    agent.send(&command);
    let done = agent.answer().pop().expect("done");
    assert_eq!(done["status"], "success", "{done:#}");
    assert_eq!(done["payload"]["turns"], 2);
    assert_eq!(
        ws.git(&["rev-list", "--count", "HEAD"]),
        "2\n",
        "one commit for the step"
    );
    assert_eq!(ws.git(&["rev-parse", "HEAD~1"]), head);
    assert_eq!(ws.read("greeting.txt"), "Hello, lorch\n");
    assert_eq!(ws.read("notes.txt"), "turn 2");
    assert_eq!(ws.git(&["status", "--porcelain"]), "");
    assert!(
        agent.seen.iter().any(|m| m["message"]
            .as_str()
            .is_some_and(|t| t.starts_with("undid the 1 commit(s) an interrupted handling"))),
        "{:#?}",
        agent.seen
    );
}

#[test]
fn an_agent_killed_before_squashing_its_turns_squashes_them_when_the_command_comes_again() {
    let ws = Workspace::with(&[("greeting.txt", "Hello, world\n")]);
    let head = ws.git(&["rev-parse", "HEAD"]);
    let prompts = ws.scratch("prompts");
    let prompts_str = prompts.display().to_string();
    let handshake = ws.scratch("paused");
    let handshake_str = handshake.display().to_string();
    let model = ["sh".to_owned(), slipping_llm()];
    let model: Vec<&str> = model.iter().map(String::as_str).collect();
    let env = [
        ("SLIP_ALSO_WRITE", "1"),
        ("SLIP_PROMPTS", prompts_str.as_str()),
    ];
    // `planned` is a moment of git-loaf's squash only: both turns are committed by then.
    let paused: Vec<(&str, &str)> = env
        .iter()
        .copied()
        .chain([
            ("LOAF_PAUSE_AT", "planned"),
            ("LOAF_PAUSE_FILE", handshake_str.as_str()),
        ])
        .collect();
    let mut agent = Agent::start_cmd(&ws, "builder", &[], &model, &ws.scratch("unused"), &paused);
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !handshake.exists() {
        assert!(
            std::time::Instant::now() < until,
            "the squash never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    agent.kill();
    let _ = std::fs::remove_file(&handshake);
    assert_eq!(
        ws.git(&["rev-list", "--count", "HEAD"]),
        "3\n",
        "two turns, not squashed"
    );

    let mut agent = Agent::start_cmd(&ws, "builder", &[], &model, &ws.scratch("unused"), &env);
    agent.send(&implement("c-2", "ik-implement-T-0042-1"));
    let done = agent.answer().pop().expect("done");
    assert_eq!(done["status"], "success", "{done:#}");
    assert_eq!(done["payload"]["recovered"], true);
    assert_eq!(
        self::prompts(&prompts).len(),
        2,
        "the model is not asked again"
    );
    assert_eq!(
        ws.git(&["rev-list", "--count", "HEAD"]),
        "2\n",
        "one commit for the step"
    );
    assert_eq!(ws.git(&["rev-parse", "HEAD~1"]), head);
    assert_eq!(
        done["payload"]["commit"],
        json!(ws.git(&["rev-parse", "HEAD"]).trim())
    );
    assert_eq!(
        done["payload"]["changed"],
        json!(["greeting.txt", "notes.txt"])
    );
    // The squashed step says which task and step it is, and who wrote it, as each turn's
    // commit did (issues 37 and 38).
    let message = ws.git(&["log", "-1", "--format=%B"]);
    assert!(
        message.starts_with("lorch T-0042 step 1 (implement): Greet lorch in greeting.txt\n"),
        "{message}"
    );
    assert!(
        message.contains("\nAssisted-by: lorch builder (sh)\n"),
        "{message}"
    );
}

#[test]
fn checks_that_leave_files_behind_do_not_keep_a_failed_step_from_being_undone() {
    let ws = Workspace::with(&[("greeting.txt", "Hello, world\n")]);
    let head = ws.git(&["rev-parse", "HEAD"]);
    let reply = ws.reply(
        "greet.md",
        "#!nesl [@three-char-SHA-256: gr1]\naction = \"file_replace_text\"\npath = \"@ROOT@/greeting.txt\"\nold_text = \"Hello, world\"\nnew_text = \"Hello, lorch\"\n#!end_gr1\n",
    );
    // A build that leaves an output behind, and fails.
    let check = "echo built > build.out; exit 1";
    let mut agent = Agent::start(
        &ws,
        "builder",
        &["--max-turns", "2", "--check", check],
        &reply,
        &[],
    );
    agent.send(&implement("c-1", "ik-implement-T-0042-1"));
    let done = agent.answer().pop().expect("done");
    assert_eq!(done["status"], "failed", "{done:#}");
    let why = done["payload"]["problems"]
        .as_array()
        .and_then(|p| p.last())
        .and_then(Value::as_str)
        .expect("why");
    assert!(
        why.starts_with("not done after 2 turn(s): its 1 commit(s) were undone through git-loaf; what else changed in the files meanwhile (the checks' output) is saved as refs/loaf/saved/"),
        "{why}"
    );
    assert_eq!(ws.git(&["rev-parse", "HEAD"]), head, "no commit left");
    assert_eq!(ws.read("greeting.txt"), "Hello, world\n");
    // Nothing is lost: the check's output is kept in git-loaf's saved ref.
    let saved = why.rsplit(' ').next().expect("ref");
    let kept = ws.git(&["ls-tree", "-r", "--name-only", saved]);
    assert!(kept.lines().any(|f| f == "build.out"), "{saved}: {kept}");
}

#[test]
fn a_git_loaf_review_report_waiting_for_the_model_reaches_the_builder_once() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let log = scratch.path().join("prompts");
    let log_str = log.display().to_string();
    let (ws, root) = workspace(&slipping_llm(), &[("SLIP_PROMPTS", &log_str)]);
    // What `git loaf review` leaves for the model.
    let pending = root.join(".git/loaf/review/pending");
    std::fs::create_dir_all(&pending).expect("mkdir");
    std::fs::write(
        pending.join("abc123.md"),
        "git-loaf review: the user rejected 1 hunk. REJECTED-GREETING-HUNK\n",
    )
    .expect("report");
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_exit(&out, 0);
    let prompts = prompts(&log);
    let builder: Vec<&String> = prompts
        .iter()
        .filter(|p| p.starts_with("You are the builder"))
        .collect();
    assert!(
        builder[0].contains("## What the user rejected of earlier changes (git loaf review)")
            && builder[0].contains("REJECTED-GREETING-HUNK"),
        "{}",
        builder[0]
    );
    assert_eq!(
        std::fs::read_dir(&pending).expect("pending").count(),
        0,
        "delivered once"
    );
}
