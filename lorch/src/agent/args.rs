//! What `lorch agent ROLE -- CMD…` is given: its arguments ([`AgentArgs`], parsed by clap as
//! the `agent` subcommand of [`crate::cli`]) and the [`Role`] it plays. They live with the
//! shim, below the command line, so that the command line calls down into the shim and the
//! shim never reaches back up.

use clap::{Args, ValueEnum};

use crate::protocol::AgentType;

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
    /// Builder: a lint command to run (with `sh -c`, in the workspace) after the tests of
    /// each applied reply; repeatable; all must pass for `builder.completed` to say success,
    /// whose `lint` then carries their results beside `tests`.
    #[arg(long = "lint", value_name = "COMMAND")]
    pub lints: Vec<String>,
    /// Builder: the most turns of one step's conversation with the model (each turn's
    /// reply applied, its report and failed checks sent back as the next turn). A command's
    /// `inputs.max_turns` (lorch sends lorch.json's `policy.max_turns`) wins.
    #[arg(long = "max-turns", value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_turns: u16,
    /// Seconds between heartbeats (10 by default). Under lorch, the interval lorch.json sets for
    /// the agent (lorch passes it as LORCH_HEARTBEAT_INTERVAL_S), so that its supervisor
    /// never counts heartbeats as missed that the agent was never asked to send.
    #[arg(
        long = "heartbeat-s",
        value_name = "SECONDS",
        env = "LORCH_HEARTBEAT_INTERVAL_S",
        default_value_t = 10.0
    )]
    pub heartbeat_s: f64,
    /// The instance id in heartbeats and events (default: the LORCH_AGENT_ID lorch gives,
    /// else `<role>#1`).
    #[arg(long, value_name = "ID", env = "LORCH_AGENT_ID")]
    pub agent_id: Option<String>,
    /// Run the model command (and the builder's checks) in git-loaf's sandbox: new
    /// user, mount and PID namespaces in which everything is read-only except the workspace
    /// and a private /tmp; the repository's git dir is seen through a layer whose writes are
    /// dropped. The network stays (a model CLI talks to its API). Refused where namespaces
    /// cannot be made.
    #[arg(long)]
    pub sandbox: bool,
    /// With --sandbox: a folder the model command may also write (its cache, config or
    /// logs, e.g. ~/.config/io.datasette.llm); repeatable. Not undone.
    #[arg(long = "sandbox-writable", value_name = "DIR", requires = "sandbox")]
    pub sandbox_writable: Vec<std::path::PathBuf>,
    /// The LLM command line to run for each command, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// The roles `lorch agent` can play.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum Role {
    /// Implements tasks, applying its replies through git-loaf.
    Builder,
    /// Reviews them, writing reviews/<task>.json.
    Reviewer,
    /// Checks them against SPEC.md, editing only its allowed sections.
    SpecMaintainer,
    /// Turns what the user asks for into tasks (`intake`); never edits a file.
    Orchestration,
}

impl Role {
    /// The protocol's name for the role.
    pub fn agent_type(self) -> AgentType {
        match self {
            Role::Builder => AgentType::Builder,
            Role::Reviewer => AgentType::Reviewer,
            Role::SpecMaintainer => AgentType::SpecMaintainer,
            Role::Orchestration => AgentType::Orchestration,
        }
    }
}
