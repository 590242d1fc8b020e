//! `lorch agent ROLE -- CMD…` as lorch sees it: a process fed commands on stdin whose every
//! stdout line must validate against the protocol's schemas. The harness here is shared by
//! the role tests (agent_builder.rs, agent_roles.rs); the tests in this file are about the
//! shim itself: heartbeats, deadlines, bad lines, wrong addressees, redaction.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant, SystemTime};

use lorch::Message;
use serde_json::{Value, json};

pub use crate::deterministic::ENV;

/// The fake LLM script.
pub fn fake_llm() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/llm/fake-llm.sh").to_owned()
}

/// A git repository with one commit, in a temporary folder that also holds the test's
/// scratch files (replies, prompts, run counts) outside the repository.
pub struct Workspace {
    dir: tempfile::TempDir,
    /// The repository's root, canonical.
    pub root: PathBuf,
}

impl Workspace {
    /// A repository with `files` committed.
    pub fn with(files: &[(&str, &str)]) -> Workspace {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        std::fs::create_dir(&root).expect("mkdir");
        let root = root.canonicalize().expect("canonical");
        let ws = Workspace { dir, root };
        ws.git(&["init", "-q", "-b", "main"]);
        ws.git(&["config", "user.name", "Ada"]);
        ws.git(&["config", "user.email", "ada@example.com"]);
        for (path, content) in files {
            ws.write(path, content);
        }
        ws.git(&["add", "-A"]);
        ws.git(&["commit", "-q", "-m", "initial"]);
        ws
    }

    /// Runs git in the repository; a failure fails the test.
    pub fn git(&self, args: &[&str]) -> String {
        crate::deterministic::git_in(&self.root, args)
    }

    /// Writes a file of the repository.
    pub fn write(&self, path: &str, content: &str) {
        let full = self.root.join(path);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(full, content).expect("write");
    }

