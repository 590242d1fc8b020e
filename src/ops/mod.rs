//! The user's operations, one file each, written as the sequence of steps DESIGN describes:
//! [`apply`] (lock → checkpoint → stage → actions → commit → publish), [`undo`] (undo and
//! redo: walking the operation log), [`take`] (take or drop an apply that was kept, not
//! published) and [`log`] (`log` and `show`: reading the history back). The git work under
//! them — the lock, checkpoints, the stage, commits, publish, the operation log — is the
//! plumbing in [`crate::git`].

pub mod apply;
pub mod log;
pub mod take;
pub mod undo;
