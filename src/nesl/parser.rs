//! The block state machine: seeking a header, inside a block, inside a heredoc.
//!
//! Most of a long reply is prose between blocks and heredoc bodies. Neither is looked at line
//! by line: prose is skipped to the next possible header, and a heredoc body to the next
//! occurrence of its delimiter, both with SIMD substring search. A heredoc's value is then the
//! input between its opener and its closing delimiter, borrowed, not copied.

use std::borrow::Cow;

use memchr::memmem;

use super::assignment::{Assignment, AssignmentErrorCode, parse_assignment};
use super::context::LineIndex;
use super::js::{self, JsString};
use super::key::{find_invalid_char, validate_key};
use super::line::{
    HEADER_MARK, HEADER_PREFIX, LineKind, classify_line, parse_end_marker, parse_header,
    validate_block_id, validate_heredoc_delimiter,
};
use super::{Block, ErrorCode, ParseResult, Properties, SyntaxError};

/// Parses a whole reply. Never fails: problems are returned as [`SyntaxError`]s.
pub fn parse(content: &str) -> ParseResult<'_> {
    let mut parser = Parser {
        content,
        lines: None,
        result: ParseResult::default(),
        block: None,
        heredoc: None,
    };
    let mut cursor = Cursor::new(content);
    let header_finder = memmem::Finder::new(HEADER_MARK);
    let mut previous = "";
    while !cursor.done {
        if let Some(heredoc) = &parser.heredoc {
            // Every line before the delimiter's next occurrence is content.
            let found = memmem::find(cursor.rest(), heredoc.delimiter.as_bytes());
            cursor.skip_lines_before(found);
        } else if parser.block.is_none() {
            // Outside a block only a header line matters, and it contains the header mark.
            cursor.skip_lines_before(header_finder.find(cursor.rest()));
        }
        if let Some((number, start, line)) = cursor.next_line() {
            let at = LineAt {
                number,
                start,
                next: cursor.pos,
            };
            parser.line(at, line, previous);
            previous = line;
        }
    }
    parser.finish(cursor.lines);
    parser.result
}

/// Walks the input line by line, or many lines at a time.
struct Cursor<'a> {
    text: &'a str,
    /// Start of the next line.
    pos: usize,
    /// Lines taken so far (split on `\n`; the text after the last `\n` is a line too).
    lines: usize,
    /// Whether the last line has been taken.
    done: bool,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor {
            text,
            pos: 0,
            lines: 0,
            done: false,
        }
    }

    fn rest(&self) -> &'a [u8] {
        &self.text.as_bytes()[self.pos..]
    }

    /// Takes the next line, without its `\n` or `\r\n`: its 1-based number, its byte offset
    /// and its text.
    fn next_line(&mut self) -> Option<(usize, usize, &'a str)> {
        if self.done {
            return None;
        }
        let start = self.pos;
        let rest = &self.text[start..];
        // Lines end at `\n`, dropping a `\r` before it; the last line keeps a final `\r`.
        let line = match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(i) => {
                self.pos += i + 1;
                rest[..i].strip_suffix('\r').unwrap_or(&rest[..i])
            }
            None => {
                self.pos = self.text.len();
                self.done = true;
                rest
            }
        };
        self.lines += 1;
        Some((self.lines, start, line))
    }

    /// Takes every whole line before the one holding `found` (an offset from the cursor), or
    /// every line left when nothing was found.
    fn skip_lines_before(&mut self, found: Option<usize>) {
        let rest = self.rest();
        let stop = match found {
            Some(at) => memchr::memrchr(b'\n', &rest[..at]).map_or(0, |i| i + 1),
            None => rest.len(),
        };
        self.lines += memchr::memchr_iter(b'\n', &rest[..stop]).count();
        self.pos += stop;
        if found.is_none() {
            // The text after the last newline is a line too (possibly empty).
            self.lines += 1;
            self.done = true;
        }
    }
}

