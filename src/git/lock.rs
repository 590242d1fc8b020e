//! One loaf operation per repository at a time: a lock file in the git dir.
//!
//! The file is created atomically (`create_new`) and names its holder (pid, command, start
//! time). A second operation polls for a short while, then gives up naming the holder. A lock
//! left by a process that no longer runs (killed, crashed) is recovered: the recovery itself
//! is serialized by a second, short-lived file, and the lock is re-read under it, so two
//! processes recovering at once cannot both win.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// How often a held lock is polled.
const POLL: Duration = Duration::from_millis(20);
/// An unreadable lock file older than this was left by a crash while it was being written.
const STALE_EMPTY: Duration = Duration::from_secs(2);
/// A recovery file older than this was left by a crash during recovery.
const STALE_RECOVERY: Duration = Duration::from_secs(10);

/// Who holds the lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Process id.
    pub pid: u32,
    /// The command it runs (`apply`, `undo`, …).
    pub command: String,
    /// Seconds since the Unix epoch when it took the lock.
    pub since: u64,
    /// When the process started (Linux: clock ticks after boot, `/proc/<pid>/stat`), so that
    /// a pid reused by another process is not taken for the holder. Absent where unknown
    /// (and in locks written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another loaf operation holds it.
    #[error(
        "another git-loaf operation is running in this repository: `git loaf {}` (pid {}, since {} s ago)",
        .holder.command, .holder.pid, .age_secs
    )]
    Busy {
        /// The holder.
        holder: Holder,
        /// How long it has held the lock.
        age_secs: u64,
    },
    /// Another loaf operation has just created the lock file and not yet written it.
    #[error(
        "another git-loaf operation is starting in this repository (its lock file is not written yet)"
    )]
    Starting,
    /// The lock file cannot be created or read.
    #[error("cannot use the lock file {}: {error}", .path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

/// A held lock; released when dropped.
#[derive(Debug)]
pub struct RepoLock {
    path: PathBuf,
    holder: Holder,
    recovered: Option<Holder>,
}

