//! `git loaf agent-hook AGENT`: an agent's hook event (JSON) as a record-mode step.
//!
//! The events and fields used, as each tool documents them:
//!
//! - **Claude Code** (docs.claude.com/en/docs/claude-code/hooks): every event carries
//!   `session_id`, `transcript_path`, `cwd` and `hook_event_name` on stdin.
//!   `UserPromptSubmit` (with `prompt`) → begin; `Stop` → commit. Other events are ignored.
//! - **Codex CLI** (developers.openai.com/codex/hooks): `.codex/hooks.json` hooks get the
//!   same shape as Claude Code's (`session_id`, `cwd`, `hook_event_name`, `prompt`):
//!   `UserPromptSubmit` → begin, `Stop` → commit. Its older `notify` program
//!   (`notify = [...]` in config.toml) gets one JSON argument, not stdin: `{"type":
//!   "agent-turn-complete", "thread-id", "turn-id", "cwd", "input-messages",
//!   "last-assistant-message"}` → commit of the session `thread-id`.
//! - **Cursor** (cursor.com/docs/agent/hooks): `.cursor/hooks.json`; every event carries
//!   `hook_event_name`, `conversation_id`, `generation_id` and `workspace_roots`.
//!   `beforeSubmitPrompt` (with `prompt`) → begin; `stop` (with `status`) → commit; the
//!   session is `conversation_id`, the repository the first of `workspace_roots`.
//! - **Gemini CLI** (geminicli.com/docs/hooks/reference): settings.json hooks get
//!   `session_id`, `transcript_path`, `cwd`, `hook_event_name` and `timestamp`.
//!   `BeforeAgent` (with `prompt`) → begin; `AfterAgent` → commit.
//!
//! An event that is not JSON, not an object, or lacks a field its step needs is an error
//! (nothing is changed); an event of another name is ignored. Bytes that are not UTF-8 in
//! an event (a prompt pasted from a binary file) are read as the text `\xNN`, and so is a
//! lone UTF-16 surrogate as `\uXXXX` ([`event_text`]), so any prompt begins a turn.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::Agent;

/// What an event asks record mode to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `record begin`.
    Begin {
        /// The agent's session.
        session: String,
        /// The user's prompt.
        prompt: Option<String>,
        /// Where the agent works (`None`: the hook's working directory).
        cwd: Option<PathBuf>,
    },
    /// `record commit`.
    Commit {
        /// The agent's session.
        session: String,
        /// Where the agent works.
        cwd: Option<PathBuf>,
    },
    /// An event record mode has no use for (its name).
    Ignored(String),
}

/// Why an event could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// Not JSON at all.
    #[error("the {agent} hook event is not JSON: {reason}")]
    NotJson {
        /// The agent.
        agent: Agent,
        /// serde_json's message.
        reason: String,
    },
    /// JSON, but not an object.
    #[error("the {0} hook event is not a JSON object")]
    NotAnObject(Agent),
    /// A field the step needs is missing or not a string.
    #[error("the {agent} hook event {event} has no string field `{field}`")]
    Missing {
        /// The agent.
        agent: Agent,
        /// The event's name (or `(unnamed)`).
        event: String,
        /// The field.
        field: &'static str,
    },
}

/// An event's bytes as text that serde_json reads whatever the prompt held: each byte that
/// is not UTF-8 becomes `\\xNN` (an escaped backslash, then `xNN`), and each `\uXXXX`
/// escape of a lone UTF-16 surrogate (JavaScript's `JSON.stringify` writes them for a
/// prompt cut inside an emoji; serde_json refuses them) gets its backslash escaped,
/// `\\uXXXX`. Inside a JSON string, the one place either can stand in an event, they read
/// back as the text `\xNN` and `\uXXXX`.
pub fn event_text(input: &[u8]) -> Cow<'_, str> {
    let text = match std::str::from_utf8(input) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => {
            let mut text = String::with_capacity(input.len() + 16);
            for chunk in input.utf8_chunks() {
                text.push_str(chunk.valid());
                for byte in chunk.invalid() {
                    let _ = write!(text, "\\\\x{byte:02x}");
                }
            }
            Cow::Owned(text)
        }
    };
    match lone_surrogates_as_text(&text) {
        Some(fixed) => Cow::Owned(fixed),
        None => text,
    }
}