    /// Reads a file of the repository.
    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root.join(path)).expect("read")
    }

    /// A path outside the repository, for the test's own files.
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes a canned reply outside the repository and returns its path.
    pub fn reply(&self, name: &str, text: &str) -> PathBuf {
        let path = self.scratch(name);
        std::fs::write(&path, text).expect("write reply");
        path
    }

    /// How many times the fake LLM ran (lines in its count file).
    pub fn runs(&self) -> usize {
        std::fs::read_to_string(self.scratch("count"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }
}

/// A running `lorch agent` and every line it printed so far.
pub struct Agent {
    child: Child,
    /// The workspace it was started in (what its commands' snapshots are of).
    root: PathBuf,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every message seen, in order.
    pub seen: Vec<Value>,
}

impl Agent {
    /// Starts `lorch agent <role> <flags> -- sh fake-llm.sh` in `ws`, the fake replying
    /// with `reply` (a file, or a folder of `<correlation id>.md`), with `env` added.
    pub fn start(
        ws: &Workspace,
        role: &str,
        flags: &[&str],
        reply: &Path,
        env: &[(&str, &str)],
    ) -> Agent {
        Agent::start_cmd(ws, role, flags, &["sh", &fake_llm()], reply, env)
    }

    /// [`Agent::start`] with another LLM command line.
    pub fn start_cmd(
        ws: &Workspace,
        role: &str,
        flags: &[&str],
        cmd: &[&str],
        reply: &Path,
        env: &[(&str, &str)],
    ) -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lorch"))
            .arg("agent")
            .arg(role)
            .args(["--workspace".as_ref(), ws.root.as_os_str()])
            .args(flags)
            .arg("--")
            .args(cmd)
            .current_dir(&ws.root)
            .envs(ENV)
            .env("FAKE_REPLY", reply)
            .env("FAKE_COUNT", ws.scratch("count"))
            .env("FAKE_PROMPT", ws.scratch("prompt"))
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("lorch agent starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Agent {
            stdin: child.stdin.take(),
            child,
            root: ws.root.clone(),
            lines,
            seen: Vec::new(),
        }
    }

    /// Sends one line.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    /// Sends a command. One pinned to [`ANY_SNAPSHOT`] is pinned to the workspace as it is
    /// now, as lorch would pin it (agents refuse a command for another snapshot, §6.2).
    pub fn send(&mut self, command: &Value) {
        let mut command = command.clone();
        if command["version"]["snapshot_id"] == ANY_SNAPSHOT {
            let (id, _) = lorch::manifest::snapshot_of(&self.root).expect("snapshot");
            command["version"]["snapshot_id"] = id.into();
        }
        self.send_line(&command.to_string());
    }

    /// The next message, validated against its schema (a test failure otherwise).
    fn next(&mut self, until: Instant) -> Option<Value> {
        let left = until.saturating_duration_since(Instant::now());
        let line = self.lines.recv_timeout(left).ok()?;
        let message = lorch::validate(line.as_bytes())
            .unwrap_or_else(|e| panic!("the agent printed an invalid line: {e}\n{line}"));
        assert!(
            !matches!(message, Message::Command(_)),
            "an agent never sends commands: {line}"
        );
        let value: Value = serde_json::from_str(&line).expect("json");
        self.seen.push(value.clone());
        Some(value)
    }

    /// Messages until one for which `done` holds (included), within 60 s.
    pub fn until(&mut self, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut got = Vec::new();
        while let Some(message) = self.next(deadline) {
            let stop = done(&message);
            got.push(message);
            if stop {
                return got;
            }
        }
        panic!("timed out; got {got:#?}");
    }

    /// The events (no heartbeats, logs or the builder's `builder.progress` of each turn, which
    /// a receipt does not replay) up to and including the first terminal one.
    pub fn answer(&mut self) -> Vec<Value> {
        self.until(is_terminal)
            .into_iter()
            .filter(|m| m["kind"] == "event" && m["event"] != "builder.progress")
            .collect()
    }

    /// Kills the agent with SIGKILL, as lorch does with one it gave up on.
    pub fn kill(&mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
    }

    /// Closes stdin and returns what the agent printed until it exited, and its exit code.
    pub fn finish(mut self) -> (Vec<Value>, Option<i32>) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut rest = Vec::new();
        while let Some(message) = self.next(deadline) {
            rest.push(message);
        }
        let status = self.child.wait().expect("wait");
        (rest, status.code())
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a message ends a command's answer.
pub fn is_terminal(message: &Value) -> bool {
    message["kind"] == "event"
        && message["event"] != "artifact.produced"
        && message["event"] != "builder.progress"
}

/// The snapshot of [`command`]s: [`Agent::send`] pins them to the workspace as it is.
pub const ANY_SNAPSHOT: &str = "snap-0007abcd";

/// A command for `role` due in `seconds`.
pub fn command_due(
    role: &str,
    action: &str,
    correlation: &str,
    ik: &str,
    inputs: Value,
    seconds: u64,
) -> Value {
    let deadline = SystemTime::now() + Duration::from_secs(seconds);
    json!({
        "kind": "command",
        "message_id": format!("m-{correlation}"),
        "correlation_id": correlation,
        "task_id": "T-0042",
        "idempotency_key": ik,
        "to": {"agent_type": role},
        "action": action,
        "inputs": inputs,
        "version": {"snapshot_id": ANY_SNAPSHOT},
        "deadline": humantime::format_rfc3339_seconds(deadline).to_string(),
        "retry": {"attempt": 0, "max_attempts": 3},
        "priority": 0
    })
}

/// A command for `role` due in two minutes.
pub fn command(role: &str, action: &str, correlation: &str, ik: &str, inputs: Value) -> Value {
    command_due(role, action, correlation, ik, inputs, 120)
}

/// The `sha256:<hex>` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", lorch::canonical::sha256_hex(bytes))
}

const REVIEW_APPROVED: &str = "Fine.\n```json\n{\"status\":\"approved\",\"summary\":\"ok\"}\n```\n";