impl RepoLock {
    /// Takes the lock `<git_dir>/loaf/lock` for `command`, waiting up to `wait` while another
    /// live process holds it.
    pub fn acquire(git_dir: &Path, command: &str, wait: Duration) -> Result<RepoLock, LockError> {
        let dir = git_dir.join("loaf");
        let path = dir.join("lock");
        let io = |error| LockError::Io {
            path: path.clone(),
            error,
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let holder = Holder {
            pid: std::process::id(),
            command: command.to_owned(),
            since: now_secs(),
            started: start_time(std::process::id()),
        };
        let deadline = Instant::now() + wait;
        let mut recovered = None;
        loop {
            match create(&path, &holder) {
                Ok(()) => {
                    return Ok(RepoLock {
                        path,
                        holder,
                        recovered,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(e)),
            }
            match read_holder(&path) {
                Some(current) if !is_running(&current) => {
                    if recover(&path, Some(&current)).map_err(io)? {
                        recovered = Some(current);
                    }
                }
                Some(current) if Instant::now() >= deadline => {
                    let age_secs = now_secs().saturating_sub(current.since);
                    return Err(LockError::Busy {
                        holder: current,
                        age_secs,
                    });
                }
                // Unreadable and old: its writer died between creating and filling it.
                None if age(&path).is_some_and(|a| a > STALE_EMPTY) => {
                    recover(&path, None).map_err(io)?;
                }
                // Unreadable and young: its writer is filling it right now, so it is held.
                None if Instant::now() >= deadline && path.exists() => {
                    return Err(LockError::Starting);
                }
                // Held, or being written right now: try again.
                _ => std::thread::sleep(POLL),
            }
        }
    }

    /// When the filesystem says the lock file was made (its own clock and granularity), if
    /// it can tell.
    pub fn created_at(&self) -> Option<std::time::SystemTime> {
        std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok()
    }

    /// Who holds it (this process).
    pub fn holder(&self) -> &Holder {
        &self.holder
    }

    /// The dead process whose lock this one replaced, if any: it may have left git's own
    /// lock files behind.
    pub fn recovered(&self) -> Option<&Holder> {
        self.recovered.as_ref()
    }
}

impl Drop for RepoLock {
    fn drop(&mut self) {
        // Only remove the lock if it is still ours (a bug elsewhere must not free another's).
        if read_holder(&self.path).is_some_and(|h| h == self.holder) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn create(path: &Path, holder: &Holder) -> std::io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    let text = serde_json::to_string(holder).map_err(std::io::Error::other)?;
    // No fsync: the lock only has to outlive this process, not the machine.
    file.write_all(text.as_bytes())
}

fn read_holder(path: &Path) -> Option<Holder> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Removes a lock whose holder is dead (`dead`), or that never got a holder written
/// (`None`), unless another process replaced it meanwhile. True when this call removed it.
fn recover(path: &Path, dead: Option<&Holder>) -> std::io::Result<bool> {
    let guard = path.with_extension("recover");
    match OpenOptions::new().write(true).create_new(true).open(&guard) {
        Ok(_) => {
            let removed = read_holder(path).as_ref() == dead && std::fs::remove_file(path).is_ok();
            std::fs::remove_file(&guard)?;
            Ok(removed)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Someone else is recovering; a recovery file left by a crash is cleared.
            if age(&guard).is_some_and(|a| a > STALE_RECOVERY) {
                let _ = std::fs::remove_file(&guard);
            }
            std::thread::sleep(POLL);
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// How long ago a file was last written.
fn age(path: &Path) -> Option<Duration> {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()?
        .elapsed()
        .ok()
}

/// Whether the holder still runs: a process with its pid exists and, where start times are
/// known, started when the holder did (otherwise the pid was reused: the holder is dead).
fn is_running(holder: &Holder) -> bool {
    if Path::new("/proc/self").exists() {
        return match (start_time(holder.pid), holder.started) {
            (None, _) => false,
            (Some(now), Some(recorded)) => now == recorded,
            (Some(_), None) => true,
        };
    }
    std::process::Command::new("kill")
        .args(["-0", &holder.pid.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// When process `pid` started, in clock ticks after boot (field 22 of `/proc/<pid>/stat`);
/// `None` when it does not run or this is not Linux.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces and parentheses.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_operation_waits_then_names_the_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = RepoLock::acquire(dir.path(), "apply", Duration::ZERO).expect("free");
        let err =
            RepoLock::acquire(dir.path(), "undo", Duration::from_millis(100)).expect_err("held");
        let message = err.to_string();
        assert!(
            message.starts_with(&format!(
                "another git-loaf operation is running in this repository: `git loaf apply` (pid {}",
                std::process::id()
            )),
            "{message}"
        );
        drop(first);
        assert!(
            RepoLock::acquire(dir.path(), "undo", Duration::ZERO).is_ok(),
            "released on drop"
        );
    }

    #[test]
    fn a_lock_of_a_dead_process_is_recovered() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let dead_pid = child.id();
        child.wait().expect("wait");
        std::fs::create_dir_all(dir.path().join("loaf")).expect("mkdir");
        let stale = Holder {
            pid: dead_pid,
            command: "apply".into(),
            since: 1,
            started: None,
        };
        std::fs::write(
            dir.path().join("loaf/lock"),
            serde_json::to_string(&stale).expect("json"),
        )
        .expect("write");
        let lock =
            RepoLock::acquire(dir.path(), "apply", Duration::from_millis(500)).expect("recovered");
        assert_eq!(lock.holder().pid, std::process::id());
    }

    fn write_lock(dir: &Path, holder: &Holder) {
        std::fs::create_dir_all(dir.join("loaf")).expect("mkdir");
        std::fs::write(
            dir.join("loaf/lock"),
            serde_json::to_string(holder).expect("json"),
        )
        .expect("write");
    }

    /// A lock naming a pid that now belongs to another process (pid 1, and this very
    /// process) started at another time: the holder is dead, its lock recovered.
    #[test]
    fn a_lock_whose_pid_was_reused_is_recovered() {
        for pid in [1, std::process::id()] {
            let dir = tempfile::tempdir().expect("tempdir");
            let real = start_time(pid).expect("the process runs");
            let reused = Holder {
                pid,
                command: "apply".into(),
                since: now_secs() - 86_400,
                started: Some(real + 1),
            };
            write_lock(dir.path(), &reused);
            let lock = RepoLock::acquire(dir.path(), "apply", Duration::from_millis(500))
                .unwrap_or_else(|e| panic!("pid {pid}: recovered, not {e}"));
            assert_eq!(lock.recovered(), Some(&reused));
        }
    }

    /// The same lock with the process's true start time is held: the check is the start
    /// time, not the pid alone.
    #[test]
    fn a_lock_of_a_running_process_with_its_start_time_is_held() {
        let dir = tempfile::tempdir().expect("tempdir");
        let holder = Holder {
            pid: 1,
            command: "apply".into(),
            since: now_secs(),
            started: start_time(1),
        };
        write_lock(dir.path(), &holder);
        let err =
            RepoLock::acquire(dir.path(), "undo", Duration::from_millis(50)).expect_err("held");
        assert!(matches!(err, LockError::Busy { .. }), "{err}");
    }

    /// A lock file just created and not yet written belongs to a process starting right
    /// now: not stale. Deterministic: its age is far below the limit.
    #[test]
    fn a_fresh_empty_lock_is_held_not_stale() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("loaf")).expect("mkdir");
        std::fs::File::create(dir.path().join("loaf/lock")).expect("create");
        let err = RepoLock::acquire(dir.path(), "apply", Duration::ZERO).expect_err("held");
        assert!(matches!(err, LockError::Starting), "{err}");
        assert!(dir.path().join("loaf/lock").exists(), "left to its writer");
    }

    /// A lock released while the next operation waits is taken by it: waiting means waiting
    /// (the release comes long before the wait ends, so this does not race the clock).
    #[test]
    fn a_lock_released_during_the_wait_is_taken() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = RepoLock::acquire(dir.path(), "apply", Duration::ZERO).expect("free");
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(first);
        });
        let second = RepoLock::acquire(dir.path(), "undo", Duration::from_secs(60));
        release.join().expect("released");
        assert_eq!(
            second.expect("taken after the wait").holder().command,
            "undo"
        );
    }

    /// A lock whose holder is still writing it when the wait starts, and finishes with it
    /// meanwhile, is waited for, not reported as starting at once.
    #[test]
    fn a_lock_being_written_is_waited_for() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("loaf")).expect("mkdir");
        let path = dir.path().join("loaf/lock");
        std::fs::File::create(&path).expect("create");
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            std::fs::remove_file(&path).expect("its writer is done with it");
        });
        let taken = RepoLock::acquire(dir.path(), "apply", Duration::from_secs(60));
        writer.join().expect("done");
        assert!(taken.is_ok(), "{taken:?}");
    }

    /// The lock of a dead process, with `path`'s recovery file present (written at
    /// `written`); whether `acquire` takes the lock, run where a hang fails the test.
    fn recovering(
        dir: &Path,
        written: SystemTime,
        meanwhile: impl FnOnce() + Send + 'static,
    ) -> Result<RepoLock, LockError> {
        std::fs::create_dir_all(dir.join("loaf")).expect("mkdir");
        let dead = Holder {
            pid: u32::MAX - 1,
            command: "apply".into(),
            since: now_secs(),
            started: None,
        };
        create(&dir.join("loaf/lock"), &dead).expect("a dead holder's lock");
        let guard = std::fs::File::create(dir.join("loaf/lock.recover")).expect("create");
        guard.set_modified(written).expect("set mtime");
        let other = std::thread::spawn(meanwhile);
        let (tx, rx) = std::sync::mpsc::channel();
        let dir = dir.to_path_buf();
        std::thread::spawn(move || {
            let _ = tx.send(RepoLock::acquire(&dir, "undo", Duration::from_secs(60)));
        });
        let taken = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("acquire returns instead of waiting forever");
        other.join().expect("the other recovery");
        taken
    }

    /// Another process is recovering the dead holder's lock: the next waits for it, then
    /// takes the lock.
    #[test]
    fn a_recovery_in_progress_elsewhere_is_waited_for() {
        let dir = tempfile::tempdir().expect("tempdir");
        let guard = dir.path().join("loaf/lock.recover");
        let taken = recovering(dir.path(), SystemTime::now(), move || {
            std::thread::sleep(Duration::from_millis(200));
            let _ = std::fs::remove_file(guard);
        });
        assert!(taken.is_ok(), "{taken:?}");
    }

    /// A recovery file left by a crash long ago is cleared, and the lock taken.
    #[test]
    fn a_recovery_file_left_by_a_crash_is_cleared() {
        let dir = tempfile::tempdir().expect("tempdir");
        let long_ago = SystemTime::now() - Duration::from_secs(600);
        let taken = recovering(dir.path(), long_ago, || {});
        assert!(taken.is_ok(), "{taken:?}");
    }

    #[test]
    fn an_empty_lock_left_by_a_crash_is_recovered() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("loaf")).expect("mkdir");
        let file = std::fs::File::create(dir.path().join("loaf/lock")).expect("create");
        let old = SystemTime::now() - Duration::from_secs(60);
        file.set_modified(old).expect("set mtime");
        assert!(RepoLock::acquire(dir.path(), "apply", Duration::from_millis(500)).is_ok());
    }

    #[test]
    fn threads_racing_for_the_lock_never_hold_it_together() {
        let dir = tempfile::tempdir().expect("tempdir");
        let holders = std::sync::atomic::AtomicUsize::new(0);
        let max = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20 {
                        // Same pid for all threads: the holder check is per process, so the
                        // file itself is what serializes them here.
                        if let Ok(lock) =
                            RepoLock::acquire(dir.path(), "apply", Duration::from_secs(5))
                        {
                            let now = holders.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                            max.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(1));
                            holders.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                            drop(lock);
                        }
                    }
                });
            }
        });
        assert_eq!(max.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
