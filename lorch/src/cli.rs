//! The command line (docs/lorch.md, "Running it"): `lorch [run] [--task ID]`, `resume --run ID`,
//! `validate --schemas`, `validate --run ID`, `doctor`, `config`,
//! `agent ROLE -- CMD…`.
//!
//! Parsing lives here, in the library, so tests can drive it in-process; `src/main.rs` only
//! calls [`main`]. The top of the crate: it calls down into the scheduler, the checks and
//! the agent shim (whose arguments, [`AgentArgs`], are the shim's own), none of which
//! calls back. Each command is one `cmd_*` function. Exit codes: 0 the run completed,
//! 1 it failed (an agent exhausted its retries, a checksum did not match on resume;
//! `lorch resume` continues it once the cause is fixed), 2 bad usage or configuration,
//! nothing ran (lorch.json, the task, a run that does not exist, a check of `lorch doctor`
//! that fails), 130 the run was aborted by SIGINT or SIGTERM (`lorch resume` continues it).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use super::agent::{self, AgentArgs};
use super::checks;
use super::config::{self, Config};
use super::configure;
use super::finished;
use super::intake;
use super::scheduler::{self, Orchestrator, RunError, Status};
use super::validate::check_schemas;

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
    /// Edit lorch.json interactively: agent commands, spec_path, policy.max_turns, tasks;
    /// every answer checked, written only when you confirm (answers may be piped on stdin).
    Config,
    /// Run as an agent: wrap an LLM command-line tool, speaking the protocol on stdio.
    Agent(AgentArgs),
}

/// `lorch run`.
#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// The task of lorch.json to run, e.g. T-0042; repeat it to run several, in order, in
    /// one run. Without it, lorch asks what to do and the orchestration agent
    /// (agents.orchestration in lorch.json) proposes the tasks.
    #[arg(long, value_name = "ID")]
    pub task: Vec<String>,
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
    #[arg(long, required_unless_present = "run_id")]
    pub schemas: bool,
    /// Check that a finished run passed: completed, a terminal event for every
    /// command, the last review approved, the spec maintainer's confirmation, every receipt
    /// matching its files.
    #[arg(long = "run", value_name = "ID")]
    pub run_id: Option<String>,
}

/// Exit code of bad usage or configuration: nothing ran (lorch.json, the task, the
/// workspace, a missing `--task`).
pub const USAGE: u8 = 2;

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
        Some(Command::Config) => cmd_config(),
        Some(Command::Agent(args)) => cmd_agent(&args),
    }
}

/// Exit code of a run that failed (an agent exhausted its retries, a persistent conflict).
pub const RUN_FAILED: u8 = 1;

/// Exit code of a run aborted by a signal (128 + SIGINT, as shells report Ctrl-C).
pub const ABORTED: u8 = 130;

fn ended(status: Result<Status, RunError>) -> ExitCode {
    match status {
        Ok(Status::Completed) => ExitCode::SUCCESS,
        Ok(Status::Aborted(_)) => ExitCode::from(ABORTED),
        Ok(Status::Running | Status::Failed(_)) => ExitCode::from(RUN_FAILED),
        Err(e) => {
            eprintln!("lorch: {e}");
            match e {
                RunError::NoRun(..) => ExitCode::from(USAGE),
                _ => ExitCode::from(RUN_FAILED),
            }
        }
    }
}

/// The workspace lorch works in; `None` after saying why it has none (a usage error).
fn workspace_dir() -> Option<std::path::PathBuf> {
    scheduler::base_dir()
        .map_err(|e| eprintln!("lorch: {e}"))
        .ok()
}

/// `lorch doctor`'s checks before any agent starts: a run that doctor says cannot work is
/// refused with the causes, before a model has run (and cost anything).
fn preflight() -> Result<(), ExitCode> {
    let base = workspace_dir().ok_or(ExitCode::from(USAGE))?;
    let failed: Vec<checks::Check> = checks::doctor(&base)
        .into_iter()
        .filter(|c| !c.ok)
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    eprintln!("lorch: not starting (no agent ran): the checks of `lorch doctor` fail:");
    for c in &failed {
        eprintln!("  {c}");
    }
    eprintln!("lorch: fix these (lorch.json, PATH, the workspace), then run again");
    Err(ExitCode::from(USAGE))
}

