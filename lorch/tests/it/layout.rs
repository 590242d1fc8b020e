//! The spec's own layout and configuration (issue 38): §8.2's `lorch.json` exactly as written,
//! the spec at §5.2's `specs/MASTER-SPEC.md`, runs the §15 example to DONE; a project that
//! tracks folders named like lorch's records (`state/`, `logs/`) gets its builder's files
//! there committed, lorch's records kept in `.lorch/`; `orchestration.enabled: false` is
//! honoured.

use std::os::unix::fs::PermissionsExt as _;

use serde_json::{Value, json};

use crate::agent::{ENV, fake_llm};
use crate::deterministic::git_in as git;
use crate::failures::{real_agents, scripted_model};
use crate::harness::{Ws, assert_exit, config, stderr, stdout};

/// §8.2's example `lorch.json`, verbatim.
const SPEC_CONFIG: &str = r#"{
  "version": "1.0",
  "workspace_root": ".",
  "policy": {
    "concurrency": 1,
    "message_max_bytes": 262144,
    "artifact_max_bytes": 1073741824,
    "retry": { "max_attempts": 3, "backoff": { "initial_ms": 1000, "max_ms": 60000, "multiplier": 2.0, "jitter": "full" } },
    "strict_version_pinning": true,
    "parallel_reviews": false,
    "redact_secrets_in_logs": true
  },
  "agents": {
    "builder": {
      "cmd": ["claude"],
      "heartbeat_interval_s": 10,
      "timeouts_s": { "implement": 600, "implement_changes": 600 },
      "env": { "CLAUDE_AGENT_ROLE": "builder", "LOG_LEVEL": "info" }
    },
    "reviewer": {
      "cmd": ["claude"],
      "heartbeat_interval_s": 10,
      "timeouts_s": { "review": 300 },
      "env": { "CLAUDE_AGENT_ROLE": "reviewer" }
    },
    "spec_maintainer": {
      "cmd": ["claude"],
      "timeouts_s": { "update_spec": 180 },
      "env": { "CLAUDE_AGENT_ROLE": "spec_maintainer" }
    },
    "orchestration": {
      "enabled": true,
      "cmd": ["claude"],
      "timeouts_s": { "intake": 180, "task_discovery": 180 },
      "env": { "CLAUDE_AGENT_ROLE": "orchestration" }
    }
  },
  "tasks": [
    { "id": "T-0042", "goal": "Implement sections 3.1–3.3 of /specs/MASTER-SPEC.md" }
  ]
}"#;

/// A `claude` that speaks lorch's protocol: `lorch agent $CLAUDE_AGENT_ROLE` around the
/// scripted model (what a user puts on PATH to run §8.2's configuration as written).
const STAND_IN_CLAUDE: &str = "#!/bin/sh\n\
case \"$CLAUDE_AGENT_ROLE\" in\n\
  builder) exec \"$LORCH_BIN\" agent builder --check 'test -f src/hello.txt' -- sh \"$FAKE_LLM\" ;;\n\
  *) exec \"$LORCH_BIN\" agent \"$CLAUDE_AGENT_ROLE\" -- sh \"$FAKE_LLM\" ;;\n\
esac\n";

#[test]
fn the_spec_s_own_configuration_and_layout_run_the_worked_example_to_done() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let replies = scratch.path().join("replies");
    std::fs::create_dir_all(&replies).expect("mkdir");
    for (id, text) in crate::end_to_end::REPLIES {
        std::fs::write(replies.join(format!("{id}.md")), text).expect("reply");
    }
    let bin = scratch.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let claude = bin.join("claude");
    std::fs::write(&claude, STAND_IN_CLAUDE).expect("claude");
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).expect("chmod");

    let ws = Ws::new(&Value::Null);
    std::fs::write(ws.path().join("lorch.json"), SPEC_CONFIG).expect("lorch.json");
    ws.write("specs/MASTER-SPEC.md", crate::end_to_end::SPEC);
    let root = ws.path().canonicalize().expect("canonical");
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "specs"]);
    git(&root, &["commit", "-q", "-m", "the spec"]);

    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let lorch = assert_cmd::cargo::cargo_bin("lorch").display().to_string();
    let replies = replies.display().to_string();
    let llm = fake_llm();
    let mut env: Vec<(&str, &str)> = ENV.to_vec();
    env.extend([
        ("PATH", path.as_str()),
        ("LORCH_BIN", lorch.as_str()),
        ("FAKE_LLM", llm.as_str()),
        ("FAKE_REPLY", replies.as_str()),
    ]);
    let doctor = ws.lorch(&["doctor"], &env);
    assert!(
        stdout(&doctor).contains("ok   spec `specs/MASTER-SPEC.md` (spec_path unset): "),
        "{}",
        stdout(&doctor)
    );
    let out = ws.lorch(&["run", "--task", "T-0042"], &env);
    assert_exit(&out, 0);
    assert!(stdout(&out).ends_with("[lorch] DONE\n"), "{}", stdout(&out));
    assert!(
        std::fs::read_to_string(root.join("specs/MASTER-SPEC.md"))
            .expect("spec")
            .contains("| T-0042 | done |")
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/hello.txt")).expect("built"),
        "hello\n"
    );
}