#[test]
fn heartbeats_keep_coming_with_increasing_seq_while_the_model_thinks() {
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let reply = ws.reply("review.md", REVIEW_APPROVED);
    let mut agent = Agent::start(
        &ws,
        "reviewer",
        &["--heartbeat-s", "0.1", "--agent-id", "reviewer#7"],
        &reply,
        &[("FAKE_SLEEP", "1.2")],
    );
    agent.send(&command(
        "reviewer",
        "review",
        "c-1",
        "ik-heartbeat-000001",
        json!({}),
    ));
    let got = agent.until(is_terminal);
    let busy: Vec<&Value> = got
        .iter()
        .filter(|m| m["kind"] == "heartbeat" && m["status"] == "busy")
        .collect();
    assert!(
        busy.len() >= 3,
        "a heartbeat every 0.1 s while the model runs 1.2 s: {got:#?}"
    );
    assert!(busy.iter().all(|h| h["task_id"] == "T-0042"
        && h["agent"] == json!({"agent_type": "reviewer", "agent_id": "reviewer#7"})));
    assert_eq!(got.last().expect("terminal")["event"], "review.completed");
    let (rest, code) = agent.finish();
    assert_eq!(code, Some(0));
    assert_eq!(rest.last().expect("last")["status"], "stopping");
    let all: Vec<Value> = got.into_iter().chain(rest).collect();
    let seqs: Vec<u64> = all
        .iter()
        .filter(|m| m["kind"] == "heartbeat")
        .map(|m| m["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(
        all.iter()
            .find(|m| m["kind"] == "heartbeat")
            .expect("first")["status"],
        "starting"
    );
}

#[test]
fn a_model_past_the_deadline_is_killed_and_reported_as_a_timeout() {
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let reply = ws.reply("review.md", REVIEW_APPROVED);
    let mut agent = Agent::start(&ws, "reviewer", &[], &reply, &[("FAKE_SLEEP", "30")]);
    let started = Instant::now();
    agent.send(&command_due(
        "reviewer",
        "review",
        "c-1",
        "ik-timeout-0000001",
        json!({}),
        2,
    ));
    let answer = agent.answer();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "killed at the deadline"
    );
    let error = answer.last().expect("error");
    assert_eq!(error["event"], "error");
    assert_eq!(error["status"], "failed");
    assert_eq!(error["payload"]["code"], "timeout");
    assert!(!ws.root.join("reviews/T-0042.json").exists());
}

#[test]
fn bad_lines_are_logged_and_skipped_and_commands_for_others_refused() {
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let reply = ws.reply("review.md", REVIEW_APPROVED);
    let mut agent = Agent::start(&ws, "reviewer", &[], &reply, &[]);
    agent.send_line("{not json");
    let mut wrong = command(
        "reviewer",
        "review",
        "c-0",
        "ik-wrong-field-0001",
        json!({}),
    );
    wrong["to"]["agent_type"] = json!("tester");
    agent.send(&wrong);
    agent.send(&command(
        "builder",
        "implement",
        "c-1",
        "ik-for-the-builder-1",
        json!({}),
    ));
    agent.send(&command(
        "reviewer",
        "implement",
        "c-2",
        "ik-not-a-review-0001",
        json!({}),
    ));
    agent.send(&command(
        "reviewer",
        "review",
        "c-3",
        "ik-a-real-review-001",
        json!({}),
    ));
    let got = agent.until(|m| m["event"] == "review.completed");
    let logs: Vec<&Value> = got.iter().filter(|m| m["kind"] == "log").collect();
    assert_eq!(logs.len(), 2, "{got:#?}");
    assert!(logs.iter().all(|l| {
        l["level"] == "error"
            && l["fields"]["code"] == "protocol_error"
            && l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("skipped an invalid command line"))
    }));
    let codes: Vec<(&Value, &Value)> = got
        .iter()
        .filter(|m| m["event"] == "error")
        .map(|m| (&m["correlation_id"], &m["payload"]["code"]))
        .collect();
    assert_eq!(
        codes,
        [
            (&json!("c-1"), &json!("wrong_agent")),
            (&json!("c-2"), &json!("unsupported_action"))
        ]
    );
    assert_eq!(ws.runs(), 1, "only the review ran the model");
}

#[test]
fn secret_values_are_redacted_from_events_and_files() {
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let reply = ws.reply(
        "review.md",
        "```json\n{\"status\":\"changes_requested\",\"summary\":\"do not log hunter2-secret-value\"}\n```\n",
    );
    let mut agent = Agent::start(
        &ws,
        "reviewer",
        &[],
        &reply,
        &[("SERVICE_API_KEY", "hunter2-secret-value")],
    );
    agent.send(&command(
        "reviewer",
        "review",
        "c-1",
        "ik-redaction-000001",
        json!({}),
    ));
    let answer = agent.answer();
    let text = serde_json::to_string(&answer).expect("json");
    assert!(!text.contains("hunter2"), "{text}");
    assert_eq!(answer[0]["payload"]["summary"], "do not log [REDACTED]");
    assert!(!ws.read("reviews/T-0042.json").contains("hunter2"));
    let receipts = ws.root.join(".git/lorch/agent/reviewer/receipts");
    for entry in std::fs::read_dir(receipts).expect("receipts") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("read");
        assert!(!text.contains("hunter2"));
    }
}

