//! NESL syntax: a reply's text → blocks of key/value properties, plus syntax errors.
//!
//! This module reproduces the reference parser (nesl-js 0.1.12-beta.1) exactly: the same
//! blocks, error codes, lines, UTF-16 columns and lengths, messages, context windows and
//! recovery. It knows nothing about actions or git. [`diagnostics`] explains, beside the parser's
//! result, what a model wrote that looked like a block but was not one.
//!
//! # Grammar
//!
//! The input is split into lines on `\n` or `\r\n`. Each line is classified on its text with
//! JavaScript white space trimmed, in this priority:
//!
//! ```text
//! end_marker  = "#!end_" …                      (trimmed line starts so)
//! header      = "#!nesl " …
//! assignment  = … "=" …                         (any "=" in the line)
//! empty       = white space only
//! unknown     = anything else
//! ```
//!
//! Outside a block only headers matter; all other text is prose and ignored. The exact forms,
//! matched on the untrimmed line:
//!
//! ```text
//! header      = "#!nesl [@" label ": " block-id "]"     label = [A-Za-z0-9-]+
//! block-id    = [A-Za-z0-9]{2,8}                         (anything up to "]" is reported)
//! end         = "#!end_" block-id ["'"]
//! key-value   = key ws* "=" ws* json-string ws*
//! heredoc     = key ws* "=" ws* "<<'" "EOT_" block-id "'" ws*
//!               line*                                   (verbatim, joined with "\n")
//!               "EOT_" block-id                         (alone, or ending a content line)
//! key         = (\p{L} | "_") (\p{L} | \p{N} | "_")*    (≤ 256 UTF-16 units, no leading ws)
//! block       = header (key-value | heredoc | empty)* end
//! ```
//!
//! The shapes of single lines (header, end marker, heredoc opener, quoted value and its JSON
//! escapes) are nom combinators written as these rules (`line.rs`, `assignment.rs`, `js.rs`).
//! The block state machine (`parser.rs`) is plain code: it skips prose and heredoc bodies
//! with SIMD substring search rather than looking at them line by line.
//!
//! Inside a block an unknown line is `MALFORMED_ASSIGNMENT`; a header opens a new block and
//! reports the old one `UNCLOSED_BLOCK`; an end marker with another id closes the block
//! anyway (`MISMATCHED_END`). A key seen twice keeps the last value (`DUPLICATE_KEY`), as do
//! the names JavaScript objects inherit (`constructor`, `toString`, …), exactly as in the
//! reference. Blocks with errors are still returned: the caller decides not to run them.
//! A block or heredoc still open at the end of input is `UNCLOSED_BLOCK` /
//! `UNCLOSED_HEREDOC`, reported on the line after the last, with `endLine` null.
//!
//! Positions: lines and columns are 1-based; columns and lengths count UTF-16 code units, as
//! the reference's JavaScript strings do. Each error carries the 5-line context window.

mod assignment;
mod context;
pub mod diagnostics;
pub mod js;
mod json;
mod key;
mod line;
mod parser;
mod properties;

pub use assignment::{Assignment, AssignmentError, AssignmentErrorCode, parse_assignment};
pub use context::context_window;
pub use json::write_json;
pub use key::{KEY_MAX_LENGTH, find_invalid_char, validate_key};
pub use line::{
    HEADER_MARK, LineKind, classify_line, parse_end_marker, parse_header, validate_block_id,
    validate_heredoc_delimiter,
};
pub use parser::parse;
pub use properties::Properties;

use std::borrow::Cow;

use serde::Serialize;

/// The largest input accepted: 100 MiB, the reference's `MAX_FILE_SIZE`.
pub(crate) const MAX_INPUT_BYTES: usize = 104_857_600;

/// What `parse` found: `parseNesl()`'s result. Serializes to the reference's JSON shape.
///
/// Text is borrowed from the input wherever it appears there verbatim (ids, keys, most
/// values, heredoc bodies, error lines and context windows), so a parse costs little memory
/// beyond the input; [`ParseResult::into_owned`] detaches it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ParseResult<'a> {
    /// Every block opened by a valid header, in order, including blocks that have errors.
    pub blocks: Vec<Block<'a>>,
    /// Every syntax error, in the order met.
    pub errors: Vec<SyntaxError<'a>>,
}

