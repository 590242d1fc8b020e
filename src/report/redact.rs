//! What can be pushed holds no contents (docs/trailers-and-notes.md). The `Loaf-Result` trailer and
//! the note under `refs/notes/loaf` travel with `git push`; a block that read an ignored `.env`
//! or ran `cat .env` must not put those bytes there. So in what can be pushed, the output of
//! every action whose output the report shows (reads, listings, searches, exec: the schema's
//! `output_display` is not `never`) is replaced by `{"bytes": N, "sha256": "…"}`, while its
//! action, parameters, outcome and message stay. The full result stays local
//! (`git::reports`), for `git loaf show`.
//!
//! Within an output, the fields that only name or count things stay as they are: `path` and
//! `paths` (the block's own parameters name them too), numbers, booleans (`exit_code`,
//! `stdout_truncated`). A string is hashed as its UTF-8 bytes (the `sha256` of a `file_read`
//! is the file's own `sha256sum`, byte order mark aside); a list of strings item by item (the
//! files of `files_read`); anything else (an `ls` or `grep` listing) as its compact JSON.

use serde_json::{Map, Value};

use super::ExecutionResult;
use crate::actions::{OutputDisplay, Schema};

/// The marker a note holds (`"outputs": "hashes"`) when its outputs were replaced by hashes.
pub(crate) const HASHED_MARKER: &str = "hashes";

/// `{"bytes": N, "sha256": "<hex>"}` of `text`.
pub fn digest(text: &str) -> Value {
    use sha2::Digest as _;
    let hash = sha2::Sha256::digest(text.as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    serde_json::json!({"bytes": text.len(), "sha256": hex})
}

/// `(bytes, sha256)` when `value` is a [`digest`].
pub(crate) fn as_digest(value: &Value) -> Option<(u64, &str)> {
    let map = value.as_object().filter(|m| m.len() == 2)?;
    Some((map.get("bytes")?.as_u64()?, map.get("sha256")?.as_str()?))
}

/// Whether `action`'s data is output: what it read or printed.
pub(super) fn is_output(action: &str) -> bool {
    Schema::get()
        .tool(action)
        .is_some_and(|t| t.output != OutputDisplay::Never)
}

impl ExecutionResult {
    /// The result as it may be pushed: every output as `{bytes, sha256}`.
    pub fn outputs_hashed(&self) -> ExecutionResult {
        let mut hashed = self.clone();
        for result in &mut hashed.results {
            if is_output(&result.action)
                && let Some(data) = result.data.as_mut()
            {
                *data = hash_output(data);
            }
        }
        hashed
    }
}

/// [`ExecutionResult::outputs_hashed`] on a stored result (a note's `result`, or a squash's
/// records holding several): every object with an `action` string and `data`. Returns how
/// many outputs it hashed.
pub(crate) fn hash_outputs_in(value: &mut Value) -> usize {
    match value {
        Value::Object(map) => {
            let action = map.get("action").and_then(Value::as_str).map(str::to_owned);
            if let Some(action) = action {
                match map.get_mut("data") {
                    Some(data) if is_output(&action) && !data.is_null() => {
                        *data = hash_output(data);
                        return 1;
                    }
                    _ => return 0,
                }
            }
            map.values_mut().map(hash_outputs_in).sum()
        }
        Value::Array(items) => items.iter_mut().map(hash_outputs_in).sum(),
        _ => 0,
    }
}

/// A text report (as an older note stored it) without its outputs: the `=== OUTPUTS ===`
/// section, which always comes last, is replaced by a line saying where they are.
pub(crate) fn drop_outputs_from_text(text: &str) -> String {
    const START: &str = "\n=== OUTPUTS ===\n";
    // Result lines never start with `===` (continuation lines are indented), so the first
    // one at the start of a line is the section's.
    match text.find(START) {
        Some(at) => format!(
            "{}=== OUTPUTS ===\n(not recorded here: outputs stay in the repository where the apply ran, `git loaf show`)\n=== END ===\n",
            &text[..at + 1]
        ),
        None => text.to_owned(),
    }
}

/// One action's output with its contents hashed (see the module's doc).
pub(super) fn hash_output(data: &Value) -> Value {
    match data {
        Value::String(text) => digest(text),
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                let kept = match value {
                    _ if key == "path" || key == "paths" => value.clone(),
                    Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
                    Value::String(text) => digest(text),
                    _ if as_digest(value).is_some() => value.clone(),
                    Value::Array(items) if items.iter().all(Value::is_string) => Value::Array(
                        items
                            .iter()
                            .map(|i| digest(i.as_str().unwrap_or_default()))
                            .collect(),
                    ),
                    other => digest(&other.to_string()),
                };
                out.insert(key.clone(), kept);
            }
            Value::Object(out)
        }
        Value::Array(_) => digest(&data.to_string()),
        other => other.clone(),
    }
}

