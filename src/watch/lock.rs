//! One watcher per repository: a lock file in the git dir, held for the watcher's whole life.
//!
//! It is not the lock of loaf operations (`git/lock.rs`): that one is taken only for the
//! moment of each apply, so that `git loaf undo` and friends keep working while a watcher
//! runs. Two watchers on one repository would both apply the same saved reply, so a second
//! one is refused, naming the first (pid, start time, what it watches). A lock left by a
//! watcher that was killed is taken over.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Who watches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watcher {
    /// Process id.
    pub pid: u32,
    /// Seconds since the Unix epoch when it started.
    pub since: u64,
    /// What it watches (the file, and the clipboard when it does).
    pub watching: String,
}

/// Why the watcher lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum WatchLockError {
    /// Another watcher runs.
    #[error(
        "another `git loaf watch` is running for this repository: pid {}, started {} ({} ago), watching {}",
        .holder.pid,
        humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(.holder.since)),
        humantime::format_duration(std::time::Duration::from_secs(super::now_secs().saturating_sub(.holder.since))),
        .holder.watching
    )]
    Busy {
        /// The running watcher.
        holder: Watcher,
    },
    /// The lock file cannot be created or read.
    #[error("cannot use the watcher's lock file {}: {error}", .path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

/// The held lock; released when dropped.
#[derive(Debug)]
pub struct WatchLock {
    path: PathBuf,
    holder: Watcher,
}

impl WatchLock {
    /// Takes `<common git dir>/loaf/watch.lock` for this process.
    pub fn acquire(common_dir: &Path, watching: &str) -> Result<WatchLock, WatchLockError> {
        let dir = common_dir.join("loaf");
        let path = dir.join("watch.lock");
        let io = |error| WatchLockError::Io {
            path: path.clone(),
            error,
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let holder = Watcher {
            pid: std::process::id(),
            since: super::now_secs(),
            watching: watching.to_owned(),
        };
        // Two attempts: the second after removing a dead watcher's lock.
        for _ in 0..2 {
            match create(&path, &holder) {
                Ok(()) => return Ok(WatchLock { path, holder }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(e)),
            }
            match read(&path) {
                Some(current) if is_running(current.pid) => {
                    return Err(WatchLockError::Busy { holder: current });
                }
                // Dead, or unreadable (killed while writing it: a few bytes, written at once,
                // so an unreadable one is not being written now).
                _ => match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io(e)),
                },
            }
        }
        match read(&path) {
            Some(holder) => Err(WatchLockError::Busy { holder }),
            None => Err(io(std::io::Error::other(
                "another watcher keeps replacing it",
            ))),
        }
    }
}

impl Drop for WatchLock {
    fn drop(&mut self) {
        if read(&self.path).is_some_and(|h| h == self.holder) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn create(path: &Path, holder: &Watcher) -> std::io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    let text = serde_json::to_string(holder).map_err(std::io::Error::other)?;
    file.write_all(text.as_bytes())
}

fn read(path: &Path) -> Option<Watcher> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Whether a process with this pid runs (signal 0 tests for it without sending anything;
/// "permission denied" means it runs as another user).
fn is_running(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_watcher_is_refused_naming_the_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = WatchLock::acquire(dir.path(), ".loaf/reply.md").expect("free");
        let err = WatchLock::acquire(dir.path(), "other.md").expect_err("held");
        let message = err.to_string();
        assert!(
            message.starts_with(&format!(
                "another `git loaf watch` is running for this repository: pid {}, started 20",
                std::process::id()
            )),
            "{message}"
        );
        assert!(message.ends_with("watching .loaf/reply.md"), "{message}");
        drop(first);
        assert!(WatchLock::acquire(dir.path(), "x").is_ok(), "released");
    }

    #[test]
    fn a_dead_watchers_lock_is_taken_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let dead = child.id();
        child.wait().expect("wait");
        std::fs::create_dir_all(dir.path().join("loaf")).expect("mkdir");
        let stale = Watcher {
            pid: dead,
            since: 1,
            watching: "x".into(),
        };
        std::fs::write(
            dir.path().join("loaf/watch.lock"),
            serde_json::to_string(&stale).expect("json"),
        )
        .expect("write");
        let lock = WatchLock::acquire(dir.path(), "y").expect("taken over");
        assert_eq!(lock.holder.pid, std::process::id());
        // Garbage left by a crash while writing is taken over too.
        drop(lock);
        std::fs::write(dir.path().join("loaf/watch.lock"), "{\"pi").expect("write");
        assert!(WatchLock::acquire(dir.path(), "y").is_ok());
    }
}
