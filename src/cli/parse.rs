//! `git loaf parse`: NESL syntax only.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use clap::Args;

use super::examples::examples;
use super::{CliError, Outcome};
use crate::input::{Source, as_text, read_bytes};
use crate::nesl::{self, ParseResult};

/// Check a reply's NESL syntax: list its blocks and syntax errors.
///
/// Syntax only: action names and parameters are checked by `git loaf apply --dry-run`.
/// Exits 0 when there are no errors, 1 when there are, 2 when the input cannot be read.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("List a reply's blocks and syntax errors", &["git loaf parse reply.md"]),
    ("The reference parser's parseNesl() result, from standard input", &["git loaf parse --json - < reply.md"]),
]))]
pub struct ParseArgs {
    /// The reply to read; `-` or nothing reads standard input.
    #[arg(value_name = "FILE|-")]
    file: Option<PathBuf>,
    /// Print the reference parser's `parseNesl()` result as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `git loaf parse`.
pub fn run(args: &ParseArgs) -> Result<Outcome, CliError> {
    let source = Source::from_arg(args.file.as_deref());
    let bytes = read_bytes(&source)?;
    let result = nesl::parse(as_text(&bytes, &source)?);
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let written = if args.json {
        nesl::write_json(&result, &mut out).and_then(|()| out.write_all(b"\n"))
    } else {
        out.write_all(listing(&result).as_bytes())
    };
    written
        .and_then(|()| out.flush())
        .or_else(super::ignore_closed_pipe)?;
    let outcome = if result.errors.is_empty() {
        Outcome::Success
    } else {
        Outcome::Failed
    };
    // The process ends next: freeing a large result piece by piece would only cost time.
    std::mem::forget(result);
    std::mem::forget(bytes);
    Ok(outcome)
}

/// The readable listing: each block with its lines and keys, each error with its position,
/// code, message and the offending line, then a count.
pub fn listing(result: &ParseResult<'_>) -> String {
    let mut out = String::new();
    for block in &result.blocks {
        let end = block
            .end_line
            .map_or_else(|| "? (not closed)".to_owned(), |l| l.to_string());
        let keys: Vec<&str> = block.properties.keys().collect();
        let keys = if keys.is_empty() {
            "(no properties)".to_owned()
        } else {
            keys.join(", ")
        };
        let _ = writeln!(
            out,
            "block {} lines {}-{}: {keys}",
            block.id, block.start_line, end
        );
    }
    for error in &result.errors {
        let _ = writeln!(
            out,
            "{}:{} {} {}",
            error.line, error.column, error.code, error.message
        );
        match &*error.content {
            "" => out.push_str("    |\n"),
            content => {
                let _ = writeln!(out, "    | {content}");
            }
        }
    }
    let plural = |n: usize, word: &str| {
        if n == 1 {
            format!("{n} {word}")
        } else {
            format!("{n} {word}s")
        }
    };
    let _ = writeln!(
        out,
        "{}, {}",
        plural(result.blocks.len(), "block"),
        plural(result.errors.len(), "error")
    );
    out
}
