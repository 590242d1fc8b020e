//! `git loaf init --agent AGENT`: the agent's project settings get the record-mode hooks
//! (`git loaf agent-hook AGENT` on the events [`super::hook`] reads) and the MCP server
//! (`git loaf mcp`), merged into what the files hold: no key is lost, numbers are written
//! back exactly as they were read, an entry already there is left as it is (running it
//! twice changes nothing; a `git-loaf` MCP server the user declared otherwise is kept, and
//! the summary says so), and a file that is not a JSON object (or, for Codex's
//! `config.toml`, not TOML: [`super::codex_config`]) is refused, never overwritten. Every
//! file is read and checked before any is written; a settings file that is a symlink (to
//! the user's dotfiles) is updated where it points, and stays a symlink.
//!
//! The files, as each tool documents them:
//! - Claude Code: `.claude/settings.json` (`hooks.<Event>: [{hooks: [{type: "command",
//!   command}]}]`) and `.mcp.json` (`mcpServers.<name>: {command, args}`).
//! - Codex: `.codex/hooks.json` (the same shape as Claude Code's hooks) and
//!   `.codex/config.toml` (`[mcp_servers.<name>]` with `command` and `args`).
//! - Cursor: `.cursor/hooks.json` (`version: 1`, `hooks.<event>: [{command}]`) and
//!   `.cursor/mcp.json` (`mcpServers`).
//! - Gemini CLI: `.gemini/settings.json` (`hooks.<Event>: [{hooks: [{type, command}]}]` and
//!   `mcpServers`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::json_doc::Json;
use super::{Agent, Changes};

/// The MCP server's name in the settings.
const SERVER: &str = "git-loaf";
/// How many symlinks in a row a settings file may go through (as the kernel's limit).
const MAX_LINKS: usize = 40;

/// Why an agent's settings were not written. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SettingsError {
    /// An existing file is not what the agent reads (not JSON or TOML, not an object, a
    /// key of the wrong type).
    #[error("{} {reason}: left as it is", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("cannot write {}: {error}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
}

/// One settings file and what `init` does to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The file, relative to the repository root.
    pub path: PathBuf,
    /// Its new text; `None` when it already holds everything (left untouched).
    pub text: Option<String>,
    /// What the new text adds, and what it keeps.
    pub changes: Changes,
}

/// The events wired for each agent: its turn's begin and end, then its tool calls' start
/// and end (per-tool attribution, [`super::hook`]).
const CLAUDE_CODE_EVENTS: &[&str] = &["UserPromptSubmit", "Stop", "PreToolUse", "PostToolUse"];
const CODEX_EVENTS: &[&str] = &["UserPromptSubmit", "Stop", "PreToolUse", "PostToolUse"];
const CURSOR_EVENTS: &[&str] = &[
    "beforeSubmitPrompt",
    "stop",
    "beforeShellExecution",
    "afterShellExecution",
    "beforeMCPExecution",
    "afterMCPExecution",
    "afterFileEdit",
];
const GEMINI_EVENTS: &[&str] = &["BeforeAgent", "AfterAgent", "BeforeTool", "AfterTool"];

/// The hook command for `agent`.
pub(crate) fn hook_command(agent: Agent) -> String {
    format!("git loaf agent-hook {}", agent.name())
}

/// The edits that wire `agent` into the repository at `root`, computed without writing.
pub fn plan(root: &Path, agent: Agent) -> Result<Vec<Edit>, SettingsError> {
    let command = hook_command(agent);
    match agent {
        Agent::ClaudeCode => Ok(vec![
            json_edit(root, ".claude/settings.json", |doc, changes| {
                nested_hooks(doc, CLAUDE_CODE_EVENTS, &command, changes)
            })?,
            json_edit(root, ".mcp.json", mcp_server)?,
        ]),
        Agent::Codex => Ok(vec![
            json_edit(root, ".codex/hooks.json", |doc, changes| {
                nested_hooks(doc, CODEX_EVENTS, &command, changes)
            })?,
            codex_mcp(root)?,
        ]),
        Agent::Cursor => Ok(vec![
            json_edit(root, ".cursor/hooks.json", |doc, changes| {
                cursor_hooks(doc, CURSOR_EVENTS, &command, changes)
            })?,
            json_edit(root, ".cursor/mcp.json", mcp_server)?,
        ]),
        Agent::Gemini => Ok(vec![json_edit(
            root,
            ".gemini/settings.json",
            |doc, changes| {
                nested_hooks(doc, GEMINI_EVENTS, &command, changes)?;
                mcp_server(doc, changes)
            },
        )?]),
    }
}

