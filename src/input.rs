//! Reading a reply: from a file or standard input, as UTF-8, at most
//! [`MAX_INPUT_BYTES`](crate::nesl::MAX_INPUT_BYTES).

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use crate::nesl::MAX_INPUT_BYTES;

/// Where a reply comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// Standard input (`-` or no argument).
    Stdin,
    /// A file.
    File(PathBuf),
}

impl Source {
    /// `-` or nothing means standard input; anything else is a path.
    pub fn from_arg(arg: Option<&Path>) -> Self {
        match arg {
            None => Source::Stdin,
            Some(p) if p.as_os_str() == "-" => Source::Stdin,
            Some(p) => Source::File(p.to_path_buf()),
        }
    }

    /// How to name the source in messages.
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "standard input".to_owned(),
            Source::File(path) => format!("'{}'", path.display()),
        }
    }
}

/// Why a reply could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InputError {
    /// The file does not exist.
    #[error("no such file: '{}'", .0.display())]
    NotFound(PathBuf),
    /// Any other I/O failure.
    #[error("cannot read {source_name}: {error}")]
    Io {
        /// The source, as named in messages.
        source_name: String,
        /// The OS error.
        #[source]
        error: std::io::Error,
    },
    /// The input is larger than the limit.
    #[error("{source_name} is larger than the {limit}-byte (100 MiB) limit for a reply")]
    TooLarge {
        /// The source, as named in messages.
        source_name: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// The input is not UTF-8.
    #[error(
        "{source_name} is not valid UTF-8: invalid byte 0x{byte:02x} at byte offset {offset} (line {line})"
    )]
    NotUtf8 {
        /// The source, as named in messages.
        source_name: String,
        /// 0-based offset of the first invalid byte.
        offset: usize,
        /// That byte.
        byte: u8,
        /// 1-based line it is on.
        line: usize,
    },
}

/// What a user who ran `git loaf apply` without a file or pipe sees before it waits: the
/// reply is read to the end of input, which a terminal only signals on Ctrl-D.
pub(crate) const TERMINAL_PROMPT: &str = "Reading the reply from the terminal: paste it, then press Enter and Ctrl-D to finish \
     (Ctrl-C to cancel). To read a file instead: git loaf apply reply.md, or git loaf apply < reply.md";

/// Reads a whole reply, refusing more than [`MAX_INPUT_BYTES`]. On a terminal, first says
/// on stderr how to end the input, or the command would seem to hang.
pub(crate) fn read_bytes(source: &Source) -> Result<Vec<u8>, InputError> {
    if *source == Source::Stdin && std::io::stdin().is_terminal() {
        let _ = writeln!(std::io::stderr().lock(), "{TERMINAL_PROMPT}");
    }
    let io = |error: std::io::Error| match (source, error.kind()) {
        (Source::File(path), std::io::ErrorKind::NotFound) => InputError::NotFound(path.clone()),
        _ => InputError::Io {
            source_name: source.name(),
            error,
        },
    };
    let too_large = || InputError::TooLarge {
        source_name: source.name(),
        limit: MAX_INPUT_BYTES,
    };
    match source {
        Source::Stdin => {
            // `git loaf apply < reply.md` makes standard input the file itself: its size is
            // known before reading, as for a named file.
            let stdin = std::io::stdin();
            let size = regular_file_left(&stdin);
            if size > MAX_INPUT_BYTES as u64 {
                Ok(None)
            } else {
                read_limited(stdin.lock(), size as usize, MAX_INPUT_BYTES)
            }
        }
        Source::File(path) => std::fs::File::open(path).and_then(|file| {
            // A regular file says its size: refuse before reading a byte. Pipes, FIFOs and
            // `/dev/stdin` say 0 and are read bounded like standard input.
            let size = file.metadata().map(|m| m.len()).unwrap_or(0);
            if size > MAX_INPUT_BYTES as u64 {
                return Ok(None);
            }
            read_limited(file, size as usize, MAX_INPUT_BYTES)
        }),
    }
    .map_err(io)?
    .ok_or_else(too_large)
}

