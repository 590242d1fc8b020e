//! The block state machine: seeking a header, inside a block, inside a heredoc.

use memchr::memmem;

use super::assignment::{Assignment, AssignmentErrorCode, parse_assignment};
use super::context::LineIndex;
use super::js::{self, JsString};
use super::key::{find_invalid_char, validate_key};
use super::line::{
    HEADER_MARK, HEADER_PREFIX, LineKind, classify_line, parse_end_marker, parse_header, validate_block_id,
    validate_heredoc_delimiter,
};
use super::{Block, ErrorCode, ParseResult, Properties, SyntaxError};

/// Parses a whole reply. Never fails: problems are returned as [`SyntaxError`]s.
///
/// Most of a long reply is prose between blocks and heredoc bodies. Neither is looked at line
/// by line: prose is skipped to the next possible header, and a heredoc body is copied up to
/// the next occurrence of its delimiter, both with SIMD substring search.
pub fn parse(content: &str) -> ParseResult {
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
    while !cursor.at_end() {
        if let Some(heredoc) = parser.heredoc.as_mut() {
            // Every line before the delimiter's next occurrence is content.
            let found = memmem::find(&content.as_bytes()[cursor.pos..], heredoc.delimiter.as_bytes());
            let stop = found.map_or(content.len(), |at| cursor.line_start_of(cursor.pos + at));
            heredoc.push_lines(cursor.skip_lines_to(stop));
        } else if parser.block.is_none() {
            // Outside a block only a header line matters, and it contains the header mark.
            let found = header_finder.find(&content.as_bytes()[cursor.pos..]);
            let stop = found.map_or(content.len(), |at| cursor.line_start_of(cursor.pos + at));
            cursor.skip_lines_to(stop);
        }
        if let Some((number, line)) = cursor.next_line() {
            parser.line(number, line, previous);
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
        Cursor { text, pos: 0, lines: 0, done: false }
    }

    fn at_end(&self) -> bool {
        self.done
    }

    /// The start of the line holding byte `at`.
    fn line_start_of(&self, at: usize) -> usize {
        memchr::memrchr(b'\n', &self.text.as_bytes()[self.pos..at]).map_or(self.pos, |i| self.pos + i + 1)
    }

    /// Takes the next line, without its `\n` or `\r\n`, with its 1-based number.
    fn next_line(&mut self) -> Option<(usize, &'a str)> {
        if self.done {
            return None;
        }
        let rest = &self.text[self.pos..];
        let raw = match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(i) => {
                self.pos += i + 1;
                &rest[..i]
            }
            None => {
                self.pos = self.text.len();
                self.done = true;
                rest
            }
        };
        self.lines += 1;
        Some((self.lines, raw.strip_suffix('\r').unwrap_or(raw)))
    }

    /// Takes every whole line starting before `stop` (a line start, or the end of the text),
    /// returning them as one slice that ends with `\n` unless it reaches the end.
    fn skip_lines_to(&mut self, stop: usize) -> &'a str {
        let skipped = &self.text[self.pos..stop];
        self.lines += memchr::memchr_iter(b'\n', skipped.as_bytes()).count();
        self.pos = stop;
        if stop == self.text.len() {
            // The text after the last newline is a line too (possibly empty).
            self.lines += 1;
            self.done = true;
        }
        skipped
    }
}

/// An open heredoc: its key, delimiter and the lines so far, already joined with `\n`.
struct Heredoc<'a> {
    key: &'a str,
    delimiter: &'a str,
    text: String,
    lines: usize,
}

impl Heredoc<'_> {
    fn push(&mut self, line: &str) {
        if self.lines > 0 {
            self.text.push('\n');
        }
        self.text.push_str(line);
        self.lines += 1;
    }

    /// Appends whole lines (`\n`-terminated, except possibly the last one of the input),
    /// dropping the `\r` of `\r\n` endings as the line splitter does.
    fn push_lines(&mut self, lines: &str) {
        if lines.is_empty() {
            return;
        }
        let body = lines.strip_suffix('\n').unwrap_or(lines);
        if memchr::memchr(b'\r', body.as_bytes()).is_none() && !lines.ends_with("\r") {
            if self.lines > 0 {
                self.text.push('\n');
            }
            self.text.push_str(body);
            self.lines += 1 + memchr::memchr_iter(b'\n', body.as_bytes()).count();
        } else {
            for line in body.split('\n') {
                self.push(line.strip_suffix('\r').unwrap_or(line));
            }
        }
    }
}

struct Parser<'a> {
    content: &'a str,
    /// Built on the first error: most replies have none.
    lines: Option<LineIndex<'a>>,
    result: ParseResult,
    block: Option<Block>,
    heredoc: Option<Heredoc<'a>>,
}

