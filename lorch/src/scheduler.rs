//! The single-agent scheduler, one agent at a time, and resume (docs/lorch.md, "Failures,
//! Ctrl-C and resuming"); the run's
//! state and the rules it follows are in [`super::run_state`].
//!
//! The run is a state machine whose only input is the ledger: every command lorch sends,
//! every event an agent sends and every decision lorch takes is recorded first, then applied
//! to [`RunState`] by [`RunState::apply`]. A live run and a resumed one therefore go through
//! the same code: resuming reads the ledger back through `apply` and carries on.
//!
//! ```text
//! Implement → Review ──changes_requested──→ Implement Changes → Review …
//!               └─approved→ Update Spec ──spec.changes_requested──→ Implement Changes → …
//!                               └─spec.updated / spec.no_changes_needed→ Done
//! ```
//!
//! A step's terminal event is checked (right event for the action, builder tests passing,
//! artifacts confined to the workspace, within the size cap, their checksums matching the
//! files) before it is accepted with `system.step_completed` and a receipt; otherwise the
//! same command (same idempotency key) is retried, up to `policy.retry.max_attempts`.
//!
//! Beside this file: `agents.rs` (starting and restarting the agents, taking in their
//! messages, watching their heartbeats and deadlines), `commands.rs` (what lorch sends: a
//! step's command, its resending, the version it is pinned to), `conflicts.rs` (conflicts of a run the user decides),
//! `intake.rs` (a run started from the user's words) and `resume.rs`.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use thiserror::Error;

use super::canonical::idempotency_key;
use super::config::{self, Config, Task};
use super::protocol::{
    Action, AgentRef, AgentType, Artifact, Command, Event, EventType, ExpectedOutput, Message,
    Object, Retry, Timestamp, Version,
};
use super::safety;
use super::signals;
use super::store::{self, Store};
use super::supervisor::{self, Agent, Incoming};
use super::transcript;

mod agents;
mod budget;
mod commands;
mod conflicts;
mod intake;
mod resume;

pub use intake::{Decision, INTAKE_TASK, Proposal, User};

use super::run_state::{AGENTS, task_json};
pub use super::run_state::{InFlight, MAX_STEPS, RunState, Status, StepDone};
use super::step_rules::{agent_for, classify};
pub use super::step_rules::{check_artifact, next_action};

/// Why lorch could not go on (a failed run is not an error: it is recorded and reported).
#[derive(Debug, Error)]
pub enum RunError {
    /// Writing or reading lorch's records failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// No such run (a usage error: nothing ran).
    #[error("no run {0}: {1}")]
    NoRun(String, String),
    /// Files changed since their receipts, with no command in flight that could explain it.
    #[error("checksums do not match the receipts:\n{0}")]
    Checksums(String),
}

/// Where a run stands between two messages: the machinery around [`RunState`].
pub struct Orchestrator {
    config: Config,
    store: Store,
    state: RunState,
    agents: HashMap<AgentType, Option<Agent>>,
    started: HashMap<AgentType, u32>,
    tx: Sender<Incoming>,
    rx: Receiver<Incoming>,
    sys_seq: u64,
    /// When this lorch began driving the run (`policy.max_wall_s`).
    began: Instant,
    /// The wait before the command in flight is sent again (its retry's backoff).
    retry_wait: Option<Duration>,
}

fn secrets(config: &Config) -> Vec<String> {
    if !config.policy.redact_secrets_in_logs {
        return Vec::new();
    }
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    for agent in config.configured_agents() {
        env.extend(config.agents.get(agent).env.clone());
    }
    safety::secret_values(env)
}

impl Orchestrator {
    fn new(config: Config, workspace: PathBuf, state: RunState) -> Self {
        let (tx, rx) = channel();
        let store = Store {
            records: super::records::root(&workspace),
            workspace,
            run_id: state.run_id.clone(),
            secrets: secrets(&config),
        };
        Orchestrator {
            config,
            store,
            state,
            agents: AGENTS.iter().map(|a| (*a, None)).collect(),
            started: HashMap::new(),
            tx,
            rx,
            sys_seq: 0,
            began: Instant::now(),
            retry_wait: None,
        }
    }

    /// Starts run of `task` in `workspace` and drives it to its end; `user` decides the
    /// conflicts that come up.
    pub fn run(
        config: Config,
        workspace: PathBuf,
        task: Task,
        user: &mut dyn User,
    ) -> Result<Status, RunError> {
        Orchestrator::run_tasks(config, workspace, vec![task], user)
    }

