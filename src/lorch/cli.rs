//! The command line of §8.3: `lorch [run] [--task ID]`, `resume --run ID`,
//! `validate --schemas`, `doctor`, `agent ROLE -- CMD…`.
//!
//! Parsing lives here, in the library, so tests can drive it in-process; `src/bin/lorch.rs`
//! only calls [`main`]. Each command is one `cmd_*` function; the ones not built yet say so
//! and exit 2.

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use super::protocol::AgentType;

/// lorch: drives AI agents through implement → review → spec maintenance, over NDJSON on
/// their stdio, each builder step applied through git-loaf as one commit.
#[derive(Debug, Parser)]
#[command(name = "lorch", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// What to do; none is `lorch run`.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// `lorch` alone takes `run`'s flags.
    #[command(flatten)]
    pub run: RunArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a run.
    Run(RunArgs),
    /// Resume a run from its ledger and state.
    Resume(ResumeArgs),
    /// Check recorded agent IO against the protocol's JSON Schemas.
    Validate(ValidateArgs),
    /// Check the environment: agent commands found, workspace writable, git present.
    Doctor,
    /// Run as an agent: wrap an LLM command-line tool, speaking the protocol on stdio.
    Agent(AgentArgs),
}

/// `lorch run`.
#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// The task of lorch.json to run, e.g. T-0042 (natural-language intake without it is Phase 2).
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
}

/// `lorch resume`.
#[derive(Debug, Clone, Args)]
pub struct ResumeArgs {
    /// The run to resume (its id, as in events/run-<id>.ndjson).
    #[arg(long = "run", value_name = "ID")]
    pub run_id: String,
}

/// `lorch validate`.
#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// Validate the agents' recorded messages against the command, event, heartbeat and log schemas.
    #[arg(long, required = true)]
    pub schemas: bool,
}

/// `lorch agent`: reads commands on stdin, answers with events, heartbeats and logs on
/// stdout, and runs CMD once per command with the prompt on its stdin (its stdout is the
/// model's reply). The builder applies the reply through git-loaf as one commit.
#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// The role this agent plays.
    #[arg(value_enum)]
    pub role: Role,
    /// The repository the agent works in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<std::path::PathBuf>,
    /// Builder: a test or lint command to run (with `sh -c`, in the workspace) after each
    /// applied reply; repeatable; all must pass for `builder.completed` to say success.
    #[arg(long = "check", value_name = "COMMAND")]
    pub checks: Vec<String>,
    /// Seconds between heartbeats (§7.1: 10).
    #[arg(long = "heartbeat-s", value_name = "SECONDS", default_value_t = 10.0)]
    pub heartbeat_s: f64,
    /// The instance id in heartbeats and events (default: `<role>#1`).
    #[arg(long, value_name = "ID")]
    pub agent_id: Option<String>,
    /// The LLM command line to run for each command, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// The roles `lorch agent` can play (Phase 1: no orchestration agent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum Role {
    /// Implements tasks, applying its replies through git-loaf.
    Builder,
    /// Reviews them, writing reviews/<task>.json.
    Reviewer,
    /// Checks them against SPEC.md, editing only its allowed sections.
    SpecMaintainer,
}

impl Role {
    /// The protocol's name for the role.
    pub fn agent_type(self) -> AgentType {
        match self {
            Role::Builder => AgentType::Builder,
            Role::Reviewer => AgentType::Reviewer,
            Role::SpecMaintainer => AgentType::SpecMaintainer,
        }
    }
}

/// Exit code of a command that is not built yet.
pub const NOT_BUILT: u8 = 2;

/// Parses the process's arguments and runs the command.
pub fn main() -> ExitCode {
    run(Cli::parse())
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        None => cmd_run(&cli.run),
        Some(Command::Run(args)) => cmd_run(&args),
        Some(Command::Resume(args)) => cmd_resume(&args),
        Some(Command::Validate(args)) => cmd_validate(&args),
        Some(Command::Doctor) => cmd_doctor(),
        Some(Command::Agent(args)) => cmd_agent(&args),
    }
}

fn not_built(what: &str) -> ExitCode {
    eprintln!("lorch: {what}: not built yet");
    ExitCode::from(NOT_BUILT)
}

fn cmd_run(_args: &RunArgs) -> ExitCode {
    not_built("run")
}

fn cmd_resume(_args: &ResumeArgs) -> ExitCode {
    not_built("resume")
}

fn cmd_validate(_args: &ValidateArgs) -> ExitCode {
    not_built("validate --schemas")
}

fn cmd_doctor() -> ExitCode {
    not_built("doctor")
}

fn cmd_agent(args: &AgentArgs) -> ExitCode {
    super::agent::main(args)
}
