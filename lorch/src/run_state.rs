//! The run as the ledger tells it (docs/lorch.md, "Failures, Ctrl-C and resuming"):
//! [`RunState`] is rebuilt from the recorded messages by [`RunState::apply`], one at a
//! time, in a live run as in a resumed one; the hard-coded order of the steps (implement →
//! review → spec) and what a terminal event means are [`crate::step_rules`]'s.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::config::Task;
use super::protocol::{
    Action, AgentType, Command, Event, EventType, Message, Object, Timestamp, strings,
};
use super::supervisor::Agent;

/// The agents of a run, in the order lorch starts them.
pub const AGENTS: [AgentType; 3] = [
    AgentType::Builder,
    AgentType::Reviewer,
    AgentType::SpecMaintainer,
];

/// Steps after which a run that has not converged fails (a persistent conflict).
pub const MAX_STEPS: u32 = 30;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Still going.
    Running,
    /// Done: approved and the spec updated.
    Completed,
    /// Failed, with the reason.
    Failed(String),
    /// Stopped by the user (SIGINT, SIGTERM), with the signal.
    Aborted(String),
}

impl Status {
    /// The word `state/run.json` and `state/index.json` use.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Failed(_) => "failed",
            Status::Aborted(_) => "aborted",
        }
    }
}

/// A step accepted.
#[derive(Debug, Clone)]
pub struct StepDone {
    /// 1, 2, …
    pub step: u32,
    /// Its action.
    pub action: Action,
    /// `success`, `approved`, `changes_requested`, `updated`, `no_changes_needed`.
    pub result: String,
    /// The `system.step_completed` payload (receipt included).
    pub payload: Object,
}

/// The command in flight.
#[derive(Debug, Clone)]
pub struct InFlight {
    /// Its step.
    pub step: u32,
    /// The command as last sent.
    pub command: Command,
    /// How many times it was sent.
    pub sends: u32,
    /// Its events since the last send.
    pub events: Vec<Event>,
    /// The terminal one, once it came.
    pub terminal: Option<Event>,
    /// Whether this process has sent it (false after a resume or a retry decision).
    pub sent_live: bool,
    /// Whether the next send is a new attempt.
    pub bump: bool,
    /// Whether the agent saw another workspace than the command's snapshot
    /// (`version_mismatch`): the next send pins a new snapshot, hence a new IK.
    pub resnapshot: bool,
    /// Whether the next send starts a new round of attempts: the run failed or was aborted
    /// and the user resumed it (after fixing the cause).
    pub fresh: bool,
}

/// Everything the ledger says about a run.
#[derive(Debug, Clone)]
pub struct RunState {
    /// The run.
    pub run_id: String,
    /// The task being built.
    pub task: Task,
    /// The tasks to build after it, in order (several approved at intake).
    pub queue: Vec<Task>,
    /// The tasks built before it in this run, with their steps.
    pub finished: Vec<(Task, Vec<StepDone>)>,
    /// The first snapshot and the latest.
    pub snapshots: Vec<String>,
    /// Steps accepted.
    pub steps: Vec<StepDone>,
    /// The command in flight.
    pub current: Option<InFlight>,
    /// How it stands.
    pub status: Status,
    /// Restarts per agent.
    pub restarts: HashMap<AgentType, u32>,
    /// Steps of a task before it is a persistent conflict: [`MAX_STEPS`], and as many
    /// again each time the user chose to go on (`system.user_decision` `continue`).
    pub step_limit: u32,
    /// Model calls the agents reported (`payload.model_calls` of their terminal events).
    pub model_calls: ModelCalls,
}

/// Model calls of a run, and of its current task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelCalls {
    /// The whole run's.
    pub run: u64,
    /// The current task's.
    pub task: u64,
}

pub(crate) fn text(p: &Object, key: &str) -> String {
    p.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}

pub(crate) fn agent_of(name: &str) -> AgentType {
    match name {
        "reviewer" => AgentType::Reviewer,
        "spec_maintainer" => AgentType::SpecMaintainer,
        "orchestration" => AgentType::Orchestration,
        _ => AgentType::Builder,
    }
}

/// Whether an event ends its command (success or `error`).
pub fn is_terminal(e: &EventType) -> bool {
    matches!(
        e,
        EventType::BuilderCompleted
            | EventType::ReviewCompleted
            | EventType::SpecUpdated
            | EventType::SpecNoChangesNeeded
            | EventType::SpecChangesRequested
            | EventType::OrchestrationProposedTasks
            | EventType::OrchestrationNeedsClarification
            | EventType::OrchestrationPlanConflict
            | EventType::Error
    )
}