/// The bytes left to read in `fd` when it is a regular file (its size less the current
/// offset); 0 for a pipe, a terminal or anything that cannot say.
fn regular_file_left(fd: impl std::os::fd::AsFd) -> u64 {
    let Ok(stat) = rustix::fs::fstat(&fd) else {
        return 0;
    };
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return 0;
    }
    let offset = rustix::fs::seek(&fd, rustix::fs::SeekFrom::Current(0)).unwrap_or(0);
    (stat.st_size as u64).saturating_sub(offset)
}

/// Reads `reader` to its end into a buffer sized for `expected` bytes, but never more than
/// `limit + 1` bytes: `None` when there were more than `limit` (an endless pipe costs
/// `limit + 1` bytes of memory, not all of it).
fn read_limited(
    reader: impl Read,
    expected: usize,
    limit: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    // One byte more than expected, so that reading to the end does not double the buffer
    // just to find out that there is nothing left.
    bytes.reserve_exact(expected.min(limit).saturating_add(1));
    reader.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() <= limit).then_some(bytes))
}

/// The reply as text, or where its first byte that is not UTF-8 is.
pub fn as_text<'a>(bytes: &'a [u8], source: &Source) -> Result<&'a str, InputError> {
    // The SIMD check is several times faster on long replies; std finds the offset.
    if let Ok(text) = simdutf8::basic::from_utf8(bytes) {
        return Ok(without_bom(text));
    }
    std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        InputError::NotUtf8 {
            source_name: source.name(),
            offset,
            byte: bytes[offset],
            line: 1 + memchr::memchr_iter(b'\n', &bytes[..offset]).count(),
        }
    })
}

/// `text` without a leading UTF-8 byte order mark: some editors (Notepad, some exports)
/// start a saved file with one; it marks the encoding and is not part of the reply, whose
/// first line would otherwise not read as a `#!nesl` header. Anything else in the text is
/// left to the parser, as the reference parser sees it.
pub(crate) fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_stream_is_refused_after_limit_plus_one_bytes() {
        // `repeat` never ends: only a bounded read returns at all.
        let read = read_limited(std::io::repeat(b'x'), 0, 1000).expect("read");
        assert_eq!(read, None);
        let read = read_limited(&b"12345"[..], 0, 5).expect("read");
        assert_eq!(read.as_deref(), Some(&b"12345"[..]));
        assert_eq!(read_limited(&b"123456"[..], 6, 5).expect("read"), None);
    }

    #[test]
    fn a_file_over_the_limit_is_refused_by_its_size_without_being_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("huge.md");
        // Sparse: the size says too large; reading it would take 100 MiB of memory.
        let file = std::fs::File::create(&path).expect("create");
        file.set_len(MAX_INPUT_BYTES as u64 + 1).expect("size");
        let source = Source::File(path.clone());
        let err = read_bytes(&source).expect_err("too large");
        assert!(matches!(err, InputError::TooLarge { .. }), "{err}");
        file.set_len(5).expect("size");
        std::fs::write(&path, "hello").expect("write");
        assert_eq!(read_bytes(&source).expect("read"), b"hello");
    }

    #[test]
    fn a_regular_file_says_what_is_left_to_read_and_a_pipe_says_nothing() {
        use std::io::{Seek, SeekFrom};
        let mut file = tempfile::tempfile().expect("file");
        file.write_all(b"0123456789").expect("write");
        file.seek(SeekFrom::Start(4)).expect("seek");
        assert_eq!(regular_file_left(&file), 6);
        let (reader, _writer) = rustix::pipe::pipe().expect("pipe");
        assert_eq!(regular_file_left(&reader), 0);
    }

    #[test]
    fn invalid_utf8_names_the_offset_and_line() {
        let source = Source::File("r.md".into());
        let err = as_text(b"ok\nab\xffc", &source).expect_err("not UTF-8");
        assert_eq!(
            err.to_string(),
            "'r.md' is not valid UTF-8: invalid byte 0xff at byte offset 5 (line 2)"
        );
        assert_eq!(as_text("é\n".as_bytes(), &source).ok(), Some("é\n"));
    }
}
