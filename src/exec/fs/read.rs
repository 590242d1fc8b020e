//! Reading: `file_read` (one file) and `files_read` (several, all or nothing).
//! Contents are returned as they are, line breaks included; a byte order mark is not part of
//! the text and is left out.

use serde_json::json;

use super::call::Call;
use super::text::load;
use crate::exec::{Access, ActionOutcome};

/// `file_read`: data `{path, content}`.
pub(super) fn file_read(call: &Call) -> Result<ActionOutcome, String> {
    let target = call.path("path", &[Access::Read])?;
    let file = load(&target, call.ws.max_file_size).map_err(|e| e.for_action(call.action))?;
    Ok(ActionOutcome::ok(Some(
        json!({"path": target.user, "content": file.text}),
    )))
}

/// `files_read`: `paths` has one absolute path per line (blank lines ignored). Data
/// `{paths: [...], content: [...]}` in the same order. If any file cannot be read, nothing
/// is returned and the message lists every file that failed, as in the seeds.
pub(super) fn files_read(call: &Call) -> Result<ActionOutcome, String> {
    let paths = call.text("paths")?;
    let list: Vec<&str> = paths
        .split('\n')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if list.is_empty() {
        return Err(call.fail("No paths provided"));
    }
    let mut contents = Vec::with_capacity(list.len());
    let mut failures = Vec::new();
    for path in &list {
        let read = call
            .target(path, &[Access::Read])
            .and_then(|target| load(&target, call.ws.max_file_size).map_err(|e| e.to_string()));
        match read {
            Ok(file) => contents.push(file.text),
            // A NUL in a path would cut the report's line short: shown escaped.
            Err(error) => failures.push(format!("  {}: {error}", path.escape_debug())),
        }
    }
    if !failures.is_empty() {
        return Err(call.fail(format!(
            "Failed to read {} file(s):\n{}",
            failures.len(),
            failures.join("\n")
        )));
    }
    Ok(ActionOutcome::ok(Some(
        json!({"paths": list, "content": contents}),
    )))
}
