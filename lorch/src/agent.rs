//! `lorch agent ROLE -- CMD…`: the shim that turns any LLM command-line tool into a lorch
//! agent (docs/lorch.md, "The three agents").
//!
//! It reads `command` lines on stdin and answers on stdout with events, logs and heartbeats
//! (the protocol's envelopes, [`crate::protocol`]). For each command it:
//!
//! 1. answers from the receipt when the idempotency key was handled before ([`receipts`]),
//!    or, for the builder, from the step git-loaf recorded under that key when the shim was
//!    killed before writing the receipt ([`builder`]);
//! 2. builds the role's prompt ([`prompt`]) and runs CMD with it on stdin, killed at the
//!    command's deadline ([`llm`]); CMD's stdout is the model's reply;
//! 3. does the role's work with the reply: the builder applies it through git-loaf, runs
//!    the `--check` commands and sends the report back as the next turn until the step is
//!    done, which ends as one commit ([`builder`]); the reviewer, shown the task's whole
//!    change ([`change`]), writes `reviews/<task>.json` ([`reviewer`]); the spec-maintainer
//!    edits only the allowed sections of the spec (`inputs.spec`), also as one git-loaf
//!    commit ([`spec`]); the orchestration agent turns the user's words into proposed
//!    tasks, shown the plan files [`discovery`] finds ([`intake`]);
//! 4. records a receipt, then sends the events (a failure is an `error` event with a
//!    machine-readable `payload.code`).
//!
//! Before any work, the agent checks that the workspace is the version the command was
//! pinned to (`snapshot_id`, `code_hash`, `specs_hash`: [`check_version`]). With
//! `--sandbox`, the model command and the builder's checks run in git-loaf's namespace
//! sandbox ([`sandbox`]).
//!
//! Heartbeats come from their own thread every `--heartbeat-s` seconds, `busy` while a
//! command runs and `ready` otherwise, so lorch sees the agent alive while a model thinks.
//! Its records in the workspace (`reviews/`, `spec_notes/`) are listed in the repository's
//! `info/exclude` ([`super::git_exclude`]) so that they never block `git loaf undo` or `squash`.
//! A line that is not a valid message is reported as a `log` line and skipped: one bad line
//! never stops the agent.

mod args;
pub mod builder;
pub mod change;
pub mod discovery;
pub mod emit;
mod error;
pub mod intake;
pub mod limits;
pub mod llm;
pub mod prompt;
pub mod receipts;
pub mod reviewer;
pub mod sandbox;
pub mod spec;
pub mod verdict;

pub use error::StepError;

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

pub use self::args::{AgentArgs, Role};
use self::emit::{Draft, Emitter};
use self::receipts::{Receipt, Store};
use super::ndjson::{LineReader, ReadError, WriteError};
use super::protocol::{
    Action, Command, EventType, HeartbeatStatus, LogLevel, Message, Object, ObservedVersion,
    Timestamp,
};

/// How the shim runs: the command line, resolved.
#[derive(Debug, Clone)]
pub struct Options {
    /// The role.
    pub role: Role,
    /// The workspace: the root of its git working tree, canonical.
    pub workspace: PathBuf,
    /// The LLM command line.
    pub cmd: Vec<String>,
    /// Builder: test commands (`--check`), run with `sh -c`.
    pub checks: Vec<String>,
    /// Builder: lint commands (`--lint`), run with `sh -c` after the tests.
    pub lints: Vec<String>,
    /// Builder: the most turns of a step when the command does not say.
    pub max_turns: usize,
    /// Between heartbeats.
    pub heartbeat: Duration,
    /// The instance id.
    pub agent_id: String,
    /// The folder lorch started the agent in (its workspace): what the command's snapshot
    /// is of, checked before any work.
    pub snapshot_root: PathBuf,
    /// Where the shim keeps its receipts: `<git common dir>/lorch/agent/<role>`, outside
    /// the working tree, so that they never show up as the user's changes (which would make
    /// `git loaf undo` refuse to take a builder step back); `<workspace>/.lorch/agent/<role>`
    /// outside a repository.
    pub state_dir: PathBuf,
    /// `--sandbox`: where the model command and the checks run ([`sandbox`]).
    pub sandbox: Option<git_loaf::api::Sandbox>,
    /// How the model command says it is rate-limited (from lorch, [`limits`]).
    pub rate_limit: crate::config::RateLimit,
}

