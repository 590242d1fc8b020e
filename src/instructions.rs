//! `git loaf instructions`: the text a model needs in its system prompt to write replies that
//! git-loaf can run in this repository — the NESL syntax, the repository's root, the rules,
//! and every action loaf.yml allows with its parameters and an example block.
//!
//! The action list is generated from the compiled-in schema and the configuration, never
//! written by hand, so it cannot drift from what `apply` accepts; the tests feed every example
//! block printed here back through `apply --dry-run`.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

use crate::actions::{Format, ParamDef, ParamType, SCHEMA_YAML, Schema, ToolDef};
use crate::config::Config;

/// The block id of the syntax section's example.
const SYNTAX_ID: &str = "k7m";

/// The whole text for a repository rooted at `root` (absolute) with `config` in force.
pub fn render(root_path: &Path, config: &Config) -> String {
    let root = root_path.display().to_string();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Changing files with git-loaf\n\n\
         You work on the repository at {root}. To read, change or run anything there, write \
         NESL blocks in your reply; git-loaf runs them all, in order, as one transaction, and \
         the results come back to you in the next message.\n"
    );
    out.push_str(&syntax_section(&root));
    out.push('\n');
    // Where a review's report for the model waits (a linked worktree's git folder is not
    // `.git` under its root).
    let review_report = crate::git::repo::git_dir(root_path)
        .unwrap_or_else(|| root_path.join(".git"))
        .join("loaf/review/LAST.md");
    out.push_str(&rules_section(&root, &review_report.display().to_string()));
    out.push('\n');
    out.push_str(&secrets_section(config));
    out.push('\n');
    if config.allows("exec") {
        out.push_str(&sandbox_section(&root, config));
        out.push('\n');
    }
    out.push_str(&actions_section(&root, config));
    out
}

/// The actions a reply may run under `config`, in schema order: implemented by the executor
/// and allowed by loaf.yml (`exec` only when it enables it).
pub fn allowed_actions(config: &Config) -> Vec<&'static ToolDef> {
    crate::actions::runnable()
        .into_iter()
        .filter(|name| config.allows(name))
        .filter_map(|name| Schema::get().tool(name))
        .collect()
}

/// How a block is written, with one complete example at `root`.
pub fn syntax_section(root: &str) -> String {
    let id = SYNTAX_ID;
    format!(
        "## NESL syntax\n\n\
         A block starts with a header line holding its id and ends with `#!end_` and the same \
         id. Give every block its own id of three letters or digits. Inside, one property per \
         line; `action` names what to do, the other properties are its parameters:\n\n\
         ```\n\
         #!nesl [@three-char-SHA-256: {id}]\n\
         action = \"file_write\"\n\
         path = \"{root}/notes/\\\"quoted\\\" name.txt\"\n\
         content = <<'EOT_{id}'\n\
         Hello world!\n\
         how are you?\n\
         EOT_{id}\n\
         #!end_{id}\n\
         ```\n\n\
         - One-line value: `key = \"value\"`, a JSON string: write `\\\"` for a double quote, \
         `\\\\` for a backslash, `\\n` for a line break, `\\t` for a tab. A value containing \
         `:=` is refused: use a heredoc for it.\n\
         - Heredoc (multi-line or verbatim value): `key = <<'EOT_{id}'`, then the lines of \
         the value exactly as they are (no escapes), then a line that is just `EOT_{id}`. \
         The delimiter is always `EOT_` followed by the block's id. The value ends before the \
         line break preceding the delimiter: to end a file with a line break, leave an empty \
         line before `EOT_{id}`.\n\
         - Keys are letters, digits and `_`; each key once per block.\n\
         - Text outside blocks is ignored, so explain freely between them. Do not indent the \
         block's lines and do not put anything else on the header or end line.\n"
    )
}

/// What the model must know besides the syntax: paths, one action per block, results.
fn rules_section(root: &str, review_report: &str) -> String {
    format!(
        "## Rules\n\n\
         - Every path is absolute and inside the repository: it starts with `{root}/` (or is \
         `{root}` itself).\n\
         - One action per block; use as many blocks as you need. They run in the order \
         written; a block that fails does not stop the others.\n\
         - Use only the actions listed below, with their parameters as named there.\n\
         - You do not see the results in the same reply: they come back in the next message, \
         one line per block, `id ✅ action path` when it worked and `id ❌ action path - \
         message` when it did not (a block that could not even be read shows `id ❌ ERROR: \
         message (line N)`), followed by the output of reads and commands. Fix a failed \
         block in a new block with a new id.\n\
         - Read a file before changing text in it: `old_text` must match the file exactly, \
         and only once unless the action says otherwise.\n\
         - Writing loaf.yml gives your replies no more than they have: a change that allows \
         more (actions, exec, the network, writable paths, hooks) waits until the user \
         accepts it. If you need more, say so and ask the user.\n\
         - The user may reject parts of your changes (`git loaf review`): what was rejected \
         and why comes back to you once, and `{review_report}` holds the \
         latest such report. Do not reintroduce a rejected change; ask first.\n"
    )
}

