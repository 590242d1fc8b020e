//! The wire types of lorch's protocol (the four envelopes the schemas in `lorch/schemas/`
//! describe; docs/lorch.md, "What it does"): one [`Message`] per NDJSON line, tagged by
//! `kind`.
//!
//! Field for field what the JSON Schemas in `lorch/schemas/` allow. The schemas are the
//! judge of what is valid ([`crate::validate`] runs them before these types see a
//! line); these types are what the code works with afterwards. Optional fields the schema
//! leaves optional are `Option` here so that a message read and written again is the same
//! message (the ledger records what was said, not what we would have said).

use std::fmt;
use std::str::FromStr;
use std::time::SystemTime;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A JSON object: `inputs`, `payload` and `fields` are free-form by the spec.
pub type Object = Map<String, Value>;

/// One line of the protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Message {
    /// lorch → agent.
    Command(Command),
    /// agent → lorch, or lorch's own `system.*` events.
    Event(Event),
    /// agent → lorch liveness.
    Heartbeat(Heartbeat),
    /// agent → lorch diagnostics.
    Log(Log),
}

impl Message {
    /// The envelope's `kind`.
    pub fn kind(&self) -> Kind {
        match self {
            Message::Command(_) => Kind::Command,
            Message::Event(_) => Kind::Event,
            Message::Heartbeat(_) => Kind::Heartbeat,
            Message::Log(_) => Kind::Log,
        }
    }
}

/// The envelope kinds, each with its own schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `command`
    Command,
    /// `event`
    Event,
    /// `heartbeat`
    Heartbeat,
    /// `log`
    Log,
}

impl Kind {
    /// Every kind, in the spec's order.
    pub const ALL: [Kind; 4] = [Kind::Command, Kind::Event, Kind::Heartbeat, Kind::Log];

    /// The `kind` value on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Command => "command",
            Kind::Event => "event",
            Kind::Heartbeat => "heartbeat",
            Kind::Log => "log",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A command to one agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Command {
    /// Unique per message.
    pub message_id: String,
    /// Ties the command to the events that answer it.
    pub correlation_id: String,
    /// The task this step belongs to, e.g. `T-0042`.
    pub task_id: String,
    /// The same for every retry of the same work (see [`crate::canonical`]).
    pub idempotency_key: String,
    /// The addressee.
    pub to: AgentRef,
    /// What to do.
    pub action: Action,
    /// Free-form inputs of the action.
    pub inputs: Object,
    /// Files the agent is expected to produce (schema default: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected_outputs: Vec<ExpectedOutput>,
    /// The workspace snapshot the command was issued against.
    pub version: Version,
    /// When the agent's answer is due.
    pub deadline: Timestamp,
    /// Which attempt this is.
    pub retry: Retry,
    /// Scheduling priority (higher is not specified by the spec; 0 is the floor).
    pub priority: u64,
}

/// Who a command is for (`to`) or an event is from (`from`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRef {
    /// The role.
    pub agent_type: AgentType,
    /// One instance of the role, when there are several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// The agent roles, and `system` for lorch's own events.
///
/// `system` is only valid in an event's `from`; the schemas refuse it elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentType {
    /// Implements tasks.
    Builder,
    /// Reviews them.
    Reviewer,
    /// Checks them against SPEC.md and edits its allowed sections.
    SpecMaintainer,
    /// Natural-language intake.
    Orchestration,
    /// lorch itself (`system.user_decision`).
    System,
}

impl AgentType {
    /// The role's name on the wire (and in the console transcript).
    pub fn as_str(self) -> &'static str {
        match self {
            AgentType::Builder => "builder",
            AgentType::Reviewer => "reviewer",
            AgentType::SpecMaintainer => "spec_maintainer",
            AgentType::Orchestration => "orchestration",
            AgentType::System => "system",
        }
    }
}

impl fmt::Display for AgentType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The command actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Builder: implement the task.
    Implement,
    /// Builder: address review or spec findings.
    ImplementChanges,
    /// Reviewer: review the work.
    Review,
    /// Spec-maintainer: check against SPEC.md, update its allowed sections.
    UpdateSpec,
    /// Orchestration: derive tasks from an instruction.
    Intake,
    /// Orchestration: find plan files.
    TaskDiscovery,
}