impl Options {
    /// Resolves the command line: the workspace must exist (and, for the builder, be in a
    /// git repository, which git-loaf needs).
    pub fn from_args(args: &AgentArgs) -> Result<Options, String> {
        let given = match &args.workspace {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().map_err(|e| format!("no current folder: {e}"))?,
        };
        let dir = given
            .canonicalize()
            .map_err(|e| format!("workspace {}: {e}", given.display()))?;
        let snapshot_root = dir.clone();
        let root = git_loaf::api::worktree_root(&dir);
        if args.role == Role::Builder && root.is_none() {
            return Err(format!(
                "workspace {} is not in a git repository: the builder applies its work with git-loaf, which needs one (git init)",
                dir.display()
            ));
        }
        let workspace = root.unwrap_or(dir);
        if !(args.heartbeat_s.is_finite() && args.heartbeat_s > 0.0) {
            return Err("--heartbeat-s must be a positive number of seconds".into());
        }
        let role = args.role.agent_type().as_str();
        let common = git_loaf::api::common_dir(&workspace);
        let state_dir = match &common {
            Some(common) => common.join("lorch"),
            None => workspace.join(".lorch"),
        }
        .join("agent")
        .join(role);
        let sandbox = match args.sandbox {
            true => Some(sandbox::contain(
                &workspace,
                common.as_deref(),
                &args.sandbox_writable,
            )?),
            false => None,
        };
        Ok(Options {
            rate_limit: limits::rate_limit_from_env(),
            sandbox,
            snapshot_root,
            state_dir,
            role: args.role,
            workspace,
            cmd: args.cmd.clone(),
            checks: args.checks.clone(),
            lints: args.lints.clone(),
            max_turns: usize::from(args.max_turns),
            heartbeat: Duration::from_secs_f64(args.heartbeat_s),
            agent_id: args.agent_id.clone().unwrap_or_else(|| format!("{role}#1")),
        })
    }

