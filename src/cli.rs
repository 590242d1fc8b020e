//! The command line: one file per subcommand, each with an `Args` struct whose doc comment is
//! its help text and one `run` function.

mod agent_hook;
pub(crate) mod apply;
mod completions;
mod config;
mod error;
pub mod examples;
mod gc;
mod init;
pub(crate) mod instructions;
mod kept;
pub(crate) mod log;
mod man;
mod mcp;
mod parse;
mod record;
mod response;
pub(crate) mod review;
mod saved;
pub(crate) mod squash;
pub(crate) mod status;
mod step;
pub mod style;
pub(crate) mod undo;
mod watch;

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand};

pub use crate::ops::{Outcome, Response};
pub use error::{CliError, ErrorKind};
use style::{Paint, Stream};

/// Apply, inspect, undo and tidy what an LLM wrote into your repository.
///
/// An LLM's reply holds NESL blocks: file edits, reads and shell commands. `git loaf apply`
/// runs them as one transaction, in a staging worktree, and makes the result one commit on
/// your branch (the results in its trailers and a git note); your uncommitted work stays
/// uncommitted, and `git loaf undo` restores exactly what was there before. `git loaf
/// instructions` prints what the model needs to know to write such replies.
///
/// Results go to standard output, messages (errors with a hint, notes, progress) to standard
/// error. Exit codes: 0 everything succeeded; 1 the reply ran but some block or action failed
/// (what succeeded is committed); 2 usage, configuration, input or repository error (nothing
/// changed); 3 refused for safety (nothing changed).
///
/// `git loaf <command> -h` shows a command's options and examples; `git loaf --help` opens
/// this manual (after `git loaf install-man-pages`).
#[derive(Debug, Parser)]
#[command(
    name = "git-loaf",
    bin_name = "git loaf",
    version,
    about,
    after_help = examples::examples(&[
        ("Once: set the repository up", &["git loaf init"]),
        (
            "Once: tell the model how to write replies (paste into its system prompt)",
            &["git loaf instructions | xclip -selection clipboard"],
        ),
        (
            "Apply a reply saved from the chat, look at what it did, take it back",
            &["git loaf apply reply.md", "git loaf log", "git loaf undo"],
        ),
        (
            "Apply each reply as it is saved into .loaf/reply.md",
            &["git loaf watch"],
        ),
        (
            "Fold the session's AI commits into one",
            &["git loaf squash"],
        ),
    ]),
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Init(init::InitArgs),
    Apply(apply::ApplyArgs),
    Watch(watch::WatchArgs),
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
    Review(review::ReviewArgs),
    Status(status::StatusArgs),
    Saved(saved::SavedArgs),
    Restore(saved::RestoreArgs),
    Record(record::RecordArgs),
    AgentHook(agent_hook::AgentHookArgs),
    Config(config::ConfigArgs),
    Gc(gc::GcArgs),
    Instructions(instructions::InstructionsArgs),
    Mcp(mcp::McpArgs),
    Completions(completions::CompletionsArgs),
    InstallManPages(man::InstallManPagesArgs),
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
    // Before anything can start a program: what the caller left open is not passed on.
    crate::exec::descriptors::withhold_inherited();
    crate::tx::publish::mark_start();
    crate::git::init();
    init_logging();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
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
        Command::Review(args) => review::run(&args),
        Command::Status(args) => status::run(&args),
        Command::Saved(args) => saved::run_saved(&args),
        Command::Restore(args) => saved::run_restore(&args),
        Command::Record(args) => record::run(&args),
        Command::AgentHook(args) => agent_hook::run(&args),
        Command::Config(args) => config::run(&args),
        Command::Gc(args) => gc::run(&args),
        Command::Instructions(args) => instructions::run(&args),
        Command::Mcp(args) => mcp::run(&args),
        Command::Completions(args) => completions::run(&args),
        Command::InstallManPages(args) => man::run(&args),
        Command::Init(args) => init::run(&args),
        Command::Watch(args) => watch::run(&args),
    };
    match result {
        Ok(outcome) => outcome.into(),
        Err(error) => {
            print_error(&error);
            error::exit_code(&error)
        }
    }
}

/// Prints what clap has to say instead of running a command: help and version on stdout
/// (exit 0), a usage error on stderr in the house format, its last line a `hint:` naming the
/// help to read (exit 2, as clap has it).
fn clap_exit(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind as Kind;
    let stream = if e.use_stderr() {
        Stream::Stderr
    } else {
        Stream::Stdout
    };
    let rendered = e.render();
    let mut text = if style::colour(stream) {
        rendered.ansi().to_string()
    } else {
        rendered.to_string()
    };
    // Help shown because a subcommand was missing (`git loaf`) is help, not an error.
    if e.use_stderr() && e.kind() != Kind::DisplayHelpOnMissingArgumentOrSubcommand {
        // clap ends with "For more information, try '--help'."; `--help` would open the man
        // page under git, so point at the short help of the command that was used.
        if let Some(at) = text.rfind("For more information, try") {
            text.truncate(at);
        }
        let command = std::env::args().skip(1).find(|arg| {
            Cli::command()
                .get_subcommands()
                .any(|sub| sub.get_name() == arg)
        });
        let help = match command {
            Some(command) => format!("git loaf {command} -h"),
            None => "git loaf -h".to_owned(),
        };
        let paint = style::colour(Stream::Stderr);
        text.push_str(&format!(
            "{} `{help}` shows the options, with examples\n",
            style::paint(paint, Paint::Hint, "hint:")
        ));
    }
    let written = match stream {
        Stream::Stdout => std::io::stdout().write_all(text.as_bytes()),
        Stream::Stderr => std::io::stderr().write_all(text.as_bytes()),
    };
    // `git loaf -h | head -1` closing the pipe is fine, as for every result.
    let _ = written;
    ExitCode::from(e.exit_code().clamp(0, 255) as u8)
}

/// Prints an error and its hint on stderr.
fn print_error(error: &CliError) {
    let text = error::render_styled(error, style::colour(Stream::Stderr));
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Turns the progress line of long exec blocks and hooks on when `wanted` (not for output a
/// program reads, such as `--json`) and stderr is a terminal that can erase it.
fn show_progress(wanted: bool) {
    use crate::progress::{Mode, set};
    set(if !wanted || !style::interactive(Stream::Stderr) {
        Mode::Off
    } else if style::colour(Stream::Stderr) {
        Mode::Dim
    } else {
        Mode::Plain
    });
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
fn print_notices(notices: &[impl std::fmt::Display]) {
    let label = style::paint(style::colour(Stream::Stderr), Paint::Note, "note:");
    let mut err = std::io::stderr().lock();
    for notice in notices {
        // A libgit2 error a notice quotes reads as git would say it.
        let notice = crate::git::words::without_codes(&notice.to_string());
        let _ = writeln!(err, "{label} {notice}");
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
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(style::colour(Stream::Stderr))
        .with_max_level(level)
        .without_time()
        .try_init();
}
