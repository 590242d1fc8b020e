//! Colour and terminal control, decided once by one rule for everything git-loaf prints: its
//! own `error:`/`hint:`/`note:` labels, clap's help and usage errors, the log lines and the
//! progress line.
//!
//! The rule is the one clap's own streams follow (anstream), so that nothing disagrees:
//! `NO_COLOR` (set, not empty) turns colour off; `CLICOLOR_FORCE` (set, not empty, not `0`)
//! turns it on even into a pipe; `CLICOLOR=0` turns it off; otherwise colour is on only when
//! the stream is a terminal whose `TERM` is set and not `dumb`. Output that a program or a
//! model reads (a pipe, a file, `--json`) therefore never carries escape bytes.

use std::ffi::OsStr;
use std::io::IsTerminal as _;

/// Where a text is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Results.
    Stdout,
    /// Messages for the user: errors, hints, notes, progress.
    Stderr,
}

impl Stream {
    fn is_terminal(self) -> bool {
        match self {
            Stream::Stdout => std::io::stdout().is_terminal(),
            Stream::Stderr => std::io::stderr().is_terminal(),
        }
    }
}

/// Whether what goes to `stream` is coloured.
pub fn colour(stream: Stream) -> bool {
    let env = |name: &str| std::env::var_os(name);
    decide(&Env {
        no_color: env("NO_COLOR").as_deref(),
        clicolor_force: env("CLICOLOR_FORCE").as_deref(),
        clicolor: env("CLICOLOR").as_deref(),
        term: env("TERM").as_deref(),
        terminal: stream.is_terminal(),
    })
}

/// Whether `stream` is a terminal that understands cursor control (`\r`, erase line): what a
/// progress line needs, whatever the colour settings (`NO_COLOR` is about colour only).
pub fn interactive(stream: Stream) -> bool {
    stream.is_terminal() && term_capable(std::env::var_os("TERM").as_deref())
}

/// The environment the rule reads.
struct Env<'a> {
    no_color: Option<&'a OsStr>,
    clicolor_force: Option<&'a OsStr>,
    clicolor: Option<&'a OsStr>,
    term: Option<&'a OsStr>,
    terminal: bool,
}

fn decide(env: &Env) -> bool {
    let set = |value: Option<&OsStr>| value.is_some_and(|v| !v.is_empty());
    if set(env.no_color) {
        return false;
    }
    if set(env.clicolor_force) && env.clicolor_force != Some(OsStr::new("0")) {
        return true;
    }
    if env.clicolor == Some(OsStr::new("0")) {
        return false;
    }
    env.terminal && term_capable(env.term)
}

/// A `TERM` that is set and not `dumb`.
fn term_capable(term: Option<&OsStr>) -> bool {
    term.is_some_and(|t| !t.is_empty() && t != "dumb")
}

/// How a label or a line is shown when colour is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paint {
    /// `error:` (bold red, as clap's own errors).
    Error,
    /// `hint:` (yellow, as git's hints).
    Hint,
    /// `note:` (bold).
    Note,
    /// The progress line (dim).
    Dim,
}

impl Paint {
    fn code(self) -> &'static str {
        match self {
            Paint::Error => "\x1b[1;31m",
            Paint::Hint => "\x1b[33m",
            Paint::Note => "\x1b[1m",
            Paint::Dim => "\x1b[2m",
        }
    }
}

/// `text` in `paint` when `on`, else `text` as it is.
pub fn paint(on: bool, paint: Paint, text: &str) -> String {
    if on {
        format!("{}{text}\x1b[0m", paint.code())
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &[(&str, &'a str)], terminal: bool) -> Env<'a> {
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsStr::new(*v))
        };
        Env {
            no_color: get("NO_COLOR"),
            clicolor_force: get("CLICOLOR_FORCE"),
            clicolor: get("CLICOLOR"),
            term: get("TERM"),
            terminal,
        }
    }

    #[test]
    fn colour_only_on_a_capable_terminal() {
        assert!(decide(&env(&[("TERM", "xterm")], true)));
        assert!(!decide(&env(&[("TERM", "xterm")], false)), "a pipe");
        assert!(!decide(&env(&[("TERM", "dumb")], true)));
        assert!(!decide(&env(&[], true)), "no TERM");
    }

    #[test]
    fn no_color_wins_and_an_empty_one_does_not_count() {
        assert!(!decide(&env(&[("TERM", "xterm"), ("NO_COLOR", "1")], true)));
        assert!(!decide(&env(
            &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")],
            true
        )));
        assert!(decide(&env(&[("TERM", "xterm"), ("NO_COLOR", "")], true)));
    }

    #[test]
    fn clicolor_force_colours_a_pipe_and_clicolor_0_turns_it_off() {
        assert!(decide(&env(&[("CLICOLOR_FORCE", "1")], false)));
        assert!(!decide(&env(&[("CLICOLOR_FORCE", "0")], false)));
        assert!(!decide(&env(&[("TERM", "xterm"), ("CLICOLOR", "0")], true)));
    }

    #[test]
    fn paint_adds_escapes_only_when_on() {
        assert_eq!(paint(false, Paint::Error, "error:"), "error:");
        assert_eq!(
            paint(true, Paint::Error, "error:"),
            "\x1b[1;31merror:\x1b[0m"
        );
    }
}
