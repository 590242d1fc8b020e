//! Codex's `.codex/config.toml` for `git loaf init --agent codex`: the MCP server
//! `git-loaf` (`git loaf mcp`) declared under `mcp_servers`, with the file edited by
//! `toml_edit`, so the user's comments, order and layout stay as they were.
//!
//! A server of that name already declared, in any form TOML allows (a `[mcp_servers.git-loaf]`
//! header, with a comment after it, spaces inside it or the key quoted; a dotted key; an
//! inline table under `[mcp_servers]`), is left exactly as the user wrote it. A file that is
//! not TOML, or whose `mcp_servers` is not a table, is refused: nothing is written.

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use super::Changes;

/// The MCP server's name under `mcp_servers`.
const SERVER: &str = "git-loaf";
/// The table Codex reads its MCP servers from.
const SERVERS: &str = "mcp_servers";

/// The new text of `.codex/config.toml` (holding `text`, empty when missing), or `None`
/// when it declares the server already; what was added or kept goes to `changes`. An
/// error says what is wrong with the file.
pub(crate) fn declare_server(text: &str, changes: &mut Changes) -> Result<Option<String>, String> {
    let mut doc: DocumentMut = text.parse().map_err(|e| not_toml(text, &e))?;
    if let Some(existing) = doc.get(SERVERS) {
        let servers = existing
            .as_table_like()
            .ok_or_else(|| format!("has `{SERVERS}` that is not a table"))?;
        if let Some(server) = servers.get(SERVER) {
            if !is_ours(server) {
                changes.kept.push(format!(
                    "your own MCP server `{SERVER}` in [{SERVERS}], as you declared it"
                ));
            }
            return Ok(None);
        }
    }
    let empty = text.trim().is_empty();
    match doc.get_mut(SERVERS) {
        None => {
            // Comments at the end of the file stay above the new table, where they were.
            let trailing = doc.trailing().as_str().unwrap_or_default().to_owned();
            let mut server = server_table(!empty, false);
            if !trailing.trim().is_empty() {
                doc.set_trailing("");
                server.decor_mut().set_prefix(format!("{trailing}\n"));
            }
            let mut servers = Table::new();
            servers.set_implicit(true);
            servers.insert(SERVER, Item::Table(server));
            doc.insert(SERVERS, Item::Table(servers));
        }
        Some(Item::Table(servers)) => {
            let dotted = servers.is_dotted();
            servers.insert(SERVER, Item::Table(server_table(true, dotted)));
        }
        Some(Item::Value(Value::InlineTable(servers))) => {
            // The space before the closing `}` moves to the new last entry.
            let mut server = Value::InlineTable(server_inline());
            if let Some((_, last)) = servers.iter_mut().last() {
                let end = last.decor().suffix().cloned();
                last.decor_mut().set_suffix("");
                if let Some(end) = end {
                    server.decor_mut().set_suffix(end);
                }
            }
            servers.insert(SERVER, server);
        }
        Some(_) => return Err(format!("has `{SERVERS}` that is not a table")),
    }
    let new = doc.to_string();
    // The edit is checked by reading it back: a file git-loaf would leave unreadable, or
    // without the server, is not written.
    let reread: DocumentMut = new.parse().map_err(|e| {
        format!("cannot take the server `{SERVER}` without breaking the file ({e})")
    })?;
    if !reread
        .get(SERVERS)
        .and_then(|s| s.get(SERVER))
        .is_some_and(is_ours)
    {
        return Err(format!(
            "cannot add the server `{SERVER}` to its `{SERVERS}`: add it yourself (command = \"git\", args = [\"loaf\", \"mcp\"])"
        ));
    }
    changes
        .added
        .push(format!("MCP server `{SERVER}` (`git loaf mcp`)"));
    Ok(Some(new))
}

/// `is not valid TOML (line L, column C: what)`.
fn not_toml(text: &str, error: &toml_edit::TomlError) -> String {
    let at = error.span().map_or(0, |span| span.start).min(text.len());
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!(
        "is not valid TOML (line {line}, column {column}: {})",
        error.message().trim_end()
    )
}

/// Whether a declared server runs `git loaf mcp`, as `init` writes it.
fn is_ours(server: &Item) -> bool {
    let Some(table) = server.as_table_like() else {
        return false;
    };
    let args: Option<Vec<&str>> = table
        .get("args")
        .and_then(Item::as_array)
        .and_then(|a| a.iter().map(Value::as_str).collect());
    table.get("command").and_then(Item::as_str) == Some("git")
        && args.as_deref() == Some(&["loaf", "mcp"][..])
}

/// `command = "git"`, `args = ["loaf", "mcp"]` as a table: its own header (after a blank
/// line when `spaced`), or dotted keys under a dotted `mcp_servers`.
fn server_table(spaced: bool, dotted: bool) -> Table {
    let mut table = Table::new();
    table.insert("command", toml_edit::value("git"));
    table.insert("args", toml_edit::value(args()));
    table.set_dotted(dotted);
    if spaced && !dotted {
        table.decor_mut().set_prefix("\n");
    }
    table
}

/// The server as an inline table, for an inline `mcp_servers = { … }`.
fn server_inline() -> InlineTable {
    let mut table = InlineTable::new();
    table.insert("command", "git".into());
    table.insert("args", Value::Array(args()));
    table
}

