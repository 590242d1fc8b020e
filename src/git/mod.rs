//! Git plumbing, the only module that imports git2 (the user's operations that use it are in
//! `ops`, which hold its [`Oid`]s but call no git2 themselves). The bottom layer: it imports
//! nothing of the crate but [`crate::paths`]; what it records it takes as plain data. The
//! transaction engine built on it is [`crate::tx`].
//!
//! Each file is one idea of git: the repository found and its paths ([`repo`]), objects and
//! trees built and compared ([`treebuild`], [`treediff`]), the index file and its lock
//! ([`index`], [`index_lock`]), refs and HEAD ([`refs`]), commits, the user's identity and
//! signing ([`commit`], [`identity`], [`sign`]), notes and local reports ([`notes`],
//! [`reports`]), conversions and filter drivers ([`filters`], [`filter_process`]), files as
//! git leaves them, the fast dirty check ([`quickscan`]), untracked secret files
//! ([`secret_files`]), repository states refused ([`states`]), durability and the
//! repository lock ([`durable`], [`lock`]).

pub mod blob_cache;
pub mod commit;
pub mod durable;
pub mod exclude;
pub mod file_entry;
pub mod file_history;
pub(crate) mod files;
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
pub mod words;

/// An object id, as the operations hold commits and trees between plumbing calls.
pub use git2::Oid;

/// An open repository, as the operations hand it from one plumbing call to the next.
pub use git2::Repository;

pub use repo::{init, short_id, short_oid, worktree_root};