    /// Starts one run of `tasks` (at least one), built one after another in their order
    /// (`lorch run --task A --task B`); the ledger's `run_started` lists those after the
    /// first, so that a resumed run goes on with them.
    pub fn run_tasks(
        config: Config,
        workspace: PathBuf,
        mut tasks: Vec<Task>,
        user: &mut dyn User,
    ) -> Result<Status, RunError> {
        if tasks.is_empty() {
            return Err(RunError::NoRun(
                String::new(),
                "no task to run: name one with --task ID".to_owned(),
            ));
        }
        let task = tasks.remove(0);
        let _lock = store::lock_workspace(&workspace)?;
        signals::install();
        super::records::keep_out_of_git(&workspace)?;
        let run_id = store::new_run_id();
        let mut o = Orchestrator::new(config, workspace, RunState::new(&run_id, task.clone()));
        o.state.queue = tasks;
        let mut payload = json!({"run_id": run_id, "goal": task.goal, "files": task.files});
        if !o.state.queue.is_empty() {
            payload["queue"] = o.state.queue.iter().map(task_json).collect();
        }
        let started = o.system("system.run_started", None, payload);
        o.record(&started)?;
        o.pin()?;
        o.drive(user)
    }

    /// Prints a transcript line, and keeps it in `transcripts/run-<id>.txt` (the optional
    /// transcript: a convenience, so a failure to write it does not stop the run).
    fn say(&self, line: &str) {
        let line = self.store.redact(line);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
        let _ = safety::append_line(&self.store.transcript(), &line);
    }

    /// A `system.*` event of lorch's (`from.agent_type` `system`).
    fn system(&mut self, event: &str, status: Option<&str>, payload: Value) -> Message {
        self.sys_seq += 1;
        let correlation_id = self.state.current.as_ref().map_or_else(
            || format!("run-{}", self.state.run_id),
            |c| c.command.correlation_id.clone(),
        );
        Message::Event(Event {
            message_id: format!("sys-{}-{}", self.state.run_id, self.sys_seq),
            correlation_id,
            task_id: self.state.task.id.clone(),
            from: AgentRef {
                agent_type: AgentType::System,
                agent_id: None,
            },
            event: EventType::from(event),
            status: status.map(str::to_owned),
            payload: match payload {
                Value::Object(map) => map,
                _ => Object::new(),
            },
            artifacts: None,
            observed_version: None,
            occurred_at: Timestamp::now(),
        })
    }

    /// Records a message (ledger first), prints its line, applies it; lorch's own records
    /// also refresh `state/run.json`.
    fn record(&mut self, message: &Message) -> Result<(), RunError> {
        self.store.record(message)?;
        if let Some(line) = transcript::render(message) {
            self.say(&line);
        }
        self.state.apply(message);
        let agent_event =
            matches!(message, Message::Event(e) if e.from.agent_type != AgentType::System);
        if !agent_event {
            self.write_state()?;
        }
        Ok(())
    }

    fn write_state(&self) -> Result<(), RunError> {
        let ws = &self.store.workspace;
        self.store
            .write_json(&store::state_path(ws), &self.state.to_json(&self.agents))?;
        let index_path = self.store.records.join("state").join("index.json");
        let mut index = store::read_json(&index_path)
            .ok()
            .flatten()
            .unwrap_or_else(|| json!({"runs": {}}));
        let status = self.state.status.as_str();
        let entry = json!({"task_id": self.state.task.id, "status": status});
        if index["runs"].get(&self.state.run_id) != Some(&entry) {
            index["runs"][&self.state.run_id] = entry;
            self.store.write_json(&index_path, &index)?;
        }
        Ok(())
    }

    fn fail(&mut self, reason: String) -> Result<(), RunError> {
        let m = self.system(
            "system.run_completed",
            Some("failed"),
            json!({"reason": reason}),
        );
        self.record(&m)
    }

    /// The main loop, then [`Orchestrator::wind_down`]: every agent stopped
    /// (an aborted run's at once) and nothing of the run left running; then an abort is
    /// recorded, last, with how to continue.
    fn drive(&mut self, user: &mut dyn User) -> Result<Status, RunError> {
        let result = self.drive_inner(user);
        self.wind_down(result)
    }

