//! Failures a person meets (issue 26, finding 4): `lorch run` refuses what `lorch doctor`
//! fails, the console names the program, file or reason of each failure, a failed run
//! resumes once the cause is fixed, and the exit codes are the CLI's.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::agent::{ENV, fake_llm};
use crate::deterministic::git_in as git;
use crate::harness::{Ws, assert_exit, config, stderr, stdout};

/// A git workspace whose agents are lorch's real ones (`lorch agent ROLE --check true --
/// LLM…`); `llm` is the model command line of every role, `env` added to each agent's.
pub fn real_agents(llm: &[String], env: &[(&str, &str)]) -> (Ws, PathBuf) {
    let lorch = assert_cmd::cargo::cargo_bin("lorch").display().to_string();
    let agent = |role: &str| {
        let mut cmd = vec![lorch.clone(), "agent".into(), role.into()];
        if role == "builder" {
            cmd.extend(["--check".to_owned(), "true".to_owned()]);
        }
        cmd.push("--".into());
        cmd.extend(llm.iter().cloned());
        json!({
            "cmd": cmd,
            "heartbeat_interval_s": 1.0,
            "timeouts_s": {},
            "env": ENV
                .iter()
                .chain(env)
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect::<serde_json::Map<_, _>>(),
        })
    };
    let mut c = config();
    c["agents"] = json!({
        "builder": agent("builder"),
        "reviewer": agent("reviewer"),
        "spec_maintainer": agent("spec_maintainer"),
    });
    let ws = Ws::new(&c);
    ws.write("SPEC.md", "# Spec\n\n## Status\n\n## Changelog\n");
    ws.write("README.md", "# hello\n");
    let root = ws.path().canonicalize().expect("canonical");
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "start"]);
    (ws, root)
}

/// The fake model answering every role with the reply files in `replies`.
pub fn scripted_model() -> Vec<String> {
    vec!["sh".to_owned(), fake_llm()]
}

fn write_replies(dir: &Path, replies: &[(&str, &str)]) {
    for (id, text) in replies {
        std::fs::write(dir.join(format!("{id}.md")), text).expect("write reply");
    }
}

#[test]
fn run_refuses_what_doctor_fails_and_names_the_causes_before_any_agent_runs() {
    let mut c = config();
    c["agents"]["reviewer"]["cmd"] = json!(["no-such-agent-cli-42"]);
    let ws = Ws::new(&c);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        "lorch: not starting (no agent ran): the checks of `lorch doctor` fail:\n  \
         FAIL reviewer command `no-such-agent-cli-42`: not found (not on PATH, or not executable)\n\
         lorch: fix these (lorch.json, PATH, the workspace), then run again\n"
    );
    assert!(!ws.path().join("events").exists(), "no run started");
    assert!(!ws.path().join(".fake").exists(), "no agent ran");
}

#[test]
fn the_console_names_the_program_that_could_not_start() {
    let scratch = tempfile::tempdir().expect("tempdir");
    // Executable, so doctor finds it; its interpreter does not exist, so it cannot start.
    let llm = scratch.path().join("model");
    std::fs::write(&llm, "#!/no/such/interpreter\n").expect("write");
    let mut perms = std::fs::metadata(&llm).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&llm, perms).expect("chmod");
    let program = llm.display().to_string();
    let (ws, _root) = real_agents(std::slice::from_ref(&program), &[]);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let cause = format!("cannot start `{program}`: No such file or directory (os error 2)");
    assert!(
        text.contains(&format!(
            "[builder] error failed agent_command_not_started: {cause}\n"
        )),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(
            "[lorch] FAILED: implement failed after 3 attempts: error agent_command_not_started: {cause}\n"
        )),
        "{text}"
    );
}

#[test]
fn a_builder_whose_apply_failed_is_reported_as_such_not_as_failing_tests() {
    let replies = tempfile::tempdir().expect("tempdir");
    let failing = "#!nesl [@three-char-SHA-256: b2c]\naction = \"file_replace_text\"\npath = \"@ROOT@/README.md\"\nold_text = \"# nothing like this\"\nnew_text = \"# x\"\n#!end_b2c\n";
    write_replies(replies.path(), &[("T-0042-1", failing)]);
    let dir = replies.path().display().to_string();
    let (ws, _root) = real_agents(&scripted_model(), &[("FAKE_REPLY", &dir)]);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("without passing tests"), "{text}");
    assert!(
        text.contains(
            "[lorch] implement will be retried: the builder's step failed: the apply did not fully succeed ("
        ),
        "{text}"
    );
}

#[test]
fn a_failed_run_resumes_once_the_cause_is_fixed_with_the_same_key() {
    let mut c = config();
    // Three errors exhaust the attempts; the agent's fourth answer (after the fix) succeeds.
    c["agents"]["builder"]["env"]["FAKE_PLAN"] = "error,error,error".into();
    let ws = Ws::new(&c);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(ws.json("state/run.json")["status"], "failed");
    let run = ws.run_id();
    let out = ws.lorch(&["resume", "--run", &run], &[]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!(
            "[lorch] resuming run {run} (it had failed: implement failed after 3 attempts: error tool_failed)\n\
             [lorch→builder] command implement (corr T-0042-1)\n"
        )),
        "{text}"
    );
    assert!(text.ends_with("[lorch] DONE\n"), "{text}");
    assert_eq!(ws.json("state/run.json")["status"], "completed");
    let implements: Vec<Value> = ws
        .ledger()
        .into_iter()
        .filter(|m| m["action"] == "implement")
        .collect();
    assert_eq!(implements.len(), 4);
    for c in &implements {
        assert_eq!(c["idempotency_key"], implements[0]["idempotency_key"]);
    }
    assert_eq!(
        implements[3]["retry"]["attempt"], 0,
        "a fresh round of attempts"
    );
}

#[test]
fn resume_of_a_run_that_does_not_exist_is_a_usage_error_that_says_what_to_do() {
    let ws = Ws::new(&config());
    let out = ws.lorch(&["resume", "--run", "nonexist"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "lorch: no run nonexist: events/run-nonexist.ndjson does not exist; there is no run in this workspace: start one with `lorch run --task ID`\n"
    );
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = ws.lorch(&["resume", "--run", "nonexist"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).ends_with(&format!(
            "; the runs here are {}: `lorch resume --run ID` with one of them\n",
            ws.run_id()
        )),
        "{}",
        stderr(&out)
    );
}
