//! git-loaf applies what an LLM wrote — file edits, reads and shell commands as NESL blocks in
//! its reply — to a git repository as one transaction.
//!
//! The pipeline, one stage per module, data flowing one way:
//!
//! ```text
//! reply text ──nesl──▶ blocks + syntax errors ──actions──▶ validated actions ──exec──▶ results
//!                                       (all of it staged and committed by tx/)
//! ```
//!
//! The user's operations (`apply`, `undo`/`redo`, `take`/`drop`, `log`/`show`) are in
//! [`ops`], one file each, as the sequence of steps they take; the transaction engine they
//! drive (stage, publish, recovery, operation log) is [`tx`], on the git plumbing of [`git`]
//! (the only code that uses git2), which imports nothing above [`paths`].
//! [`watch`] is the listener on top of them: each reply saved or copied, applied once.
//!
//! [`nesl`] is the syntax, exactly as the reference parser; [`input`] reads a reply safely.
//! [`api`] is the library surface a program built on git-loaf uses (lorch does).
//! The front doors translate and render: the command line ([`cli`]), the MCP server
//! ([`mcp`]) and the agents' hooks ([`agents`]) each build an operation's request and show
//! the answer [`ops`] gives (its [`ops::Response`] or [`ops::OpError`]); a reply is parsed
//! and checked once ([`ops::check`]) and that check is what runs.
#![warn(missing_docs)]
// No function past ~100 lines (the threshold is clippy.toml's): each operation reads as a
// list of named steps (STYLE.md). CI's `cargo clippy -D warnings` holds it.
#![warn(clippy::too_many_lines)]

// The library surface lorch uses (api.rs); the modules below stay reachable for this
// crate's own tests and benches.
pub mod api;

pub mod actions;
pub(crate) mod agents;
pub mod cli;
pub mod config;
pub mod exec;
pub mod git;
pub(crate) mod input;
pub mod instructions;
pub mod mcp;
pub mod nesl;
pub mod notice;
pub mod ops;
pub(crate) mod paths;
pub(crate) mod progress;
pub mod report;
pub mod tx;
pub(crate) mod watch;

pub use ops::loaf::{Loaf, execute};
