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
//! git leaves them, blobs streamed into files ([`blob_stream`]), the fast dirty check ([`quickscan`]), untracked secret files
//! ([`secret_files`]), repository states refused ([`states`]), durability and the
//! repository lock ([`durable`], [`durable_pack`], [`lock`]); many files removed at once ([`remove_files`]).

pub(crate) mod blob_cache;
pub(crate) mod blob_stream;
pub(crate) mod commit;
pub(crate) mod durable;
pub(crate) mod durable_pack;
pub(crate) mod exclude;
pub(crate) mod file_entry;
pub(crate) mod file_history;
pub(crate) mod files;
pub(crate) mod filter_process;
pub(crate) mod filters;
pub mod hunks;
pub mod identity;
pub(crate) mod index;
pub(crate) mod index_lock;
pub(crate) mod lock;
pub(crate) mod notes;
pub(crate) mod pack_files;
pub(crate) mod pack_merge;
pub(crate) mod pack_write;
pub(crate) mod push;
pub mod quickscan;
pub(crate) mod refs;
pub(crate) mod remove_files;
pub(crate) mod repo;
pub(crate) mod reports;
pub(crate) mod secret_files;
pub(crate) mod sign;
pub(crate) mod squash;
pub mod states;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod treebuild;
pub(crate) mod treediff;
pub(crate) mod words;

/// An object id, as the operations hold commits and trees between plumbing calls.
pub use git2::Oid;

/// An open repository, as the operations hand it from one plumbing call to the next.
pub use git2::Repository;

pub use repo::{init, short_id, short_oid, worktree_root};