/// `text` with the backslash of each `\u` escape of a lone surrogate escaped; `None` when
/// it has none.
fn lone_surrogates_as_text(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = std::str::from_utf8(bytes.get(at..at + 4)?).ok()?;
        u16::from_str_radix(hex, 16).ok()
    };
    let escape_at = |at: usize| bytes.get(at) == Some(&b'\\') && bytes.get(at + 1) == Some(&b'u');
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        let Some(first) = escape_at(at).then(|| unit(at + 2)).flatten() else {
            at += 2; // an escape of one character (`\\\\`, `\\"`, `\\n`, …)
            continue;
        };
        let paired = (0xD800..=0xDBFF).contains(&first)
            && escape_at(at + 6)
            && unit(at + 8).is_some_and(|second| (0xDC00..=0xDFFF).contains(&second));
        if paired || !(0xD800..=0xDFFF).contains(&first) {
            at += if paired { 12 } else { 6 };
            continue;
        }
        let fixed = out.get_or_insert_with(String::new);
        fixed.push_str(&text[copied..at]);
        fixed.push('\\');
        copied = at;
        at += 6;
    }
    out.map(|mut fixed| {
        fixed.push_str(&text[copied..]);
        fixed
    })
}

/// The record-mode step for `agent`'s event `input`.
pub fn read(agent: Agent, input: &str) -> Result<Step, HookError> {
    let value: Value = serde_json::from_str(input).map_err(|e| HookError::NotJson {
        agent,
        reason: e.to_string(),
    })?;
    let Value::Object(event) = value else {
        return Err(HookError::NotAnObject(agent));
    };
    let fields = Fields {
        agent,
        event: &event,
    };
    match agent {
        Agent::ClaudeCode => fields.lifecycle("UserPromptSubmit", "Stop", "session_id"),
        Agent::Codex if event.contains_key("type") => fields.codex_notify(),
        Agent::Codex => fields.lifecycle("UserPromptSubmit", "Stop", "session_id"),
        Agent::Cursor => fields.cursor(),
        Agent::Gemini => fields.lifecycle("BeforeAgent", "AfterAgent", "session_id"),
    }
}

/// One event's fields.
struct Fields<'a> {
    agent: Agent,
    event: &'a Map<String, Value>,
}

impl Fields<'_> {
    /// A string field, if present.
    fn optional(&self, field: &str) -> Option<String> {
        self.event
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// A string field the step needs.
    fn required(&self, field: &'static str, name: &str) -> Result<String, HookError> {
        self.optional(field).ok_or_else(|| HookError::Missing {
            agent: self.agent,
            event: name.to_owned(),
            field,
        })
    }

    /// The event's name (`hook_event_name`).
    fn name(&self) -> Result<String, HookError> {
        self.required("hook_event_name", "(unnamed)")
    }

    /// Claude Code, Codex hooks, Gemini CLI: `begin` / `end` events named in
    /// `hook_event_name`, the session in `session`, the folder in `cwd`.
    fn lifecycle(&self, begin: &str, end: &str, session: &'static str) -> Result<Step, HookError> {
        let name = self.name()?;
        let cwd = self.optional("cwd").map(PathBuf::from);
        if name == begin {
            Ok(Step::Begin {
                session: self.required(session, &name)?,
                prompt: Some(self.required("prompt", &name)?),
                cwd,
            })
        } else if name == end {
            Ok(Step::Commit {
                session: self.required(session, &name)?,
                cwd,
            })
        } else {
            Ok(Step::Ignored(name))
        }
    }

    /// Cursor: `beforeSubmitPrompt` / `stop`, the session in `conversation_id`, the folder
    /// the first of `workspace_roots`.
    fn cursor(&self) -> Result<Step, HookError> {
        let name = self.name()?;
        let cwd = self
            .event
            .get("workspace_roots")
            .and_then(Value::as_array)
            .and_then(|roots| roots.first())
            .and_then(Value::as_str)
            .map(PathBuf::from);
        match name.as_str() {
            "beforeSubmitPrompt" => Ok(Step::Begin {
                session: self.required("conversation_id", &name)?,
                prompt: Some(self.required("prompt", &name)?),
                cwd,
            }),
            "stop" => Ok(Step::Commit {
                session: self.required("conversation_id", &name)?,
                cwd,
            }),
            _ => Ok(Step::Ignored(name)),
        }
    }

    /// Codex's `notify` payload: `agent-turn-complete` ends the turn of `thread-id`.
    fn codex_notify(&self) -> Result<Step, HookError> {
        let kind = self.required("type", "(notify)")?;
        if kind != "agent-turn-complete" {
            return Ok(Step::Ignored(kind));
        }
        Ok(Step::Commit {
            session: self.required("thread-id", &kind)?,
            cwd: self.optional("cwd").map(PathBuf::from),
        })
    }
}