/// What is kept from replies (`stage.isolate`), how the user allows it, and that outputs are
/// recorded as hashes in what the user pushes.
fn secrets_section(config: &Config) -> String {
    let mut out = String::from("## Secret files\n\n");
    if config.stage.isolate.is_empty() {
        out.push_str("- loaf.yml keeps no file from you (its `stage.isolate` is empty).\n");
    } else {
        let list: Vec<String> = config
            .stage
            .isolate
            .iter()
            .map(|p| format!("`{p}`"))
            .collect();
        let _ = writeln!(
            out,
            "- These paths are kept from you (a pattern without a `/` matches at any depth; a \
             file git tracks is not kept): {}. Reading, listing or writing them fails with the \
             pattern that refused; do not try to get at them another way. If you need one, say \
             so and ask the user to remove its pattern from `stage.isolate` in loaf.yml.",
            list.join(", ")
        );
    }
    out.push_str(
        "- What your blocks read and print is recorded in the commit's trailers and git \
         notes (which the user may push) only as its size and sha256, never the content.\n",
    );
    out
}

/// Where `exec` code runs (docs/apply.md): what it may write, the network, what stays out of
/// reach, so the model neither tries what cannot work nor believes what it did elsewhere
/// lasts.
fn sandbox_section(root: &str, config: &Config) -> String {
    let mut out = String::from("## Where exec code runs\n\n");
    let _ = writeln!(
        out,
        "- In a sandbox: {root} is a copy of the repository that the transaction commits; \
         what your code writes there is part of the result. `/tmp` is private to this reply \
         (shared by its exec blocks, gone afterwards). Everything else is read-only."
    );
    out.push_str(
        "- git commands work inside, but the repository's git dir is read-only to them: \
         commits, branches, stashes and config they make are dropped after the reply. The \
         commit is made from the files you leave, not from your git commands.\n",
    );
    let python = crate::exec::shell::python_for(Path::new(root));
    let _ = writeln!(
        out,
        "- `lang = \"python\"` runs {}.",
        match &python {
            Some(venv) => format!("the project's virtualenv, `{}`", venv.display()),
            None => "`python3` from PATH (the system's: there is no `.venv` at the root)".into(),
        }
    );
    if config.exec.writable.is_empty() {
        out.push_str("- No other path is writable (loaf.yml's `exec.writable` lists none).\n");
    } else {
        let list: Vec<String> = config
            .exec
            .writable
            .iter()
            .map(|p| format!("`{}`", p.display()))
            .collect();
        let _ = writeln!(
            out,
            "- Also writable, in place and not undone (caches): {}.",
            list.join(", ")
        );
    }
    if config.exec.network {
        out.push_str("- The network is available.\n");
    } else {
        out.push_str(
            "- There is no network (only a loopback of its own): installing packages or \
             fetching fails. If you need it, say so and ask the user to set \
             `exec: { network: true }` in loaf.yml.\n",
        );
    }
    out
}

/// Every allowed action: description, parameters, an example block.
fn actions_section(root: &str, config: &Config) -> String {
    let mut out = String::from("## Actions\n");
    let actions = allowed_actions(config);
    if actions.is_empty() {
        out.push_str("\nloaf.yml allows no action in this repository.\n");
    }
    for (n, tool) in actions.into_iter().enumerate() {
        let _ = writeln!(out, "\n### {}\n", tool.name);
        if let Some(description) = description(&tool.name, None) {
            let _ = writeln!(out, "{description}\n");
        }
        if tool.params.is_empty() {
            out.push_str("No parameters.\n");
        } else {
            out.push_str("Parameters:\n");
            for param in &tool.params {
                out.push_str(&param_line(&tool.name, param));
            }
        }
        let _ = writeln!(
            out,
            "\nExample:\n\n```\n{}```",
            example_block(tool, root, &example_id(n))
        );
    }
    out
}

