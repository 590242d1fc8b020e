//! The `Loaf-Result` trailer (docs/trailers-and-notes.md): one line of JSON that `git log` shows
//! under every apply's subject, so it holds only what a reader of the history scans for — each
//! block's action, the paths it named, whether it succeeded, and the `{bytes, sha256}` of what it
//! read or printed — in well under a kilobyte for a typical reply. Everything else the
//! ExecutionResult holds (parameters, messages, errors, warnings, hooks, the git facts) is in
//! the commit's note (`refs/notes/loaf`) and the local report, which `git loaf show` reads.
//!
//! Its top-level keys are the ExecutionResult's (`success`, `totalBlocks`, `results`,
//! `parseErrors`) and each result keeps `blockId`, `action` and `success`, so that a reader of
//! either (`git loaf log`'s counts, lorch's recovery) reads both. Paths inside the repository
//! are relative to its root: the history does not carry where the user keeps it.

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use super::redact::{self, as_digest};
use super::{ActionResult, ExecutionResult};
use crate::actions::BlockError;
use crate::exec::guard::lexical;

/// The trailer's JSON.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Trailer {
    success: bool,
    total_blocks: usize,
    results: Vec<Map<String, Value>>,
    parse_errors: Vec<Map<String, Value>>,
}

/// Keys of an output that name things rather than hold what was read or printed: the
/// block's path parameters already name them, and the note lists them.
const NAMES: [&str; 5] = ["path", "paths", "created", "changed", "deleted"];

impl ExecutionResult {
    /// The result for the `Loaf-Result` trailer (see the module's doc), paths relative to
    /// `root` when inside it.
    pub fn to_trailer_json(&self, root: &Path) -> String {
        let trailer = Trailer {
            success: self.success,
            total_blocks: self.total_blocks,
            results: self.results.iter().map(|r| block(r, root)).collect(),
            parse_errors: self.parse_errors.iter().map(parse_error).collect(),
        };
        serde_json::to_string(&trailer).unwrap_or_else(|_| "{}".to_owned())
    }
}

/// One action: `{blockId, action, <path parameters>, success, data?}`, `data` holding only
/// the sizes and hashes of its output.
fn block(result: &ActionResult, root: &Path) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("blockId".into(), result.block_id.clone().into());
    out.insert("action".into(), result.action.clone().into());
    for (key, value) in &result.params {
        if let (true, Some(text)) = (key.ends_with("path") || key == "paths", value.as_str()) {
            out.insert(key.clone(), paths(text, root));
        }
    }
    out.insert("success".into(), result.success.into());
    if redact::is_output(&result.action)
        && let Some(data) = result.data.as_ref().map(redact::hash_output)
        && let Some(hashes) = hashes(data)
    {
        out.insert("data".into(), hashes);
    }
    out
}

/// What is left of a hashed output without the names in it: its digests, counts and flags
/// (`exit_code`); `None` when nothing is.
fn hashes(data: Value) -> Option<Value> {
    match data {
        Value::Object(map) if as_digest(&Value::Object(map.clone())).is_none() => {
            let kept: Map<String, Value> = map
                .into_iter()
                .filter(|(key, _)| !NAMES.contains(&key.as_str()))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        Value::Null => None,
        other => Some(other),
    }
}

/// A path parameter (one path, or one per line for `paths`): relative to `root` when inside
/// it (`.` for the root itself), else as the block gave it.
fn paths(text: &str, root: &Path) -> Value {
    let one = |p: &str| -> Value {
        let normal = lexical(Path::new(p));
        match normal.strip_prefix(root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
            Ok(rel) => rel.to_string_lossy().into_owned().into(),
            Err(_) => p.to_owned().into(),
        }
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    match lines.as_slice() {
        [single] => one(single),
        _ => Value::Array(lines.into_iter().map(one).collect()),
    }
}

/// A block that did not run: its id, its action when it had one, and which check failed
/// (the message is in the note).
fn parse_error(error: &BlockError) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("blockId".into(), error.block_id.clone().into());
    if let Some(action) = &error.action {
        out.insert("action".into(), action.clone().into());
    }
    let kind = serde_json::to_value(error.error_type).unwrap_or(Value::Null);
    out.insert("errorType".into(), kind);
    out
}