/// How a hashed output reads in the text report.
pub(crate) fn digest_text(bytes: u64, sha256: &str) -> String {
    format!("({bytes} bytes, sha256 {sha256}; the content is not recorded here)")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn outputs_become_sizes_and_hashes_and_the_facts_stay() {
        let d = digest("SECRET=1\n");
        // `printf 'SECRET=1\n' | sha256sum`
        assert_eq!(
            d,
            json!({"bytes": 9, "sha256": "664049a85e2251d253ff78a9a7808b41ef4a9f14c8a1b998b6bffd40b2494808"})
        );
        let read = hash_output(&json!({"path": "/r/.env", "content": "SECRET=1\n"}));
        assert_eq!(read, json!({"path": "/r/.env", "content": d}));
        let exec = hash_output(
            &json!({"stdout": "SECRET=1\n", "stderr": "", "exit_code": 0, "stdout_truncated": true}),
        );
        assert_eq!(exec["stdout"], d);
        assert_eq!(exec["stderr"], digest(""));
        assert_eq!(exec["exit_code"], 0);
        assert_eq!(exec["stdout_truncated"], true);
        let many = hash_output(&json!({"paths": ["/r/a", "/r/b"], "content": ["SECRET=1\n", "b"]}));
        assert_eq!(many["paths"], json!(["/r/a", "/r/b"]));
        assert_eq!(many["content"], json!([d, digest("b")]));
        let listing = json!([{"file": "/r/.env", "line_number": 1, "line": "SECRET=1"}]);
        assert_eq!(hash_output(&listing), digest(&listing.to_string()));
        assert!(!hash_output(&listing).to_string().contains("SECRET"));
        // Hashing twice changes nothing more.
        assert_eq!(hash_output(&read), read);
    }

    #[test]
    fn stored_results_are_hashed_where_they_are_outputs_only() {
        let mut stored = json!({"applies": [{"result": {"results": [
            {"action": "file_read", "params": {"path": "/r/.env"}, "data": {"path": "/r/.env", "content": "SECRET=1\n"}},
            {"action": "file_write", "params": {"path": "/r/a"}, "data": {"path": "/r/a", "bytesWritten": 3}},
        ]}}]});
        assert_eq!(hash_outputs_in(&mut stored), 1);
        assert!(!stored.to_string().contains("SECRET"), "{stored}");
        assert!(stored.to_string().contains("bytesWritten"));
    }

    #[test]
    fn an_older_text_loses_its_outputs_section() {
        let text = "=== LOAF RESULTS === all 1 ✅\nr2 ✅ file_read /r/.env\n=== OUTPUTS ===\n[r2] file_read /r/.env:\nSECRET=1\n=== END ===\n";
        let dropped = drop_outputs_from_text(text);
        assert!(!dropped.contains("SECRET"), "{dropped}");
        assert!(dropped.starts_with("=== LOAF RESULTS === all 1 ✅\nr2 ✅ file_read /r/.env\n=== OUTPUTS ===\n(not recorded here"));
        assert!(dropped.ends_with("=== END ===\n"));
        let none = "=== LOAF RESULTS === all 1 ✅\nk ✅ file_write /r/a\n=== END ===\n";
        assert_eq!(drop_outputs_from_text(none), none);
    }
}