/// One parameter as a list item: name, type, whether required, default, description.
fn param_line(tool: &str, param: &ParamDef) -> String {
    let mut kind = match &param.ty {
        ParamType::String => "string".to_owned(),
        ParamType::Integer => "integer".to_owned(),
        ParamType::Boolean => "boolean, \"true\" or \"false\"".to_owned(),
        ParamType::Enum(values) => format!("one of {}", values.join(", ")),
    };
    match param.format {
        Some(Format::AbsolutePath) => kind.push_str(", an absolute path"),
        Some(Format::AbsolutePathsPerLine) => kind.push_str(", absolute paths, one per line"),
        None => {}
    }
    let need = if param.required {
        "required".to_owned()
    } else {
        match param.default.as_ref().map(plain_value) {
            Some(default) => format!("optional, default {default:?}"),
            None => "optional".to_owned(),
        }
    };
    let mut line = format!("- `{}` ({kind}; {need})", param.name);
    if let Some(text) = description(tool, Some(&param.name)) {
        line.push_str(": ");
        line.push_str(&text);
    }
    line.push('\n');
    line
}

/// A default as the block would write it.
fn plain_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The id of the `n`th example: three characters, none equal to the syntax example's.
fn example_id(n: usize) -> String {
    format!("x{n:02}")
}

/// One example block of `tool`: its required parameters, and the optional ones worth
/// showing, with plausible values under `root`.
pub(crate) fn example_block(tool: &ToolDef, root: &str, id: &str) -> String {
    let mut out = format!(
        "#!nesl [@three-char-SHA-256: {id}]\naction = \"{}\"\n",
        tool.name
    );
    for param in &tool.params {
        let value = match example_value(&tool.name, &param.name, root) {
            Some(value) => value,
            None if param.required => generic_value(param, root),
            None => continue,
        };
        if value.contains('\n') {
            let _ = writeln!(out, "{} = <<'EOT_{id}'\n{value}\nEOT_{id}", param.name);
        } else {
            let quoted = serde_json::to_string(&value).unwrap_or_else(|_| format!("\"{value}\""));
            let _ = writeln!(out, "{} = {quoted}", param.name);
        }
    }
    let _ = writeln!(out, "#!end_{id}");
    out
}

/// Values that make an action's example read like real use; parameters not listed here get
/// [`generic_value`] when required and are left out otherwise.
fn example_value(tool: &str, param: &str, root: &str) -> Option<String> {
    let value = match (tool, param) {
        ("file_write", "path") => format!("{root}/src/hello.txt"),
        ("file_write", "content") => "Hello world!\nhow are you?".to_owned(),
        ("file_append", "content") => "one more line".to_owned(),
        ("file_replace_text" | "file_replace_all_text", "old_text") => "Hello".to_owned(),
        ("file_replace_text" | "file_replace_all_text", "new_text") => "Goodbye".to_owned(),
        ("file_replace_all_text", "count") => "2".to_owned(),
        ("file_replace_text_range", "old_text_beginning") => "fn old_name(".to_owned(),
        ("file_replace_text_range", "old_text_end") => "// end of old_name".to_owned(),
        ("file_replace_text_range", "new_text") => {
            "fn new_name() {}\n// end of new_name".to_owned()
        }
        ("file_replace_lines", "lines") => "4-5".to_owned(),
        ("file_replace_lines", "new_content") => "line four\nline five".to_owned(),
        ("file_read_numbered", "lines") => "23-43".to_owned(),
        ("files_read" | "files_replace_all_text", "paths") => {
            format!("{root}/src/main.rs\n{root}/README.md")
        }
        ("files_replace_all_text", "old_text") => "old_name".to_owned(),
        ("files_replace_all_text", "new_text") => "new_name".to_owned(),
        ("file_move", "old_path") => format!("{root}/src/old.txt"),
        ("file_move", "new_path") => format!("{root}/src/new.txt"),
        ("dir_create" | "dir_delete", "path") => format!("{root}/docs/drafts"),
        ("ls", "path") => root.to_owned(),
        ("grep", "pattern") => "TODO".to_owned(),
        ("grep", "path") => root.to_owned(),
        ("grep", "include") => "*.rs".to_owned(),
        ("glob", "pattern") => "**/*.md".to_owned(),
        ("glob", "base_path") => root.to_owned(),
        ("exec", "lang") => "bash".to_owned(),
        ("exec", "code") => "ls -la".to_owned(),
        ("exec", "cwd") => root.to_owned(),
        _ => return None,
    };
    Some(value)
}

