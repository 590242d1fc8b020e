//! The command line's side of an operation's error ([`crate::ops::OpError`]): the exit code
//! its kind maps to, and its text on stderr with the labels coloured.

use std::process::ExitCode;

use super::style::{self, Paint};
pub use crate::ops::{ErrorKind, OpError as CliError};

/// The exit code for `error`: 2 for usage, configuration, input or repository errors, 3
/// for a refusal (README.md, "Exit codes").
pub fn exit_code(error: &CliError) -> ExitCode {
    match error.kind {
        ErrorKind::Usage => ExitCode::from(2),
        ErrorKind::Refused => ExitCode::from(3),
    }
}

/// `error` as printed on stderr, the labels coloured when `colour`.
pub fn render_styled(error: &CliError, colour: bool) -> String {
    error.render_with(|label| {
        let paint = if label == "hint:" {
            Paint::Hint
        } else {
            Paint::Error
        };
        style::paint(colour, paint, label)
    })
}
