//! lorch: the local orchestrator of AI agents (docs/lorch.md), which drives them (builder,
//! reviewer, spec-maintainer) through implement → review → spec maintenance, talking NDJSON
//! over their stdio.
//!
//! A crate of its own on top of git-loaf's library, `git_loaf::api` (the builder applies
//! its replies through `git_loaf::api::apply`); git-loaf never depends on lorch. The
//! `lorch` binary is a thin `main` over [`cli::main`], so that tests can drive all of it
//! in-process.
//!
//! The foundation the orchestrator and the agent shim share:
//!
//! - [`protocol`]: the four envelopes (`command`, `event`, `heartbeat`, `log`) as
//!   serde types, and [`protocol::Message`], one line of the wire;
//! - [`validate`]: the spec's JSON Schemas (shipped in `lorch/schemas/`), compiled once, and
//!   [`validate::validate`]`(line) -> Result<Message, ProtocolError>`;
//! - [`ndjson`]: a line reader that never buffers more than the 256 KiB limit, and a writer;
//! - [`canonical`]: canonical JSON, the idempotency key and `snapshot_id`;
//! - [`manifest`]: a snapshot of the workspace, its files and its id;
//! - [`version`]: what a command is pinned to (`snapshot_id`, `code_hash`, `specs_hash`)
//!   and what an agent compares, strictly or by content (docs/lorch.md, "Supervision");
//! - [`safety`]: atomic 0600 writes, 0700 folders, paths confined to the workspace, secret
//!   values redacted;
//! - [`cli`]: the command line (docs/lorch.md, "Running it");
//! - [`agent`]: `lorch agent ROLE -- CMD…`, the shim that wraps an LLM command-line tool;
//! - [`git_exclude`]: lorch's record folders listed in `.git/info/exclude`, so that they
//!   never make `git loaf undo` or `squash` refuse.
//!
//! The orchestrator on top of it:
//!
//! - [`config`]: `lorch.json`, created with the defaults, checked against a schema;
//! - [`configure`]: `lorch config`, the interactive editor of `lorch.json`;
//! - [`store`]: the ledger, receipts, state and snapshots (docs/lorch.md, "What is
//!   recorded, and what survives a crash");
//! - [`records`]: where they go (the workspace's top, or `.lorch/` when the project has
//!   folders of those names);
//! - [`supervisor`]: agent processes, their stdout drained and checked on threads;
//! - [`run_state`]: the run as a state machine over its ledger;
//! - [`step_rules`]: the order of its steps and what ends one;
//! - [`scheduler`]: drives it: implement → review → spec maintenance, retries, restarts,
//!   resume;
//! - [`signals`]: SIGINT and SIGTERM noted, for the scheduler to record the abort;
//! - [`intake`]: the user's side of natural-language intake (`lorch run` without a task);
//! - [`transcript`]: the console lines;
//! - [`checks`]: `lorch doctor` and `lorch validate --schemas`;
//! - [`finished`]: `lorch validate --run ID`, the checks that a finished run passed.
#![warn(missing_docs)]

pub mod agent;
pub mod canonical;
pub mod checks;
pub mod cli;
pub mod config;
pub mod configure;
pub mod finished;
pub mod git_exclude;
pub mod intake;
pub mod manifest;
pub mod ndjson;
pub mod protocol;
pub mod records;
pub mod run_state;
pub mod safety;
pub mod scheduler;
pub mod signals;
pub mod step_rules;
pub mod store;
pub mod supervisor;
pub mod transcript;
pub mod validate;
pub mod version;

pub use protocol::Message;
pub use validate::{ProtocolError, validate};
