//! The command line: one file per subcommand, each with an `Args` struct whose doc comment is
//! its help text and one `run` function.

mod apply;
mod completions;
mod error;
mod gc;
mod instructions;
mod kept;
mod log;
mod man;
mod parse;
mod squash;
mod step;
mod undo;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use error::{CliError, ErrorKind};

/// Apply, inspect, undo and tidy what an LLM wrote into your repository.
#[derive(Debug, Parser)]
#[command(name = "git-loaf", bin_name = "git loaf", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Apply(apply::ApplyArgs),
    Parse(parse::ParseArgs),
    Undo(undo::UndoArgs),
    Redo(undo::RedoArgs),
    Log(log::LogArgs),
    Show(log::ShowArgs),
    Take(kept::TakeArgs),
    Drop(kept::DropArgs),
    StepBack(step::StepBackArgs),
    StepForward(step::StepForwardArgs),
    Squash(squash::SquashArgs),
    Gc(gc::GcArgs),
    Instructions(instructions::InstructionsArgs),
    Completions(completions::CompletionsArgs),
    InstallManPages(man::InstallManPagesArgs),
}

/// How a command that ran ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything succeeded (exit 0).
    Success,
    /// It ran, but some block or action failed (exit 1).
    Failed,
}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Success => ExitCode::SUCCESS,
            Outcome::Failed => ExitCode::from(1),
        }
    }
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    crate::git::publish::mark_start();
    crate::git::init();
    init_logging();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // clap uses 2 for usage errors and 0 for --help/--version, as we do.
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let result = match cli.command {
        Command::Apply(args) => apply::run(&args),
        Command::Parse(args) => parse::run(&args),
        Command::Undo(args) => undo::run_undo(&args),
        Command::Redo(args) => undo::run_redo(&args),
        Command::Log(args) => log::run_log(&args),
        Command::Show(args) => log::run_show(&args),
        Command::Take(args) => kept::run_take(&args),
        Command::Drop(args) => kept::run_drop(&args),
        Command::StepBack(args) => step::run_back(&args),
        Command::StepForward(args) => step::run_forward(&args),
        Command::Squash(args) => squash::run(&args),
        Command::Gc(args) => gc::run(&args),
        Command::Instructions(args) => instructions::run(&args),
        Command::Completions(args) => completions::run(&args),
        Command::InstallManPages(args) => man::run(&args),
    };
    match result {
        Ok(outcome) => outcome.into(),
        Err(error) => {
            let _ = std::io::stderr().write_all(error.render().as_bytes());
            error.exit_code()
        }
    }
}

/// The directory the command runs in.
fn current_dir() -> Result<std::path::PathBuf, CliError> {
    std::env::current_dir().map_err(|e| {
        CliError::usage(
            format!("cannot read the current directory: {e}"),
            "cd into an existing directory",
        )
    })
}

/// Prints a command's result on stdout (a closed pipe is fine).
fn print_out(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .or_else(ignore_closed_pipe)
}

/// Tells the user, on stderr, what the command found and did besides its result.
fn print_notices(notices: &[String]) {
    let mut err = std::io::stderr().lock();
    for notice in notices {
        let _ = writeln!(err, "note: {notice}");
    }
}

/// Writing the output failed: `git loaf … | head` closing the pipe early is not an error;
/// anything else is.
fn ignore_closed_pipe(error: std::io::Error) -> Result<(), CliError> {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(CliError::usage(
            format!("cannot write the output: {error}"),
            "check that standard output is writable",
        ))
    }
}

/// Diagnostics go to stderr; `LOAF_LOG=debug` (or trace, info, …) shows more.
fn init_logging() {
    let level = std::env::var("LOAF_LOG")
        .ok()
        .and_then(|v| v.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::WARN);
    use std::io::IsTerminal as _;
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_max_level(level)
        .without_time()
        .try_init();
}