    /// The protocol's name for the role.
    pub fn role_name(&self) -> &'static str {
        self.role.agent_type().as_str()
    }

    /// What the git-loaf commit's `Assisted-by` names: the role and the program.
    pub fn model(&self) -> String {
        let program = self
            .cmd
            .first()
            .map(|p| {
                Path::new(p)
                    .file_name()
                    .map_or(p.clone(), |n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_default();
        format!("lorch {} ({program})", self.role_name())
    }
}

/// What a role's handler decided: the events, and whether the outcome gets a receipt.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The events, terminal last.
    pub drafts: Vec<Draft>,
    /// Whether to keep a receipt (a success or a verdict; not a failure, which a retry
    /// with the same key should do again).
    pub keep: bool,
}

/// The running shim: options and output.
pub struct Shim {
    /// The options.
    pub options: Options,
    /// Where everything goes.
    pub emitter: Emitter,
    /// The version the agent saw when it checked the command in hand ([`check_version`]),
    /// which its events report.
    pub observed: std::sync::Mutex<Option<ObservedVersion>>,
    /// Model calls made for the command in hand (its terminal event says how many).
    pub calls: std::sync::atomic::AtomicU64,
}

impl Shim {
    /// Lists `patterns` in the repository's `info/exclude` ([`super::git_exclude`]); a
    /// failure costs only `git loaf undo`'s ease and is logged, not fatal.
    pub fn exclude(&self, patterns: &[&str]) {
        if let Err(error) = super::git_exclude::exclude(&self.options.workspace, patterns) {
            let _ = self.emitter.log(
                LogLevel::Warn,
                &format!(
                    "cannot add {} to .git/info/exclude (git loaf undo will see them as changes): {error}",
                    patterns.join(" ")
                ),
                Object::new(),
            );
        }
    }

    /// Runs the model for `command` with `prompt`, killed at the deadline.
    pub fn ask(&self, command: &Command, prompt: &str) -> Result<llm::Reply, StepError> {
        self.ask_turn(command, prompt, 1)
    }

    /// [`Shim::ask`] for turn `turn` of the command's conversation (`LORCH_TURN`, from 1).
    pub fn ask_turn(
        &self,
        command: &Command,
        prompt: &str,
        turn: usize,
    ) -> Result<llm::Reply, StepError> {
        let left = time_left(command)?;
        let used = self.calls.load(std::sync::atomic::Ordering::SeqCst);
        limits::within_budget(command, used)?;
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let env = [
            ("LORCH_TURN", turn.to_string()),
            ("LORCH_ROLE", self.options.role_name().to_owned()),
            ("LORCH_AGENT_ID", self.options.agent_id.clone()),
            ("LORCH_ACTION", command.action.as_str().to_owned()),
            ("LORCH_TASK_ID", command.task_id.clone()),
            ("LORCH_CORRELATION_ID", command.correlation_id.clone()),
            (
                "LORCH_WORKSPACE",
                self.options.workspace.display().to_string(),
            ),
        ]
        .map(|(k, v)| (k.to_owned(), v));
        let reply = match &self.options.sandbox {
            Some(contained) => sandbox::ask(
                contained,
                &self.options.cmd,
                prompt,
                &self.options.state_dir,
                &env,
                left,
            ),
            None => llm::ask(
                &self.options.cmd,
                prompt,
                &self.options.workspace,
                &env,
                left,
            ),
        };
        reply.map_err(|error| {
            if matches!(error, llm::LlmError::Start { .. }) {
                // A program that could not start was no call.
                self.calls.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
            limits::rate_limited(&self.options.rate_limit, &error).unwrap_or(StepError::Llm(error))
        })
    }
}

/// What is left until the command's deadline.
pub fn time_left(command: &Command) -> Result<Duration, StepError> {
    command
        .deadline
        .0
        .duration_since(SystemTime::now())
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| StepError::DeadlinePassed(command.deadline.to_string()))
}

/// `lorch agent`: runs the shim on the process's stdin and stdout.
pub fn main(args: &AgentArgs) -> ExitCode {
    let options = match Options::from_args(args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("lorch agent: {message}");
            return ExitCode::from(2);
        }
    };
    match serve(options, io::stdin().lock(), Box::new(io::stdout())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lorch agent: {e}");
            ExitCode::from(1)
        }
    }
}

/// Serves commands from `input` until it ends, answering on `output`.
pub fn serve(
    options: Options,
    input: impl Read,
    output: Box<dyn Write + Send>,
) -> Result<(), WriteError> {
    let secrets = super::safety::process_secrets();
    let emitter = Emitter::new(
        output,
        options.role.agent_type(),
        options.agent_id.clone(),
        secrets,
    );
    let shim = Arc::new(Shim {
        options,
        emitter,
        observed: std::sync::Mutex::new(None),
        calls: std::sync::atomic::AtomicU64::new(0),
    });
    shim.emitter.heartbeat()?;
    shim.emitter.set_status(HeartbeatStatus::Ready, None);
    let (stop, stopped) = mpsc::channel::<()>();
    let beating = Arc::clone(&shim);
    let beats = std::thread::spawn(move || {
        while let Err(mpsc::RecvTimeoutError::Timeout) =
            stopped.recv_timeout(beating.options.heartbeat)
        {
            if beating.emitter.heartbeat().is_err() {
                // lorch closed our stdout: the command loop finds out on its next write.
                break;
            }
        }
    });
    let result = command_loop(&shim, input);
    shim.emitter.set_status(HeartbeatStatus::Stopping, None);
    let _ = stop.send(());
    let _ = beats.join();
    let last = shim.emitter.heartbeat();
    result.and(last)
}

