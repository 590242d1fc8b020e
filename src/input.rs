//! Reading a reply: from a file or standard input, as UTF-8, at most
//! [`MAX_INPUT_BYTES`](crate::nesl::MAX_INPUT_BYTES).

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use crate::nesl::MAX_INPUT_BYTES;

/// Where a reply comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
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
pub enum InputError {
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
pub const TERMINAL_PROMPT: &str = "Reading the reply from the terminal: paste it, then press Enter and Ctrl-D to finish \
     (Ctrl-C to cancel). To read a file instead: git loaf apply reply.md, or git loaf apply < reply.md";

/// Reads a whole reply, refusing more than [`MAX_INPUT_BYTES`]. On a terminal, first says
/// on stderr how to end the input, or the command would seem to hang.
pub fn read_bytes(source: &Source) -> Result<Vec<u8>, InputError> {
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
    let mut bytes = Vec::new();
    let limit = MAX_INPUT_BYTES as u64 + 1;
    match source {
        Source::Stdin => std::io::stdin().lock().take(limit).read_to_end(&mut bytes),
        Source::File(path) => std::fs::File::open(path).and_then(|f| {
            if let Ok(meta) = f.metadata() {
                bytes.reserve_exact(meta.len().min(limit) as usize);
            }
            f.take(limit).read_to_end(&mut bytes)
        }),
    }
    .map_err(io)?;
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(InputError::TooLarge {
            source_name: source.name(),
            limit: MAX_INPUT_BYTES,
        });
    }
    Ok(bytes)
}

/// The reply as text, or where its first byte that is not UTF-8 is.
pub fn as_text<'a>(bytes: &'a [u8], source: &Source) -> Result<&'a str, InputError> {
    // The SIMD check is several times faster on long replies; std finds the offset.
    if let Ok(text) = simdutf8::basic::from_utf8(bytes) {
        return Ok(text);
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

#[cfg(test)]
mod tests {
    use super::*;

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
