//! The clipboard, behind a trait: the system's (through `arboard`: X11 on Linux, the native
//! one on macOS and Windows), or a plain file standing in for it (`LOAF_CLIPBOARD_FILE`,
//! for tests and for setups where a helper syncs a file with the real clipboard).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why the clipboard could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClipboardError(pub String);

/// Text in, text out.
pub trait Clipboard {
    /// The text it holds; `None` when it is empty or holds no text (an image, files).
    fn get_text(&mut self) -> Result<Option<String>, ClipboardError>;
    /// Replaces what it holds with `text`.
    fn set_text(&mut self, text: &str) -> Result<(), ClipboardError>;
}

/// How long after a failed connection the system clipboard is left alone: connecting to an
/// unreachable display can take a while, and the watcher polls often.
const RECONNECT_AFTER: Duration = Duration::from_secs(10);

/// The system clipboard. Connected on first use (and again a while after a failure), so
/// that a watcher started without a display still runs, saying once that it has no
/// clipboard.
#[derive(Default)]
pub struct SystemClipboard {
    inner: Option<arboard::Clipboard>,
    failed: Option<(Instant, String)>,
}

impl SystemClipboard {
    fn connect(&mut self) -> Result<&mut arboard::Clipboard, ClipboardError> {
        if self.inner.is_none() {
            if let Some((at, error)) = &self.failed
                && at.elapsed() < RECONNECT_AFTER
            {
                return Err(ClipboardError(error.clone()));
            }
            match arboard::Clipboard::new() {
                Ok(clipboard) => {
                    self.inner = Some(clipboard);
                    self.failed = None;
                }
                Err(e) => {
                    self.failed = Some((Instant::now(), e.to_string()));
                    return Err(ClipboardError(e.to_string()));
                }
            }
        }
        self.inner
            .as_mut()
            .ok_or_else(|| ClipboardError("no clipboard".to_owned()))
    }
}

impl Clipboard for SystemClipboard {
    fn get_text(&mut self) -> Result<Option<String>, ClipboardError> {
        match self.connect()?.get_text() {
            Ok(text) => Ok(Some(text)),
            Err(arboard::Error::ContentNotAvailable) => Ok(None),
            Err(e) => {
                self.inner = None;
                Err(ClipboardError(e.to_string()))
            }
        }
    }

    fn set_text(&mut self, text: &str) -> Result<(), ClipboardError> {
        // On X11 the text is served by this process (arboard's thread) for as long as the
        // watcher runs, or until a clipboard manager takes it over.
        let result = self.connect()?.set_text(text);
        result.map_err(|e| {
            self.inner = None;
            ClipboardError(e.to_string())
        })
    }
}

/// A file playing the clipboard: reading it is pasting, writing it is copying.
#[derive(Debug, Clone)]
pub struct FileClipboard {
    path: PathBuf,
}

impl FileClipboard {
    /// The clipboard kept in `path` (absent means empty).
    pub fn new(path: &Path) -> Self {
        FileClipboard {
            path: path.to_path_buf(),
        }
    }
}

impl Clipboard for FileClipboard {
    fn get_text(&mut self) -> Result<Option<String>, ClipboardError> {
        match std::fs::read(&self.path) {
            Ok(bytes) if bytes.is_empty() => Ok(None),
            // Not text: as a clipboard holding an image.
            Ok(bytes) => Ok(String::from_utf8(bytes).ok()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ClipboardError(format!("{}: {e}", self.path.display()))),
        }
    }

    fn set_text(&mut self, text: &str) -> Result<(), ClipboardError> {
        super::results::write_atomically(&self.path, text)
            .map_err(|e| ClipboardError(format!("{}: {e}", self.path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_clipboard_reads_what_was_written_and_absent_is_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut clipboard = FileClipboard::new(&dir.path().join("clip"));
        assert_eq!(clipboard.get_text().expect("read"), None);
        clipboard.set_text("héllo\n").expect("write");
        assert_eq!(
            clipboard.get_text().expect("read").as_deref(),
            Some("héllo\n")
        );
        std::fs::write(dir.path().join("clip"), [0xff, 0xfe]).expect("write");
        assert_eq!(clipboard.get_text().expect("read"), None, "not text");
    }
}
