//! Reading a reply: from a file or standard input, as UTF-8, at most
//! [`MAX_INPUT_BYTES`](crate::nesl::MAX_INPUT_BYTES).

use std::io::Read;
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

/// Reads a whole reply, refusing more than [`MAX_INPUT_BYTES`] and anything not UTF-8.
pub fn read_reply(source: &Source) -> Result<String, InputError> {
    let source_name = source.name();
    let io = |error: std::io::Error| match (source, error.kind()) {
        (Source::File(path), std::io::ErrorKind::NotFound) => InputError::NotFound(path.clone()),
        _ => InputError::Io {
            source_name: source_name.clone(),
            error,
        },
    };
    let mut bytes = Vec::new();
    let limit = MAX_INPUT_BYTES as u64 + 1;
    match source {
        Source::Stdin => std::io::stdin().lock().take(limit).read_to_end(&mut bytes),
        Source::File(path) => std::fs::File::open(path).and_then(|f| {
            if let Ok(meta) = f.metadata() {
                bytes.reserve(meta.len().min(limit) as usize);
            }
            f.take(limit).read_to_end(&mut bytes)
        }),
    }
    .map_err(io)?;
    decode_reply(bytes, &source_name)
}

/// Checks size and encoding of a reply already in memory.
pub fn decode_reply(bytes: Vec<u8>, source_name: &str) -> Result<String, InputError> {
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(InputError::TooLarge {
            source_name: source_name.to_owned(),
            limit: MAX_INPUT_BYTES,
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        InputError::NotUtf8 {
            source_name: source_name.to_owned(),
            offset,
            byte: bytes[offset],
            line: 1 + bytes[..offset].iter().filter(|&&b| b == b'\n').count(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_names_the_offset_and_line() {
        let err = decode_reply(b"ok\nab\xffc".to_vec(), "'r.md'").unwrap_err();
        assert_eq!(
            err.to_string(),
            "'r.md' is not valid UTF-8: invalid byte 0xff at byte offset 5 (line 2)"
        );
    }

    #[test]
    fn oversized_input_is_refused() {
        let err = decode_reply(vec![b'a'; MAX_INPUT_BYTES + 1], "standard input").unwrap_err();
        assert!(matches!(err, InputError::TooLarge { .. }), "{err}");
        assert!(decode_reply(vec![b'a'; 16], "x").is_ok());
    }
}
