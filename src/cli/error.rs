//! The one error type of the command line: a kind that decides the exit code, a message, and
//! a hint saying what to do next.

use std::process::ExitCode;

use super::style::{self, Paint};
use crate::input::InputError;

/// What went wrong, which decides the exit code (DESIGN §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad usage, configuration, input or repository: nothing changed (exit 2).
    Usage,
    /// Refused for safety: nothing changed (exit 3).
    Refused,
}

/// An error as the user sees it.
#[derive(Debug)]
pub struct CliError {
    /// Decides the exit code.
    pub kind: ErrorKind,
    /// What happened.
    pub message: String,
    /// What to do next.
    pub hint: Option<String>,
}

impl CliError {
    /// A usage, input or configuration error (exit 2).
    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> Self {
        CliError {
            kind: ErrorKind::Usage,
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    /// Refused for safety (exit 3).
    pub fn refused(message: impl Into<String>, hint: impl Into<String>) -> Self {
        CliError {
            kind: ErrorKind::Refused,
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    /// The exit code for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self.kind {
            ErrorKind::Usage => ExitCode::from(2),
            ErrorKind::Refused => ExitCode::from(3),
        }
    }

    /// The text printed on stderr: `error: <message>`, then `hint: <what to do>`.
    pub fn render(&self) -> String {
        self.render_styled(false)
    }

    /// [`render`](Self::render), the labels coloured when `colour`.
    pub fn render_styled(&self, colour: bool) -> String {
        // A libgit2 error wrapped somewhere below still reads as git would say it.
        let words = crate::git::words::without_codes;
        let error = style::paint(colour, Paint::Error, "error:");
        let mut out = format!("{error} {}\n", words(&self.message));
        if let Some(hint) = &self.hint {
            let label = style::paint(colour, Paint::Hint, "hint:");
            out.push_str(&format!("{label} {}\n", words(hint)));
        }
        out
    }
}

impl From<InputError> for CliError {
    fn from(error: InputError) -> Self {
        let hint = match &error {
            InputError::NotFound(_) => {
                "check the path, or pass '-' to read the reply from standard input"
            }
            InputError::Io { .. } => "check that the file is readable",
            InputError::TooLarge { .. } => {
                "split the reply into smaller parts and apply them one by one"
            }
            InputError::NotUtf8 { .. } => {
                "save the reply as UTF-8 (e.g. `iconv -f LATIN1 -t UTF-8`), or remove the bytes at that offset"
            }
        };
        CliError::usage(error.to_string(), hint)
    }
}

impl From<crate::git::states::Refused> for CliError {
    fn from(refused: crate::git::states::Refused) -> Self {
        crate::tx::session::TxError::from(refused).into()
    }
}

impl From<crate::tx::session::TxError> for CliError {
    fn from(error: crate::tx::session::TxError) -> Self {
        let kind = if error.is_refusal() {
            ErrorKind::Refused
        } else {
            ErrorKind::Usage
        };
        CliError {
            kind,
            hint: Some(error.hint()),
            message: error.to_string(),
        }
    }
}
