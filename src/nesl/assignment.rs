//! One assignment line: `key = "json string"` or `key = <<'DELIMITER'`.
//!
//! Checks run in the reference's order, and that order is observable: an `=>` anywhere
//! before a standalone `=` is an invalid value, a `:=` anywhere in the line (even inside the
//! quoted value) is an invalid operator, then the first `=` splits key from value. Those
//! checks look anywhere in the line, so they stay plain searches; the value's two shapes,
//! a quoted string and a heredoc opener, are nom combinators.

use nom::branch::alt;
use nom::bytes::complete::{tag, take_till1, take_while1};
use nom::character::complete::{char, none_of};
use nom::combinator::{all_consuming, recognize};
use nom::multi::many0_count;
use nom::sequence::delimited;

use super::js::{self, JsString};
use super::line::match_bytes;

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

/// The delimiter of a heredoc opener `<<'DELIMITER'`: non-empty, free of `'`, checked
/// against the block id later.
fn heredoc_delimiter(value_text: &str) -> Option<&str> {
    let opener = all_consuming(delimited(
        tag("<<'"),
        take_till1(|b| b == b'\''),
        char('\''),
    ));
    match_bytes(value_text, opener).map(|(delimiter, _)| delimiter)
}

/// A quoted value as the reference delimits it: up to the first `"` that a backslash does not
/// escape, whatever the backslash escapes. JSON's stricter escape rules are checked after, on
/// the text this returns, so that `"\x"` is an invalid value while `"\x` is an unclosed quote.
/// A value never spans lines: a newline first leaves the quote unclosed. Returns the quoted
/// text and what follows it.
fn quoted_span(value_text: &str) -> Option<(&str, &str)> {
    let plain = take_while1(|b| !matches!(b, b'\\' | b'"' | b'\n'));
    let escape = recognize((char('\\'), none_of("\n")));
    let quoted = recognize((char('"'), many0_count(alt((plain, escape))), char('"')));
    match_bytes(value_text, quoted)
}

fn parse_quoted<'a>(
    line: &'a str,
    key: &'a str,
    value_start: usize,
    value_text: &'a str,
) -> Result<Assignment<'a>, AssignmentError<'a>> {
    use AssignmentErrorCode::*;
    let Some((quoted, after_quote)) = quoted_span(value_text) else {
        let length = js::utf16_len(&line[value_start..]);
        return Err(fail(UnclosedQuote, line, value_start, length));
    };
    let Ok(value) = js::parse_json_string(quoted) else {
        return Err(fail(InvalidValue, line, value_start, js::utf16_len(quoted)));
    };
    let trailing = after_quote.trim_start_matches(js::is_js_whitespace);
    if !trailing.is_empty() {
        let start = value_start + quoted.len() + (after_quote.len() - trailing.len());
        let mut error = fail(TrailingContent, line, start, js::utf16_len(&line[start..]));
        error.salvaged = Some((key, value));
        return Err(error);
    }
    Ok(Assignment::KeyValue { key, value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(line: &str) -> Result<String, (&'static str, usize, usize)> {
        match parse_assignment(line) {
            Ok(Assignment::KeyValue { value, .. }) => Ok(value.text.into_owned()),
            Ok(Assignment::Heredoc { delimiter, .. }) => Ok(format!("heredoc {delimiter}")),
            Err(e) => Err((e.code.as_str(), e.position, e.length)),
        }
    }

    #[test]
    fn a_quote_ends_at_the_first_unescaped_quote_whatever_the_backslash_escapes() {
        assert_eq!(value(r#"k = "a\"b""#), Ok("a\"b".into()));
        assert_eq!(value(r#"k = "a\\""#), Ok("a\\".into()));
        assert_eq!(value(r#"k = "é\u00e9😀""#), Ok("éé😀".into()));
        // A backslash before any character, even one JSON refuses or a multi-byte one, does
        // not end the quote; JSON then refuses the value.
        assert_eq!(value(r#"k = "\x""#), Err(("INVALID_VALUE", 4, 4)));
        assert_eq!(value(r#"k = "\é""#), Err(("INVALID_VALUE", 4, 4)));
        assert_eq!(value(r#"k = "a\""#), Err(("UNCLOSED_QUOTE", 4, 4)));
        assert_eq!(value(r#"k = "a\"#), Err(("UNCLOSED_QUOTE", 4, 3)));
        // Called on more than one line, a newline leaves the quote open, escaped or not.
        assert_eq!(value("k = \"a\nb\""), Err(("UNCLOSED_QUOTE", 4, 5)));
        assert_eq!(value("k = \"a\\\nb\""), Err(("UNCLOSED_QUOTE", 4, 6)));
        assert_eq!(value(r#"k = "😀" x"#), Err(("TRAILING_CONTENT", 9, 1)));
        assert_eq!(value(r#"k = """#), Ok(String::new()));
    }

    #[test]
    fn a_heredoc_opener_is_a_quoted_delimiter_free_of_quotes() {
        assert_eq!(value("k = <<'EOT_abc'"), Ok("heredoc EOT_abc".into()));
        assert_eq!(value("k = <<'é' "), Ok("heredoc é".into()));
        assert_eq!(value("k = <<''"), Err(("INVALID_VALUE", 4, 4)));
        assert_eq!(value("k = <<'a'b'"), Err(("INVALID_VALUE", 4, 7)));
        assert_eq!(value("k = <<'abc"), Err(("INVALID_VALUE", 4, 6)));
        assert_eq!(value("k = <<EOT_abc"), Err(("INVALID_VALUE", 4, 9)));
    }
}