#[test]
fn a_model_that_cannot_start_is_an_error_event() {
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let reply = ws.reply("review.md", REVIEW_APPROVED);
    let mut agent = Agent::start_cmd(&ws, "reviewer", &[], &["/nonexistent/llm"], &reply, &[]);
    agent.send(&command(
        "reviewer",
        "review",
        "c-1",
        "ik-no-such-llm-0001",
        json!({}),
    ));
    let answer = agent.answer();
    assert_eq!(answer[0]["event"], "error");
    assert_eq!(answer[0]["payload"]["code"], "agent_command_not_started");
    assert!(
        answer[0]["payload"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("cannot start `/nonexistent/llm`")),
        "{answer:#?}"
    );
}

#[test]
fn a_killed_agent_takes_its_model_with_it() {
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let reply = ws.reply("review.md", REVIEW_APPROVED);
    let pid_file = ws.scratch("pid");
    let mut agent = Agent::start(
        &ws,
        "reviewer",
        &[],
        &reply,
        &[
            ("FAKE_SLEEP", "30"),
            ("FAKE_PID", pid_file.to_str().expect("utf-8")),
        ],
    );
    agent.send(&command(
        "reviewer",
        "review",
        "c-1",
        "ik-killed-agent-001",
        json!({}),
    ));
    let waited = Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
        {
            break pid;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(20),
            "the model never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
    };
    assert!(alive(), "the model runs");
    agent.kill();
    let killed = Instant::now();
    while alive() {
        assert!(
            killed.elapsed() < Duration::from_secs(5),
            "the model outlived its agent"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Its `sleep` (a grandchild, in the model's process group) is the test's to clean up.
    if let Some(group) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

#[test]
fn an_agent_that_sees_another_workspace_than_the_commands_says_version_mismatch() {
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let review = ws.reply("review.md", REVIEW_APPROVED);
    let build = ws.reply(
        "build.md",
        "#!nesl [@three-char-SHA-256: b1d]\naction = \"file_write\"\npath = \"@ROOT@/b.txt\"\ncontent = \"b\"\n#!end_b1d\n",
    );
    let head = ws.git(&["rev-parse", "HEAD"]);
    for (role, action, reply) in [
        ("reviewer", "review", &review),
        ("builder", "implement", &build),
    ] {
        let mut agent = Agent::start(&ws, role, &[], reply, &[]);
        let (now, _) = lorch::manifest::snapshot_of(&ws.root).expect("snapshot");
        let mut stale = command(
            role,
            action,
            "c-1",
            &format!("ik-{role}-stale-0001"),
            json!({}),
        );
        stale["version"]["snapshot_id"] = "snap-00000000".into();
        agent.send(&stale);
        let answer = agent.answer();
        assert_eq!(answer.len(), 1, "{answer:#?}");
        let error = &answer[0];
        assert_eq!(error["event"], "error", "{error:#}");
        assert_eq!(error["payload"]["code"], "version_mismatch");
        assert_eq!(error["payload"]["expected_snapshot"], "snap-00000000");
        assert_eq!(error["payload"]["observed_snapshot"], now.as_str());
        assert_eq!(
            error["observed_version"]["snapshot_id"],
            now.as_str(),
            "what it saw"
        );
        assert_eq!(ws.runs(), 0, "{role}: the model was not asked");
        assert_eq!(
            ws.git(&["rev-parse", "HEAD"]),
            head,
            "{role}: nothing applied"
        );
        let _ = agent.finish();
    }
    // Pinned to the workspace as it is, the command is done, and says what it saw.
    let mut agent = Agent::start(&ws, "reviewer", &[], &review, &[]);
    let (now, _) = lorch::manifest::snapshot_of(&ws.root).expect("snapshot");
    agent.send(&command(
        "reviewer",
        "review",
        "c-2",
        "ik-reviewer-fresh-0001",
        json!({}),
    ));
    let answer = agent.answer();
    assert_eq!(answer[0]["event"], "review.completed", "{answer:#?}");
    assert_eq!(answer[0]["observed_version"]["snapshot_id"], now.as_str());
}
