//! `git loaf agent-hook AGENT`: an agent's hook event (JSON) as a record-mode step.
//!
//! The events and fields used, as each tool documents them:
//!
//! - **Claude Code** (docs.claude.com/en/docs/claude-code/hooks): every event carries
//!   `session_id`, `transcript_path`, `cwd` and `hook_event_name` on stdin.
//!   `UserPromptSubmit` (with `prompt`) → begin; `Stop` → commit; `PreToolUse` /
//!   `PostToolUse` (with `tool_name`, `tool_input`) → a tool call's start and end: `Edit`,
//!   `Write`, `MultiEdit` name their file in `tool_input.file_path`, `NotebookEdit` in
//!   `tool_input.notebook_path`; tools that only read (`Read`, `Grep`, `Glob`, …) are
//!   ignored; any other (`Bash`, `Task`, MCP tools) may write anywhere.
//! - **Codex CLI** (developers.openai.com/codex/hooks): `.codex/hooks.json` hooks get the
//!   same shape as Claude Code's (`session_id`, `cwd`, `hook_event_name`, `prompt`):
//!   `UserPromptSubmit` → begin, `Stop` → commit, `PreToolUse` / `PostToolUse` → a tool
//!   call (`Bash`; `apply_patch`, whose patch text in `tool_input.command` names its files
//!   on `*** Add File:`, `*** Update File:`, `*** Delete File:` and `*** Move to:` lines; MCP
//!   tools). Its older `notify` program (`notify = [...]` in config.toml) gets one JSON
//!   argument, not stdin: `{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd",
//!   "input-messages", "last-assistant-message"}` → commit of the session `thread-id`.
//! - **Cursor** (cursor.com/docs/agent/hooks): `.cursor/hooks.json`; every event carries
//!   `hook_event_name`, `conversation_id`, `generation_id` and `workspace_roots`.
//!   `beforeSubmitPrompt` (with `prompt`) → begin; `stop` (with `status`) → commit;
//!   `beforeShellExecution` / `afterShellExecution` and `beforeMCPExecution` /
//!   `afterMCPExecution` → a tool call that may write anywhere; `afterFileEdit` (with
//!   `file_path` and `edits: [{old_string, new_string}]`) → an edit of that file, whose
//!   content before is the content after with the edits taken back. The session is
//!   `conversation_id`, the repository the first of `workspace_roots`.
//! - **Gemini CLI** (geminicli.com/docs/hooks/reference): settings.json hooks get
//!   `session_id`, `transcript_path`, `cwd`, `hook_event_name` and `timestamp`.
//!   `BeforeAgent` (with `prompt`) → begin; `AfterAgent` → commit; `BeforeTool` /
//!   `AfterTool` (with `tool_name`, `tool_input`) → a tool call: `write_file` and `replace`
//!   name their file in `tool_input.file_path`; tools that only read are ignored.
//!
//! An event that is not JSON, not an object, or lacks a field its step needs is an error
//! (nothing is changed); an event of another name is ignored. A tool event whose tool names
//! no file it writes is a call that may write anywhere (the whole tree is looked at), never
//! an error. Bytes that are not UTF-8 in an event (a prompt pasted from a binary file) are
//! read as the text `\xNN`, and so is a lone UTF-16 surrogate as `\uXXXX` ([`event_text`]),
//! so any prompt begins a turn.

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
    /// One of the agent's tool calls begins: what changed since the last event is the
    /// user's.
    ToolStart {
        /// The agent's session.
        session: String,
        /// Where the agent works.
        cwd: Option<PathBuf>,
        /// The files the tool writes.
        files: Files,
    },
    /// One of the agent's tool calls ended: what changed since it began is the agent's.
    ToolEnd {
        /// The agent's session.
        session: String,
        /// Where the agent works.
        cwd: Option<PathBuf>,
        /// The files the tool writes.
        files: Files,
    },
    /// The agent edited `file` (an event after the edit only, Cursor's `afterFileEdit`):
    /// the content before is the content now with `edits` taken back.
    FileEdited {
        /// The agent's session.
        session: String,
        /// Where the agent works.
        cwd: Option<PathBuf>,
        /// The file, as the event names it.
        file: PathBuf,
        /// Each edit's `(old, new)` text, in the order made.
        edits: Vec<(String, String)>,
    },
    /// An event record mode has no use for (its name).
    Ignored(String),
}

/// Which files a tool call may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Files {
    /// Only these (as the event names them: absolute, or relative to its `cwd`): only they
    /// are read.
    Named(Vec<PathBuf>),
    /// Any file (a shell command, a tool git-loaf does not know): the whole tree is scanned.
    Any,
}

/// Claude Code's tools that only read (or write outside the repository).
const CLAUDE_READ_ONLY: &[&str] = &[
    "Read",
    "Glob",
    "Grep",
    "LS",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
    "TodoRead",
    "NotebookRead",
    "ExitPlanMode",
    "BashOutput",
    "KillShell",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
];

