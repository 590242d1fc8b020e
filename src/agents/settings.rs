//! `git loaf init --agent AGENT`: the agent's project settings get the record-mode hooks
//! (`git loaf agent-hook AGENT` on the events [`super::hook`] reads) and the MCP server
//! (`git loaf mcp`), merged into what the files hold: no key is lost, an entry already there
//! is left as it is (running it twice changes nothing), and a file that is not a JSON
//! object is refused, never overwritten. Every file is read and checked before any is
//! written.
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

use serde_json::{Map, Value, json};

use super::Agent;

/// The MCP server's name in the settings.
const SERVER: &str = "git-loaf";

/// Why an agent's settings were not written. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// An existing file is not what the agent reads (not JSON, not an object, a key of the
    /// wrong type).
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
}

/// The hook command for `agent`.
pub fn hook_command(agent: Agent) -> String {
    format!("git loaf agent-hook {}", agent.name())
}

/// The edits that wire `agent` into the repository at `root`, computed without writing.
pub fn plan(root: &Path, agent: Agent) -> Result<Vec<Edit>, SettingsError> {
    let command = hook_command(agent);
    match agent {
        Agent::ClaudeCode => Ok(vec![
            json_edit(root, ".claude/settings.json", |doc| {
                nested_hooks(doc, &["UserPromptSubmit", "Stop"], &command)
            })?,
            json_edit(root, ".mcp.json", mcp_server)?,
        ]),
        Agent::Codex => Ok(vec![
            json_edit(root, ".codex/hooks.json", |doc| {
                nested_hooks(doc, &["UserPromptSubmit", "Stop"], &command)
            })?,
            codex_mcp(root)?,
        ]),
        Agent::Cursor => Ok(vec![
            json_edit(root, ".cursor/hooks.json", |doc| {
                cursor_hooks(doc, &["beforeSubmitPrompt", "stop"], &command)
            })?,
            json_edit(root, ".cursor/mcp.json", mcp_server)?,
        ]),
        Agent::Gemini => Ok(vec![json_edit(root, ".gemini/settings.json", |doc| {
            let hooks = nested_hooks(doc, &["BeforeAgent", "AfterAgent"], &command)?;
            Ok(mcp_server(doc)? || hooks)
        })?]),
    }
}

/// Writes the edits that change something (each file replaced whole by a rename).
pub fn write(root: &Path, edits: &[Edit]) -> Result<(), SettingsError> {
    for edit in edits {
        let Some(text) = &edit.text else { continue };
        let path = root.join(&edit.path);
        let io = |error| SettingsError::Io {
            path: edit.path.clone(),
            error,
        };
        let folder = path.parent().unwrap_or(root);
        std::fs::create_dir_all(folder).map_err(io)?;
        let mut temp = tempfile::NamedTempFile::new_in(folder).map_err(io)?;
        std::io::Write::write_all(&mut temp, text.as_bytes()).map_err(io)?;
        if let Ok(meta) = std::fs::metadata(&path) {
            let _ = std::fs::set_permissions(temp.path(), meta.permissions());
        }
        temp.persist(&path).map_err(|e| io(e.error))?;
    }
    Ok(())
}

/// A JSON file's edit: `change` adds what is missing to the document (an empty object when
/// the file does not exist) and says whether it added anything.
fn json_edit(
    root: &Path,
    relative: &str,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<bool, String>,
) -> Result<Edit, SettingsError> {
    let path = PathBuf::from(relative);
    let unreadable = |reason: String| SettingsError::Unreadable {
        path: path.clone(),
        reason,
    };
    let mut doc = match std::fs::read_to_string(root.join(relative)) {
        Ok(text) if text.trim().is_empty() => Map::new(),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(doc)) => doc,
            Ok(_) => return Err(unreadable("is not a JSON object".into())),
            Err(e) => return Err(unreadable(format!("is not valid JSON ({e})"))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
        Err(error) => return Err(SettingsError::Io { path, error }),
    };
    let changed = change(&mut doc).map_err(unreadable)?;
    let text = changed
        .then(|| serde_json::to_string_pretty(&Value::Object(doc)).map(|t| t + "\n"))
        .transpose()
        .map_err(|e| unreadable(e.to_string()))?;
    Ok(Edit { path, text })
}

/// The object under `key`, made when missing; an error when it is something else.
fn object<'a>(
    doc: &'a mut Map<String, Value>,
    key: &str,
) -> Result<&'a mut Map<String, Value>, String> {
    doc.entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| format!("has `{key}` that is not an object"))
}