/// A valid value for any parameter, from its type and format.
fn generic_value(param: &ParamDef, root: &str) -> String {
    match (&param.ty, param.format) {
        (_, Some(Format::AbsolutePath)) => format!("{root}/src/main.rs"),
        (_, Some(Format::AbsolutePathsPerLine)) => format!("{root}/src/main.rs\n{root}/README.md"),
        (ParamType::Integer, None) => "1".to_owned(),
        (ParamType::Boolean, None) => "true".to_owned(),
        (ParamType::Enum(values), None) => values.first().cloned().unwrap_or_default(),
        (ParamType::String, None) => "example".to_owned(),
    }
}

/// The schema's description of a tool, or of one of its parameters. [`ToolDef`] does not keep
/// descriptions (nothing else needs them), so they are read from the schema text here.
fn description(tool: &str, param: Option<&str>) -> Option<String> {
    static DOC: OnceLock<Value> = OnceLock::new();
    let doc = DOC.get_or_init(|| serde_saphyr::from_str(SCHEMA_YAML).unwrap_or(Value::Null));
    let tool = doc.get("tools")?.get(tool)?;
    let node = match param {
        Some(param) => tool.get("parameters")?.get(param)?,
        None => tool,
    };
    let text = node.get("description")?.as_str()?;
    // Schema descriptions are notes, sometimes with doubled spaces; one clean line each.
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_is_offered_only_when_loaf_yml_enables_it() {
        let dir = Path::new("/repo");
        let defaults = Config::default_for(dir);
        let names = |c: &Config| -> Vec<String> {
            allowed_actions(c).iter().map(|t| t.name.clone()).collect()
        };
        assert!(!names(&defaults).contains(&"exec".to_owned()));
        assert_eq!(names(&defaults).len(), crate::exec::fs::ACTIONS.len());
        let with_exec = Config::parse("allowed-actions: [defaults, exec]\n", dir).expect("valid");
        assert!(names(&with_exec).contains(&"exec".to_owned()));
        let reads = Config::parse("allowed-actions: [file_read, ls]\n", dir).expect("valid");
        assert_eq!(names(&reads), ["file_read", "ls"]);
    }

    #[test]
    fn the_isolated_secret_files_and_how_to_allow_them_are_named() {
        let dir = Path::new("/repo");
        let text = render(dir, &Config::default_for(dir));
        assert!(text.contains("## Secret files"), "{text}");
        for pattern in crate::config::DEFAULT_ISOLATE {
            assert!(
                text.contains(&format!("`{pattern}`")),
                "{pattern} in {text}"
            );
        }
        assert!(text.contains("remove its pattern from `stage.isolate` in loaf.yml"));
        assert!(text.contains("only as its size and sha256"));
        assert!(
            !secrets_section(&Config::default_for(dir)).contains("  "),
            "one line each"
        );
        let none = Config::parse("stage:\n  isolate: []\n", dir).expect("valid");
        let text = render(dir, &none);
        assert!(text.contains("keeps no file from you"), "{text}");
    }

    #[test]
    fn the_sandbox_is_described_when_exec_is_allowed() {
        let dir = Path::new("/repo");
        let without = render(dir, &Config::default_for(dir));
        assert!(!without.contains("## Where exec code runs"), "{without}");
        let config = Config::parse(
            "allowed-actions: [defaults, exec]\nexec:\n  writable: [\"/var/cache/x\"]\n",
            dir,
        )
        .expect("valid");
        let text = render(dir, &config);
        assert!(text.contains("## Where exec code runs"), "{text}");
        assert!(text.contains("`/var/cache/x`"), "{text}");
        assert!(text.contains("exec: { network: true }"), "{text}");
        let online = Config::parse(
            "allowed-actions: [defaults, exec]\nexec:\n  network: true\n",
            dir,
        )
        .expect("valid");
        assert!(render(dir, &online).contains("The network is available"));
    }

    #[test]
    fn descriptions_come_from_the_schema() {
        assert_eq!(
            description("file_read", None).as_deref(),
            Some("Read single file content")
        );
        assert_eq!(
            description("file_read_numbered", Some("delimiter")).as_deref(),
            Some("Delimiter between line number and content")
        );
        assert_eq!(description("file_read", Some("path")), None);
    }

    #[test]
    fn examples_quote_one_line_values_and_use_heredocs_for_the_rest() {
        let tool = Schema::get().tool("file_write").expect("file_write");
        assert_eq!(
            example_block(tool, "/r", "ab1"),
            "#!nesl [@three-char-SHA-256: ab1]\naction = \"file_write\"\npath = \"/r/src/hello.txt\"\ncontent = <<'EOT_ab1'\nHello world!\nhow are you?\nEOT_ab1\n#!end_ab1\n"
        );
    }
}