fn args() -> Array {
    Array::from_iter(["loaf", "mcp"])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(text: &str) -> (Option<String>, Changes) {
        let mut changes = Changes::default();
        let new = declare_server(text, &mut changes).expect("declared");
        (new, changes)
    }

    #[test]
    fn a_missing_server_gets_its_own_table_after_what_is_there() {
        let (new, changes) = declared("# mine\nmodel = \"gpt-5\" # pinned\n");
        assert_eq!(
            new.as_deref(),
            Some(
                "# mine\nmodel = \"gpt-5\" # pinned\n\n[mcp_servers.git-loaf]\ncommand = \"git\"\nargs = [\"loaf\", \"mcp\"]\n"
            )
        );
        assert_eq!(changes.added.len(), 1);
        let (new, _) = declared("# only a comment\n");
        assert_eq!(
            new.as_deref(),
            Some(
                "# only a comment\n\n[mcp_servers.git-loaf]\ncommand = \"git\"\nargs = [\"loaf\", \"mcp\"]\n"
            )
        );
        let (new, _) = declared("model = \"m\"\n# the end\n");
        assert_eq!(
            new.as_deref(),
            Some(
                "model = \"m\"\n# the end\n\n[mcp_servers.git-loaf]\ncommand = \"git\"\nargs = [\"loaf\", \"mcp\"]\n"
            )
        );
        let (new, _) = declared("");
        assert_eq!(
            new.as_deref(),
            Some("[mcp_servers.git-loaf]\ncommand = \"git\"\nargs = [\"loaf\", \"mcp\"]\n")
        );
    }

    #[test]
    fn every_form_of_an_existing_declaration_is_kept() {
        for text in [
            "[mcp_servers.git-loaf] # mine\ncommand = \"/opt/loaf\"\n",
            "[mcp_servers]\ngit-loaf = { command = \"/opt/loaf\" }\n",
            "[mcp_servers.\"git-loaf\"]\ncommand = \"/opt/loaf\"\n",
            "[ mcp_servers . git-loaf ]\ncommand = \"/opt/loaf\"\n",
            "[ mcp_servers . 'git-loaf' ]\ncommand = \"/opt/loaf\"\n",
            "mcp_servers.git-loaf.command = \"/opt/loaf\"\n",
            "mcp_servers = { git-loaf = { command = \"/opt/loaf\" } }\n",
        ] {
            let (new, changes) = declared(text);
            assert_eq!(new, None, "{text}");
            assert_eq!(changes.kept.len(), 1, "{text}");
            assert!(changes.added.is_empty(), "{text}");
        }
        let ours = "[mcp_servers.git-loaf]\ncommand = \"git\"\nargs = [\"loaf\", \"mcp\"]\n";
        let (new, changes) = declared(ours);
        assert_eq!((new, changes.kept.len()), (None, 0), "ours: already set up");
    }

    #[test]
    fn other_servers_keep_their_form() {
        let (new, _) = declared("[mcp_servers]\ndb = { command = \"db\" }\n");
        assert_eq!(
            new.as_deref(),
            Some(
                "[mcp_servers]\ndb = { command = \"db\" }\n\n[mcp_servers.git-loaf]\ncommand = \"git\"\nargs = [\"loaf\", \"mcp\"]\n"
            )
        );
        let (new, _) =
            declared("[mcp_servers.db]\ncommand = \"db\"\n\n[profiles.x]\nmodel = \"m\"\n");
        assert_eq!(
            new.as_deref(),
            Some(
                "[mcp_servers.db]\ncommand = \"db\"\n\n[mcp_servers.git-loaf]\ncommand = \"git\"\nargs = [\"loaf\", \"mcp\"]\n\n[profiles.x]\nmodel = \"m\"\n"
            )
        );
        let (new, _) = declared("mcp_servers = { db = { command = \"db\" } }\n");
        assert_eq!(
            new.as_deref(),
            Some(
                "mcp_servers = { db = { command = \"db\" }, git-loaf = { command = \"git\", args = [\"loaf\", \"mcp\"] } }\n"
            )
        );
        let (new, _) = declared("mcp_servers.db.command = \"db\"\n");
        assert_eq!(
            new.as_deref(),
            Some(
                "mcp_servers.db.command = \"db\"\nmcp_servers.git-loaf.command = \"git\"\nmcp_servers.git-loaf.args = [\"loaf\", \"mcp\"]\n"
            )
        );
    }

    #[test]
    fn what_is_not_toml_or_not_a_table_is_refused() {
        let mut changes = Changes::default();
        let error = declare_server("{\"not\": \"toml\"}\n", &mut changes).expect_err("refused");
        assert!(
            error.starts_with("is not valid TOML (line 1, column 1:"),
            "{error}"
        );
        let error = declare_server("a = 1\nb = [\n", &mut changes).expect_err("refused");
        assert!(error.contains("line 2"), "{error}");
        for text in ["mcp_servers = 3\n", "[[mcp_servers]]\nname = \"x\"\n"] {
            assert_eq!(
                declare_server(text, &mut changes),
                Err("has `mcp_servers` that is not a table".to_owned())
            );
        }
    }
}
