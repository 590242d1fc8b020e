//! The ExecutionResult of an apply and its two renderings: the text report made to be pasted
//! back to the model, and JSON (`--json`), in the seed's shape.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::actions::{BlockError, OutputDisplay, Schema};
use crate::exec::Params;

pub(crate) mod inert;
pub(crate) mod intent;
pub(crate) mod redact;
pub mod subject;
pub(crate) mod trailer;

/// Everything an apply did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionResult {
    /// Every block parsed, validated and ran, and every hook succeeded.
    pub success: bool,
    /// Blocks in the reply.
    pub total_blocks: usize,
    /// Actions that ran (successfully or not).
    pub executed_actions: usize,
    /// One result per action that ran, in order.
    pub results: Vec<ActionResult>,
    /// Blocks that did not run, and why.
    pub parse_errors: Vec<BlockError>,
    /// Why nothing ran at all, if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fatal_error: Option<String>,
    /// Hooks that failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_errors: Option<HookErrors>,
    /// The git transaction, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git: Option<GitInfo>,
    /// What the model should hear that stopped nothing (two blocks sharing an id).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Hook failures, as `"<command>: <error>"`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HookErrors {
    /// Before-hook failures (the apply was aborted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<String>,
    /// After-hook failures (recorded; the actions' work is kept).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
}

/// What the git transaction recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GitInfo {
    /// The commit made, if anything changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The checkpoint of the user's uncommitted work, if there was any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// HEAD before the apply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The apply's id; empty (and left out) when nothing was recorded under it: no commit
    /// and no operation-log entry, e.g. a reply that only read.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub apply: String,
    /// Paths the apply changed that held uncommitted work of the user's: that work is now
    /// part of the commit.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub uncommitted: Vec<String>,
    /// Paths holding the user's uncommitted work that the reply's code reverted, reset or
    /// deleted: the user's version stays in the working tree, uncommitted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    /// Files of the commit not written to the user's tree because the user changed them
    /// while it was being published (never overwritten).
    #[serde(rename = "notWritten", skip_serializing_if = "Vec::is_empty")]
    pub not_written: Vec<String>,
    /// Why the commit was not published (kept under `refs/loaf/`) and how to take it.
    #[serde(rename = "notApplied", skip_serializing_if = "Option::is_none")]
    pub not_applied: Option<String>,
    /// What the repository's git hook that refused the commit said (or git, when signing
    /// failed), trimmed, with the user's paths.
    #[serde(rename = "refusedOutput", skip_serializing_if = "Option::is_none")]
    pub refused_output: Option<String>,
    /// A change to loaf.yml that widens what code may do and waits for the user (docs/loaf-yml.md,
    /// "A loaf.yml a reply writes waits for you"): what it widens and how to accept it.
    #[serde(rename = "configPending", skip_serializing_if = "Option::is_none")]
    pub config_pending: Option<String>,
}

/// One action that ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionResult {
    /// 1-based position among the actions that ran.
    pub seq: usize,
    /// The block's id.
    pub block_id: String,
    /// The action.
    pub action: String,
    /// Its parameters as the block gave them, typed.
    pub params: Params,
    /// Whether it did what was asked.
    pub success: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What it produced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// 1-based line of the block's header: the text report lists results and blocks that
    /// did not run in the reply's order (the JSON keeps the seed's shape).
    #[serde(skip)]
    pub start_line: usize,
}