#[test]
fn a_project_with_its_own_state_and_logs_folders_gets_its_builders_files_there_committed() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let reply = |id: &str, text: &str| {
        std::fs::write(scratch.path().join(format!("{id}.md")), text).expect("reply")
    };
    reply(
        "T-0042-1",
        "Adds the store and the log handler.\n\n\
         #!nesl [@three-char-SHA-256: a1a]\naction = \"file_write\"\npath = \"@ROOT@/state/store.py\"\ncontent = \"STORE = {}\\n\"\n#!end_a1a\n\n\
         #!nesl [@three-char-SHA-256: b2b]\naction = \"file_write\"\npath = \"@ROOT@/logs/handler.py\"\ncontent = \"def handle(): pass\\n\"\n#!end_b2b\n",
    );
    reply("T-0042-2", "Fine.\nVERDICT: approved\n");
    reply(
        "T-0042-3",
        "STATUS: no_changes_needed\nSUMMARY: nothing to note.\n",
    );
    let folder = scratch.path().display().to_string();
    let (ws, root) = real_agents(&scripted_model(), &[("FAKE_REPLY", &folder)]);
    ws.write("state/__init__.py", "");
    ws.write("logs/__init__.py", "");
    git(&root, &["add", "state", "logs"]);
    git(
        &root,
        &["commit", "-q", "-m", "the project's own state/ and logs/"],
    );

    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_exit(&out, 0);
    let tracked = git(&root, &["ls-files", "state", "logs"]);
    assert_eq!(
        tracked,
        "logs/__init__.py\nlogs/handler.py\nstate/__init__.py\nstate/store.py\n"
    );
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    // lorch's records are in its own folder, the §5.2 layout inside it; none of the
    // project's folders is excluded.
    let records = root.join(".lorch");
    for folder in ["events", "state", "receipts", "snapshots", "logs"] {
        assert!(records.join(folder).is_dir(), "{folder}");
    }
    assert!(!root.join("events").exists());
    let exclude = std::fs::read_to_string(root.join(".git/info/exclude")).expect("exclude");
    assert!(exclude.lines().any(|l| l == "/.lorch/"), "{exclude}");
    for folder in ["/state/", "/logs/"] {
        assert!(!exclude.lines().any(|l| l == folder), "{exclude}");
    }
    // The snapshot holds the project's state/ files.
    let manifests: Vec<String> = std::fs::read_dir(records.join("snapshots"))
        .expect("snapshots")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".manifest.json"))
        .map(|e| std::fs::read_to_string(e.path()).expect("manifest"))
        .collect();
    assert!(
        manifests.iter().any(|m| m.contains("\"state/store.py\"")),
        "{manifests:?}"
    );
    // And `lorch validate --run` finds the run there.
    let checked = ws.lorch(&["validate", "--run", &run_id(&records)], &[]);
    assert_exit(&checked, 0);
}

fn run_id(records: &std::path::Path) -> String {
    let ledger = std::fs::read_dir(records.join("events"))
        .expect("events")
        .flatten()
        .next()
        .expect("a ledger")
        .file_name()
        .to_string_lossy()
        .into_owned();
    ledger
        .trim_start_matches("run-")
        .trim_end_matches(".ndjson")
        .to_owned()
}

#[test]
fn an_orchestration_agent_that_is_not_enabled_is_never_started_nor_checked() {
    let mut c = config();
    c["agents"]["orchestration"] = json!({ "enabled": false, "cmd": ["no-such-orchestrator-42"] });
    let ws = Ws::new(&c);
    let out = ws.lorch(&["doctor"], &[]);
    assert!(
        !stdout(&out).contains("no-such-orchestrator-42"),
        "{}",
        stdout(&out)
    );
    let out = ws.lorch_typing(&["run"], "build it\n");
    assert_exit(&out, 2);
    assert!(
        stderr(&out).starts_with(
            "lorch: no --task given, and no orchestration agent to turn what you want into a task."
        ),
        "{}",
        stderr(&out)
    );
    assert!(!ws.path().join("events").exists(), "nothing started");
}
