//! Checking one line of the protocol: size, UTF-8, JSON, `kind`, then the envelope's JSON
//! Schema (the spec's own, shipped in `lorch/schemas/`), then the typed [`Message`].
//!
//! Everything an agent says goes through [`validate`]; whatever is wrong comes back as a
//! [`ProtocolError`] the caller records, never as a panic. The schemas are compiled once, on
//! first use, with the `jsonschema` crate (draft 2020-12, `format` checked so that
//! `date-time` fields are real RFC 3339 timestamps).

use std::sync::LazyLock;

use jsonschema::Validator;
use jsonschema::error::ValidationErrorKind;
use serde_json::Value;
use thiserror::Error;

use super::protocol::{Kind, Message};

/// The largest line, newline excluded: 256 KiB.
pub const MAX_LINE_BYTES: usize = 256 * 1024;

/// The schema files, exactly as the spec gives them (`log` is ours: the spec has only an example).
pub const SCHEMAS: [(Kind, &str); 4] = [
    (Kind::Command, include_str!("../schemas/command.v1.json")),
    (Kind::Event, include_str!("../schemas/event.v1.json")),
    (
        Kind::Heartbeat,
        include_str!("../schemas/heartbeat.v1.json"),
    ),
    (Kind::Log, include_str!("../schemas/log.v1.json")),
];

/// What is wrong with a line.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// Longer than [`MAX_LINE_BYTES`]; `len` counts the whole line even when it was skipped.
    #[error("line of {len} bytes is over the {max}-byte limit")]
    Oversize {
        /// Bytes in the line, newline excluded.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The stream ended in the middle of a line (no newline after the last bytes).
    #[error("stream ended in the middle of a line ({len} bytes without a newline)")]
    PartialLine {
        /// Bytes after the last newline.
        len: usize,
    },
    /// Not UTF-8.
    #[error("line is not UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// Not JSON.
    #[error("line is not JSON: {message}")]
    NotJson {
        /// serde_json's description, with line and column.
        message: String,
    },
    /// JSON, but not an object with a string `kind`.
    #[error(
        "message has no `kind` (expected an object with kind command, event, heartbeat or log)"
    )]
    MissingKind,
    /// A `kind` the protocol does not have.
    #[error("unknown kind `{kind}` (expected command, event, heartbeat or log)")]
    UnknownKind {
        /// The kind given.
        kind: String,
    },
    /// The envelope's schema refuses it.
    #[error("{kind} does not match its schema: {}", list(.violations))]
    Schema {
        /// The envelope kind.
        kind: Kind,
        /// Every violation, in the validator's order.
        violations: Vec<Violation>,
    },
    /// The schema accepts it but it does not fit the typed message (e.g. a timestamp not in UTC).
    #[error("{kind} cannot be read: {message}")]
    Decode {
        /// The envelope kind.
        kind: Kind,
        /// serde's description.
        message: String,
    },
}

/// One schema violation: where, and what the schema expects there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON Pointer to the offending value in the message (`""` is the whole message).
    pub path: String,
    /// The validator's description of what is expected.
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "at {path}: {}", self.message)
    }
}

fn list(violations: &[Violation]) -> String {
    let texts: Vec<String> = violations.iter().map(ToString::to_string).collect();
    texts.join("; ")
}

/// The compiled schemas, in [`Kind::ALL`] order.
static VALIDATORS: LazyLock<Vec<Validator>> = LazyLock::new(|| {
    SCHEMAS
        .iter()
        .map(|(kind, text)| {
            // The schemas are compiled into the binary and a test compiles them all, so a
            // failure here is a build defect, not something input can cause.
            let schema: Value = serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("lorch/schemas/{kind}.v1.json is not JSON: {e}"));
            jsonschema::draft202012::options()
                .should_validate_formats(true)
                .build(&schema)
                .unwrap_or_else(|e| panic!("lorch/schemas/{kind}.v1.json does not compile: {e}"))
        })
        .collect()
});

fn validator(kind: Kind) -> &'static Validator {
    let index = Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
    &VALIDATORS[index]
}

/// Checks one line (without its newline; a trailing `\r` is tolerated) and returns the message.
pub fn validate(line: &[u8]) -> Result<Message, ProtocolError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(ProtocolError::Oversize {
            len: line.len(),
            max: MAX_LINE_BYTES,
        });
    }
    let text = std::str::from_utf8(line).map_err(|e| ProtocolError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| ProtocolError::NotJson {
        message: e.to_string(),
    })?;
    validate_value(value)
}

/// Checks a parsed JSON value: `kind`, the schema, the typed message.
pub fn validate_value(value: Value) -> Result<Message, ProtocolError> {
    let kind = match value.get("kind") {
        Some(Value::String(name)) => Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| ProtocolError::UnknownKind { kind: name.clone() })?,
        _ => return Err(ProtocolError::MissingKind),
    };
    let violations: Vec<Violation> = validator(kind)
        .iter_errors(&value)
        .map(|e| Violation {
            path: e.instance_path().as_str().to_owned(),
            message: describe(&e),
        })
        .collect();
    if !violations.is_empty() {
        return Err(ProtocolError::Schema { kind, violations });
    }
    serde_json::from_value(value).map_err(|e| ProtocolError::Decode {
        kind,
        message: e.to_string(),
    })
}

/// The validator's message, except for `enum`, whose message abbreviates the allowed values
/// ("or 2 other candidates"): an agent author needs them all.
fn describe(error: &jsonschema::ValidationError<'_>) -> String {
    match error.kind() {
        ValidationErrorKind::Enum { options } => {
            format!("{} is not one of {options}", error.instance())
        }
        _ => error.to_string(),
    }
}

/// Compiles every schema; `lorch validate --schemas` and the tests call it so that a broken
/// schema file shows up as a message rather than a panic mid-run.
pub fn check_schemas() -> Result<(), String> {
    for (kind, text) in SCHEMAS {
        let schema: Value = serde_json::from_str(text)
            .map_err(|e| format!("lorch/schemas/{kind}.v1.json is not JSON: {e}"))?;
        jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&schema)
            .map_err(|e| format!("lorch/schemas/{kind}.v1.json does not compile: {e}"))?;
    }
    Ok(())
}

/// Serializes a message to one line (no newline), refusing what [`validate`] would refuse, so
/// lorch never sends what it would reject.
pub fn encode(message: &Message) -> Result<String, ProtocolError> {
    let value = serde_json::to_value(message).map_err(|e| ProtocolError::Decode {
        kind: message.kind(),
        message: e.to_string(),
    })?;
    let line = value.to_string();
    if line.len() > MAX_LINE_BYTES {
        return Err(ProtocolError::Oversize {
            len: line.len(),
            max: MAX_LINE_BYTES,
        });
    }
    validate_value(value)?;
    Ok(line)
}
