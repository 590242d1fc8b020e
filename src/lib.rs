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
//! The front doors translate and render: the command line ([`cli`]), the MCP server
//! ([`mcp`]) and the agents' hooks ([`agents`]).
#![warn(missing_docs)]
// No function past ~100 lines (the threshold is clippy.toml's): each operation reads as a
// list of named steps (STYLE.md). CI's `cargo clippy -D warnings` holds it.
#![warn(clippy::too_many_lines)]

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
pub mod ops;
pub(crate) mod paths;
pub(crate) mod progress;
pub mod report;
pub mod tx;
pub(crate) mod watch;

mod run;

pub use run::{Loaf, execute};
