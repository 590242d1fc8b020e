//! `lorch.json` (§8): created with the defaults on the first run, refused with the field and
//! what is expected; `lorch doctor`; `lorch run` without a task.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use lorch::config::default_text;
use serde_json::{Value, json};

use crate::harness::{Ws, config, stderr, stdout};

#[test]
fn the_first_run_writes_lorch_json_and_stops_to_say_what_to_configure() {
    let ws = Ws::new(&Value::Null);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    let text = std::fs::read_to_string(ws.path().join("lorch.json")).expect("created");
    assert_eq!(text, default_text());
    let mode = std::fs::metadata(ws.path().join("lorch.json"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let config: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        config["policy"]["retry"]["backoff"],
        json!({"initial_ms": 1000, "max_ms": 60000, "multiplier": 2.0, "jitter": "full"})
    );
    assert_eq!(config["policy"]["max_turns"], 4);
    // No spec_path: lorch finds the spec at specs/MASTER-SPEC.md (§5.2) or SPEC.md.
    assert_eq!(config["spec_path"], Value::Null);
    assert_eq!(
        config["agents"]["builder"]["cmd"],
        json!(["lorch", "agent", "builder", "--", "claude", "-p"])
    );
    // No model runs: lorch says what to set first.
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(
        err.starts_with("lorch: there was no lorch.json here: wrote ")
            && err.contains("each agent's model command, after `--` in its `cmd` (now `claude -p`")
            && err.contains("your task: its `goal` and the `files` it is about")
            && err.contains("sh examples/lorch/try.sh"),
        "{err}"
    );
    assert!(!ws.path().join("events").exists(), "nothing started");

    // Run again without editing: the placeholder task is refused, still before any model.
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("task T-0042's goal in lorch.json is still the placeholder"),
        "{}",
        stderr(&out)
    );
    assert!(!ws.path().join("events").exists(), "nothing started");
}

#[test]
fn an_invalid_config_is_reported_with_each_field_and_what_is_expected() {
    let mut c = config();
    c["agents"]["builder"]["cmd"] = json!([]);
    c["agents"]["reviewer"]["heartbeat_interval_s"] = json!("10");
    c["policy"]["retry"]["max_attempts"] = json!(0);
    c["policy"]["max_turns"] = json!(0);
    c["agents"]
        .as_object_mut()
        .expect("agents")
        .remove("spec_maintainer");
    c["tasks"][0]["id"] = json!("../x");
    let ws = Ws::new(&c);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    for expected in [
        "at /agents: \"spec_maintainer\" is a required property",
        "at /agents/builder/cmd: [] has less than 1 item",
        "at /agents/reviewer/heartbeat_interval_s: \"10\" is not of type \"number\"",
        "at /policy/retry/max_attempts: 0 is less than the minimum of 1",
        "at /policy/max_turns: 0 is less than the minimum of 1",
        "at /tasks/0/id: \"../x\" does not match",
    ] {
        assert!(err.contains(expected), "{expected}\n{err}");
    }
    assert!(!ws.path().join("events").exists(), "nothing started");
}