/// The array under `key`, made when missing; an error when it is something else.
fn array<'a>(doc: &'a mut Map<String, Value>, key: &str) -> Result<&'a mut Vec<Value>, String> {
    doc.entry(key.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| format!("has `{key}` that is not a list"))
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
    doc: &mut Map<String, Value>,
    events: &[&str],
    command: &str,
) -> Result<bool, String> {
    let hooks = object(doc, "hooks")?;
    let mut changed = false;
    for event in events {
        let groups = array(hooks, event).map_err(|e| format!("hooks {e}"))?;
        if !groups.iter().any(|g| runs(g, command)) {
            groups.push(json!({"hooks": [{"type": "command", "command": command}]}));
            changed = true;
        }
    }
    Ok(changed)
}

/// Cursor's shape: `version: 1` and `hooks.<event>` a list of `{command}`.
fn cursor_hooks(
    doc: &mut Map<String, Value>,
    events: &[&str],
    command: &str,
) -> Result<bool, String> {
    let mut changed = false;
    if !doc.contains_key("version") {
        doc.insert("version".into(), json!(1));
        changed = true;
    }
    let hooks = object(doc, "hooks")?;
    for event in events {
        let entries = array(hooks, event).map_err(|e| format!("hooks {e}"))?;
        if !entries.iter().any(|e| runs(e, command)) {
            entries.push(json!({"command": command}));
            changed = true;
        }
    }
    Ok(changed)
}

/// `mcpServers.git-loaf`: `git loaf mcp`, unless a server of that name is there already.
fn mcp_server(doc: &mut Map<String, Value>) -> Result<bool, String> {
    let servers = object(doc, "mcpServers")?;
    if servers.contains_key(SERVER) {
        return Ok(false);
    }
    servers.insert(
        SERVER.into(),
        json!({"command": "git", "args": ["loaf", "mcp"]}),
    );
    Ok(true)
}

/// Codex's MCP servers live in `.codex/config.toml`: the table is appended when no
/// `[mcp_servers.git-loaf]` is there (a table of that name is left as it is).
fn codex_mcp(root: &Path) -> Result<Edit, SettingsError> {
    let path = PathBuf::from(".codex/config.toml");
    let table = format!("[mcp_servers.{SERVER}]");
    let quoted = format!("[mcp_servers.\"{SERVER}\"]");
    let text = match std::fs::read_to_string(root.join(&path)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(SettingsError::Io { path, error }),
    };
    if text
        .lines()
        .any(|l| l.trim() == table || l.trim() == quoted)
    {
        return Ok(Edit { path, text: None });
    }
    let mut new = text;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    if !new.is_empty() {
        new.push('\n');
    }
    new.push_str(&format!(
        "{table}\ncommand = \"git\"\nargs = [\"loaf\", \"mcp\"]\n"
    ));
    Ok(Edit {
        path,
        text: Some(new),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Map<String, Value> {
        match serde_json::from_str(text) {
            Ok(Value::Object(map)) => map,
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn hooks_are_added_once_beside_what_is_there() {
        let mut settings = doc(
            r#"{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"say done"}]}]}}"#,
        );
        let command = "git loaf agent-hook claude-code";
        assert_eq!(
            nested_hooks(&mut settings, &["UserPromptSubmit", "Stop"], command),
            Ok(true)
        );
        assert_eq!(
            nested_hooks(&mut settings, &["UserPromptSubmit", "Stop"], command),
            Ok(false)
        );
        assert_eq!(settings["model"], "opus");
        assert_eq!(settings["hooks"]["Stop"].as_array().map(Vec::len), Some(2));
        assert_eq!(
            settings["hooks"]["Stop"][0]["hooks"][0]["command"],
            "say done"
        );
    }

    #[test]
    fn keys_of_the_wrong_type_are_refused() {
        let mut settings = doc(r#"{"hooks":[]}"#);
        assert!(nested_hooks(&mut settings, &["Stop"], "x").is_err());
        let mut settings = doc(r#"{"hooks":{"Stop":{}}}"#);
        assert!(nested_hooks(&mut settings, &["Stop"], "x").is_err());
        let mut mcp = doc(r#"{"mcpServers":"x"}"#);
        assert!(mcp_server(&mut mcp).is_err());
    }

    #[test]
    fn an_mcp_server_of_that_name_is_kept() {
        let mut mcp = doc(r#"{"mcpServers":{"git-loaf":{"command":"/opt/git-loaf"}}}"#);
        assert_eq!(mcp_server(&mut mcp), Ok(false));
        assert_eq!(mcp["mcpServers"]["git-loaf"]["command"], "/opt/git-loaf");
    }
}
