//! Git plumbing, the only module that imports git2 (the user's operations that use it are in
//! [`crate::ops`], which hold its [`Oid`]s but call no git2 themselves): the lock and crash
//! recovery ([`session`], [`lock`]), the user's uncommitted work ([`checkpoint`]), the
//! staging worktree ([`stage`]) and the ignored files shown through it ([`visible`]), trees
//! built and compared ([`treebuild`], [`treediff`]), 3-way merges ([`merge`]), commits,
//! trailers and notes ([`commit`]) and reading them back ([`commits`]), the refs operations
//! move and keep ([`refs`]), moving the branch and files ([`publish`]) and the operation log
//! ([`oplog`]).
//! The repository's own git hooks run as `git commit` runs them ([`githooks`]), and commits
//! are signed by git itself ([`sign`]).

pub mod carry;
pub mod checkpoint;
pub mod commit;
pub mod commits;
pub mod durable;
pub mod exclude;
pub mod extras;
mod files;
pub mod filter_process;
pub mod filters;
#[cfg(unix)]
mod fresh_checkout;
pub mod githooks;
pub mod head;
pub mod identity;
pub mod index;
pub mod index_lock;
pub mod lock;
pub mod merge;
pub mod notes;
pub mod oplog;
pub mod publish;
mod publish_files;
pub mod push;
pub mod quickscan;
pub mod recovery;
pub mod refs;
pub mod repo;
pub mod reports;
pub mod session;
pub mod sign;
pub mod squash;
pub mod stage;
mod stage_swap;
pub mod states;
#[cfg(test)]
mod testing;
mod transition;
pub mod treebuild;
pub mod treediff;
pub mod visible;

/// An object id, as the operations hold commits and trees between plumbing calls.
pub use git2::Oid;

/// An open repository, as the operations hand it from one plumbing call to the next.
pub use git2::Repository;

pub use repo::{init, short_id, short_oid, worktree_root};