    /// The end of a run however it went: every agent stopped (at once when aborted), what is
    /// left of its processes killed, an abort recorded last, the state written.
    fn wind_down(&mut self, result: Result<Status, RunError>) -> Result<Status, RunError> {
        let aborted = signals::received().filter(|_| self.state.status == Status::Running);
        for agent in self.agents.values_mut().flatten() {
            if aborted.is_some() {
                agent.terminate(Duration::from_secs(1));
            } else {
                agent.stop(Duration::from_secs(2));
            }
        }
        for slot in self.agents.values_mut() {
            *slot = None;
        }
        let mut ended = self.sweep();
        supervisor::reap_orphans(Duration::from_secs(2));
        if let Some(signal) = aborted {
            ended = ended.and_then(|()| self.abort(signal));
        }
        let _ = self.write_state();
        result.and(ended.map(|()| self.state.status.clone()))
    }

    /// The current task is done: the next approved one starts (in the
    /// order they were approved), or the run is complete.
    fn task_done(&mut self) -> Result<(), RunError> {
        let Some(next) = self.state.queue.first().cloned() else {
            // The spec as the run leaves it (kept, with its hash in the record): what
            // `lorch validate --run` compares with the spec the run found.
            let end = store::take_snapshot(&self.store, Some(&self.config.spec_path))?;
            let m = self.system(
                "system.run_completed",
                Some("completed"),
                json!({"specs_hash": end.specs_hash, "model_calls": self.state.model_calls.run}),
            );
            return self.record(&m);
        };
        let done = self.state.task.id.clone();
        let mut m = self.system(
            "system.task_started",
            None,
            json!({"task": task_json(&next), "after": done}),
        );
        if let Message::Event(e) = &mut m {
            e.task_id = next.id.clone();
        }
        self.record(&m)
    }

    /// Kills what is left of the run's processes (models and checks the agents started,
    /// which can outlive them) and records their pids.
    fn sweep(&mut self) -> Result<(), RunError> {
        let pids = supervisor::kill_run_leftovers(&self.state.run_id);
        if pids.is_empty() {
            return Ok(());
        }
        let m = self.system("system.leftovers_killed", None, json!({"pids": pids}));
        self.record(&m)
    }

    /// Records the run aborted by `signal` (the user's decision).
    fn abort(&mut self, signal: &str) -> Result<(), RunError> {
        let m = self.system(
            "system.run_completed",
            Some("aborted"),
            json!({"reason": format!("interrupted by {signal}"), "run_id": self.state.run_id}),
        );
        self.record(&m)
    }

    fn drive_inner(&mut self, user: &mut dyn User) -> Result<Status, RunError> {
        for agent in AGENTS {
            if let Err(reason) = self.ensure_agent(agent) {
                self.fail(reason)?;
                break;
            }
        }
        while self.state.status == Status::Running {
            if signals::received().is_some() {
                // `drive` stops everything, then records the abort.
                break;
            }
            let Some(cur) = self.state.current.clone() else {
                match next_action(&self.state.steps, self.state.step_limit) {
                    Ok(Some(_)) if self.stop_if_spent()? => {}
                    Ok(Some(action)) => self.send_new(action)?,
                    Ok(None) => self.task_done()?,
                    Err(reason) => self.persistent_conflict(reason, user)?,
                }
                continue;
            };
            if cur.terminal.is_some() {
                if !self.spec_conflict(&cur, user)? {
                    self.decide()?;
                }
            } else if !cur.sent_live {
                if let Some(wait) = self.retry_wait.take() {
                    signals::sleep(wait);
                    if signals::received().is_some() {
                        break;
                    }
                }
                if !self.stop_if_spent()? {
                    self.resend()?;
                }
            } else {
                self.wait()?;
            }
        }
        Ok(self.state.status.clone())
    }

    fn send(&mut self, mut command: Command) -> Result<(), RunError> {
        self.give_budget(&mut command);
        let agent = command.to.agent_type;
        if let Err(reason) = self.ensure_agent(agent) {
            return self.fail(reason);
        }
        let message = Message::Command(command);
        let line = serde_json::to_string(&message).map_err(std::io::Error::other)?;
        self.record(&message)?;
        let sent = match self.agents.get_mut(&agent).and_then(Option::as_mut) {
            Some(a) => a.send(&line),
            None => Err(std::io::Error::other("not running")),
        };
        if let Err(e) = sent {
            self.lost(agent, format!("cannot write to it: {e}"))?;
        }
        Ok(())
    }

