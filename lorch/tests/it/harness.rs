//! A workspace in a tempdir with a `lorch.json` whose agents are the fake agent of
//! `tests/it/agents/fake_agent.py`, and the `lorch` binary run in it.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

use assert_cmd::Command;
use serde_json::{Value, json};

/// The fake agent.
pub fn fake_agent() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/agents/fake_agent.py")
        .display()
        .to_string()
}

/// A configuration with fast backoff and fake agents for every role.
pub fn config() -> Value {
    let agent = || {
        json!({
            "cmd": ["python3", fake_agent()],
            // Generous: a loaded machine can take a while to start Python; the tests of
            // heartbeat loss set their own.
            "heartbeat_interval_s": 1.0,
            "timeouts_s": {},
            "env": {}
        })
    };
    json!({
        "version": "1.0",
        "workspace_root": ".",
        "spec_path": "specs/MASTER-SPEC.md",
        "policy": {
            "retry": { "max_attempts": 3, "backoff": { "initial_ms": 10, "max_ms": 80, "multiplier": 2.0, "jitter": "full" } }
        },
        "agents": { "builder": agent(), "reviewer": agent(), "spec_maintainer": agent() },
        "tasks": [ { "id": "T-0042", "goal": "Implement sections 3.1–3.3 of /specs/MASTER-SPEC.md" } ]
    })
}

/// A workspace.
pub struct Ws {
    /// Its folder.
    pub dir: tempfile::TempDir,
}

/// A fixed time for the files the test writes, so two workspaces snapshot alike.
pub const MTIME: u64 = 1_600_000_000;

impl Ws {
    /// A workspace with `specs/MASTER-SPEC.md` and `config` as `lorch.json` (none if `Null`).
    pub fn new(config: &Value) -> Ws {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = Ws { dir };
        ws.write(
            "specs/MASTER-SPEC.md",
            "# Spec\n\n## Status\n\n## Changelog\n",
        );
        if !config.is_null() {
            let text = serde_json::to_string_pretty(config).expect("json");
            std::fs::write(ws.path().join("lorch.json"), text).expect("write lorch.json");
        }
        ws
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file with the fixed mtime.
    pub fn write(&self, rel: &str, text: &str) {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
        let file = std::fs::File::options()
            .write(true)
            .open(&path)
            .expect("open");
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(MTIME))
            .expect("mtime");
    }

    /// Runs lorch with `args` and extra environment.
    pub fn lorch(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::cargo_bin("lorch").expect("lorch is built");
        cmd.current_dir(self.path())
            .args(args)
            .env_remove("LORCH_CRASH_AFTER_WRITES")
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .timeout(Duration::from_secs(120));
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("lorch runs")
    }

    /// Runs lorch with `args`, `stdin` as its standard input (a scripted user).
    pub fn lorch_typing(&self, args: &[&str], stdin: &str) -> Output {
        let mut cmd = Command::cargo_bin("lorch").expect("lorch is built");
        cmd.current_dir(self.path())
            .args(args)
            .env_remove("LORCH_CRASH_AFTER_WRITES")
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .write_stdin(stdin)
            .timeout(Duration::from_secs(120));
        cmd.output().expect("lorch runs")
    }

    /// The run's id (the one ledger's name).
    pub fn run_id(&self) -> String {
        let ledger = self.ledger_path();
        let name = ledger.file_name().expect("name").to_string_lossy();
        name.trim_start_matches("run-")
            .trim_end_matches(".ndjson")
            .to_owned()
    }

    /// The one ledger.
    pub fn ledger_path(&self) -> PathBuf {
        let mut found: Vec<PathBuf> = std::fs::read_dir(self.path().join("events"))
            .expect("events/")
            .map(|e| e.expect("entry").path())
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        found.remove(0)
    }

    /// The ledger's lines, parsed.
    pub fn ledger(&self) -> Vec<Value> {
        std::fs::read_to_string(self.ledger_path())
            .expect("ledger")
            .lines()
            .map(|l| serde_json::from_str(l).expect("ledger line is JSON"))
            .collect()
    }

    /// The `event` names of the ledger's `system.*` events named `name`.
    pub fn system_events(&self, name: &str) -> Vec<Value> {
        self.ledger()
            .into_iter()
            .filter(|m| m["event"] == name)
            .collect()
    }

    /// A JSON file of the workspace.
    pub fn json(&self, rel: &str) -> Value {
        let text = std::fs::read_to_string(self.path().join(rel)).expect(rel);
        serde_json::from_str(&text).expect("JSON")
    }
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts that the process exited with `code`, showing both outputs when not.
#[track_caller]
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}\n{}",
        stdout(out),
        stderr(out)
    );
}
