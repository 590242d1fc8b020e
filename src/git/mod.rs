//! Git plumbing, the only module that imports git2 (the user's operations that use it are in
//! `ops`, which hold its [`Oid`]s but call no git2 themselves). It imports nothing from the
//! layers above it (ops, report, cli, watch, run): what it records it takes as plain data.
//!
//! Two layers, imports going one way (down):
//!
//! - **Primitives**, in this folder, each one idea of git and none importing [`tx`]: the
//!   repository found and its paths ([`repo`]), objects and trees built and compared
//!   ([`treebuild`], [`treediff`]), the index file and its lock ([`index`], [`index_lock`]),
//!   refs and HEAD ([`refs`]), commits, the user's identity and signing ([`commit`],
//!   [`identity`], [`sign`]), notes and local reports ([`notes`], [`reports`]), conversions
//!   and filter drivers ([`filters`], [`filter_process`]), files as git leaves them, the fast
//!   dirty check ([`quickscan`]), what is ignored or not committed ([`visible`], [`extras`]),
//!   repository states refused ([`states`]), durability and the repository lock ([`durable`],
//!   [`lock`]).
//! - **Transactions** ([`tx`]): the user's work recorded ([`checkpoint`]), the stage
//!   ([`stage`]) and the repository's own hooks run in it ([`githooks`]), the transition and
//!   its journal, publishing ([`publish`]) and crash recovery ([`recovery`]), the operation
//!   log ([`oplog`]), and the session every command opens first ([`session`]).

pub mod blob_cache;
pub mod commit;
pub mod durable;
pub mod exclude;
pub mod extras;
pub mod file_entry;
pub mod file_history;
mod files;
pub mod filter_process;
pub mod filters;
pub mod hunks;
pub mod identity;
pub mod index;
pub mod index_lock;
pub mod lock;
pub mod notes;
pub(crate) mod pack_files;
pub mod pack_merge;
pub mod pack_write;
pub mod push;
pub mod quickscan;
pub mod refs;
pub mod repo;
pub mod reports;
pub mod secret_files;
pub mod sign;
pub mod squash;
pub mod states;
#[cfg(test)]
pub(crate) mod testing;
pub mod treebuild;
pub mod treediff;
pub mod turn;
pub mod tx;
pub mod visible;
pub mod words;

// The transaction machinery, under the names the operations have always used.
pub use tx::{
    carry, checkpoint, commits, githooks, head, merge, oplog, ownership, publish, recovery, saved,
    session, stage,
};

/// An object id, as the operations hold commits and trees between plumbing calls.
pub use git2::Oid;

/// An open repository, as the operations hand it from one plumbing call to the next.
pub use git2::Repository;

pub use repo::{init, short_id, short_oid, worktree_root};