/// Loads lorch.json (creating it on the first run) and the workspace, or says why not.
fn setup(create: bool) -> Result<(Config, PathBuf), ExitCode> {
    let usage = |e: &dyn std::fmt::Display| {
        eprintln!("lorch: {e}");
        ExitCode::from(USAGE)
    };
    let base = scheduler::base_dir().map_err(|e| usage(&e))?;
    let config = if create {
        scheduler::load_config(&base).map_err(|e| usage(&e))?
    } else {
        match config::load(&base) {
            Ok(Some(c)) => c,
            Ok(None) => return Err(usage(&format!("no {} here", config::FILE_NAME))),
            Err(e) => return Err(usage(&e)),
        }
    };
    let workspace = config.workspace(&base);
    if !workspace.is_dir() {
        return Err(usage(&format!(
            "workspace_root {} is not a folder",
            workspace.display()
        )));
    }
    Ok((config, workspace))
}

fn cmd_run(args: &RunArgs) -> ExitCode {
    let (config, workspace) = match setup(true) {
        Ok(x) => x,
        Err(code) => return code,
    };
    if args.task.is_empty() {
        return run_from_words(config, workspace);
    }
    let mut tasks = Vec::new();
    for id in &args.task {
        match config.task(id) {
            Ok(t) if tasks.iter().any(|x: &config::Task| x.id == t.id) => {
                eprintln!("lorch: task {id} is given twice: name each task once");
                return ExitCode::from(USAGE);
            }
            Ok(t) => tasks.push(t.clone()),
            Err(e) => {
                eprintln!("lorch: {e}");
                return ExitCode::from(USAGE);
            }
        }
    }
    if let Err(code) = preflight() {
        return code;
    }
    with_user(&workspace, |user| {
        ended(Orchestrator::run_tasks(
            config,
            workspace.clone(),
            tasks,
            user,
        ))
    })
}

/// Runs `f` with the user at this terminal (or the script on stdin), who decides the
/// conflicts of a run.
fn with_user(
    workspace: &std::path::Path,
    f: impl FnOnce(&mut intake::Terminal) -> ExitCode,
) -> ExitCode {
    use std::io::IsTerminal as _;
    let Some(base) = workspace_dir() else {
        return ExitCode::from(USAGE);
    };
    // What an agent leaves when it dies (its model, its checks) is lorch's to reap.
    super::supervisor::adopt_orphans();
    let stdin = std::io::stdin();
    let echo = !stdin.is_terminal();
    let mut input = stdin.lock();
    let mut out = std::io::stdout();
    let mut user = intake::Terminal {
        input: &mut input,
        out: &mut out,
        echo,
        base,
        workspace: workspace.to_owned(),
    };
    f(&mut user)
}

/// `lorch run` without `--task`: the user's words, the orchestration
/// agent's proposal, the user's edits and approval, then the approved tasks, one after
/// another in the same run.
fn run_from_words(config: Config, workspace: PathBuf) -> ExitCode {
    if config.agents.orchestration().is_none() {
        let ids: Vec<&str> = config.tasks.iter().map(|t| t.id.as_str()).collect();
        eprintln!(
            "lorch: no --task given, and no orchestration agent to turn what you want into a task. \
             Either set one in lorch.json, e.g. \"orchestration\": {{\"cmd\": [\"lorch\", \"agent\", \
             \"orchestration\", \"--\", \"llm\", \"-m\", \"MODEL\"]}} under \"agents\" (or with \
             `lorch config`), or run a task of lorch.json: lorch run --task ID ({})",
            if ids.is_empty() {
                "none yet".to_owned()
            } else {
                ids.join(", ")
            }
        );
        return ExitCode::from(USAGE);
    }
    if let Err(code) = preflight() {
        return code;
    }
    with_user(&workspace.clone(), |user| {
        let instruction = match user.ask(intake::QUESTION) {
            Some(words) if !words.is_empty() => words,
            _ => {
                eprintln!(
                    "lorch: nothing to do: no words given (or run a task: lorch run --task ID)"
                );
                return ExitCode::from(USAGE);
            }
        };
        ended(Orchestrator::run_from_words(
            config,
            workspace,
            &instruction,
            user,
        ))
    })
}

