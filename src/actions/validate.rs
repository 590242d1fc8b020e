//! Blocks → actions: every block is checked against the schema; a block with a syntax error,
//! an unknown action, a missing or unknown parameter or a value of the wrong type becomes a
//! [`BlockError`] and never runs. Every message says what to write instead.

use std::path::Path;

use serde::Serialize;
use serde_json::{Number, Value};

use super::schema::{Format, ParamDef, ParamType, Schema, ToolDef};
use super::suggest::closest;
use super::{canonical, implemented, runnable};
use crate::exec::Params;
use crate::nesl::{Block, ErrorCode, ParseResult, SyntaxError};

/// A block that passed every check, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    /// The block's id.
    pub block_id: String,
    /// The tool to run, under the schema's name (a slupe alias the block wrote is resolved).
    pub name: String,
    /// The parameters the block gave, typed, in block order (what the report shows).
    pub params: Params,
    /// 1-based line of the block's header.
    pub start_line: usize,
}

impl Action {
    /// The parameters with the schema's defaults added for those the block left out: what
    /// the executor gets.
    pub fn params_with_defaults(&self) -> Params {
        let mut params = self.params.clone();
        if let Some(tool) = Schema::get().tool(&self.name) {
            for param in &tool.params {
                if let (false, Some(default)) = (params.contains_key(&param.name), &param.default) {
                    params.insert(param.name.clone(), default.clone());
                }
            }
        }
        params
    }
}

/// Which check a block failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorType {
    /// NESL syntax.
    Syntax,
    /// Unknown action, missing or unknown parameter.
    Validation,
    /// A value that does not convert to its parameter's type.
    Type,
}

/// A block that will not run (the seed's `ParseError`, `neslContent` for `shamContent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockError {
    /// The block's id (`unknown` when the error is outside any block).
    pub block_id: String,
    /// The block's `action`, when it has one, under the schema's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Which check failed.
    pub error_type: ErrorType,
    /// What is wrong and what to write instead.
    pub message: String,
    /// 1-based line of the block's header (of the error, outside blocks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_start_line: Option<usize>,
    /// The block as NESL (for syntax errors: the lines around the error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nesl_content: Option<String>,
    /// For syntax errors, the line of the error itself (the text report shows it; the JSON
    /// keeps the seed's shape).
    #[serde(skip)]
    pub line: Option<usize>,
}

impl BlockError {
    /// The line to point the model at: the error's own, or its block's.
    pub fn report_line(&self) -> Option<usize> {
        self.line.or(self.block_start_line)
    }
}

/// What a reply asks for: the actions to run, in order, and the blocks that will not run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplyPlan {
    /// Valid actions in block order.
    pub actions: Vec<Action>,
    /// Errors, syntax errors first, then the other blocks' in block order.
    pub errors: Vec<BlockError>,
    /// Blocks in the reply.
    pub total_blocks: usize,
    /// Things the model should hear that stop nothing (two blocks with one id).
    pub warnings: Vec<String>,
}

/// A syntax error's block is shown whole when it is at most this many lines long.
const SHOW_BLOCK_LINES: usize = 50;

/// Checks every block of a reply (`text`, already `parsed`). `root` is the repository root
/// (or the current directory outside a repository), named in messages about relative paths.
pub fn plan(text: &str, parsed: &ParseResult<'_>, root: &Path) -> ReplyPlan {
    let schema = Schema::get();
    let mut plan = ReplyPlan {
        total_blocks: parsed.blocks.len(),
        ..ReplyPlan::default()
    };
    let mut broken = vec![false; parsed.blocks.len()];
    let lines: Vec<&str> = if parsed.errors.is_empty() {
        Vec::new()
    } else {
        text.split('\n').collect()
    };
    let follow_ons = heredoc_follow_ons(&lines, &parsed.errors);
    for (n, error) in parsed.errors.iter().enumerate() {
        if follow_ons.contains(&n) {
            continue;
        }
        let block = owner(&parsed.blocks, error);
        if let Some(i) = block {
            broken[i] = true;
        }
        let block = block.map(|i| &parsed.blocks[i]);
        plan.errors.push(BlockError {
            block_id: error.block_id.as_deref().unwrap_or("unknown").to_owned(),
            action: block
                .and_then(|b| b.properties.get("action"))
                .map(|name| canonical(name).to_owned()),
            error_type: ErrorType::Syntax,
            message: syntax_message(error),
            block_start_line: Some(block.map_or(error.line, |b| b.start_line)),
            line: Some(error.line),
            nesl_content: Some(
                block
                    .and_then(|b| block_source(&lines, b))
                    .unwrap_or_else(|| error.context.trim_end().to_owned()),
            ),
        });
    }
    for (block, broken) in parsed.blocks.iter().zip(broken) {
        if broken {
            continue;
        }
        match check_block(schema, block, root) {
            Ok(action) => plan.actions.push(action),
            Err((error_type, message)) => plan.errors.push(BlockError {
                block_id: block.id.to_string(),
                action: block
                    .properties
                    .get("action")
                    .map(|name| canonical(name).to_owned()),
                error_type,
                message,
                block_start_line: Some(block.start_line),
                nesl_content: Some(render_block(block)),
                line: None,
            }),
        }
    }
    plan
}