#[test]
fn run_without_a_task_first_writes_lorch_json_and_an_unknown_task_is_a_usage_error() {
    // Without lorch.json, `lorch` (natural-language intake) writes it and stops, as a run
    // of a task does: the default agents are placeholders to set first.
    let ws = Ws::new(&Value::Null);
    let out = ws.lorch(&[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("lorch: there was no lorch.json here: wrote "),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        ws.json("lorch.json")["agents"]["orchestration"]["cmd"],
        json!(["lorch", "agent", "orchestration", "--", "claude", "-p"])
    );
    assert!(!ws.path().join("events").exists(), "nothing started");
    let ws = Ws::new(&config());
    let out = ws.lorch(&["run", "--task", "T-9"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "lorch: task T-9 is not in lorch.json's tasks\n"
    );
}

#[test]
fn doctor_checks_agent_commands_workspace_and_git() {
    let ws = Ws::new(&config());
    let out = ws.lorch(&["doctor"], &[]);
    // Not a git repository: only `lorch agent` needs one.
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(
            "ok   workspace is a git repository: no (no agent is `lorch agent`, which would need one)"
        ),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("ok   builder command `python3`"),
        "{}",
        stdout(&out)
    );
    let mut c = config();
    let lorch = assert_cmd::cargo::cargo_bin("lorch").display().to_string();
    c["agents"]["builder"]["cmd"] =
        json!([lorch, "agent", "builder", "--check", "true", "--", "sh"]);
    std::fs::write(ws.path().join("lorch.json"), c.to_string()).expect("write");
    let out = ws.lorch(&["doctor"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("FAIL workspace is a git repository: ")
            && stdout(&out).contains(
                "`lorch agent` commits its work through git-loaf, which needs one (git init)"
            ),
        "{}",
        stdout(&out)
    );
    git2::Repository::init(ws.path()).expect("git init");
    let out = ws.lorch(&["doctor"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(!stdout(&out).contains("FAIL"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("ok   builder runs checks: true\n"),
        "{}",
        stdout(&out)
    );
    // A builder that runs no check could never have a step accepted (§4).
    c["agents"]["builder"]["cmd"] = json!([lorch, "agent", "builder", "--", "sh"]);
    std::fs::write(ws.path().join("lorch.json"), c.to_string()).expect("write");
    let out = ws.lorch(&["doctor"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("FAIL builder runs checks: none: a step is accepted only with passing tests (§4); add `--check CMD` before `--` (e.g. --check 'cargo test')\n"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("ok   spec `specs/MASTER-SPEC.md` (spec_path): "),
        "{}",
        stdout(&out)
    );

    // The spec where lorch.json does not say: the spec's layout, specs/MASTER-SPEC.md …
    let mut c = config();
    c.as_object_mut().expect("config").remove("spec_path");
    std::fs::write(ws.path().join("lorch.json"), c.to_string()).expect("write");
    let out = ws.lorch(&["doctor"], &[]);
    assert!(
        stdout(&out).contains("ok   spec `specs/MASTER-SPEC.md` (spec_path unset): "),
        "{}",
        stdout(&out)
    );
    // … or SPEC.md when that is where the spec is …
    std::fs::rename(
        ws.path().join("specs/MASTER-SPEC.md"),
        ws.path().join("SPEC.md"),
    )
    .expect("move the spec");
    let out = ws.lorch(&["doctor"], &[]);
    assert!(
        stdout(&out).contains("ok   spec `SPEC.md` (spec_path unset): "),
        "{}",
        stdout(&out)
    );
    // … and when it is in neither, both places are named.
    std::fs::remove_file(ws.path().join("SPEC.md")).expect("remove the spec");
    let out = ws.lorch(&["doctor"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let root = ws.path().canonicalize().expect("canonical");
    assert!(
        stdout(&out).contains(&format!(
            "FAIL spec `specs/MASTER-SPEC.md` (spec_path unset): neither {0}/specs/MASTER-SPEC.md (the spec's layout, §5.2) nor {0}/SPEC.md exists: write the spec at one of them, or set spec_path in lorch.json to where it is",
            root.display()
        )),
        "{}",
        stdout(&out)
    );
    ws.write("specs/MASTER-SPEC.md", "# Spec\n");

    let mut c = config();
    c["agents"]["reviewer"]["cmd"] = json!(["no-such-agent-cli-42"]);
    std::fs::write(ws.path().join("lorch.json"), c.to_string()).expect("write");
    let out = ws.lorch(&["doctor"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("FAIL reviewer command `no-such-agent-cli-42`: not found"),
        "{}",
        stdout(&out)
    );

    std::fs::write(ws.path().join("lorch.json"), "{ not json").expect("write");
    let out = ws.lorch(&["doctor"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("FAIL lorch.json: "),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("not JSON"), "{}", stdout(&out));
}

#[test]
fn doctor_checks_the_llm_command_behind_lorch_agent_too() {
    let ws = Ws::new(&Value::Null);
    git2::Repository::init(ws.path()).expect("git init");
    // The defaults: `lorch agent ROLE -- claude -p`; neither is on this PATH.
    let out = ws.lorch(&["doctor"], &[("PATH", "/usr/bin:/bin")]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("ok   lorch.json: absent: created with the defaults on the first run"),
        "{text}"
    );
    for agent in ["builder", "reviewer", "spec_maintainer"] {
        assert!(
            text.contains(&format!("FAIL {agent} command `lorch`: not found")),
            "{text}"
        );
        assert!(
            text.contains(&format!("FAIL {agent} command `claude`: not found")),
            "{text}"
        );
    }
    assert!(
        !ws.path().join("lorch.json").exists(),
        "doctor creates nothing"
    );
}

#[test]
fn doctor_checks_the_git_identity_and_says_how_to_set_it() {
    let ws = Ws::new(&config());
    git2::Repository::init(ws.path()).expect("git init");
    let home = tempfile::tempdir().expect("home");
    let home_dir = home.path().display().to_string();
    let nobody = [
        ("HOME", home_dir.as_str()),
        ("XDG_CONFIG_HOME", home_dir.as_str()),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ];
    let out = ws.lorch(&["doctor"], &nobody);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("FAIL git identity: not set: git (and git-loaf, which commits the builder's work) needs your name and email. Set them with:\n    git config --global user.name \"Your Name\"\n    git config --global user.email \"you@example.com\""),
        "{text}"
    );
    // A run is refused before any agent starts.
    let out = ws.lorch(&["run", "--task", "T-0042"], &nobody);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("FAIL git identity"),
        "{}",
        stderr(&out)
    );
    assert!(!ws.path().join("events").exists(), "no run started");

    // As git finds it: the repository's config (or GIT_AUTHOR_NAME and the others).
    crate::deterministic::git_in(ws.path(), &["config", "user.name", "Ada"]);
    crate::deterministic::git_in(ws.path(), &["config", "user.email", "ada@example.com"]);
    let out = ws.lorch(&["doctor"], &nobody);
    assert!(
        stdout(&out).contains("ok   git identity: Ada <ada@example.com>\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn doctor_shows_where_records_go() {
    let ws = Ws::new(&config());
    let repo = git2::Repository::init(ws.path()).expect("git init");
    let root = ws.path().canonicalize().expect("canonical");
    let out = ws.lorch(&["doctor"], &[]);
    assert!(
        stdout(&out).contains(&format!(
            "ok   records: {} (events/, state/, receipts/, snapshots/, logs/, transcripts/ at the top, §5.2)",
            root.display()
        )),
        "{}",
        stdout(&out)
    );
    ws.write("state/store.py", "x = 1\n");
    let mut index = repo.index().expect("index");
    index
        .add_path(Path::new("state/store.py"))
        .expect("track state/");
    index.write().expect("write index");
    let out = ws.lorch(&["doctor"], &[]);
    assert!(
        stdout(&out).contains(&format!(
            "ok   records: {}/.lorch (the project tracks state/ in git: the §5.2 layout inside lorch's own folder)",
            root.display()
        )),
        "{}",
        stdout(&out)
    );
}