impl RunState {
    /// A run that has just started.
    pub fn new(run_id: &str, task: Task) -> Self {
        RunState {
            run_id: run_id.to_owned(),
            task,
            queue: Vec::new(),
            finished: Vec::new(),
            snapshots: Vec::new(),
            steps: Vec::new(),
            current: None,
            status: Status::Running,
            restarts: HashMap::new(),
            step_limit: MAX_STEPS,
            model_calls: ModelCalls::default(),
        }
    }

    /// Rebuilds a run from its ledger.
    pub fn from_ledger(messages: &[Message]) -> Option<Self> {
        let mut state: Option<RunState> = None;
        for m in messages {
            if let Message::Event(e) = m
                && e.event.as_str() == "system.run_started"
            {
                let p = &e.payload;
                let mut run = RunState::new(
                    &text(p, "run_id"),
                    Task {
                        id: e.task_id.clone(),
                        goal: text(p, "goal"),
                        files: strings(p.get("files")),
                    },
                );
                run.queue = p
                    .get("queue")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(task_of)
                    .collect();
                state = Some(run);
            }
            if let Some(s) = state.as_mut() {
                s.apply(m);
            }
        }
        state
    }

    /// Takes one recorded message into account.
    pub fn apply(&mut self, message: &Message) {
        match message {
            Message::Command(c) => {
                let step = c.inputs.get("step").and_then(Value::as_u64).unwrap_or(0) as u32;
                match self.current.as_mut() {
                    Some(cur) if cur.step == step => {
                        cur.command = c.clone();
                        cur.sends += 1;
                    }
                    _ => {
                        self.current = Some(InFlight {
                            step,
                            command: c.clone(),
                            sends: 1,
                            events: Vec::new(),
                            terminal: None,
                            sent_live: false,
                            bump: false,
                            resnapshot: false,
                            fresh: false,
                        })
                    }
                }
                if let Some(cur) = self.current.as_mut() {
                    cur.events.clear();
                    cur.terminal = None;
                    cur.sent_live = true;
                    cur.bump = false;
                    cur.resnapshot = false;
                    cur.fresh = false;
                }
            }
            Message::Event(e) if e.from.agent_type == AgentType::System => {
                let p = &e.payload;
                match e.event.as_str() {
                    "system.snapshot" => self.snapshots.push(text(p, "snapshot_id")),
                    "system.step_completed" => match e.status.as_deref() {
                        Some("ok") => {
                            let action = self.current.as_ref().map(|c| c.command.action);
                            self.steps.push(StepDone {
                                step: p.get("step").and_then(Value::as_u64).unwrap_or(0) as u32,
                                action: action.unwrap_or(Action::Implement),
                                result: text(p, "result"),
                                payload: p.clone(),
                            });
                            self.current = None;
                        }
                        Some("retry") => {
                            if let Some(cur) = self.current.as_mut() {
                                cur.terminal = None;
                                cur.sent_live = false;
                                cur.bump = true;
                                cur.resnapshot = p.get("resnapshot") == Some(&Value::Bool(true));
                                // The user chose to try again: a new round of attempts.
                                cur.fresh = p.get("fresh") == Some(&Value::Bool(true));
                            }
                        }
                        _ => {}
                    },
                    "system.agent_unhealthy" => {
                        if let Some(cur) = self.current.as_mut()
                            && cur.command.to.agent_type == agent_of(&text(p, "agent"))
                            && cur.terminal.is_none()
                        {
                            cur.sent_live = false;
                            cur.bump = true;
                        }
                    }
                    "system.agent_restarted" => {
                        *self
                            .restarts
                            .entry(agent_of(&text(p, "agent")))
                            .or_default() += 1;
                    }
                    "system.run_completed" => {
                        self.status = match e.status.as_deref() {
                            Some("completed") => Status::Completed,
                            Some("aborted") => Status::Aborted(text(p, "reason")),
                            _ => Status::Failed(text(p, "reason")),
                        }
                    }
                    "system.run_resumed" if self.status != Status::Running => self.reopen(),
                    "system.user_decision" if e.status.as_deref() == Some("continue") => {
                        self.step_limit += MAX_STEPS;
                    }
                    "system.task_started" => {
                        if let Some(next) = p.get("task").and_then(task_of) {
                            self.next_task(next);
                        }
                    }
                    _ => {}
                }
            }
            Message::Event(e) => {
                // An answer replayed from a receipt made no new call.
                if is_terminal(&e.event) && e.payload.get("replayed") != Some(&Value::Bool(true)) {
                    let calls = e.payload.get("model_calls").and_then(Value::as_u64);
                    self.model_calls.run += calls.unwrap_or(0);
                    self.model_calls.task += calls.unwrap_or(0);
                }
                if let Some(cur) = self.current.as_mut()
                    && e.correlation_id == cur.command.correlation_id
                    && e.from.agent_type == cur.command.to.agent_type
                    && cur.terminal.is_none()
                {
                    cur.events.push(e.clone());
                    if is_terminal(&e.event) {
                        cur.terminal = Some(e.clone());
                    }
                }
            }
            Message::Heartbeat(_) | Message::Log(_) => {}
        }
    }

