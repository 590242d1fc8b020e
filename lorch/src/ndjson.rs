//! NDJSON framing: a line reader over any `Read` and a line writer over any `Write`.
//!
//! The reader holds at most [`MAX_LINE_BYTES`] of a line: past that it stops keeping bytes,
//! reads on to the newline, and reports the line as [`ProtocolError::Oversize`] with its true
//! length, so an agent that prints a huge line costs no memory and loses only that line. A
//! stream that ends without a final newline yields [`ProtocolError::PartialLine`]: an agent
//! killed mid-write must not have half a message taken for a whole one.

use std::io::{self, BufRead, BufReader, Read, Write};

use thiserror::Error;

use super::protocol::Message;
use super::validate::{MAX_LINE_BYTES, ProtocolError, encode, validate};

/// Reading a line failed.
#[derive(Debug, Error)]
pub enum ReadError {
    /// The line is bad; the reader has moved past it and can go on.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The stream itself failed; the reader stops.
    #[error("cannot read the stream: {0}")]
    Io(#[from] io::Error),
}

/// Splits a byte stream into lines of at most `limit` bytes (newline excluded).
pub struct LineReader<R> {
    inner: BufReader<R>,
    limit: usize,
    done: bool,
}

impl<R: Read> LineReader<R> {
    /// A reader with the protocol's limit.
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_LINE_BYTES)
    }

    /// A reader with another limit (tests; `policy.message_max_bytes`).
    pub fn with_limit(inner: R, limit: usize) -> Self {
        LineReader {
            inner: BufReader::new(inner),
            limit,
            done: false,
        }
    }

    /// The next line without its newline (a trailing `\r` is left for JSON to ignore), `None`
    /// at the end of the stream.
    pub fn read_line(&mut self) -> Option<Result<Vec<u8>, ReadError>> {
        if self.done {
            return None;
        }
        match self.read_line_inner() {
            Ok(Some(line)) => Some(line.map_err(ReadError::from)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(ReadError::Io(e)))
            }
        }
    }

    fn read_line_inner(&mut self) -> io::Result<Option<Result<Vec<u8>, ProtocolError>>> {
        let mut line = Vec::new();
        // Bytes of the line seen so far, kept or not.
        let mut len = 0usize;
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                // End of stream: nothing pending is a clean end, anything else half a line.
                self.done = true;
                return Ok((len > 0).then_some(Err(if len > self.limit {
                    ProtocolError::Oversize {
                        len,
                        max: self.limit,
                    }
                } else {
                    ProtocolError::PartialLine { len }
                })));
            }
            let (part, found) = match memchr::memchr(b'\n', chunk) {
                Some(at) => (&chunk[..at], true),
                None => (chunk, false),
            };
            len += part.len();
            if len <= self.limit {
                line.extend_from_slice(part);
            } else if !line.is_empty() {
                // Stop keeping bytes: only the length matters from here on.
                line = Vec::new();
            }
            let consumed = part.len() + usize::from(found);
            self.inner.consume(consumed);
            if found {
                return Ok(Some(if len > self.limit {
                    Err(ProtocolError::Oversize {
                        len,
                        max: self.limit,
                    })
                } else {
                    Ok(line)
                }));
            }
        }
    }

    /// The next line, checked: each item is one message or what is wrong with that line.
    pub fn read_message(&mut self) -> Option<Result<Message, ReadError>> {
        self.read_line()
            .map(|line| line.and_then(|l| validate(&l).map_err(ReadError::from)))
    }
}

impl<R: Read> Iterator for LineReader<R> {
    type Item = Result<Vec<u8>, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.read_line()
    }
}

/// Writing a message failed.
#[derive(Debug, Error)]
pub enum WriteError {
    /// The message would not pass [`validate`]; nothing was written.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The stream failed.
    #[error("cannot write the stream: {0}")]
    Io(#[from] io::Error),
}

/// Writes one message per line, flushed after each so the peer sees it at once.
pub struct LineWriter<W> {
    inner: W,
}

impl<W: Write> LineWriter<W> {
    /// A writer over `inner`.
    pub fn new(inner: W) -> Self {
        LineWriter { inner }
    }

    /// Writes `message` and a newline, after checking it against its schema and the size limit.
    pub fn write_message(&mut self, message: &Message) -> Result<(), WriteError> {
        let mut line = encode(message)?;
        line.push('\n');
        self.inner.write_all(line.as_bytes())?;
        self.inner.flush()?;
        Ok(())
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.inner
    }
}
