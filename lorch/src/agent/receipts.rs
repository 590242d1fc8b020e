//! The shim's memory of handled commands (docs/lorch.md, "What is recorded, and what
//! survives a crash"): one receipt per idempotency key, in
//! `<git common dir>/lorch/agent/<role>/receipts/<sha256(ik)>.json` (see
//! [`super::Options::state_dir`]), written atomically.
//!
//! A command whose key has a receipt is answered from it: the recorded events are sent
//! again (new message ids, the new command's correlation id, `payload.replayed: true` and
//! the original message id), and nothing runs or is rewritten. Only outcomes worth keeping
//! get a receipt: a builder step that succeeded, a review verdict, a spec-maintainer
//! verdict. A failure has none, so lorch's retry with the same key really retries.
//!
//! The receipt is written before its events are sent: a shim killed in between answers the
//! resent command from the receipt instead of doing the work a second time. A builder
//! killed after git-loaf committed its step and before the receipt was written finds the
//! step by its key in git-loaf's operation log instead ([`super::builder`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::emit::Emitter;
use crate::canonical::sha256_hex;
use crate::protocol::{Command, Event, Timestamp};
use crate::safety;

/// One handled command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// The key.
    pub idempotency_key: String,
    /// The task.
    pub task_id: String,
    /// The action.
    pub action: String,
    /// The command that did the work.
    pub command_message_id: String,
    /// The events sent for it, in order.
    pub events: Vec<Event>,
    /// When.
    pub created_at: Timestamp,
}

/// The receipts of one role in one workspace.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    workspace: PathBuf,
}

impl Store {
    /// The store in `state_dir` (see [`super::Options::state_dir`]); paths are shown
    /// relative to `workspace` when inside it.
    pub fn new(state_dir: &Path, workspace: &Path) -> Store {
        Store {
            dir: state_dir.join("receipts"),
            workspace: workspace.to_path_buf(),
        }
    }

    /// Where the receipt of `ik` lives (keys are free text: hashed into a file name).
    pub fn path(&self, ik: &str) -> PathBuf {
        self.dir.join(format!("{}.json", sha256_hex(ik.as_bytes())))
    }

    /// The path as events show it: relative to the workspace when inside it.
    pub fn shown(&self, ik: &str) -> String {
        let path = self.path(ik);
        path.strip_prefix(&self.workspace)
            .unwrap_or(&path)
            .display()
            .to_string()
    }

    /// The receipt of `ik`; `Err` names what is wrong with an unreadable one (it is then
    /// ignored and the command handled afresh).
    pub fn load(&self, ik: &str) -> Result<Option<Receipt>, String> {
        let path = self.path(ik);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let receipt: Receipt =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if receipt.idempotency_key != ik {
            return Err(format!("{}: written for another key", path.display()));
        }
        Ok(Some(receipt))
    }

    /// Records `receipt`, redacted like everything else the shim writes.
    pub fn save(&self, receipt: &Receipt, secrets: &[String]) -> std::io::Result<()> {
        let mut value = serde_json::to_value(receipt).map_err(std::io::Error::other)?;
        super::emit::redact_value(&mut value, secrets);
        let mut text = serde_json::to_string_pretty(&value).map_err(std::io::Error::other)?;
        text.push('\n');
        safety::atomic_write(&self.path(&receipt.idempotency_key), text.as_bytes())
    }
}

/// The events answering `command` from `receipt`: the same content, fresh envelopes.
pub fn replay(emitter: &Emitter, command: &Command, receipt: &Receipt, shown: &str) -> Vec<Event> {
    receipt
        .events
        .iter()
        .map(|old| {
            let mut event = old.clone();
            event.message_id = emitter.message_id();
            event.correlation_id = command.correlation_id.clone();
            event.occurred_at = Timestamp::now();
            event.payload.insert("replayed".into(), Value::Bool(true));
            event.payload.insert(
                "original_message_id".into(),
                Value::String(old.message_id.clone()),
            );
            event
                .payload
                .insert("receipt".into(), Value::String(shown.to_owned()));
            event
        })
        .collect()
}