fn command_loop(shim: &Shim, input: impl Read) -> Result<(), WriteError> {
    let mut reader = LineReader::new(input);
    while let Some(item) = reader.read_message() {
        match item {
            Ok(Message::Command(command)) => handle(shim, &command)?,
            Ok(other) => shim.emitter.log(
                LogLevel::Warn,
                &format!(
                    "ignored a {} message: an agent reads only commands",
                    other.kind()
                ),
                Object::new(),
            )?,
            Err(ReadError::Protocol(error)) => {
                let mut fields = Object::new();
                fields.insert("code".into(), json!("protocol_error"));
                shim.emitter.log(
                    LogLevel::Error,
                    &format!("skipped an invalid command line: {error}"),
                    fields,
                )?;
            }
            Err(ReadError::Io(error)) => {
                shim.emitter.log(
                    LogLevel::Error,
                    &format!("stopped reading commands: {error}"),
                    Object::new(),
                )?;
                break;
            }
        }
    }
    Ok(())
}

/// Handles one command, from receipt or afresh; only a failure to write stops the agent.
fn handle(shim: &Shim, command: &Command) -> Result<(), WriteError> {
    let emitter = &shim.emitter;
    emitter.set_status(HeartbeatStatus::Busy, Some(&command.task_id));
    let store = Store::new(&shim.options.state_dir, &shim.options.workspace);
    let ik = &command.idempotency_key;
    // A command for another role is refused before any receipt is looked at.
    let misaddressed = command.to.agent_type != shim.options.role.agent_type();
    let prior = if misaddressed {
        Ok(None)
    } else {
        store.load(ik)
    };
    let prior = match prior {
        Ok(prior) => prior,
        Err(problem) => {
            emitter.log(
                LogLevel::Warn,
                &format!("unreadable receipt, handling the command afresh: {problem}"),
                Object::new(),
            )?;
            None
        }
    };
    let events = match prior {
        Some(receipt) => receipts::replay(emitter, command, &receipt, &store.shown(ik)),
        None => {
            if let Ok(mut observed) = shim.observed.lock() {
                *observed = None;
            }
            shim.calls.store(0, std::sync::atomic::Ordering::SeqCst);
            let mut answer = dispatch(shim, command).unwrap_or_else(|error| Answer {
                drafts: vec![Draft {
                    observed: error.observed(),
                    ..Draft::new(EventType::Error, Some("failed"), error.payload())
                }],
                keep: false,
            });
            // lorch counts the model calls against policy.max_model_calls from these.
            if let Some(last) = answer.drafts.last_mut() {
                let calls = shim.calls.load(std::sync::atomic::Ordering::SeqCst);
                last.payload.insert("model_calls".into(), json!(calls));
            }
            let seen = shim.observed.lock().ok().and_then(|o| o.clone());
            let events: Vec<_> = answer
                .drafts
                .into_iter()
                .map(|mut draft| {
                    draft.observed = draft.observed.or_else(|| seen.clone());
                    emitter.event(command, draft)
                })
                .collect();
            if answer.keep {
                let receipt = Receipt {
                    idempotency_key: ik.clone(),
                    task_id: command.task_id.clone(),
                    action: command.action.as_str().to_owned(),
                    command_message_id: command.message_id.clone(),
                    events: events.clone(),
                    created_at: Timestamp::now(),
                };
                if let Err(error) = store.save(&receipt, emitter.secrets()) {
                    emitter.log(
                        LogLevel::Warn,
                        &format!(
                            "cannot record the receipt (a resent command would run again): {error}"
                        ),
                        Object::new(),
                    )?;
                }
            }
            events
        }
    };
    for event in events {
        match emitter.send(&Message::Event(event.clone())) {
            Ok(()) => {}
            // An event the schema or the 256 KiB limit refuses is not sent; lorch gets an
            // error in its place, and the agent goes on.
            Err(WriteError::Protocol(problem)) => {
                let mut payload = Object::new();
                payload.insert("code".into(), json!("event_not_sent"));
                payload.insert(
                    "message".into(),
                    json!(format!(
                        "the {} event could not be sent: {problem}",
                        event.event
                    )),
                );
                let draft = Draft::new(EventType::Error, Some("failed"), payload);
                emitter.send(&Message::Event(emitter.event(command, draft)))?;
            }
            Err(error) => return Err(error),
        }
    }
    emitter.set_status(HeartbeatStatus::Ready, None);
    Ok(())
}