impl Action {
    /// The action's name on the wire; also what is hashed into the idempotency key.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Implement => "implement",
            Action::ImplementChanges => "implement_changes",
            Action::Review => "review",
            Action::UpdateSpec => "update_spec",
            Action::Intake => "intake",
            Action::TaskDiscovery => "task_discovery",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One file a command expects (`expected_outputs[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedOutput {
    /// Workspace-relative path.
    pub path: String,
    /// What the file is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the file must appear; absent means required (schema default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

impl ExpectedOutput {
    /// The schema's default applied: absent means required.
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(true)
    }
}

/// The snapshot a command was issued against (`version`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Version {
    /// `snap-xxxxxxxx` ([`crate::canonical::snapshot_id`]).
    pub snapshot_id: String,
    /// Hash of the specs, if computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specs_hash: Option<String>,
    /// Hash of the code, if computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_hash: Option<String>,
}

/// Which attempt a command is (`retry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retry {
    /// 0 for the first send.
    pub attempt: u32,
    /// At least 1.
    pub max_attempts: u32,
}

/// An event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Unique per message.
    pub message_id: String,
    /// The command this answers.
    pub correlation_id: String,
    /// The task.
    pub task_id: String,
    /// The sender.
    pub from: AgentRef,
    /// What happened.
    pub event: EventType,
    /// Outcome detail, e.g. `approved`, `changes_requested`, `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Event-specific data (schema default `{}`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub payload: Object,
    /// Files written, by path and checksum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    /// The snapshot the agent saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_version: Option<ObservedVersion>,
    /// When it happened.
    pub occurred_at: Timestamp,
}

/// A file an agent produced (`artifacts[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// Workspace-relative path.
    pub path: String,
    /// The spec writes it `sha256:<hex>`.
    pub sha256: String,
    /// Bytes.
    pub size: u64,
}

impl Artifact {
    /// The artifacts an event's payload lists (`artifacts[]`); none when absent or malformed.
    pub fn listed_in(payload: &serde_json::Map<String, serde_json::Value>) -> Vec<Artifact> {
        payload
            .get("artifacts")
            .cloned()
            .and_then(|a| serde_json::from_value(a).ok())
            .unwrap_or_default()
    }
}

/// The strings of a JSON array (other items skipped); none when `v` is not an array.
pub fn strings(v: Option<&serde_json::Value>) -> Vec<String> {
    v.and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// The snapshot an agent observed (`observed_version`): every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedVersion {
    /// `snap-xxxxxxxx`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    /// Hash of the specs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specs_hash: Option<String>,
    /// Hash of the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_hash: Option<String>,
}

/// The `event` names the agents and lorch send; the schema allows any string, kept as
/// [`EventType::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EventType {
    /// `builder.progress`
    BuilderProgress,
    /// `builder.completed`
    BuilderCompleted,
    /// `review.completed` (status `approved` or `changes_requested`)
    ReviewCompleted,
    /// `spec.updated`: terminal, the run can complete.
    SpecUpdated,
    /// `spec.no_changes_needed`: terminal, the run can complete.
    SpecNoChangesNeeded,
    /// `spec.changes_requested`: back to the builder.
    SpecChangesRequested,
    /// `orchestration.proposed_tasks`
    OrchestrationProposedTasks,
    /// `orchestration.needs_clarification`
    OrchestrationNeedsClarification,
    /// `orchestration.plan_conflict`
    OrchestrationPlanConflict,
    /// `artifact.produced`
    ArtifactProduced,
    /// `error`: an action failed; `payload.code` says why.
    Error,
    /// `log`
    Log,
    /// `system.user_decision`
    SystemUserDecision,
    /// Any other name: valid by the schema, meaning nothing to lorch.
    Other(String),
}

