//! The `actions` form of the `apply` tool: an array of `{action, …parameters}` objects,
//! made into the blocks a reply with the same actions would parse to, so that it takes
//! exactly the path a reply takes after its parse (validation, loaf.yml, one transaction,
//! the same report; docs/mcp.md). Nothing is written out as NESL text to be parsed again:
//! a value holds any text exactly (newlines, `\r`, a line that looks like a delimiter).

use serde_json::{Map, Value};

use crate::nesl::Block;
use thiserror::Error;

/// Why an `actions` array cannot be run as a reply; nothing ran.
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

/// The blocks that run `actions`, one each, in order: each as the parser would read it had
/// it been written out (header, `action`, the parameters in the object's order, end
/// marker), its lines numbered so, so that the report names the lines a reply would have.
pub fn to_blocks(actions: &[Map<String, Value>]) -> Result<Vec<Block<'static>>, ActionsError> {
    if actions.is_empty() {
        return Err(ActionsError::Empty);
    }
    let mut blocks = Vec::with_capacity(actions.len());
    let mut line = 1;
    for (index, action) in actions.iter().enumerate() {
        let block = block(index, action, line)?;
        line = block.end_line.unwrap_or(line) + 1;
        blocks.push(block);
    }
    Ok(blocks)
}

/// One block, starting at `line`: `action` first, the parameters in the object's order.
fn block(
    index: usize,
    action: &Map<String, Value>,
    line: usize,
) -> Result<Block<'static>, ActionsError> {
    let Some(Value::String(name)) = action.get("action") else {
        return Err(ActionsError::NoAction { index });
    };
    let mut properties = vec![("action".to_owned(), name.clone())];
    for (key, value) in action.iter().filter(|(key, _)| *key != "action") {
        if crate::nesl::validate_key(key).is_err() {
            return Err(ActionsError::BadKey {
                index,
                key: key.clone(),
            });
        }
        properties.push((key.clone(), text(index, key, value)?));
    }
    // The header, a line a property, the end marker.
    let end = line + properties.len() + 1;
    Ok(Block::built(block_id(index), properties, line, end))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn objects(value: Value) -> Vec<Map<String, Value>> {
        serde_json::from_value(value).expect("an array of objects")
    }

    /// Each block's properties, and its lines.
    fn properties(blocks: &[Block<'_>]) -> Vec<Vec<(String, String)>> {
        blocks
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
        let written = to_blocks(&objects(json!([
            {"action": "file_write", "path": "/r/x.go", "content": tricky},
            {"count": 2, "action": "file_replace_all_text", "old_text": "=>", "new_text": "", "flag": true},
        ])))
        .expect("written");
        assert_eq!(
            properties(&written),
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
    fn blocks_have_the_ids_and_lines_a_written_reply_would() {
        let written = to_blocks(&objects(json!([
            {"action": "file_read", "path": "/r/a"},
            {"action": "file_write", "path": "/r/b", "content": "x\ny"},
        ])))
        .expect("written");
        // a1: header 1, action 2, path 3, end 4; a2: header 5 … end 9.
        let lines: Vec<_> = written
            .iter()
            .map(|b| (b.id.to_string(), b.start_line, b.end_line))
            .collect();
        assert_eq!(
            lines,
            vec![("a1".into(), 1, Some(4)), ("a2".into(), 5, Some(9))]
        );
    }

    #[test]
    fn what_cannot_be_run_is_named() {
        let err = |v: Value| to_blocks(&objects(v)).expect_err("refused");
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