impl ExecutionResult {
    /// The result as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"fatalError\": \"cannot serialize: {e}\"}}"))
    }

    /// The text report for the model, which is also what a terminal shows: control
    /// characters in it (from what exec printed, a file read, a hook's output) are shown
    /// escaped ([`inert`]); `--json` keeps the bytes.
    pub fn to_text(&self) -> String {
        inert::inert(&self.raw_text()).into_owned()
    }

    /// The text report as its parts hold it, control characters and all.
    fn raw_text(&self) -> String {
        // The header: the apply's id and commit when there are any, then the verdict
        // (or why nothing was applied), separated by ` · `.
        let mut parts = Vec::new();
        if let Some(git) = &self.git {
            if !git.apply.is_empty() {
                parts.push(format!("apply {}", git.apply));
            }
            match (&git.not_applied, &git.commit) {
                (Some(why), _) => parts.push(format!("NOT APPLIED: {why}")),
                (None, Some(commit)) => {
                    parts.push(format!("commit {}", crate::git::short_id(commit)))
                }
                (None, None) => {}
            }
        }
        if self.git.as_ref().is_none_or(|g| g.not_applied.is_none()) {
            parts.push(self.tally());
        }
        let mut out = format!("=== LOAF RESULTS === {}", parts.join(" · "));
        out.push('\n');
        if self.git.as_ref().is_some_and(|g| g.not_applied.is_some()) {
            out.push_str("None of the changes below reached the user's files.\n");
        }
        if let Some(said) = self.git.as_ref().and_then(|g| g.refused_output.as_ref()) {
            let _ = writeln!(out, "It said:\n    {}", said.replace('\n', "\n    "));
        }
        if let Some(git) = self.git.as_ref().filter(|g| !g.not_written.is_empty()) {
            let _ = writeln!(
                out,
                "note: not written to the working tree because the user changed them meanwhile (the commit has the reply's version): {}",
                git.not_written.join(", ")
            );
        }
        if let Some(git) = self.git.as_ref().filter(|g| !g.uncommitted.is_empty()) {
            let _ = writeln!(
                out,
                "note: the commit includes the user's uncommitted lines that the reply changed: {}",
                git.uncommitted.join(", ")
            );
        }
        if let Some(git) = self.git.as_ref().filter(|g| !g.kept.is_empty()) {
            let _ = writeln!(
                out,
                "note: these files hold the user's uncommitted work, which the reply's code reverted or deleted; the user's version was kept in place and not committed: {}",
                git.kept.join(", ")
            );
        }
        if let Some(pending) = self.git.as_ref().and_then(|g| g.config_pending.as_ref()) {
            let _ = writeln!(out, "note: {pending}");
        }
        for warning in &self.warnings {
            let _ = writeln!(out, "warning: {warning}");
        }
        if let Some(fatal) = &self.fatal_error {
            let _ = writeln!(out, "FATAL: {}", indent_rest(fatal));
        }
        for line in self.lines_in_reply_order() {
            out.push_str(&line);
        }
        if let Some(hooks) = &self.hook_errors {
            for (when, errors) in [("before", &hooks.before), ("after", &hooks.after)] {
                for error in errors {
                    let _ = writeln!(out, "hook ({when}) ❌ {}", indent_rest(error));
                }
            }
        }
        let outputs: Vec<&ActionResult> = self.results.iter().filter(|r| shows_output(r)).collect();
        if !outputs.is_empty() {
            out.push_str("=== OUTPUTS ===\n");
            for result in outputs {
                let target = action_target(&result.action, &result.params);
                let _ = writeln!(out, "[{}] {}{target}:", result.block_id, result.action);
                if let Some(data) = &result.data {
                    let text = render_data(data);
                    out.push_str(&text);
                    if !text.ends_with('\n') {
                        out.push('\n');
                    }
                }
            }
        }
        out.push_str("=== END ===\n");
        out
    }

    /// The header's verdict, so that partial success shows at a glance: `all 3 ✅` when
    /// everything ran and succeeded, `PARTIAL: 2 ✅ 4 ❌` when some of it did, `NOTHING
    /// APPLIED: 0 ✅ 4 ❌` when nothing did (or nothing could run at all).
    pub fn tally(&self) -> String {
        let ok = self.results.iter().filter(|r| r.success).count();
        let failed = self.results.iter().filter(|r| !r.success).count() + self.parse_errors.len();
        let hooks_failed = self
            .hook_errors
            .as_ref()
            .is_some_and(|h| !h.before.is_empty() || !h.after.is_empty());
        let hooks = if hooks_failed { " · hook ❌" } else { "" };
        if ok == 0 && failed == 0 && self.fatal_error.is_some() {
            "NOTHING APPLIED".to_owned()
        } else if self.fatal_error.is_some() || (ok == 0 && (failed > 0 || hooks_failed)) {
            format!("NOTHING APPLIED: {ok} ✅ {failed} ❌{hooks}")
        } else if failed > 0 || hooks_failed {
            format!("PARTIAL: {ok} ✅ {failed} ❌{hooks}")
        } else {
            format!("all {ok} ✅")
        }
    }

    /// One line per action that ran and per block that did not, in the reply's order (a
    /// block's header line; errors outside any block at their own line).
    fn lines_in_reply_order(&self) -> Vec<String> {
        let mut lines: Vec<(usize, String)> = Vec::new();
        for result in &self.results {
            let target = action_target(&result.action, &result.params);
            let mark = if result.success { "✅" } else { "❌" };
            let mut line = format!("{} {mark} {}{target}", result.block_id, result.action);
            match &result.error {
                Some(error) => {
                    let _ = writeln!(
                        line,
                        " - {}",
                        indent_rest(error_message(&result.action, error))
                    );
                }
                None => line.push('\n'),
            }
            if let Some(changes) = result.data.as_ref().and_then(changes_line) {
                let _ = writeln!(line, "    {changes}");
            }
            lines.push((result.start_line, line));
        }
        for error in &self.parse_errors {
            let at = error.block_start_line.or(error.line).unwrap_or(0);
            lines.push((at, block_error_line(error)));
        }
        // Stable: several errors of one block keep their order.
        lines.sort_by_key(|(at, _)| *at);
        lines.into_iter().map(|(_, line)| line).collect()
    }
}

