//! A command's answer as a tool result: the text the command line prints (its report, then
//! the `note:` lines and the error it writes on stderr), the JSON form as structured content,
//! and `isError` when nothing was done.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

use crate::ops::{OpError, Response};

/// The tool result for a command that answered.
pub fn response(response: Response) -> CallToolResult {
    let mut text = response.text;
    for notice in &response.notices {
        let notice = crate::git::words::without_codes(&notice.text);
        text.push_str(&format!("note: {notice}\n"));
    }
    if let Some(error) = &response.error {
        text.push_str(&error.render());
    }
    let mut result = if response.is_error || response.error.is_some() {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    result.structured_content = response.json.map(structured);
    result
}

/// The tool result for a command that refused or failed: the message and what to do next.
pub fn error(error: &OpError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error.render())])
}

/// A result for input the tool could not take at all (wrong parameters): what was wrong and
/// what to send instead.
pub fn bad_input(message: &str, hint: &str) -> CallToolResult {
    error(&OpError::usage(message, hint))
}

/// The JSON form as structured content, which MCP wants to be an object: `log`'s list
/// becomes `{"entries": [...]}`.
fn structured(data: Value) -> Value {
    match data {
        Value::Object(object) => Value::Object(object),
        other => {
            let mut object = Map::new();
            object.insert("entries".to_owned(), other);
            Value::Object(object)
        }
    }
}