    /// The current task is done: `next` is built now, in the same run.
    fn next_task(&mut self, next: Task) {
        if self.queue.first().is_some_and(|t| t.id == next.id) {
            self.queue.remove(0);
        }
        let done = std::mem::replace(&mut self.task, next);
        let steps = std::mem::take(&mut self.steps);
        self.finished.push((done, steps));
        self.current = None;
        self.step_limit = MAX_STEPS;
        self.model_calls.task = 0;
    }

    /// Every task of the run with its steps, in order: those built, then the current one.
    pub fn all_tasks(&self) -> Vec<(&Task, &[StepDone])> {
        self.finished
            .iter()
            .map(|(t, s)| (t, s.as_slice()))
            .chain(std::iter::once((&self.task, self.steps.as_slice())))
            .collect()
    }

    /// A failed or aborted run resumed by the user, who fixed the cause: it runs again, the
    /// command in flight is sent again on a fresh round of attempts (pinned to the
    /// workspace as it is now: the same IK when nothing changed), and the agents get
    /// their restarts back.
    fn reopen(&mut self) {
        self.status = Status::Running;
        self.restarts.clear();
        if let Some(cur) = self.current.as_mut() {
            cur.terminal = None;
            cur.events.clear();
            cur.sent_live = false;
            cur.bump = false;
            cur.resnapshot = true;
            cur.fresh = true;
        }
    }

    /// `state/run.json`.
    pub fn to_json(&self, agents: &HashMap<AgentType, Option<Agent>>) -> Value {
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|s| {
                json!({
                    "step": s.step,
                    "action": s.action.as_str(),
                    "result": s.result,
                    "correlation_id": s.payload.get("correlation_id"),
                    "idempotency_key": s.payload.get("idempotency_key"),
                    "receipt": s.payload.get("receipt_path"),
                })
            })
            .collect();
        let current = self.current.as_ref().map(|c| {
            json!({
                "step": c.step,
                "action": c.command.action.as_str(),
                "correlation_id": c.command.correlation_id,
                "idempotency_key": c.command.idempotency_key,
            })
        });
        let status = self.status.as_str();
        let failure = match &self.status {
            Status::Failed(r) | Status::Aborted(r) => Value::String(r.clone()),
            Status::Running | Status::Completed => Value::Null,
        };
        let agents: serde_json::Map<String, Value> = AGENTS
            .iter()
            .map(|t| {
                let a = agents.get(t).and_then(Option::as_ref);
                (
                    t.as_str().to_owned(),
                    json!({
                        "pid": a.map(Agent::pid),
                        "restarts": self.restarts.get(t).copied().unwrap_or(0),
                    }),
                )
            })
            .collect();
        json!({
            "run_id": self.run_id,
            "task_id": self.task.id,
            "tasks_done": self.finished.iter().map(|(t, _)| t.id.clone()).collect::<Vec<_>>(),
            "tasks_next": self.queue.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
            "status": status,
            "failure": failure,
            "model_calls": { "run": self.model_calls.run, "task": self.model_calls.task },
            "snapshot_id": self.snapshots.first(),
            "steps": steps,
            "current": current,
            "agents": agents,
            "updated_at": Timestamp::now().to_string(),
        })
    }
}

/// A task as the ledger records it (`{"id", "goal", "files"}`).
pub fn task_of(v: &Value) -> Option<Task> {
    Some(Task {
        id: v.get("id")?.as_str()?.to_owned(),
        goal: v
            .get("goal")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        files: strings(v.get("files")),
    })
}

/// `task` as the ledger records it.
pub fn task_json(task: &Task) -> Value {
    json!({"id": task.id, "goal": task.goal, "files": task.files})
}