/// Paths of one kind listed in full on an exec block's changes line; past this, the count
/// and the first few.
const CHANGES_LISTED: usize = 5;

/// What an exec block changed, for the line under it: `created /repo/a; changed /repo/b;
/// deleted /repo/c`, or `created 120 files: /repo/a, /repo/b, /repo/c, …` when many.
fn changes_line(data: &Value) -> Option<String> {
    let mut parts = Vec::new();
    for kind in ["created", "changed", "deleted"] {
        let Some(Value::Array(paths)) = data.get(kind) else {
            continue;
        };
        let more = data
            .get(format!("{kind}_more"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let total = paths.len() as u64 + more;
        let names: Vec<String> = paths.iter().map(plain).collect();
        parts.push(if total as usize <= CHANGES_LISTED {
            format!("{kind} {}", names.join(", "))
        } else {
            format!(
                "{kind} {total} files: {}, …",
                names[..3.min(names.len())].join(", ")
            )
        });
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// An action's error without a leading `<action>: ` (the report line already names the
/// action; fs and exec errors carry it for logs and hooks).
pub(crate) fn error_message<'a>(action: &str, error: &'a str) -> &'a str {
    error
        .strip_prefix(action)
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(error)
}

/// What an action works on, as ` <value>` (its schema's `primary_param`, else its `path`;
/// first line only), ` old → new` for `file_move`, or nothing.
pub(crate) fn action_target(action: &str, params: &Params) -> String {
    let value = |key: &str| {
        params.get(key).map(|v| match v {
            Value::String(s) if key.ends_with("path") => readable_path(s),
            v => one_line(&plain(v)),
        })
    };
    if let ("file_move", Some(old), Some(new)) = (action, value("old_path"), value("new_path")) {
        return format!(" {old} → {new}");
    }
    // Actions without a primary parameter in the schema (file_append) still name their file.
    Schema::get()
        .tool(action)
        .and_then(|t| t.primary_param.as_deref())
        .or(Some("path"))
        .and_then(value)
        .map(|v| format!(" {v}"))
        .unwrap_or_default()
}

/// A block that did not run, as a report line: `id ❌ ERROR: message (line N)`.
pub(crate) fn block_error_line(error: &BlockError) -> String {
    let line = error
        .report_line()
        .map(|l| format!(" (line {l})"))
        .unwrap_or_default();
    format!(
        "{} ❌ ERROR: {}{line}\n",
        error.block_id,
        indent_rest(&error.message)
    )
}

/// Whether the report shows this result's data: reads always, exec unless it was asked not
/// to, writes never.
fn shows_output(result: &ActionResult) -> bool {
    if result.data.is_none() {
        return false;
    }
    match Schema::get().tool(&result.action).map(|t| t.output) {
        Some(OutputDisplay::Always) => true,
        Some(OutputDisplay::Conditional) => {
            result.params.get("return_output") != Some(&Value::Bool(false))
        }
        _ => false,
    }
}

/// Data as text for the model: file contents as they are, exec output by stream, listings
/// and search hits one per line; anything else as JSON.
fn render_data(data: &Value) -> String {
    if let Some((bytes, sha256)) = redact::as_digest(data) {
        return redact::digest_text(bytes, sha256);
    }
    match data {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(render_item).collect::<Vec<_>>().join("\n"),
        Value::Object(map) => {
            if let (Some(Value::Array(paths)), Some(Value::Array(contents))) =
                (map.get("paths"), map.get("content"))
            {
                // files_read: each file under a header line.
                return paths
                    .iter()
                    .zip(contents)
                    .map(|(path, content)| format!("=== {} ===\n{}", plain(path), shown(content)))
                    .collect::<Vec<_>>()
                    .join("\n");
            }
            if let Some(content) = map.get("content").filter(|c| !c.is_array()) {
                return shown(content);
            }
            if map.contains_key("stdout") || map.contains_key("exit_code") {
                let mut out = String::new();
                match (
                    map.get("exit_code"),
                    map.get("timed_out_after_secs"),
                    map.get("signal"),
                ) {
                    (_, Some(secs), _) => {
                        let _ = writeln!(out, "timed out after {} s", plain(secs));
                    }
                    (_, _, Some(signal)) => {
                        let _ = writeln!(out, "killed by {}", plain(signal));
                    }
                    (Some(code), ..) => {
                        let _ = writeln!(out, "exit code: {}", plain(code));
                    }
                    _ => {}
                }
                for stream in ["stdout", "stderr"] {
                    if let Some(text) = map.get(stream).map(shown).filter(|t| !t.is_empty()) {
                        let _ = writeln!(out, "{stream}:\n{}", text.trim_end_matches('\n'));
                    }
                }
                return out;
            }
            serde_json::to_string_pretty(data).unwrap_or_default()
        }
        other => plain(other),
    }
}

/// One item of a listing: an `ls` entry (`name/` for folders, sizes for files), a `grep` hit
/// (`file:line: text`), or the item itself.
fn render_item(item: &Value) -> String {
    let field = |key: &str| item.get(key).map(plain);
    match (
        field("name"),
        field("type"),
        field("file"),
        field("line_number"),
        field("line"),
    ) {
        (Some(name), Some(kind), ..) if kind == "directory" => format!("{name}/"),
        (Some(name), Some(kind), ..) if kind == "file" => {
            format!("{name} ({} bytes)", field("size").unwrap_or_default())
        }
        (Some(name), Some(kind), ..) => format!("{name} ({kind})"),
        (_, _, Some(file), Some(number), Some(line)) => format!("{file}:{number}: {line}"),
        _ => match item {
            Value::Object(_) => item.to_string(),
            other => plain(other),
        },
    }
}

/// An output value as text: a string as it is, a hashed one as its size and hash.
fn shown(value: &Value) -> String {
    match redact::as_digest(value) {
        Some((bytes, sha256)) => redact::digest_text(bytes, sha256),
        None => plain(value),
    }
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One path as a report line shows it: control characters escaped (a line break or a NUL
/// in a path is what the model must see, not a broken line), and the middle of a very long
/// path left out.
fn readable_path(path: &str) -> String {
    const KEEP: usize = 60;
    let shown: String = if path.chars().any(char::is_control) {
        path.escape_debug().collect()
    } else {
        path.to_owned()
    };
    let chars: Vec<char> = shown.chars().collect();
    if chars.len() <= 3 * KEEP {
        return shown;
    }
    let head: String = chars[..KEEP].iter().collect();
    let tail: String = chars[chars.len() - KEEP..].iter().collect();
    format!("{head}…{tail} ({} bytes)", path.len())
}

fn one_line(text: &str) -> String {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("").to_owned();
    match lines.count() {
        0 => first,
        more => format!("{first} (+{more} more)"),
    }
}

/// Continuation lines of a multi-line message, indented under the result line.
fn indent_rest(text: &str) -> String {
    text.trim_end().replace('\n', "\n    ")
}

#[cfg(test)]
mod tests;
