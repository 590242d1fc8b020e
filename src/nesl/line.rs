//! The line-level grammar: what kind of line this is, headers, end markers, block ids and
//! heredoc delimiters.
//!
//! The shapes of headers and end markers are nom combinators, each read as the grammar rule
//! in the module doc of [`crate::nesl`]; [`match_bytes`] runs such a rule on a line.

use nom::bytes::complete::{tag, take_till1, take_while_m_n, take_while1};
use nom::character::complete::char;
use nom::combinator::{all_consuming, opt};
use nom::sequence::delimited;
use nom::{Offset, Parser};

use super::js;

/// The prefix of a well-formed header; the block id starts right after it.
pub(crate) const HEADER_PREFIX: &str = "#!nesl [@three-char-SHA-256: ";
/// What a trimmed line starts with to count as a header.
pub const HEADER_MARK: &str = "#!nesl ";
/// What a trimmed line starts with to count as an end marker.
const END_MARK: &str = "#!end_";
/// Every heredoc delimiter is this prefix followed by the block id.
pub(crate) const HEREDOC_PREFIX: &str = "EOT_";
/// Block ids are 2 to 8 characters long (the reference's messages still say "exactly 3").
const BLOCK_ID_LENGTHS: std::ops::RangeInclusive<usize> = 2..=8;

/// How a line is treated, decided on the line with JavaScript white space trimmed; priority
/// is end marker, header, assignment (any `=`), empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// Starts with `#!end_`.
    EndMarker,
    /// Starts with `#!nesl `.
    Header,
    /// Contains `=`.
    Assignment,
    /// Nothing but white space.
    Empty,
    /// Anything else.
    Unknown,
}

impl LineKind {
    /// The reference's name for the kind (`end_marker`, `header`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            LineKind::EndMarker => "end_marker",
            LineKind::Header => "header",
            LineKind::Assignment => "assignment",
            LineKind::Empty => "empty",
            LineKind::Unknown => "unknown",
        }
    }
}

/// Classifies one line (without its line ending).
pub fn classify_line(line: &str) -> LineKind {
    let trimmed = js::trim(line);
    if trimmed.is_empty() {
        LineKind::Empty
    } else if trimmed.starts_with(END_MARK) {
        LineKind::EndMarker
    } else if trimmed.starts_with(HEADER_MARK) {
        LineKind::Header
    } else if trimmed.contains('=') {
        LineKind::Assignment
    } else {
        LineKind::Unknown
    }
}

/// The block id of a header line `#!nesl [@<label>: <id>]`, where the label is any run of
/// ASCII letters, digits and `-` (models often misspell `three-char-SHA-256`) and the id is
/// anything up to `]`, checked later by [`validate_block_id`]. `None` when the line is not
/// exactly that shape.
pub fn parse_header(line: &str) -> Option<&str> {
    let label = take_while1(|b: u8| b.is_ascii_alphanumeric() || b == b'-');
    let header = all_consuming(delimited(
        (tag("#!nesl [@"), label, tag(": ")),
        take_till1(|b| b == b']'),
        char(']'),
    ));
    match_bytes(line, header).map(|(id, _)| id)
}

/// The block id of an end marker `#!end_<id>`, with one trailing `'` tolerated (a common model
/// slip). `None` when the line is not exactly that shape.
pub fn parse_end_marker(line: &str) -> Option<&str> {
    let (min, max) = (*BLOCK_ID_LENGTHS.start(), *BLOCK_ID_LENGTHS.end());
    let id = take_while_m_n(min, max, |b: u8| b.is_ascii_alphanumeric());
    let end_marker = all_consuming(delimited(tag(END_MARK), id, opt(char('\''))));
    match_bytes(line, end_marker).map(|(id, _)| id)
}

/// Runs a grammar rule on the bytes of `text`: what it matched (the rule's output, a part of
/// `text`) and the text left after it, or `None` when `text` does not match.
///
/// The rules read bytes, not chars: every delimiter in the grammar is ASCII, and nom decodes
/// UTF-8 on every step of a `&str` rule, which made the whole parse 10% slower. The rules fail
/// with `()`: callers only need to know whether a line has the shape, and the reference
/// reports every failure of a shape the same way. A match that would split a character is no
/// match (it cannot happen with ASCII delimiters; this just avoids a panic).
pub(super) fn match_bytes<'a>(
    text: &'a str,
    mut rule: impl Parser<&'a [u8], Output = &'a [u8], Error = ()>,
) -> Option<(&'a str, &'a str)> {
    let bytes = text.as_bytes();
    let (rest, output) = rule.parse(bytes).ok()?;
    let start = bytes.offset(output);
    let matched = text.get(start..start + output.len())?;
    Some((matched, text.get(bytes.offset(rest)..)?))
}

/// Checks a block id from a header: 2 to 8 ASCII letters or digits.
pub fn validate_block_id(id: &str) -> Result<(), &'static str> {
    if !BLOCK_ID_LENGTHS.contains(&js::utf16_len(id)) {
        Err("Block ID must be exactly 3 characters")
    } else if !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        Err("Block ID must contain only alphanumeric characters")
    } else {
        Ok(())
    }
}

/// Checks that a heredoc delimiter is `EOT_<block id>`; the error names the one expected.
pub fn validate_heredoc_delimiter(delimiter: &str, block_id: &str) -> Result<(), String> {
    if delimiter.strip_prefix(HEREDOC_PREFIX) == Some(block_id) {
        Ok(())
    } else {
        Err(format!(
            "Heredoc delimiter must be '{HEREDOC_PREFIX}{block_id}'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_take_any_label_and_anything_up_to_the_bracket_as_id() {
        assert_eq!(
            parse_header("#!nesl [@three-char-SHA-256: abc]"),
            Some("abc")
        );
        assert_eq!(parse_header("#!nesl [@sha-1: é😀]"), Some("é😀"));
        assert_eq!(parse_header("#!nesl [@x: a b]"), Some("a b"));
        for line in [
            "#!nesl [@: abc]",
            "#!nesl [@sha 256: abc]",
            "#!nesl [@sha:abc]",
            "#!nesl [@sha: ]",
            "#!nesl [@sha: a]b]",
            "#!nesl [@sha: abc] ",
            "#!nesl [@sha: abc",
            " #!nesl [@sha: abc]",
        ] {
            assert_eq!(parse_header(line), None, "{line:?}");
        }
    }

    #[test]
    fn end_markers_take_two_to_eight_alphanumerics_and_one_stray_quote() {
        assert_eq!(parse_end_marker("#!end_abc"), Some("abc"));
        assert_eq!(parse_end_marker("#!end_ab'"), Some("ab"));
        assert_eq!(parse_end_marker("#!end_abcdefgh"), Some("abcdefgh"));
        for line in [
            "#!end_a",
            "#!end_abcdefghi",
            "#!end_abc''",
            "#!end_abc ",
            "#!end_ab-c",
            "#!end_é",
            "#!end_",
        ] {
            assert_eq!(parse_end_marker(line), None, "{line:?}");
        }
    }
}