impl<'a> Parser<'a> {
    fn error(
        &mut self,
        code: ErrorCode,
        line: usize,
        content: &str,
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
            content: content.to_owned(),
            context: index.context(line).to_owned(),
            message,
        });
    }

    fn line(&mut self, number: usize, line: &'a str, previous: &str) {
        if self.heredoc.is_some() {
            self.heredoc_line(line);
        } else if self.block.is_some() {
            self.block_line(number, line, previous);
        } else if classify_line(line) == LineKind::Header {
            self.header(number, line);
        }
    }

    /// A header line: opens a block, or reports a malformed header or bad id.
    fn header(&mut self, number: usize, line: &str) {
        let Some(id) = parse_header(line) else {
            let length = js::utf16_len(line);
            self.error(
                ErrorCode::MalformedHeader,
                number,
                line,
                "Invalid NESL header format".into(),
                0,
                length,
            );
            return;
        };
        self.open_block(number, line, id);
    }

    fn open_block(&mut self, number: usize, line: &str, id: &str) {
        match validate_block_id(id) {
            Ok(()) => {
                self.block = Some(Block {
                    id: id.to_owned(),
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
                self.error(
                    ErrorCode::InvalidBlockId,
                    number,
                    line,
                    message.into(),
                    column,
                    length,
                );
            }
        }
    }

    fn close_block(&mut self, end_line: Option<usize>) {
        if let Some(mut block) = self.block.take() {
            block.end_line = end_line;
            self.result.blocks.push(block);
        }
    }

    fn block_line(&mut self, number: usize, line: &'a str, previous: &str) {
        match classify_line(line) {
            LineKind::EndMarker => self.end_marker(number, line),
            LineKind::Header => {
                let id = self
                    .block
                    .as_ref()
                    .map(|b| b.id.clone())
                    .unwrap_or_default();
                let message = format!("Block '{id}' not closed before new block");
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
            LineKind::Assignment => self.assignment(number, line),
            LineKind::Empty => {}
            LineKind::Unknown => {
                let message = format!(
                    "Invalid line format in block '{}': not a valid key-value assignment or empty line",
                    self.block_id()
                );
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

    fn block_id(&self) -> &str {
        self.block.as_ref().map_or("", |b| b.id.as_str())
    }

    fn properties(&mut self) -> Option<&mut Properties> {
        self.block.as_mut().map(|b| &mut b.properties)
    }

    /// An end marker closes the block, even one with another id. A line that only looks like
    /// one (`#!end_abc extra`) is ignored.
    fn end_marker(&mut self, number: usize, line: &str) {
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

    fn assignment(&mut self, number: usize, line: &'a str) {
        match parse_assignment(line) {
            Ok(Assignment::KeyValue { key, value }) => {
                let (valid, indented) = self.check_key(number, line, key);
                if !valid || indented {
                    return;
                }
                self.assign(number, line, key, value);
            }
            Ok(Assignment::Heredoc { key, delimiter }) => {
                let (valid, indented) = self.check_key(number, line, key);
                if valid && !indented && self.properties().is_some_and(|p| p.js_has(key)) {
                    self.duplicate(number, line, key);
                }
                // The reference opens the heredoc even for an indented key.
                if valid {
                    self.open_heredoc(number, line, key, delimiter);
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
                    AssignmentErrorCode::MalformedAssignment => (
                        ErrorCode::MalformedAssignment,
                        format!(
                            "Invalid line format in block '{}': not a valid key-value assignment or empty line",
                            self.block_id()
                        ),
                    ),
                };
                // The value before trailing content is kept, if its key is valid and new.
                if let Some((key, value)) = error.salvaged {
                    if let Some(properties) = self.properties() {
                        if validate_key(key).is_ok() && !properties.js_has(key) {
                            properties.js_assign(key, value);
                        }
                    }
                }
                self.error(code, number, line, message, error.position, error.length);
            }
        }
    }

    /// Reports an invalid or indented key; returns whether the key is valid and whether the
    /// line starts with white space.
    fn check_key(&mut self, number: usize, line: &str, key: &str) -> (bool, bool) {
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

    fn duplicate(&mut self, number: usize, line: &str, key: &str) {
        let message = format!("Duplicate key '{key}' in block '{}'", self.block_id());
        self.error(
            ErrorCode::DuplicateKey,
            number,
            line,
            message,
            0,
            js::utf16_len(key),
        );
    }

    /// A valid key/value: a key seen before is reported and still takes the new value.
    fn assign(&mut self, number: usize, line: &str, key: &str, value: JsString) {
        if self.properties().is_some_and(|p| p.js_has(key)) {
            self.duplicate(number, line, key);
        }
        if let Some(properties) = self.properties() {
            properties.js_assign(key, value);
        }
    }

    fn open_heredoc(&mut self, number: usize, line: &str, key: &'a str, delimiter: &'a str) {
        match validate_heredoc_delimiter(delimiter, self.block_id()) {
            Ok(()) => {
                self.heredoc = Some(Heredoc {
                    key,
                    delimiter,
                    text: String::new(),
                    lines: 0,
                });
            }
            Err(message) => {
                let column = line
                    .find(delimiter)
                    .map_or(0, |i| js::utf16_len(&line[..i]));
                let length = js::utf16_len(delimiter);
                self.error(
                    ErrorCode::InvalidHeredocDelimiter,
                    number,
                    line,
                    message,
                    column,
                    length,
                );
            }
        }
    }

    /// Inside a heredoc every line is content until the delimiter: alone on its line, or
    /// ending a content line (optionally followed by `'`), a common model slip.
    fn heredoc_line(&mut self, line: &str) {
        let Some(heredoc) = self.heredoc.as_mut() else {
            return;
        };
        let closing = line.find(heredoc.delimiter).and_then(|at| {
            let before = &line[..at];
            let after = &line[at + heredoc.delimiter.len()..];
            (!before.contains("<<") && (after.is_empty() || after == "'")).then_some(before)
        });
        let Some(before) = closing else {
            heredoc.push(line);
            return;
        };
        if !before.is_empty() {
            heredoc.push(before);
        }
        if let Some(heredoc) = self.heredoc.take() {
            let key = heredoc.key;
            if let Some(properties) = self.properties() {
                properties.js_assign(key, JsString::from(heredoc.text));
            }
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