fn cmd_resume(args: &ResumeArgs) -> ExitCode {
    let (config, workspace) = match setup(false) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let run_id = args.run_id.strip_prefix("run-").unwrap_or(&args.run_id);
    if let Err(code) = preflight() {
        return code;
    }
    with_user(&workspace, |user| {
        ended(Orchestrator::resume(
            config,
            workspace.clone(),
            run_id,
            user,
        ))
    })
}

fn cmd_validate(args: &ValidateArgs) -> ExitCode {
    let Some(base) = workspace_dir() else {
        return ExitCode::from(USAGE);
    };
    let config = config::load(&base).ok().flatten();
    let workspace = config
        .as_ref()
        .map_or_else(|| base.clone(), |c| c.workspace(&base));
    let mut code = ExitCode::SUCCESS;
    if args.schemas {
        code = validate_schemas(&workspace);
    }
    if let Some(run) = &args.run_id {
        let max = config.map_or(u64::MAX, |c| c.policy.artifact_max_bytes);
        let run = run.strip_prefix("run-").unwrap_or(run);
        let checked = validate_run(&workspace, run, max);
        if checked != ExitCode::SUCCESS {
            code = checked;
        }
    }
    code
}

/// `lorch validate --run ID`: the checks of a finished run, one line each.
fn validate_run(workspace: &std::path::Path, run: &str, max: u64) -> ExitCode {
    match finished::check_run(workspace, run, max) {
        Ok(results) => {
            for c in &results {
                println!("{c}");
            }
            if results.iter().all(|c| c.ok) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(RUN_FAILED)
            }
        }
        Err(e) => {
            eprintln!("lorch: {e}");
            match e {
                finished::FinishedError::NoRun(..) => ExitCode::from(USAGE),
                finished::FinishedError::Io(_) => ExitCode::from(RUN_FAILED),
            }
        }
    }
}

/// `lorch validate --schemas`.
fn validate_schemas(workspace: &std::path::Path) -> ExitCode {
    if let Err(e) = check_schemas() {
        eprintln!("lorch: {e}");
        return ExitCode::from(RUN_FAILED);
    }
    let reports = match checks::validate_recorded(workspace) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("lorch: {e}");
            return ExitCode::from(RUN_FAILED);
        }
    };
    let mut bad = 0;
    for r in &reports {
        println!(
            "{}: {} valid, {} invalid",
            r.file,
            r.valid,
            r.problems.len()
        );
        for p in &r.problems {
            println!("  {p}");
        }
        bad += r.problems.len();
    }
    if reports.is_empty() {
        println!("no recorded agent IO (events/run-*.ndjson, logs/*/run-*.ndjson)");
    }
    if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(RUN_FAILED)
    }
}

fn cmd_doctor() -> ExitCode {
    let Some(base) = workspace_dir() else {
        return ExitCode::from(USAGE);
    };
    let results = checks::doctor(&base);
    for c in &results {
        println!("{c}");
    }
    if results.iter().all(|c| c.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(RUN_FAILED)
    }
}

fn cmd_config() -> ExitCode {
    use std::io::IsTerminal as _;
    let Some(base) = workspace_dir() else {
        return ExitCode::from(USAGE);
    };
    let stdin = std::io::stdin();
    // Piped answers are not echoed by a terminal: repeat them, so the transcript reads.
    let echo = !stdin.is_terminal();
    let mut out = std::io::stdout().lock();
    match configure::edit(&base, &mut stdin.lock(), &mut out, echo) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lorch config: {e}");
            match e {
                configure::ConfigureError::Terminal(_) => ExitCode::from(RUN_FAILED),
                _ => ExitCode::from(USAGE),
            }
        }
    }
}

fn cmd_agent(args: &AgentArgs) -> ExitCode {
    agent::main(args)
}