/// Writes the edits that change something: each file replaced whole by a rename, in the
/// folder of the file itself. A symlink is followed to the file it names, which is the one
/// replaced: the symlink stays.
pub fn write(root: &Path, edits: &[Edit]) -> Result<(), SettingsError> {
    for edit in edits {
        let Some(text) = &edit.text else { continue };
        let io = |error| SettingsError::Io {
            path: edit.path.clone(),
            error,
        };
        let link = root.join(&edit.path);
        let folder = link.parent().unwrap_or(root);
        std::fs::create_dir_all(folder).map_err(io)?;
        let path = through_symlinks(&link).map_err(io)?;
        let folder = path.parent().unwrap_or(root);
        let mut temp = tempfile::NamedTempFile::new_in(folder).map_err(io)?;
        std::io::Write::write_all(&mut temp, text.as_bytes()).map_err(io)?;
        if let Ok(meta) = std::fs::metadata(&path) {
            let _ = std::fs::set_permissions(temp.path(), meta.permissions());
        }
        temp.persist(&path).map_err(|e| io(e.error))?;
    }
    Ok(())
}

/// The file `path` names once every symlink on the way is followed (`path` itself when it
/// is no symlink; the named file need not exist yet).
fn through_symlinks(path: &Path) -> std::io::Result<PathBuf> {
    let mut path = path.to_owned();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&path)?;
                path = match path.parent() {
                    Some(folder) => folder.join(target),
                    None => target,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(std::io::Error::from_raw_os_error(libc::ELOOP))
}

/// The file's text; empty when it does not exist.
fn read_settings(root: &Path, path: &Path) -> Result<String, SettingsError> {
    match std::fs::read_to_string(root.join(path)) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(error) => Err(SettingsError::Io {
            path: path.to_owned(),
            error,
        }),
    }
}

/// A JSON file's edit: `change` adds what is missing to the document (an empty object when
/// the file does not exist) and says in `changes` what it added.
fn json_edit(
    root: &Path,
    relative: &str,
    change: impl FnOnce(&mut Json, &mut Changes) -> Result<(), String>,
) -> Result<Edit, SettingsError> {
    let path = PathBuf::from(relative);
    let unreadable = |reason: String| SettingsError::Unreadable {
        path: path.clone(),
        reason,
    };
    let text = read_settings(root, &path)?;
    let mut doc = if text.trim().is_empty() {
        Json::Object(Vec::new())
    } else {
        match Json::parse(&text) {
            Ok(doc @ Json::Object(_)) => doc,
            Ok(_) => return Err(unreadable("is not a JSON object".into())),
            Err(e) => return Err(unreadable(format!("is not valid JSON ({e})"))),
        }
    };
    let mut changes = Changes::default();
    change(&mut doc, &mut changes).map_err(unreadable)?;
    let text = (!changes.added.is_empty())
        .then(|| doc.to_pretty())
        .transpose()
        .map_err(|e| unreadable(e.to_string()))?;
    Ok(Edit {
        path,
        text,
        changes,
    })
}

/// Whether `entry` runs `command` (`{command}` or `{hooks: [{command}]}`).
fn runs(entry: &Value, command: &str) -> bool {
    entry["command"] == command
        || entry["hooks"]
            .as_array()
            .is_some_and(|hooks| hooks.iter().any(|h| h["command"] == command))
}

/// Claude Code's, Codex's and Gemini CLI's shape: `hooks.<event>` is a list of groups, each
/// with its own `hooks` list of commands.
fn nested_hooks(
    doc: &mut Json,
    events: &[&str],
    command: &str,
    changes: &mut Changes,
) -> Result<(), String> {
    let hooks = doc.object("hooks")?;
    let mut added = Vec::new();
    for event in events {
        let groups = hooks.array(event).map_err(|e| format!("hooks {e}"))?;
        if !groups.iter().any(|g| runs(&g.to_value(), command)) {
            groups.push(json!({"hooks": [{"type": "command", "command": command}]}).into());
            added.push(*event);
        }
    }
    hooks_added(changes, command, &added);
    Ok(())
}

