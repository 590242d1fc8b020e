//! One assignment line: `key = "json string"` or `key = <<'DELIMITER'`.
//!
//! Checks run in the reference's order, and that order is observable: an `=>` anywhere
//! before a standalone `=` is an invalid value, a `:=` anywhere in the line (even inside the
//! quoted value) is an invalid operator, then the first `=` splits key from value.

use super::js::{self, JsString};

/// A well-formed assignment. `key` is the text before the first `=`, trimmed; it is not yet
/// checked against the key rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assignment<'a> {
    /// `key = "value"`, the value decoded as JSON.
    KeyValue {
        /// The trimmed key.
        key: &'a str,
        /// The decoded value.
        value: JsString<'a>,
    },
    /// `key = <<'DELIMITER'`; the value is the lines up to the delimiter.
    Heredoc {
        /// The trimmed key.
        key: &'a str,
        /// The delimiter between the quotes.
        delimiter: &'a str,
    },
}

/// Why an assignment line is malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignmentErrorCode {
    /// `:=` somewhere in the line.
    InvalidOperator,
    /// No value, an unquoted value, a bad heredoc opener, `=>`, or a bad JSON string.
    InvalidValue,
    /// No `=` at all.
    MalformedAssignment,
    /// Nothing before the `=`.
    EmptyKey,
    /// The quoted value never closes.
    UnclosedQuote,
    /// Text after the closing quote.
    TrailingContent,
}

impl AssignmentErrorCode {
    /// The reference's code for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidOperator => "INVALID_OPERATOR",
            Self::InvalidValue => "INVALID_VALUE",
            Self::MalformedAssignment => "MALFORMED_ASSIGNMENT",
            Self::EmptyKey => "EMPTY_KEY",
            Self::UnclosedQuote => "UNCLOSED_QUOTE",
            Self::TrailingContent => "TRAILING_CONTENT",
        }
    }
}

/// A malformed assignment, located in UTF-16 code units from the start of the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignmentError<'a> {
    /// What is wrong.
    pub code: AssignmentErrorCode,
    /// 0-based UTF-16 position of the offending text.
    pub position: usize,
    /// Its length in UTF-16 code units.
    pub length: usize,
    /// For trailing content only: the key and value before it, which the parser still keeps.
    pub salvaged: Option<(&'a str, JsString<'a>)>,
}

fn fail(
    code: AssignmentErrorCode,
    line: &str,
    byte_pos: usize,
    length: usize,
) -> AssignmentError<'_> {
    AssignmentError {
        code,
        position: js::utf16_len(&line[..byte_pos]),
        length,
        salvaged: None,
    }
}

/// Parses one assignment line.
pub fn parse_assignment(line: &str) -> Result<Assignment<'_>, AssignmentError<'_>> {
    use AssignmentErrorCode::*;
    if let Some(arrow) = js::find_pair(line, *b"=>")
        && line.find('=') == Some(arrow)
    {
        return Err(fail(InvalidValue, line, arrow, 2));
    }
    if let Some(colon_equals) = js::find_pair(line, *b":=") {
        return Err(fail(InvalidOperator, line, colon_equals, 2));
    }
    let Some(equal) = line.find('=') else {
        return Err(fail(MalformedAssignment, line, 0, js::utf16_len(line)));
    };
    let key = js::trim(&line[..equal]);
    if key.is_empty() {
        return Err(fail(EmptyKey, line, equal, 1));
    }
    let after_equal = &line[equal + 1..];
    let value_text = js::trim(after_equal);
    if value_text.is_empty() {
        return Err(fail(InvalidValue, line, line.len(), 1));
    }
    // Byte offset of the trimmed value in the line.
    let value_start = equal
        + 1
        + (after_equal.len() - after_equal.trim_start_matches(js::is_js_whitespace).len());
    if value_text.starts_with('"') {
        return parse_quoted(line, key, value_start, value_text);
    }
    if let Some(delimiter) = heredoc_delimiter(value_text) {
        return Ok(Assignment::Heredoc { key, delimiter });
    }
    Err(fail(
        InvalidValue,
        line,
        value_start,
        js::utf16_len(value_text),
    ))
}

/// `<<'DELIMITER'` with a non-empty delimiter free of `'`.
fn heredoc_delimiter(value_text: &str) -> Option<&str> {
    let delimiter = value_text.strip_prefix("<<'")?.strip_suffix('\'')?;
    (!delimiter.is_empty() && !delimiter.contains('\'')).then_some(delimiter)
}

/// The end of a quoted value: the byte index of the first `"` after the opening one that a
/// backslash does not escape. A newline first means the quote never closes (only reachable
/// when this function is called on more than one line).
fn closing_quote(value_text: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, b) in value_text.bytes().enumerate().skip(1) {
        match b {
            b'\n' => return None,
            b'\\' if !escaped => escaped = true,
            b'"' if !escaped => return Some(i),
            _ => escaped = false,
        }
    }
    None
}

fn parse_quoted<'a>(
    line: &'a str,
    key: &'a str,
    value_start: usize,
    value_text: &'a str,
) -> Result<Assignment<'a>, AssignmentError<'a>> {
    use AssignmentErrorCode::*;
    let Some(close) = closing_quote(value_text) else {
        let length = js::utf16_len(&line[value_start..]);
        return Err(fail(UnclosedQuote, line, value_start, length));
    };
    let quoted = &value_text[..=close];
    let Ok(value) = js::parse_json_string(quoted) else {
        return Err(fail(InvalidValue, line, value_start, js::utf16_len(quoted)));
    };
    let after_quote = &value_text[close + 1..];
    let trailing = after_quote.trim_start_matches(js::is_js_whitespace);
    if !trailing.is_empty() {
        let start = value_start + close + 1 + (after_quote.len() - trailing.len());
        let mut error = fail(TrailingContent, line, start, js::utf16_len(&line[start..]));
        error.salvaged = Some((key, value));
        return Err(error);
    }
    Ok(Assignment::KeyValue { key, value })
}