/// The errors (their indexes) that only follow from a heredoc opened without quotes
/// (`content = <<EOT_id`): the parser takes its text lines and its closing delimiter as
/// malformed lines. The one error on the opening line says what to write; counting the
/// others would make one slip look like several.
fn heredoc_follow_ons(lines: &[&str], errors: &[SyntaxError<'_>]) -> Vec<usize> {
    let mut follow = Vec::new();
    // (block, the delimiter's line) of the heredoc being skipped.
    let mut open: Option<(Option<&str>, usize)> = None;
    for (n, error) in errors.iter().enumerate() {
        let block = error.block_id.as_deref();
        if let Some((in_block, until)) = open {
            if in_block == block
                && error.code == ErrorCode::MalformedAssignment
                && error.line <= until
            {
                follow.push(n);
                continue;
            }
            open = None;
        }
        if error.code != ErrorCode::InvalidValue {
            continue;
        }
        let Some(delimiter) = error
            .content
            .split_once('=')
            .and_then(|(_, value)| value.trim().strip_prefix("<<"))
            .map(|d| d.trim().trim_matches('"'))
            .filter(|d| !d.is_empty() && !d.contains('\''))
        else {
            continue;
        };
        // The first line after the opening that is the delimiter alone (1-based lines).
        let until = lines
            .iter()
            .enumerate()
            .skip(error.line)
            .find(|(_, line)| line.trim() == delimiter)
            .map(|(i, _)| i + 1);
        if let Some(until) = until {
            open = Some((block, until));
        }
    }
    follow
}

/// The lines of a closed block as the model wrote them, unless the block is long.
fn block_source(lines: &[&str], block: &Block<'_>) -> Option<String> {
    let end = block.end_line?;
    if end + 1 - block.start_line > SHOW_BLOCK_LINES {
        return None;
    }
    let source: Vec<&str> = lines
        .get(block.start_line - 1..end)?
        .iter()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    Some(source.join("\n"))
}

/// The block a syntax error belongs to: same id, and the error's line within the block.
fn owner(blocks: &[Block<'_>], error: &SyntaxError<'_>) -> Option<usize> {
    let id = error.block_id.as_deref()?;
    blocks.iter().position(|b| {
        b.id == id
            && error.line >= b.start_line.saturating_sub(1)
            && b.end_line.is_none_or(|end| error.line <= end)
    })
}

fn check_block(
    schema: &Schema,
    block: &Block<'_>,
    root: &Path,
) -> Result<Action, (ErrorType, String)> {
    let validation = |m: String| (ErrorType::Validation, m);
    let Some(written) = block.properties.get("action") else {
        return Err(validation(format!(
            "Missing 'action' field in block '{}': add a line like action = \"file_write\"",
            block.id
        )));
    };
    // From here on the action is the schema's, whichever name the block used.
    let name = canonical(written);
    let Some(tool) = schema.tool(name) else {
        return Err(validation(unknown_action(name)));
    };
    if !implemented(name) {
        return Err(validation(format!(
            "Action '{name}' cannot be used in a reply yet; available: {}",
            runnable().join(", ")
        )));
    }
    let missing: Vec<&str> = tool
        .params
        .iter()
        .filter(|p| p.required && block.properties.get(&p.name).is_none())
        .map(|p| p.name.as_str())
        .collect();
    if !missing.is_empty() {
        let plural = if missing.len() == 1 { "" } else { "s" };
        return Err(validation(format!(
            "Missing required parameter{plural} for {name}: {} ({name} takes: {})",
            missing.join(", "),
            signature(tool)
        )));
    }
    let mut params = Params::new();
    let mut type_errors = Vec::new();
    for (key, value) in block.properties.iter().filter(|(k, _)| *k != "action") {
        let Some(def) = tool.param(key) else {
            let hint = closest(key, tool.params.iter().map(|p| p.name.as_str()))
                .map(|s| format!(" (did you mean '{s}'?)"))
                .unwrap_or_default();
            return Err(validation(format!(
                "Unknown parameter '{key}' for {name}{hint}; {name} takes: {}",
                signature(tool)
            )));
        };
        match convert(def, value, root) {
            Ok(typed) => {
                params.insert(key.to_owned(), typed);
            }
            Err(message) => type_errors.push(message),
        }
    }
    if !type_errors.is_empty() {
        return Err((ErrorType::Type, type_errors.join("; ")));
    }
    Ok(Action {
        block_id: block.id.to_string(),
        name: name.to_owned(),
        params,
        start_line: block.start_line,
    })
}

fn unknown_action(name: &str) -> String {
    let runnable = runnable();
    match closest(name, runnable.iter().copied()) {
        Some(suggestion) => format!("Unknown action '{name}' (did you mean '{suggestion}'?)"),
        None => format!(
            "Unknown action '{name}'; available: {}",
            runnable.join(", ")
        ),
    }
}

/// A syntax error's message, with what to write instead where the parser's message alone
/// leaves the model guessing.
fn syntax_message(error: &SyntaxError<'_>) -> String {
    let hint = match error.code {
        ErrorCode::InvalidValue => invalid_value_hint(&error.content, error.block_id.as_deref()),
        _ => None,
    };
    match hint {
        Some(hint) => format!("{}; {hint}", error.message),
        None => error.message.clone(),
    }
}

/// For a value that is neither a quoted string nor a heredoc (`count = 4`), the line as it
/// should be written, key and value as the model wrote them.
fn invalid_value_hint(line: &str, block_id: Option<&str>) -> Option<String> {
    let (key, value) = line.split_once('=')?;
    let (key, value) = (key.trim(), value.trim());
    if key.is_empty() {
        return None;
    }
    let delimiter = format!("EOT_{}", block_id.unwrap_or("id"));
    if value.is_empty() {
        return Some(format!(
            "write a value: `{key} = \"\"`, or a heredoc for several lines: `{key} = <<'{delimiter}'`"
        ));
    }
    if let Some(rest) = value.strip_prefix("<<") {
        let written = rest.trim().trim_matches(['\'', '"']);
        let delimiter = if written.is_empty() || written.contains('\'') {
            &delimiter
        } else {
            written
        };
        return Some(format!(
            "a heredoc's delimiter is in single quotes: `{key} = <<'{delimiter}'`"
        ));
    }
    if value.starts_with('"') {
        // The quotes are there; what follows the parser rejects is a JSON escape.
        return Some(format!(
            "a quoted value is a JSON string: write a backslash as `\\\\`, or use a heredoc, \
             whose text is taken as is: `{key} = <<'{delimiter}'`"
        ));
    }
    // `'4'` and `` `4` `` mean the same as `"4"`: keep what is inside.
    let inner = ['\'', '`']
        .iter()
        .find_map(|q| {
            value
                .strip_prefix(*q)
                .and_then(|v| v.strip_suffix(*q))
                .filter(|v| !v.contains(*q))
        })
        .unwrap_or(value);
    let quoted = serde_json::to_string(inner).ok()?;
    Some(format!("write it quoted: `{key} = {quoted}`"))
}

/// `path, content, count?`: the parameters, optional ones marked.
fn signature(tool: &ToolDef) -> String {
    let names: Vec<String> = tool
        .params
        .iter()
        .map(|p| {
            if p.required {
                p.name.clone()
            } else {
                format!("{}?", p.name)
            }
        })
        .collect();
    names.join(", ")
}

/// A block value converted to its parameter's type.
fn convert(def: &ParamDef, value: &str, root: &Path) -> Result<Value, String> {
    let name = &def.name;
    match &def.ty {
        ParamType::String => {
            check_format(def, value, root)?;
            Ok(Value::String(value.to_owned()))
        }
        ParamType::Integer => {
            let trimmed = value.trim();
            match trimmed.parse::<i64>() {
                Ok(n) if n.to_string() == trimmed => Ok(Value::Number(Number::from(n))),
                _ => Err(format!(
                    "Invalid integer for '{name}': \"{value}\" (write a whole number, e.g. {name} = \"3\")"
                )),
            }
        }
        ParamType::Boolean => match value {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(format!(
                "Invalid boolean for '{name}': \"{value}\" (write \"true\" or \"false\")"
            )),
        },
        ParamType::Enum(values) => {
            if values.iter().any(|v| v == value) {
                Ok(Value::String(value.to_owned()))
            } else {
                Err(format!(
                    "Invalid value for '{name}': \"{value}\"; allowed: {}",
                    values.join(", ")
                ))
            }
        }
    }
}

fn check_format(def: &ParamDef, value: &str, root: &Path) -> Result<(), String> {
    let relative = |path: &str| {
        let suggestion = root.join(path.trim_start_matches("./"));
        format!(
            "Path for '{}' must be absolute: '{path}' is relative. Paths are absolute; the \
             repository root is {}, so write '{}'",
            def.name,
            root.display(),
            suggestion.display()
        )
    };
    match def.format {
        Some(Format::AbsolutePath) if !value.starts_with('/') => Err(relative(value)),
        Some(Format::AbsolutePathsPerLine) => {
            let bad: Vec<String> = value
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('/'))
                .map(relative)
                .collect();
            if bad.is_empty() {
                Ok(())
            } else {
                Err(bad.join("; "))
            }
        }
        _ => Ok(()),
    }
}

/// The block written back as NESL, for the model to see what it sent.
fn render_block(block: &Block<'_>) -> String {
    let mut out = format!("#!nesl [@three-char-SHA-256: {}]\n", block.id);
    for (key, value) in block.properties.iter() {
        if value.contains('\n') {
            out.push_str(&format!(
                "{key} = <<'EOT_{id}'\n{value}\nEOT_{id}\n",
                id = block.id
            ));
        } else {
            let quoted = serde_json::to_string(value).unwrap_or_else(|_| format!("\"{value}\""));
            out.push_str(&format!("{key} = {quoted}\n"));
        }
    }
    out.push_str(&format!("#!end_{}", block.id));
    out
}
