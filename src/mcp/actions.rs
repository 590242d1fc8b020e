//! The `actions` form of the `apply` tool: an array of `{action, …parameters}` objects,
//! written out as the NESL reply a model would have written, so that it takes exactly the
//! path a reply takes (validation, loaf.yml, one transaction, the same report).
//!
//! Every value is written as a quoted JSON string on one line, never a heredoc: a quoted
//! value holds any text exactly (newlines, `\r`, a line that looks like a delimiter), where
//! a heredoc body loses `\r` before `\n` and ends at the first line naming its delimiter.
//! The one sequence the NESL line rules refuse inside a quoted value, `:=`, is written with
//! its colon escaped (`\u003a`), which decodes to the same text.

use serde_json::{Map, Value};
use thiserror::Error;

/// Why an `actions` array cannot be written as a reply; nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ActionsError {
    /// The array is empty.
    #[error("`actions` is empty: there is nothing to run")]
    Empty,
    /// An object without a string `action`.
    #[error("actions[{index}] has no \"action\" naming what to do (a string)")]
    NoAction {
        /// Its place in the array.
        index: usize,
    },
    /// A parameter name NESL cannot carry.
    #[error(
        "actions[{index}]: {key:?} is not a parameter name (letters, digits and _, not starting with a digit)"
    )]
    BadKey {
        /// Its place in the array.
        index: usize,
        /// The name.
        key: String,
    },
    /// A parameter whose value is not text, a number or a boolean.
    #[error("actions[{index}].{key} is {kind}; parameters are text, numbers or booleans")]
    BadValue {
        /// Its place in the array.
        index: usize,
        /// The parameter.
        key: String,
        /// What it was (`an array`, `an object`, `null`).
        kind: &'static str,
    },
}

/// The id of the block written for `actions[index]`: `a1`, `a2`, … (the report names the
/// blocks by it).
pub fn block_id(index: usize) -> String {
    format!("a{}", index + 1)
}

/// The NESL reply that runs `actions`, one block each, in order.
pub fn to_reply(actions: &[Map<String, Value>]) -> Result<String, ActionsError> {
    if actions.is_empty() {
        return Err(ActionsError::Empty);
    }
    let mut reply = String::new();
    for (index, action) in actions.iter().enumerate() {
        reply.push_str(&block(index, action)?);
    }
    Ok(reply)
}

/// One block: the header, `action` first, the parameters in the object's order, the end.
fn block(index: usize, action: &Map<String, Value>) -> Result<String, ActionsError> {
    let Some(Value::String(name)) = action.get("action") else {
        return Err(ActionsError::NoAction { index });
    };
    let id = block_id(index);
    let mut out = format!("#!nesl [@three-char-SHA-256: {id}]\n");
    out.push_str(&line("action", name));
    for (key, value) in action.iter().filter(|(key, _)| *key != "action") {
        if crate::nesl::validate_key(key).is_err() {
            return Err(ActionsError::BadKey {
                index,
                key: key.clone(),
            });
        }
        out.push_str(&line(key, &text(index, key, value)?));
    }
    out.push_str(&format!("#!end_{id}\n"));
    Ok(out)
}

/// A parameter's value as NESL text: what a model would have written between the quotes.
fn text(index: usize, key: &str, value: &Value) -> Result<String, ActionsError> {
    let kind = match value {
        Value::String(text) => return Ok(text.clone()),
        Value::Number(number) => return Ok(number.to_string()),
        Value::Bool(flag) => return Ok(flag.to_string()),
        Value::Null => "null",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    Err(ActionsError::BadValue {
        index,
        key: key.to_owned(),
        kind,
    })
}

/// `key = "value"`, the value a JSON string on one line.
fn line(key: &str, value: &str) -> String {
    let quoted = Value::String(value.to_owned()).to_string();
    format!("{key} = {}\n", quoted.replace(":=", "\\u003a="))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn objects(value: Value) -> Vec<Map<String, Value>> {
        serde_json::from_value(value).expect("an array of objects")
    }

    /// What the parser reads back from the written reply: each block's properties.
    fn parsed(reply: &str) -> Vec<Vec<(String, String)>> {
        let result = crate::nesl::parse(reply);
        assert!(result.errors.is_empty(), "{:?}", result.errors);
        result
            .blocks
            .iter()
            .map(|b| {
                b.properties
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn every_value_reads_back_exactly() {
        let tricky = "a := b\r\nEOT_a1\n#!end_a1\n\"quoted\" \\ back\u{2028}\n";
        let reply = to_reply(&objects(json!([
            {"action": "file_write", "path": "/r/x.go", "content": tricky},
            {"count": 2, "action": "file_replace_all_text", "old_text": "=>", "new_text": "", "flag": true},
        ])))
        .expect("written");
        let blocks = parsed(&reply);
        assert_eq!(
            blocks,
            vec![
                vec![
                    ("action".into(), "file_write".into()),
                    ("path".into(), "/r/x.go".into()),
                    ("content".into(), tricky.into()),
                ],
                vec![
                    ("action".into(), "file_replace_all_text".into()),
                    ("count".into(), "2".into()),
                    ("old_text".into(), "=>".into()),
                    ("new_text".into(), "".into()),
                    ("flag".into(), "true".into()),
                ],
            ]
        );
    }

    #[test]
    fn what_cannot_be_written_is_named() {
        let err = |v: Value| to_reply(&objects(v)).expect_err("refused");
        assert_eq!(err(json!([])), ActionsError::Empty);
        assert_eq!(
            err(json!([{"action": "file_read", "path": "/a"}, {"path": "/b"}])),
            ActionsError::NoAction { index: 1 }
        );
        assert_eq!(
            err(json!([{"action": 3}])),
            ActionsError::NoAction { index: 0 }
        );
        assert_eq!(
            err(json!([{"action": "file_read", "paths": ["/a"]}])),
            ActionsError::BadValue {
                index: 0,
                key: "paths".into(),
                kind: "an array"
            }
        );
        assert_eq!(
            err(json!([{"action": "file_read", "bad key": "/a"}])),
            ActionsError::BadKey {
                index: 0,
                key: "bad key".into()
            }
        );
    }
}
