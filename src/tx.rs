//! The transaction engine, above the git plumbing of [`crate::git`] (which never imports
//! it), from the bottom up:
//!
//! - what is ignored or not committed, and so never reaches the stage or a commit
//!   ([`visible`], [`extras`]); record mode's turn state ([`turn`]).
//! - [`oplog`]: every loaf operation that changed something, newest last; [`commits`] reads
//!   commits back through it.
//! - [`checkpoint`]: the user's uncommitted work recorded as git objects; [`carry`] takes it
//!   across a step.
//! - the transition and its journal (`transition`), its files written (`publish_files`), the
//!   stage's files moved instead (`stage_swap`), and a fresh stage's first checkout
//!   (`fresh_checkout`).
//! - [`stage`]: the linked worktree where actions, `exec` and hooks run; [`githooks`] runs the
//!   repository's own hooks in it.
//! - [`publish`]: moving the user's branch, index and files as one step; [`head`] and
//!   [`merge`] publish steps and 3-way merges with it.
//! - [`recovery`]: finishing or rolling back what a crash interrupted.
//! - [`saved`]: work moved out of the user's files to make room, until `git loaf restore`.
//! - [`session`]: what every loaf command does first (repository, lock, recovery).

pub(crate) mod carry;
pub(crate) mod checkpoint;
pub(crate) mod commits;
#[cfg(unix)]
mod fresh_checkout;
pub(crate) mod githooks;
pub(crate) mod head;
mod last_look;
pub(crate) mod merge;
pub mod oplog;
pub(crate) mod ownership;
pub(crate) mod publish;
mod publish_files;
pub(crate) mod recovery;
pub(crate) mod saved;
pub mod session;

pub(crate) mod ignored_changes;
pub mod stage;
mod stage_records;
mod stage_swap;
mod transition;
pub(crate) mod turn;
pub mod visible_ignored;
