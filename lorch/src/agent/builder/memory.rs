//! Why the last attempt at a command failed, kept by idempotency key in
//! `<state dir>/attempts/<sha256(ik)>.txt` (beside the receipts), so that lorch's retry of
//! the command (the same IK) tells the model what went wrong instead of sending it the
//! same prompt again, across a restarted agent too. Forgotten once the
//! command succeeds.

use std::path::{Path, PathBuf};

use crate::canonical::sha256_hex;
use crate::safety;

/// Bytes of the reason kept.
const MAX_REASON_BYTES: usize = 16 * 1024;

/// The memory of one command.
pub struct Memory {
    path: PathBuf,
}

impl Memory {
    /// The memory of the command with idempotency key `ik`.
    pub fn new(state_dir: &Path, ik: &str) -> Memory {
        Memory {
            path: state_dir
                .join("attempts")
                .join(format!("{}.txt", sha256_hex(ik.as_bytes()))),
        }
    }

    /// Why the last attempt failed, if one did.
    pub fn recall(&self) -> Option<String> {
        std::fs::read_to_string(&self.path)
            .ok()
            .filter(|t| !t.trim().is_empty())
    }

    /// Keeps `why` for the next attempt.
    pub fn remember(&self, why: &str) -> std::io::Result<()> {
        let why = crate::agent::clip(why, MAX_REASON_BYTES);
        safety::atomic_write(&self.path, why.as_bytes())
    }

    /// Forgets: the command succeeded.
    pub fn forget(&self) -> std::io::Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}