/// The role's handler for the command.
fn dispatch(shim: &Shim, command: &Command) -> Result<Answer, StepError> {
    let role = shim.options.role;
    let ours = shim.options.role_name();
    if command.to.agent_type != role.agent_type() {
        return Err(StepError::WrongAgent {
            ours,
            theirs: command.to.agent_type.as_str().to_owned(),
        });
    }
    // The builder checks the version itself, after looking for a step it applied for this
    // very command before it was stopped (that step is why the workspace moved).
    match (role, command.action) {
        (Role::Builder, Action::Implement | Action::ImplementChanges) => {
            builder::handle(shim, command)
        }
        (Role::Reviewer, Action::Review) => {
            check_version(shim, command)?;
            reviewer::handle(shim, command)
        }
        (Role::SpecMaintainer, Action::UpdateSpec) => {
            check_version(shim, command)?;
            spec::handle(shim, command)
        }
        (Role::Orchestration, Action::Intake | Action::TaskDiscovery) => {
            check_version(shim, command)?;
            intake::handle(shim, command)
        }
        (_, action) => Err(StepError::Unsupported { role: ours, action }),
    }
}

/// Whether the workspace is the one the command was pinned to ([`crate::version`]): the
/// agent takes the snapshot (and the hashes of the code and of `inputs.spec`) again, as
/// lorch does, and refuses with `version_mismatch` (naming both and what differs) when what
/// the command pins differs: the whole snapshot, or with `inputs.strict_version_pinning`
/// false only the content (`code_hash`, `specs_hash`; [`crate::version`]). What it saw is
/// what its events report as `observed_version`.
pub fn check_version(shim: &Shim, command: &Command) -> Result<(), StepError> {
    let root = &shim.options.snapshot_root;
    let spec = input_str(command, "spec");
    let (seen, _) = crate::version::version_of(root, spec)
        .map_err(StepError::io(format!("snapshot of {}", root.display())))?;
    let strict = command.inputs.get("strict_version_pinning") != Some(&Value::Bool(false));
    let parts = crate::version::mismatched(&command.version, &seen, strict);
    if parts.is_empty() {
        if let Ok(mut observed) = shim.observed.lock() {
            *observed = Some(crate::version::observed(&seen));
        }
        Ok(())
    } else {
        Err(StepError::VersionMismatch {
            expected: Box::new(command.version.clone()),
            observed: Box::new(seen),
            parts,
        })
    }
}

/// The string `inputs[key]`, if it is one.
pub fn input_str<'a>(command: &'a Command, key: &str) -> Option<&'a str> {
    command.inputs.get(key).and_then(Value::as_str)
}

/// A workspace file as an artifact (`sha256:<hex>`, size), `None` when it is not a file.
pub fn artifact(workspace: &Path, path: &str) -> Option<super::protocol::Artifact> {
    let bytes = std::fs::read(workspace.join(path)).ok()?;
    Some(super::protocol::Artifact {
        path: path.to_owned(),
        sha256: format!("sha256:{}", super::canonical::sha256_hex(&bytes)),
        size: bytes.len() as u64,
    })
}

/// `text` cut to at most `max` bytes at a character boundary, with a note when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… [cut at {max} bytes]", &text[..end])
}

/// The last `max` bytes of `text` at a character boundary, with a note when cut.
pub fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("[… first {start} bytes cut]\n{}", &text[start..])
}