impl ParseResult<'_> {
    /// The same result, owning all its text.
    pub fn into_owned(self) -> ParseResult<'static> {
        ParseResult {
            blocks: self.blocks.into_iter().map(Block::into_owned).collect(),
            errors: self
                .errors
                .into_iter()
                .map(SyntaxError::into_owned)
                .collect(),
        }
    }
}

/// One `#!nesl` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Block<'a> {
    /// The id from the header (`abc` in `#!nesl [@three-char-SHA-256: abc]`).
    pub id: Cow<'a, str>,
    /// The properties, in the order their keys first appeared.
    pub properties: Properties<'a>,
    /// 1-based line of the header.
    pub start_line: usize,
    /// 1-based line of the end marker; `None` when the block was never closed.
    pub end_line: Option<usize>,
}

impl Block<'static> {
    /// A block a caller built instead of writing it out as text (MCP's `actions`): its
    /// properties as the parser would hold them had the block been written with these
    /// keys and values in this order.
    pub fn built(
        id: String,
        properties: impl IntoIterator<Item = (String, String)>,
        start_line: usize,
        end_line: usize,
    ) -> Block<'static> {
        let mut held = Properties::default();
        for (key, value) in properties {
            held.js_assign(Cow::Owned(key), js::JsString::new(value));
        }
        Block {
            id: Cow::Owned(id),
            properties: held,
            start_line,
            end_line: Some(end_line),
        }
    }
}

impl Block<'_> {
    /// The same block, owning all its text.
    pub fn into_owned(self) -> Block<'static> {
        Block {
            id: Cow::Owned(self.id.into_owned()),
            properties: self.properties.into_owned(),
            start_line: self.start_line,
            end_line: self.end_line,
        }
    }
}
/// The kind of a syntax error, named as the reference names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs)]
pub enum ErrorCode {
    MalformedHeader,
    InvalidBlockId,
    UnclosedBlock,
    MismatchedEnd,
    MalformedAssignment,
    InvalidAssignmentOperator,
    EmptyKey,
    InvalidKey,
    DuplicateKey,
    InvalidValue,
    UnclosedQuote,
    TrailingContent,
    InvalidHeredocDelimiter,
    UnclosedHeredoc,
}

impl ErrorCode {
    /// The code as the reference spells it (`UNCLOSED_QUOTE`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::MalformedHeader => "MALFORMED_HEADER",
            ErrorCode::InvalidBlockId => "INVALID_BLOCK_ID",
            ErrorCode::UnclosedBlock => "UNCLOSED_BLOCK",
            ErrorCode::MismatchedEnd => "MISMATCHED_END",
            ErrorCode::MalformedAssignment => "MALFORMED_ASSIGNMENT",
            ErrorCode::InvalidAssignmentOperator => "INVALID_ASSIGNMENT_OPERATOR",
            ErrorCode::EmptyKey => "EMPTY_KEY",
            ErrorCode::InvalidKey => "INVALID_KEY",
            ErrorCode::DuplicateKey => "DUPLICATE_KEY",
            ErrorCode::InvalidValue => "INVALID_VALUE",
            ErrorCode::UnclosedQuote => "UNCLOSED_QUOTE",
            ErrorCode::TrailingContent => "TRAILING_CONTENT",
            ErrorCode::InvalidHeredocDelimiter => "INVALID_HEREDOC_DELIMITER",
            ErrorCode::UnclosedHeredoc => "UNCLOSED_HEREDOC",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One syntax error, located and explained as the reference does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SyntaxError<'a> {
    /// What is wrong.
    pub code: ErrorCode,
    /// 1-based line (one past the last line for errors at the end of input).
    pub line: usize,
    /// 1-based column in UTF-16 code units.
    pub column: usize,
    /// Length of the offending text in UTF-16 code units.
    pub length: usize,
    /// The block the error is in, if any.
    pub block_id: Option<Cow<'a, str>>,
    /// The offending line, without its line ending.
    pub content: Cow<'a, str>,
    /// Up to five lines around it.
    pub context: Cow<'a, str>,
    /// The reference's message.
    pub message: String,
}

impl SyntaxError<'_> {
    /// The same error, owning all its text.
    pub fn into_owned(self) -> SyntaxError<'static> {
        let own = |c: Cow<'_, str>| Cow::Owned(c.into_owned());
        SyntaxError {
            block_id: self.block_id.map(own),
            content: own(self.content),
            context: own(self.context),
            ..self
        }
    }
}
