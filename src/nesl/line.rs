//! The line-level grammar: what kind of line this is, headers, end markers, block ids and
//! heredoc delimiters.

use super::js;

/// The prefix of a well-formed header; the block id starts right after it.
pub const HEADER_PREFIX: &str = "#!nesl [@three-char-SHA-256: ";
/// What a trimmed line starts with to count as a header.
pub const HEADER_MARK: &str = "#!nesl ";
/// What a trimmed line starts with to count as an end marker.
const END_MARK: &str = "#!end_";
/// Every heredoc delimiter is this prefix followed by the block id.
pub const HEREDOC_PREFIX: &str = "EOT_";
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
/// anything up to `]`. `None` when the line is not exactly that shape.
pub fn parse_header(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("#!nesl [@")?;
    let label_len = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'-')
        .count();
    if label_len == 0 {
        return None;
    }
    let id = rest[label_len..].strip_prefix(": ")?.strip_suffix(']')?;
    (!id.is_empty() && !id.contains(']')).then_some(id)
}

/// The block id of an end marker `#!end_<id>`, with one trailing `'` tolerated (a common model
/// slip). `None` when the line is not exactly that shape.
pub fn parse_end_marker(line: &str) -> Option<&str> {
    let rest = line.strip_prefix(END_MARK)?;
    let id = rest.strip_suffix('\'').unwrap_or(rest);
    (BLOCK_ID_LENGTHS.contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then_some(id)
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
