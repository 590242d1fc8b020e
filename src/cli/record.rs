//! `git loaf record begin|commit`: an agent's turn (it edits files itself) as one commit.

use std::ffi::OsString;

use clap::{Args, Subcommand};

use super::examples::examples;
use super::{CliError, Outcome};
use crate::git::short_oid;
use crate::ops::record::{self, BeginOptions, Committed, Ended};
use crate::report::inert::{inert, inert_bytes};

/// Record an agent's turn (it edits files itself) as one undoable commit.
///
/// `begin` takes a checkpoint of your working tree and index; `commit` makes one commit
/// holding exactly the paths that changed since, on HEAD. Your uncommitted work from before
/// `begin` stays uncommitted and out of the commit (a file you had changed that the agent
/// changed too is committed as it is now, and `git loaf show` says so). The commit is an
/// apply: `git loaf undo`, `redo`, `log`, `show` and `squash --session ID` work on it. A
/// `begin` whose turn never ended is committed by the next `begin` of its session (or
/// forgotten, when it cannot be; your files stay as they are). `git loaf agent-hook` runs
/// these from an agent's hooks.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("One turn by hand", &[
        "git loaf record begin --session s1 --agent claude-code --prompt \"Fix the parser\"",
        "git loaf record commit --session s1",
    ]),
    ("Fold the session's turns into one commit", &["git loaf squash --session s1"]),
]))]
pub struct RecordArgs {
    #[command(subcommand)]
    step: RecordStep,
}

#[derive(Debug, Subcommand)]
enum RecordStep {
    /// Checkpoint the working tree and index: the turn starts.
    Begin(BeginArgs),
    /// Commit what changed since `begin` (nothing changed: no commit).
    Commit(CommitArgs),
}

/// `record begin`'s options.
#[derive(Debug, Args)]
struct BeginArgs {
    /// The session (one turn at a time per session; default: `default`).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The agent, recorded as `Assisted-by: NAME`.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// The user's prompt: its first line is the commit's subject (any text: control
    /// characters and bytes that are not UTF-8 are kept escaped, `\e`, `\0`, `\xff`).
    #[arg(long, value_name = "TEXT")]
    prompt: Option<OsString>,
}

/// `record commit`'s options.
#[derive(Debug, Args)]
struct CommitArgs {
    /// The session given to `begin`.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
}

/// Runs `git loaf record`.
pub fn run(args: &RecordArgs) -> Result<Outcome, CliError> {
    let cwd = super::current_dir()?;
    match &args.step {
        RecordStep::Begin(begin) => {
            let begun = record::begin(
                &cwd,
                &BeginOptions {
                    session: begin.session.clone(),
                    agent: begin.agent.clone(),
                    prompt: begin
                        .prompt
                        .as_deref()
                        .map(|p| inert_bytes(p.as_encoded_bytes())),
                },
            )?;
            super::print_notices(&begun.notices);
            super::print_out(&format!(
                "record: began a turn of session {}\n",
                inert(&begun.session)
            ))?;
        }
        RecordStep::Commit(commit) => {
            let committed = record::commit(&cwd, commit.session.as_deref())?;
            super::print_notices(&committed.notices);
            super::print_out(&committed_line(&committed))?;
        }
    }
    Ok(Outcome::Success)
}

/// The one line `record commit` prints.
pub fn committed_line(committed: &Committed) -> String {
    let session = inert(&committed.session);
    match &committed.ended {
        None => format!(
            "record: no turn of session {session} to commit (`git loaf record begin` starts one)\n"
        ),
        Some(Ended::Unchanged) => {
            format!("record: nothing changed in this turn of session {session}; no commit\n")
        }
        Some(Ended::Committed(r)) => format!(
            "record: committed {} {} ({} file{}) · apply {}\n",
            short_oid(r.commit),
            r.subject,
            r.paths.len(),
            if r.paths.len() == 1 { "" } else { "s" },
            r.id
        ),
    }
}