/// What the hook prints on stdout for `agent` (after the step ran, or was ignored): Claude
/// Code and Codex add a hook's stdout of `UserPromptSubmit` to the model's context, so
/// nothing; Cursor reads `beforeSubmitPrompt`'s answer (`continue`); Gemini CLI parses
/// stdout as JSON.
pub fn answer(agent: Agent, step: &Step) -> &'static str {
    match (agent, step) {
        (Agent::Cursor, Step::Begin { .. }) => "{\"continue\":true}\n",
        (Agent::Cursor | Agent::Gemini, _) => "{}\n",
        (Agent::ClaudeCode | Agent::Codex, _) => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_prompt_and_stop() {
        let begin = r#"{"session_id":"s1","transcript_path":"/t","cwd":"/r","hook_event_name":"UserPromptSubmit","prompt":"Fix it"}"#;
        assert_eq!(
            read(Agent::ClaudeCode, begin),
            Ok(Step::Begin {
                session: "s1".into(),
                prompt: Some("Fix it".into()),
                cwd: Some("/r".into())
            })
        );
        let stop =
            r#"{"session_id":"s1","cwd":"/r","hook_event_name":"Stop","stop_hook_active":false}"#;
        assert_eq!(
            read(Agent::ClaudeCode, stop),
            Ok(Step::Commit {
                session: "s1".into(),
                cwd: Some("/r".into())
            })
        );
        let other = r#"{"session_id":"s1","hook_event_name":"PreToolUse"}"#;
        assert_eq!(
            read(Agent::ClaudeCode, other),
            Ok(Step::Ignored("PreToolUse".into()))
        );
    }

    #[test]
    fn malformed_events_are_errors() {
        assert!(matches!(
            read(Agent::ClaudeCode, "{"),
            Err(HookError::NotJson { .. })
        ));
        assert_eq!(
            read(Agent::ClaudeCode, "[1]"),
            Err(HookError::NotAnObject(Agent::ClaudeCode))
        );
        assert_eq!(
            read(
                Agent::ClaudeCode,
                r#"{"hook_event_name":"UserPromptSubmit","session_id":"s"}"#
            ),
            Err(HookError::Missing {
                agent: Agent::ClaudeCode,
                event: "UserPromptSubmit".into(),
                field: "prompt"
            })
        );
        assert!(read(Agent::Gemini, r#"{"session_id":"s"}"#).is_err());
    }

    #[test]
    fn bytes_that_are_not_utf8_read_as_escaped_text() {
        let event = b"{\"session_id\":\"s\",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"a\xff\xfe b\"}";
        let text = event_text(event);
        assert_eq!(
            read(Agent::ClaudeCode, &text),
            Ok(Step::Begin {
                session: "s".into(),
                prompt: Some("a\\xff\\xfe b".into()),
                cwd: None
            })
        );
        assert!(matches!(event_text(b"{}"), Cow::Borrowed("{}")));
    }

    #[test]
    fn lone_surrogates_read_as_escaped_text_and_pairs_as_characters() {
        let event = br#"{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"cut \ud83d| \ude00| \ud83d\ude00| \\ud83d| \u00e9"}"#;
        let Ok(Step::Begin { prompt, .. }) = read(Agent::ClaudeCode, &event_text(event)) else {
            panic!("read")
        };
        assert_eq!(
            prompt.as_deref(),
            Some("cut \\ud83d| \\ude00| 😀| \\ud83d| é")
        );
    }

    #[test]
    fn cursor_codex_and_gemini() {
        let cursor = r#"{"hook_event_name":"beforeSubmitPrompt","conversation_id":"c","generation_id":"g","workspace_roots":["/w"],"prompt":"p"}"#;
        assert_eq!(
            read(Agent::Cursor, cursor),
            Ok(Step::Begin {
                session: "c".into(),
                prompt: Some("p".into()),
                cwd: Some("/w".into())
            })
        );
        let notify = r#"{"type":"agent-turn-complete","thread-id":"t","turn-id":"1","cwd":"/r","input-messages":["x"]}"#;
        assert_eq!(
            read(Agent::Codex, notify),
            Ok(Step::Commit {
                session: "t".into(),
                cwd: Some("/r".into())
            })
        );
        let gemini = r#"{"session_id":"g","cwd":"/r","hook_event_name":"AfterAgent","prompt":"p","prompt_response":"r"}"#;
        assert_eq!(
            read(Agent::Gemini, gemini),
            Ok(Step::Commit {
                session: "g".into(),
                cwd: Some("/r".into())
            })
        );
    }
}