/// Gemini CLI's tools that only read (or write outside the repository).
const GEMINI_READ_ONLY: &[&str] = &[
    "read_file",
    "read_many_files",
    "list_directory",
    "glob",
    "search_file_content",
    "web_fetch",
    "google_web_search",
    "save_memory",
    "write_todos",
];

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
    let tools = ("PreToolUse", "PostToolUse");
    match agent {
        Agent::ClaudeCode => fields.lifecycle(("UserPromptSubmit", "Stop"), tools),
        Agent::Codex if event.contains_key("type") => fields.codex_notify(),
        Agent::Codex => fields.lifecycle(("UserPromptSubmit", "Stop"), tools),
        Agent::Cursor => fields.cursor(),
        Agent::Gemini => {
            fields.lifecycle(("BeforeAgent", "AfterAgent"), ("BeforeTool", "AfterTool"))
        }
    }
}

/// The files the tool `name` called with `input` writes; `None` for a tool that only reads.
fn tool_files(agent: Agent, name: &str, input: Option<&Value>) -> Option<Files> {
    let field = |key: &str| {
        input
            .and_then(|i| i.get(key))
            .and_then(Value::as_str)
            .map(|p| Files::Named(vec![PathBuf::from(p)]))
    };
    match (agent, name) {
        (Agent::ClaudeCode, "Edit" | "Write" | "MultiEdit") => {
            field("file_path").or(Some(Files::Any))
        }
        (Agent::ClaudeCode, "NotebookEdit") => field("notebook_path").or(Some(Files::Any)),
        (Agent::ClaudeCode, _) if CLAUDE_READ_ONLY.contains(&name) => None,
        (Agent::Gemini, "write_file" | "replace") => field("file_path").or(Some(Files::Any)),
        (Agent::Gemini, _) if GEMINI_READ_ONLY.contains(&name) => None,
        (Agent::Codex, "apply_patch") => Some(
            input
                .and_then(|i| i.get("command"))
                .and_then(Value::as_str)
                .and_then(patch_files)
                .unwrap_or(Files::Any),
        ),
        _ => Some(Files::Any),
    }
}

/// The files a Codex `apply_patch` patch names; `None` when it names none.
fn patch_files(patch: &str) -> Option<Files> {
    const MARKERS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    let files: Vec<PathBuf> = patch
        .lines()
        .filter_map(|line| MARKERS.iter().find_map(|m| line.strip_prefix(m)))
        .map(|path| PathBuf::from(path.trim()))
        .collect();
    (!files.is_empty()).then_some(Files::Named(files))
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

    /// Claude Code, Codex hooks, Gemini CLI: the turn's `(begin, end)` events and a tool
    /// call's `(start, end)` events named in `hook_event_name`, the session in `session_id`,
    /// the folder in `cwd`.
    fn lifecycle(&self, turn: (&str, &str), tool: (&str, &str)) -> Result<Step, HookError> {
        const SESSION: &str = "session_id";
        let name = self.name()?;
        let cwd = self.optional("cwd").map(PathBuf::from);
        if name == turn.0 {
            Ok(Step::Begin {
                session: self.required(SESSION, &name)?,
                prompt: Some(self.required("prompt", &name)?),
                cwd,
            })
        } else if name == turn.1 {
            Ok(Step::Commit {
                session: self.required(SESSION, &name)?,
                cwd,
            })
        } else if name == tool.0 || name == tool.1 {
            let tool_name = self.required("tool_name", &name)?;
            let Some(files) = tool_files(self.agent, &tool_name, self.event.get("tool_input"))
            else {
                return Ok(Step::Ignored(format!("{name} {tool_name}")));
            };
            let session = self.required(SESSION, &name)?;
            Ok(if name == tool.0 {
                Step::ToolStart {
                    session,
                    cwd,
                    files,
                }
            } else {
                Step::ToolEnd {
                    session,
                    cwd,
                    files,
                }
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
            "beforeShellExecution" | "beforeMCPExecution" => Ok(Step::ToolStart {
                session: self.required("conversation_id", &name)?,
                cwd,
                files: Files::Any,
            }),
            "afterShellExecution" | "afterMCPExecution" => Ok(Step::ToolEnd {
                session: self.required("conversation_id", &name)?,
                cwd,
                files: Files::Any,
            }),
            "afterFileEdit" => Ok(Step::FileEdited {
                session: self.required("conversation_id", &name)?,
                cwd,
                file: PathBuf::from(self.required("file_path", &name)?),
                edits: self.edits(),
            }),
            _ => Ok(Step::Ignored(name)),
        }
    }

    /// Cursor's `edits`: each `{old_string, new_string}` (an entry without both is skipped).
    fn edits(&self) -> Vec<(String, String)> {
        let Some(edits) = self.event.get("edits").and_then(Value::as_array) else {
            return Vec::new();
        };
        edits
            .iter()
            .filter_map(|e| {
                let text = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
                Some((text("old_string")?, text("new_string")?))
            })
            .collect()
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
        // No permission given or refused: the user's own settings decide whether the
        // command runs.
        (Agent::Cursor | Agent::Gemini, _) => "{}\n",
        (Agent::ClaudeCode | Agent::Codex, _) => "",
    }
}

#[cfg(test)]
mod tests;