impl EventType {
    const NAMED: [(EventType, &'static str); 13] = [
        (EventType::BuilderProgress, "builder.progress"),
        (EventType::BuilderCompleted, "builder.completed"),
        (EventType::ReviewCompleted, "review.completed"),
        (EventType::SpecUpdated, "spec.updated"),
        (EventType::SpecNoChangesNeeded, "spec.no_changes_needed"),
        (EventType::SpecChangesRequested, "spec.changes_requested"),
        (
            EventType::OrchestrationProposedTasks,
            "orchestration.proposed_tasks",
        ),
        (
            EventType::OrchestrationNeedsClarification,
            "orchestration.needs_clarification",
        ),
        (
            EventType::OrchestrationPlanConflict,
            "orchestration.plan_conflict",
        ),
        (EventType::ArtifactProduced, "artifact.produced"),
        (EventType::Error, "error"),
        (EventType::Log, "log"),
        (EventType::SystemUserDecision, "system.user_decision"),
    ];

    /// The name on the wire.
    pub fn as_str(&self) -> &str {
        if let EventType::Other(name) = self {
            return name;
        }
        Self::NAMED
            .iter()
            .find(|(known, _)| known == self)
            .map_or("", |(_, name)| name)
    }
}

impl From<&str> for EventType {
    fn from(name: &str) -> Self {
        Self::NAMED
            .iter()
            .find(|(_, known)| *known == name)
            .map_or_else(|| EventType::Other(name.to_owned()), |(t, _)| t.clone())
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Ok(EventType::from(name.as_str()))
    }
}

/// Shim-level liveness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// The agent; here `agent_id` is required.
    pub agent: HeartbeatAgent,
    /// Increases by one per heartbeat.
    pub seq: u64,
    /// What the agent is doing.
    pub status: HeartbeatStatus,
    /// The agent's process id.
    pub pid: u32,
    /// Its parent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ppid: Option<u32>,
    /// Seconds since the agent started.
    pub uptime_s: f64,
    /// Last time the agent did something.
    pub last_activity_at: Timestamp,
    /// Resource use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<HeartbeatStats>,
    /// The task it works on, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

/// A heartbeat's `agent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatAgent {
    /// The role (never `system`).
    pub agent_type: AgentType,
    /// The instance.
    pub agent_id: String,
}

/// A heartbeat's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeartbeatStatus {
    /// Starting up.
    Starting,
    /// Idle, waiting for a command.
    Ready,
    /// Working on a command.
    Busy,
    /// Shutting down.
    Stopping,
    /// Waiting before a retry.
    Backoff,
}

/// A heartbeat's `stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HeartbeatStats {
    /// CPU use in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pct: Option<f64>,
    /// Resident memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
}

/// A log line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Log {
    /// Severity.
    pub level: LogLevel,
    /// The text.
    pub message: String,
    /// Structured detail.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub fields: Object,
    /// When.
    pub timestamp: Timestamp,
}

/// A log line's `level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// `info`
    Info,
    /// `warn`
    Warn,
    /// `error`
    Error,
}

/// An RFC 3339 UTC timestamp (`2025-10-19T18:09:58Z`), as every timestamp of the protocol
/// is.
///
/// Written with as many fraction digits as it has in groups of three (none, milli, micro,
/// nano), so `18:31:13.250Z` reads and writes back unchanged; always with `Z`; an offset other
/// than `Z` is refused on reading, since the spec says UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub SystemTime);

impl Timestamp {
    /// The current time.
    pub fn now() -> Self {
        Timestamp(SystemTime::now())
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self
            .0
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let text = if nanos == 0 {
            humantime::format_rfc3339_seconds(self.0)
        } else if nanos.is_multiple_of(1_000_000) {
            humantime::format_rfc3339_millis(self.0)
        } else if nanos.is_multiple_of(1_000) {
            humantime::format_rfc3339_micros(self.0)
        } else {
            humantime::format_rfc3339_nanos(self.0)
        };
        write!(f, "{text}")
    }
}

impl FromStr for Timestamp {
    type Err = humantime::TimestampError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        humantime::parse_rfc3339(s).map(Timestamp)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(|e| {
            serde::de::Error::custom(format_args!(
                "`{text}` is not an RFC 3339 UTC timestamp ({e})"
            ))
        })
    }
}
