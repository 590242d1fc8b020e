//! What went wrong in an operation, as every front door tells it: a kind (bad input, or
//! refused for safety: nothing changed either way), a message, and a hint saying what to do
//! next. The command line maps the kind to its exit code (README.md, "Exit codes"), the MCP server to
//! a tool result with `isError`.

use crate::input::InputError;

/// What went wrong, which decides the command line's exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad usage, configuration, input or repository: nothing changed (exit 2).
    Usage,
    /// Refused for safety: nothing changed (exit 3).
    Refused,
}

/// An operation's error as the user sees it.
#[derive(Debug)]
pub struct OpError {
    /// Bad input, or refused for safety.
    pub kind: ErrorKind,
    /// What happened.
    pub message: String,
    /// What to do next.
    pub hint: Option<String>,
}

impl OpError {
    /// A usage, input or configuration error (exit 2).
    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> Self {
        OpError {
            kind: ErrorKind::Usage,
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    /// Refused for safety (exit 3).
    pub fn refused(message: impl Into<String>, hint: impl Into<String>) -> Self {
        OpError {
            kind: ErrorKind::Refused,
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    /// The text for stderr (or a tool result): `error: <message>`, then `hint: <what to
    /// do>`, each label as `label` paints it.
    pub fn render_with(&self, label: impl Fn(&'static str) -> String) -> String {
        // A libgit2 error wrapped somewhere below still reads as git would say it.
        let words = crate::git::words::without_codes;
        let mut out = format!("{} {}\n", label("error:"), words(&self.message));
        if let Some(hint) = &self.hint {
            out.push_str(&format!("{} {}\n", label("hint:"), words(hint)));
        }
        out
    }

    /// [`render_with`](Self::render_with), the labels plain.
    pub fn render(&self) -> String {
        self.render_with(str::to_owned)
    }
}

impl From<InputError> for OpError {
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
        OpError::usage(error.to_string(), hint)
    }
}

impl From<crate::git::states::Refused> for OpError {
    fn from(refused: crate::git::states::Refused) -> Self {
        crate::tx::session::TxError::from(refused).into()
    }
}

impl From<crate::tx::session::TxError> for OpError {
    fn from(error: crate::tx::session::TxError) -> Self {
        let kind = if error.is_refusal() {
            ErrorKind::Refused
        } else {
            ErrorKind::Usage
        };
        OpError {
            kind,
            hint: Some(error.hint()),
            message: error.to_string(),
        }
    }
}