/// Cursor's shape: `version: 1` and `hooks.<event>` a list of `{command}`.
fn cursor_hooks(
    doc: &mut Json,
    events: &[&str],
    command: &str,
    changes: &mut Changes,
) -> Result<(), String> {
    if doc.get("version").is_none() {
        doc.insert("version", json!(1).into());
        changes.added.push("`version: 1`".into());
    }
    let hooks = doc.object("hooks")?;
    let mut added = Vec::new();
    for event in events {
        let entries = hooks.array(event).map_err(|e| format!("hooks {e}"))?;
        if !entries.iter().any(|e| runs(&e.to_value(), command)) {
            entries.push(json!({"command": command}).into());
            added.push(*event);
        }
    }
    hooks_added(changes, command, &added);
    Ok(())
}

/// Says which events got the hook `command`.
fn hooks_added(changes: &mut Changes, command: &str, events: &[&str]) {
    if !events.is_empty() {
        changes.added.push(format!(
            "record-mode hooks `{command}` on {}",
            events.join(", ")
        ));
    }
}

/// `mcpServers.git-loaf`: `git loaf mcp`, unless a server of that name is there already
/// (kept as it is).
fn mcp_server(doc: &mut Json, changes: &mut Changes) -> Result<(), String> {
    let servers = doc.object("mcpServers")?;
    let ours = json!({"command": "git", "args": ["loaf", "mcp"]});
    match servers.get(SERVER).map(Json::to_value) {
        Some(theirs) if theirs["command"] == ours["command"] && theirs["args"] == ours["args"] => {}
        Some(_) => changes.kept.push(format!(
            "your own MCP server `{SERVER}` in mcpServers, as you declared it"
        )),
        None => {
            servers.insert(SERVER, ours.into());
            changes
                .added
                .push(format!("MCP server `{SERVER}` (`git loaf mcp`)"));
        }
    }
    Ok(())
}

/// Codex's MCP servers live in `.codex/config.toml` ([`super::codex_config`]).
fn codex_mcp(root: &Path) -> Result<Edit, SettingsError> {
    let path = PathBuf::from(".codex/config.toml");
    let text = read_settings(root, &path)?;
    let mut changes = Changes::default();
    let text = super::codex_config::declare_server(&text, &mut changes).map_err(|reason| {
        SettingsError::Unreadable {
            path: path.clone(),
            reason,
        }
    })?;
    Ok(Edit {
        path,
        text,
        changes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Json {
        Json::parse(text).expect("JSON")
    }

    #[test]
    fn hooks_are_added_once_beside_what_is_there() {
        let mut settings = doc(
            r#"{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"say done"}]}]}}"#,
        );
        let command = "git loaf agent-hook claude-code";
        let mut changes = Changes::default();
        let events = ["UserPromptSubmit", "Stop"];
        assert_eq!(
            nested_hooks(&mut settings, &events, command, &mut changes),
            Ok(())
        );
        assert_eq!(changes.added.len(), 1);
        let mut again = Changes::default();
        assert_eq!(
            nested_hooks(&mut settings, &events, command, &mut again),
            Ok(())
        );
        assert_eq!(again, Changes::default());
        let settings = settings.to_value();
        assert_eq!(settings["model"], "opus");
        assert_eq!(settings["hooks"]["Stop"].as_array().map(Vec::len), Some(2));
        assert_eq!(
            settings["hooks"]["Stop"][0]["hooks"][0]["command"],
            "say done"
        );
    }

    #[test]
    fn keys_of_the_wrong_type_are_refused() {
        let changes = &mut Changes::default();
        let mut settings = doc(r#"{"hooks":[]}"#);
        assert!(nested_hooks(&mut settings, &["Stop"], "x", changes).is_err());
        let mut settings = doc(r#"{"hooks":{"Stop":{}}}"#);
        assert!(nested_hooks(&mut settings, &["Stop"], "x", changes).is_err());
        let mut mcp = doc(r#"{"mcpServers":"x"}"#);
        assert!(mcp_server(&mut mcp, changes).is_err());
    }

    #[test]
    fn an_mcp_server_of_that_name_is_kept() {
        let mut mcp = doc(r#"{"mcpServers":{"git-loaf":{"command":"/opt/git-loaf"}}}"#);
        let mut changes = Changes::default();
        assert_eq!(mcp_server(&mut mcp, &mut changes), Ok(()));
        assert!(changes.added.is_empty());
        assert_eq!(changes.kept.len(), 1, "the summary says it was kept");
        assert_eq!(
            mcp.to_value()["mcpServers"]["git-loaf"]["command"],
            "/opt/git-loaf"
        );
    }
}