/// Where a line is: its 1-based number, its byte offset, and the next line's byte offset.
#[derive(Debug, Clone, Copy)]
struct LineAt {
    number: usize,
    start: usize,
    next: usize,
}

/// An open heredoc: its key, its delimiter, and where its first content line starts.
struct Heredoc<'a> {
    key: &'a str,
    delimiter: &'a str,
    start: usize,
}

struct Parser<'a> {
    content: &'a str,
    /// Built on the first error: most replies have none.
    lines: Option<LineIndex<'a>>,
    result: ParseResult<'a>,
    block: Option<Block<'a>>,
    heredoc: Option<Heredoc<'a>>,
}

impl<'a> Parser<'a> {
    fn error(
        &mut self,
        code: ErrorCode,
        line: usize,
        content: &'a str,
        message: String,
        column: usize,
        length: usize,
    ) {
        let index = self
            .lines
            .get_or_insert_with(|| LineIndex::new(self.content));
        self.result.errors.push(SyntaxError {
            code,
            line,
            column: column + 1,
            length,
            block_id: self.block.as_ref().map(|b| b.id.clone()),
            content: Cow::Borrowed(content),
            context: Cow::Borrowed(index.context(line)),
            message,
        });
    }

    fn line(&mut self, at: LineAt, line: &'a str, previous: &'a str) {
        if self.heredoc.is_some() {
            self.heredoc_line(at.start, line);
        } else if self.block.is_some() {
            self.block_line(at, line, previous);
        } else if classify_line(line) == LineKind::Header {
            self.header(at.number, line);
        }
    }

    /// A header line: opens a block, or reports a malformed header or bad id.
    fn header(&mut self, number: usize, line: &'a str) {
        let Some(id) = parse_header(line) else {
            let length = js::utf16_len(line);
            let message = "Invalid NESL header format".into();
            self.error(ErrorCode::MalformedHeader, number, line, message, 0, length);
            return;
        };
        self.open_block(number, line, id);
    }

    fn open_block(&mut self, number: usize, line: &'a str, id: &'a str) {
        match validate_block_id(id) {
            Ok(()) => {
                self.block = Some(Block {
                    id: Cow::Borrowed(id),
                    properties: Properties::default(),
                    start_line: number,
                    end_line: None,
                });
            }
            Err(message) => {
                let column = if line.starts_with(HEADER_PREFIX) {
                    HEADER_PREFIX.len()
                } else {
                    0
                };
                let length = js::utf16_len(id);
                let code = ErrorCode::InvalidBlockId;
                self.error(code, number, line, message.into(), column, length);
            }
        }
    }

    fn close_block(&mut self, end_line: Option<usize>) {
        if let Some(mut block) = self.block.take() {
            block.end_line = end_line;
            self.result.blocks.push(block);
        }
    }

    fn block_line(&mut self, at: LineAt, line: &'a str, previous: &'a str) {
        let number = at.number;
        match classify_line(line) {
            LineKind::EndMarker => self.end_marker(number, line),
            LineKind::Header => {
                let message = format!("Block '{}' not closed before new block", self.block_id());
                self.error(
                    ErrorCode::UnclosedBlock,
                    number - 1,
                    previous,
                    message,
                    0,
                    0,
                );
                // A header that does not parse leaves the old block open.
                if let Some(new_id) = parse_header(line) {
                    self.close_block(None);
                    self.open_block(number, line, new_id);
                }
            }
            LineKind::Assignment => self.assignment(at, line),
            LineKind::Empty => {}
            LineKind::Unknown => {
                let message = self.malformed_message();
                let length = js::utf16_len(line);
                self.error(
                    ErrorCode::MalformedAssignment,
                    number,
                    line,
                    message,
                    0,
                    length,
                );
            }
        }
    }

    fn malformed_message(&self) -> String {
        format!(
            "Invalid line format in block '{}': not a valid key-value assignment or empty line",
            self.block_id()
        )
    }

