//! Everything the shim prints: events, logs and heartbeats, one validated NDJSON line each,
//! through one writer behind a mutex (the heartbeat thread and the command loop share it, and
//! a line must never be interleaved with another).
//!
//! Every message is redacted before it is encoded: the values of `*_TOKEN`, `*_KEY` and
//! `*_SECRET` variables are replaced in every string of it, so a model that echoes
//! an API key, or a check that prints one, does not put it into lorch's ledger.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use serde_json::Value;

use crate::ndjson::{LineWriter, WriteError};
use crate::protocol::{
    AgentRef, AgentType, Artifact, Command, Event, EventType, Heartbeat, HeartbeatAgent,
    HeartbeatStatus, Log, LogLevel, Message, Object, ObservedVersion, Timestamp,
};
use crate::safety;

/// An event before it has ids and a time: what a role's handler returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// The event name.
    pub event: EventType,
    /// Its status, if it has one.
    pub status: Option<String>,
    /// Its payload.
    pub payload: Object,
    /// The files it reports.
    pub artifacts: Option<Vec<Artifact>>,
    /// The version the agent saw (when it checked it, or when it is not the command's:
    /// `version_mismatch`); otherwise the command's.
    pub observed: Option<ObservedVersion>,
}

impl Draft {
    /// A draft without artifacts.
    pub fn new(event: EventType, status: Option<&str>, payload: Object) -> Draft {
        Draft {
            event,
            status: status.map(str::to_owned),
            payload,
            artifacts: None,
            observed: None,
        }
    }
}

/// What the agent is doing, for the heartbeats.
struct Activity {
    status: HeartbeatStatus,
    task_id: Option<String>,
    last_activity: Timestamp,
}

/// The shim's output.
pub struct Emitter {
    writer: Mutex<LineWriter<Box<dyn Write + Send>>>,
    secrets: Vec<String>,
    agent_type: AgentType,
    agent_id: String,
    /// Prefix of this process's message ids: the start time, so that a restarted shim never
    /// reuses an id of its previous life.
    id_prefix: String,
    next_id: AtomicU64,
    seq: AtomicU64,
    started: Instant,
    activity: Mutex<Activity>,
}

impl Emitter {
    /// An emitter writing to `out` for agent `agent_id` of role `agent_type`.
    pub fn new(
        out: Box<dyn Write + Send>,
        agent_type: AgentType,
        agent_id: String,
        secrets: Vec<String>,
    ) -> Emitter {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Emitter {
            writer: Mutex::new(LineWriter::new(out)),
            secrets,
            agent_type,
            id_prefix: format!("{}-{nanos:x}", agent_type.as_str()),
            agent_id,
            next_id: AtomicU64::new(1),
            seq: AtomicU64::new(0),
            started: Instant::now(),
            activity: Mutex::new(Activity {
                status: HeartbeatStatus::Starting,
                task_id: None,
                last_activity: Timestamp::now(),
            }),
        }
    }

    /// The secret values redacted from everything written.
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// `text` redacted.
    pub fn redact(&self, text: &str) -> String {
        safety::redact(text, &self.secrets)
    }

    /// A new message id.
    pub fn message_id(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", self.id_prefix)
    }

    /// The event answering `command` that `draft` describes.
    pub fn event(&self, command: &Command, draft: Draft) -> Event {
        Event {
            message_id: self.message_id(),
            correlation_id: command.correlation_id.clone(),
            task_id: command.task_id.clone(),
            from: AgentRef {
                agent_type: self.agent_type,
                agent_id: Some(self.agent_id.clone()),
            },
            event: draft.event,
            status: draft.status,
            payload: draft.payload,
            artifacts: draft.artifacts,
            observed_version: Some(
                draft
                    .observed
                    .unwrap_or_else(|| crate::version::observed(&command.version)),
            ),
            occurred_at: Timestamp::now(),
        }
    }

    /// Writes one message, redacted.
    pub fn send(&self, message: &Message) -> Result<(), WriteError> {
        let message = redact_message(message, &self.secrets);
        self.touch();
        self.writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write_message(&message)
    }

    /// Writes a log line.
    pub fn log(&self, level: LogLevel, message: &str, fields: Object) -> Result<(), WriteError> {
        self.send(&Message::Log(Log {
            level,
            message: message.to_owned(),
            fields,
            timestamp: Timestamp::now(),
        }))
    }

    /// Says what the agent does now; the next heartbeat reports it.
    pub fn set_status(&self, status: HeartbeatStatus, task_id: Option<&str>) {
        let mut activity = self.activity.lock().unwrap_or_else(PoisonError::into_inner);
        activity.status = status;
        activity.task_id = task_id.map(str::to_owned);
        activity.last_activity = Timestamp::now();
    }

    fn touch(&self) {
        self.activity
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .last_activity = Timestamp::now();
    }

    /// Writes one heartbeat (`seq` one more than the last).
    pub fn heartbeat(&self) -> Result<(), WriteError> {
        let (status, task_id, last_activity) = {
            let a = self.activity.lock().unwrap_or_else(PoisonError::into_inner);
            (a.status, a.task_id.clone(), a.last_activity)
        };
        let heartbeat = Heartbeat {
            agent: HeartbeatAgent {
                agent_type: self.agent_type,
                agent_id: self.agent_id.clone(),
            },
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            status,
            pid: std::process::id(),
            ppid: Some(std::os::unix::process::parent_id()),
            uptime_s: self.started.elapsed().as_secs_f64(),
            last_activity_at: last_activity,
            stats: None,
            task_id,
        };
        // A heartbeat is not activity: written without `touch`.
        let message = redact_message(&Message::Heartbeat(heartbeat), &self.secrets);
        self.writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write_message(&message)
    }
}

/// `message` with every secret replaced in every string (keys included).
pub fn redact_message(message: &Message, secrets: &[String]) -> Message {
    if secrets.is_empty() {
        return message.clone();
    }
    let Ok(mut value) = serde_json::to_value(message) else {
        return message.clone();
    };
    redact_value(&mut value, secrets);
    // Replacing text inside strings keeps every field's type, so the message still decodes;
    // should it not (a secret that is a timestamp), the original is not written either.
    serde_json::from_value(value).unwrap_or_else(|_| {
        Message::Log(Log {
            level: LogLevel::Error,
            message: "a message was withheld: redacting secrets from it made it invalid".into(),
            fields: Object::new(),
            timestamp: Timestamp::now(),
        })
    })
}

/// Redacts every string of a JSON value in place.
pub fn redact_value(value: &mut Value, secrets: &[String]) {
    match value {
        Value::String(s) => {
            if secrets.iter().any(|secret| s.contains(secret.as_str())) {
                *s = safety::redact(s, secrets);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(v, secrets)),
        Value::Object(members) => {
            let entries = std::mem::take(members);
            for (key, mut item) in entries {
                redact_value(&mut item, secrets);
                members.insert(safety::redact(&key, secrets), item);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}
