//! The user's operations, one file each, written as the sequence of steps docs/apply.md and
//! docs/history.md describe: [`apply`] (lock → checkpoint → stage → actions → commit →
//! publish), [`undo`] (undo and redo: walking the operation log), [`take`] (take or drop an
//! apply that was kept, not published), [`record`] (an agent's turns as commits), [`config`]
//! (which loaf.yml governs), [`review`] (rejecting an AI commit's hunks, the model
//! told), [`saved`] (work moved aside, and its restore), [`status`] (what
//! is in effect), [`log`] (`log` and `show`: reading the history back) and [`gc`] (pruning
//! the operation log, packing what git-loaf wrote).
//!
//! A reply is checked once ([`check`]) and its blocks run by [`execute`], inside a
//! transaction or in place ([`loaf`], the library's entry). Every front door (the command
//! line, the MCP server, the watcher, the agents' hooks) calls these and gets the same
//! answer ([`Response`], [`OpError`]), which it only renders. The git work under them — the
//! lock, checkpoints, the stage, commits, publish, the operation log — is the transaction
//! engine in [`crate::tx`].

pub mod apply;
pub mod check;
pub mod config;
mod error;
mod exec_changes;
pub mod execute;
pub mod gc;
pub mod instructions;
pub mod loaf;
pub mod log;
pub mod readiness;
pub(crate) mod record;
pub(crate) mod record_tool;
pub mod reply_applies;
mod response;
pub mod review;
pub(crate) mod saved;
pub mod squash;
pub(crate) mod status;
pub(crate) mod step;
pub(crate) mod take;
mod targets;
pub mod undo;

pub use error::{ErrorKind, OpError};
pub use response::{Outcome, Response};

use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// A short id for an operation: the first 6 hex digits of a hash of the time, the process
/// and the reply (unique enough within one repository's history, short enough to type).
pub(crate) fn new_id(seed: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut hash = Sha256::new();
    hash.update(nanos.to_le_bytes());
    hash.update(std::process::id().to_le_bytes());
    hash.update(seed.as_bytes());
    hash.finalize()
        .iter()
        .take(3)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_six_hex_digits_and_differ() {
        let a = new_id("x");
        let b = new_id("x");
        assert_eq!(a.len(), 6);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b, "the time differs");
    }
}