    fn block_id(&self) -> &str {
        self.block.as_ref().map_or("", |b| &b.id)
    }

    fn properties(&mut self) -> Option<&mut Properties<'a>> {
        self.block.as_mut().map(|b| &mut b.properties)
    }

    /// An end marker closes the block, even one with another id. A line that only looks like
    /// one (`#!end_abc extra`) is ignored.
    fn end_marker(&mut self, number: usize, line: &'a str) {
        let Some(end_id) = parse_end_marker(line) else {
            return;
        };
        if end_id != self.block_id() {
            let message = format!(
                "End marker '{end_id}' doesn't match block ID '{}'",
                self.block_id()
            );
            let length = js::utf16_len(line);
            self.error(ErrorCode::MismatchedEnd, number, line, message, 0, length);
        }
        self.close_block(Some(number));
    }

    fn assignment(&mut self, at: LineAt, line: &'a str) {
        let number = at.number;
        match parse_assignment(line) {
            Ok(Assignment::KeyValue { key, value }) => {
                let (valid, indented) = self.check_key(number, line, key);
                if valid && !indented {
                    self.assign(number, line, key, value);
                }
            }
            Ok(Assignment::Heredoc { key, delimiter }) => {
                let (valid, indented) = self.check_key(number, line, key);
                if valid && !indented && self.properties().is_some_and(|p| p.js_has(key)) {
                    self.duplicate(number, line, key);
                }
                // The reference opens the heredoc even for an indented key.
                if valid {
                    self.open_heredoc(number, line, key, delimiter, at.next);
                }
            }
            Err(error) => {
                let (code, message) = match error.code {
                    AssignmentErrorCode::InvalidOperator => (
                        ErrorCode::InvalidAssignmentOperator,
                        "Invalid assignment operator ':=' - only '=' is allowed".to_owned(),
                    ),
                    AssignmentErrorCode::EmptyKey => {
                        (ErrorCode::EmptyKey, "Assignment without key name".into())
                    }
                    AssignmentErrorCode::UnclosedQuote => {
                        (ErrorCode::UnclosedQuote, "Unclosed quoted string".into())
                    }
                    AssignmentErrorCode::InvalidValue => (
                        ErrorCode::InvalidValue,
                        "Value must be a quoted string or heredoc".into(),
                    ),
                    AssignmentErrorCode::TrailingContent => (
                        ErrorCode::TrailingContent,
                        "Unexpected content after quoted value".into(),
                    ),
                    AssignmentErrorCode::MalformedAssignment => {
                        (ErrorCode::MalformedAssignment, self.malformed_message())
                    }
                };
                // The value before trailing content is kept, if its key is valid and new.
                if let Some((key, value)) = error.salvaged
                    && let Some(properties) = self.properties()
                    && validate_key(key).is_ok()
                    && !properties.js_has(key)
                {
                    properties.js_assign(Cow::Borrowed(key), value);
                }
                self.error(code, number, line, message, error.position, error.length);
            }
        }
    }

    /// Reports an invalid or indented key; returns whether the key is valid and whether the
    /// line starts with white space.
    fn check_key(&mut self, number: usize, line: &'a str, key: &str) -> (bool, bool) {
        let raw_key = line.split_once('=').map_or(line, |(k, _)| k);
        let first = raw_key.chars().next();
        let indented = first.is_some_and(js::is_js_whitespace);
        let validation = validate_key(key);
        if validation.is_ok() && !indented {
            return (true, false);
        }
        let (message, length) = match (first, find_invalid_char(key), validation) {
            (Some(c), _, _) if indented => (
                format!("Key contains invalid character '{c}' at position 1"),
                js::utf16_len(js::trim_end(raw_key)),
            ),
            (_, Some((position, c)), _) => (
                format!(
                    "Key contains invalid character '{c}' at position {}",
                    position + 1
                ),
                js::utf16_len(key),
            ),
            (_, None, validation) => (
                validation.err().unwrap_or("Invalid key").to_owned(),
                js::utf16_len(key),
            ),
        };
        self.error(ErrorCode::InvalidKey, number, line, message, 0, length);
        (validation.is_ok(), indented)
    }

    fn duplicate(&mut self, number: usize, line: &'a str, key: &str) {
        let message = format!("Duplicate key '{key}' in block '{}'", self.block_id());
        let length = js::utf16_len(key);
        self.error(ErrorCode::DuplicateKey, number, line, message, 0, length);
    }

    /// A valid key/value: a key seen before is reported and still takes the new value.
    fn assign(&mut self, number: usize, line: &'a str, key: &'a str, value: JsString<'a>) {
        if self.properties().is_some_and(|p| p.js_has(key)) {
            self.duplicate(number, line, key);
        }
        if let Some(properties) = self.properties() {
            properties.js_assign(Cow::Borrowed(key), value);
        }
    }

    fn open_heredoc(
        &mut self,
        number: usize,
        line: &'a str,
        key: &'a str,
        delimiter: &'a str,
        start: usize,
    ) {
        match validate_heredoc_delimiter(delimiter, self.block_id()) {
            Ok(()) => {
                self.heredoc = Some(Heredoc {
                    key,
                    delimiter,
                    start,
                });
            }
            Err(message) => {
                let column = line
                    .find(delimiter)
                    .map_or(0, |i| js::utf16_len(&line[..i]));
                let length = js::utf16_len(delimiter);
                let code = ErrorCode::InvalidHeredocDelimiter;
                self.error(code, number, line, message, column, length);
            }
        }
    }

    /// A heredoc line holding the delimiter (the cursor skips all others). It closes the
    /// heredoc when the delimiter ends the line (optionally followed by `'`, a common model
    /// slip) and no `<<` precedes it; text before the delimiter is the last content line.
    fn heredoc_line(&mut self, start: usize, line: &'a str) {
        let Some(heredoc) = &self.heredoc else {
            return;
        };
        let Some(at) = memmem::find(line.as_bytes(), heredoc.delimiter.as_bytes()) else {
            return;
        };
        let before = &line[..at];
        let after = &line[at + heredoc.delimiter.len()..];
        if js::find_pair(before, *b"<<").is_some() || !(after.is_empty() || after == "'") {
            return;
        }
        let Some(heredoc) = self.heredoc.take() else {
            return;
        };
        let value = heredoc_value(self.content, heredoc.start, start, before);
        if let Some(properties) = self.properties() {
            properties.js_assign(Cow::Borrowed(heredoc.key), value);
        }
    }

    fn finish(&mut self, line_count: usize) {
        let eof = line_count + 1;
        if let Some(heredoc) = self.heredoc.take() {
            let message = format!("Heredoc '{}' not closed before EOF", heredoc.delimiter);
            self.error(ErrorCode::UnclosedHeredoc, eof, "", message, 0, 0);
            self.close_block(None);
        } else if self.block.is_some() {
            let message = format!("Block '{}' not closed before EOF", self.block_id());
            self.error(ErrorCode::UnclosedBlock, eof, "", message, 0, 0);
            self.close_block(None);
        }
    }
}

/// A heredoc's value: its content lines (from `start` up to the closing line at `closing`)
/// joined with `\n`, then `before`, the text ahead of the delimiter on the closing line, if
/// any. That is the input itself, unless line endings were `\r\n`.
fn heredoc_value<'a>(content: &'a str, start: usize, closing: usize, before: &str) -> JsString<'a> {
    let end = if !before.is_empty() {
        closing + before.len()
    } else if closing > start {
        // Drop the last content line's line ending.
        let end = closing - 1;
        if content[start..end].ends_with('\r') {
            end - 1
        } else {
            end
        }
    } else {
        start
    };
    let body = &content[start..end];
    if memmem::find(body.as_bytes(), b"\r\n").is_some() {
        JsString::new(body.replace("\r\n", "\n"))
    } else {
        JsString::new(body)
    }
}