    /// Accepts or refuses the in-flight command's terminal event.
    fn decide(&mut self) -> Result<(), RunError> {
        let Some(cur) = self.state.current.clone() else {
            return Ok(());
        };
        let Some(terminal) = cur.terminal.clone() else {
            return Ok(());
        };
        let command = &cur.command;
        let verdict = classify(command.action, &terminal).and_then(|result| {
            let mut artifacts: Vec<Artifact> = Vec::new();
            for e in &cur.events {
                for a in e.artifacts.iter().flatten() {
                    artifacts.retain(|x| x.path != a.path);
                    artifacts.push(a.clone());
                }
            }
            for a in &artifacts {
                check_artifact(
                    &self.store.workspace,
                    a,
                    self.config.policy.artifact_max_bytes,
                )?;
            }
            for out in command.expected_outputs.iter().filter(|o| o.is_required()) {
                let path =
                    safety::confine(&self.store.workspace, &out.path).map_err(|e| e.to_string())?;
                if !path.is_file() {
                    return Err(format!("expected output {} is missing", out.path));
                }
            }
            Ok((result, artifacts))
        });
        match verdict {
            Ok((result, artifacts)) => {
                let receipt =
                    store::receipt_path(&self.store.workspace, &command.task_id, cur.step);
                let receipt_rel = receipt
                    .strip_prefix(&self.store.workspace)
                    .unwrap_or(&receipt)
                    .display()
                    .to_string();
                let mut record = json!({
                    "task_id": command.task_id,
                    "step": cur.step,
                    "action": command.action.as_str(),
                    "correlation_id": command.correlation_id,
                    "idempotency_key": command.idempotency_key,
                    "result": result,
                    "artifacts": artifacts,
                    "events": cur.events.iter().map(|e| e.message_id.clone()).collect::<Vec<_>>(),
                    "created_at": Timestamp::now().to_string(),
                });
                // The builder's commit: the reviewer and the spec-maintainer are shown the
                // task's whole change from these (`inputs.base`, `inputs.commits`).
                if let Some(commit) = terminal.payload.get("commit").filter(|c| c.is_string()) {
                    record["commit"] = commit.clone();
                }
                self.store.write_json(&receipt, &record)?;
                let mut payload = record.clone();
                payload["receipt_path"] = receipt_rel.into();
                let m = self.system("system.step_completed", Some("ok"), payload);
                self.record(&m)
            }
            Err(reason) => {
                let last = command.retry.attempt + 1 >= command.retry.max_attempts;
                let status = if last { "failed" } else { "retry" };
                // The agent finished (and may have changed files on its way to failing, or
                // seen them changed: `version_mismatch`): the retry is pinned to the
                // workspace as it is now, the same IK only if nothing changed.
                let resnapshot = true;
                let mut payload = json!({"step": cur.step, "action": command.action.as_str(), "reason": reason, "resnapshot": resnapshot});
                if !last {
                    let asked = terminal
                        .payload
                        .get("retry_after_ms")
                        .and_then(Value::as_u64)
                        .map(Duration::from_millis);
                    let wait = self.retry_wait(command.retry.attempt + 1, asked);
                    payload["delay_ms"] = budget::delay_ms(wait).into();
                    if asked.is_some() {
                        payload["rate_limited"] = true.into();
                    }
                    self.retry_wait = Some(wait);
                }
                let m = self.system("system.step_completed", Some(status), payload);
                self.record(&m)?;
                if last {
                    self.fail(format!(
                        "{} failed after {} attempts: {reason}",
                        command.action, command.retry.max_attempts
                    ))?;
                }
                Ok(())
            }
        }
    }
}

/// The folder `lorch` works in: the current one.
pub fn base_dir() -> std::io::Result<PathBuf> {
    std::env::current_dir()
}

/// Loads `lorch.json` in `base`. When there is none it is written with the defaults, and
/// the answer is an error that says what to configure before a run: the defaults run
/// `claude -p` on a placeholder task, which must never start silently.
pub fn load_config(base: &Path) -> Result<Config, config::ConfigError> {
    let (config, created) = config::load_or_init(base)?;
    if created {
        return Err(config::ConfigError::Created(base.join(config::FILE_NAME)));
    }
    Ok(config)
}
