//! `git loaf agent-hook AGENT`: an agent's hook event on stdin, run as a record-mode step.

use std::io::Read as _;
use std::path::PathBuf;

use clap::Args;

use super::{CliError, Outcome};
use crate::agents::Agent;
use crate::agents::feedback;
use crate::agents::hook::{self, Files, Step};
use crate::ops::record::{self, BeginOptions};
use crate::ops::record_tool::{self, Phase, Touched};

/// Run an agent's hook event (JSON on stdin) as a record-mode step.
///
/// The agent's settings run it (`git loaf init --agent AGENT` writes them). Reads the event as JSON on standard input: a prompt submitted begins a turn, the end of
/// the agent's reply commits it (Claude Code `UserPromptSubmit`/`Stop`, Codex
/// `UserPromptSubmit`/`Stop` or its `notify` payload as an argument, Cursor
/// `beforeSubmitPrompt`/`stop`, Gemini CLI `BeforeAgent`/`AfterAgent`); the start and end
/// of each of the agent's tool calls attribute what changed to the agent, and what changed
/// between them to you (Claude Code and Codex `PreToolUse`/`PostToolUse`, Gemini CLI
/// `BeforeTool`/`AfterTool`, Cursor `beforeShellExecution`/`afterShellExecution` and
/// `afterFileEdit`); other events are ignored. Exits 0 when done or ignored; 2 when the event cannot be read (nothing
/// changed); 1 when the step failed (the reason on stderr; the agent goes on).
#[derive(Debug, Args)]
#[command(after_help = super::examples::examples(&[
    ("Wire Claude Code's hooks, so each turn becomes a commit", &["git loaf init --agent claude-code"]),
    ("What the Stop hook runs (the event on stdin)", &["git loaf agent-hook claude-code < stop.json"]),
]))]
pub struct AgentHookArgs {
    /// The agent: claude-code, codex, cursor or gemini.
    #[arg(value_parser = parse_agent)]
    agent: Agent,
    /// The event as an argument instead of stdin (Codex's `notify` passes it so).
    #[arg(value_name = "EVENT_JSON")]
    event: Option<String>,
}

fn parse_agent(text: &str) -> Result<Agent, String> {
    text.parse()
        .map_err(|e: crate::agents::UnknownAgent| e.to_string())
}

/// Runs `git loaf agent-hook`.
pub fn run(args: &AgentHookArgs) -> Result<Outcome, CliError> {
    let input = match &args.event {
        Some(event) => event.clone().into_bytes(),
        None => {
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes).map_err(|e| {
                CliError::usage(
                    format!("cannot read the hook event on stdin: {e}"),
                    "the agent passes its event as JSON on standard input",
                )
            })?;
            bytes
        }
    };
    let step = hook::read(args.agent, &hook::event_text(&input)).map_err(|e| {
        CliError::usage(
            e.to_string(),
            format!(
                "`git loaf agent-hook {}` is run by the agent's hooks with its event as JSON on stdin; `git loaf init --agent {}` sets them up",
                args.agent, args.agent
            ),
        )
    })?;
    let outcome = match run_step(args.agent, &step) {
        Ok(()) => Outcome::Success,
        // Not a usage error: the agent goes on (exit 2 would block the prompt in Claude
        // Code and Gemini CLI), and the user sees why on stderr.
        Err(error) => {
            super::print_error(&error);
            Outcome::Failed
        }
    };
    // A review's report for the model rides on the prompt that begins the next turn.
    let report = feedback::carries_report(args.agent, &step)
        .then(|| step_dir(&step).ok())
        .flatten()
        .and_then(|dir| crate::ops::review::take_report(&dir));
    super::print_out(&feedback::answer(args.agent, &step, report.as_deref()))?;
    Ok(outcome)
}

/// The folder the agent works in, as `step` names it (the hook's own without).
fn step_dir(step: &Step) -> Result<PathBuf, CliError> {
    match step {
        Step::Begin { cwd: Some(dir), .. } => Ok(dir.clone()),
        _ => super::current_dir(),
    }
}

/// Runs the step in the agent's folder.
fn run_step(agent: Agent, step: &Step) -> Result<(), CliError> {
    let here = |cwd: &Option<PathBuf>| match cwd {
        Some(dir) => Ok(dir.clone()),
        None => super::current_dir(),
    };
    match step {
        Step::Ignored(_) => Ok(()),
        Step::Begin {
            session,
            prompt,
            cwd,
        } => {
            let begun = record::begin(
                &here(cwd)?,
                &BeginOptions {
                    session: Some(session.clone()),
                    agent: Some(agent.name().to_owned()),
                    prompt: prompt.clone(),
                },
            )?;
            super::print_notices(&begun.notices);
            Ok(())
        }
        Step::ToolStart {
            session,
            cwd,
            files,
        }
        | Step::ToolEnd {
            session,
            cwd,
            files,
        } => {
            let phase = match step {
                Step::ToolStart { .. } => Phase::Start,
                _ => Phase::End,
            };
            let touched = match files {
                Files::Named(files) => Touched::Files(files),
                Files::Any => Touched::Anything,
            };
            record_tool::tool_event(&here(cwd)?, session, touched, phase)?;
            Ok(())
        }
        Step::FileEdited {
            session,
            cwd,
            file,
            edits,
        } => {
            record_tool::file_edited(&here(cwd)?, session, file, edits)?;
            Ok(())
        }
        Step::Commit { session, cwd } => {
            let committed = record::commit(&here(cwd)?, Some(session))?;
            super::print_notices(&committed.notices);
            // stdout belongs to the agent: the line goes to stderr.
            eprint!("{}", super::record::committed_line(&committed));
            Ok(())
        }
    }
}
