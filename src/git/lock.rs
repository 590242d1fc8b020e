//! One loaf operation per repository at a time: an exclusive `flock` on `<git dir>/loaf/lock`.
//!
//! The file stays between operations (nothing is created or removed per operation); holding
//! the lock is holding the `flock`, which the kernel releases when its process ends however it
//! ends, so a crash never leaves a lock to recover. While held, the file names its holder
//! (pid, command, start time) for the message a second operation prints after polling for a
//! short while; a clean release empties it, so a name found by the next holder is one of a
//! process that died holding it (it may have left git's own lock files behind:
//! [`RepoLock::recovered`]). An older git-loaf locked by the file's presence alone: a file
//! naming a live process that started when it says is still taken as held.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// How often a held lock is polled.
const POLL: Duration = Duration::from_millis(20);

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
    /// Another loaf operation has just taken the lock and not yet written its name.
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
pub(crate) struct RepoLock {
    file: File,
    /// Who holds it (read by the tests).
    #[cfg(test)]
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
        loop {
            // Opened again each round: an older git-loaf may have replaced the file.
            let mut file = open_lock_file(&path).map_err(io)?;
            let named = match file.try_lock() {
                Ok(()) => {
                    let left = read_holder(&mut file);
                    match left {
                        // An older git-loaf holding it by the file alone.
                        Some(other) if !same_process(&other, &holder) && is_running(&other) => {
                            Some(other)
                        }
                        _ => {
                            write_holder(&mut file, &holder).map_err(io)?;
                            let recovered = left.filter(|h| *h != holder);
                            return Ok(RepoLock {
                                file,
                                #[cfg(test)]
                                holder,
                                recovered,
                            });
                        }
                    }
                }
                Err(TryLockError::WouldBlock) => read_holder(&mut file),
                Err(TryLockError::Error(e)) => return Err(io(e)),
            };
            // Closing the file releases a flock this round took.
            drop(file);
            if Instant::now() >= deadline {
                return Err(match named {
                    Some(current) => {
                        let age_secs = now_secs().saturating_sub(current.since);
                        LockError::Busy {
                            holder: current,
                            age_secs,
                        }
                    }
                    // Held, its holder not written yet.
                    None => LockError::Starting,
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// When the filesystem says the lock was taken (the holder's name written: its own clock
    /// and granularity), if it can tell.
    pub fn created_at(&self) -> Option<std::time::SystemTime> {
        self.file.metadata().and_then(|m| m.modified()).ok()
    }

    /// Who holds it (this process).
    #[cfg(test)]
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
        // Emptied before the flock goes (with the file, when it closes): the next holder then
        // knows this one finished.
        let _ = self.file.set_len(0);
    }
}

/// The lock file, made when missing and never truncated on opening: its content names
/// the holder, which only the holder of the flock may change.
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// Whether two holders are the same process (a long-lived one takes the lock many times).
fn same_process(a: &Holder, b: &Holder) -> bool {
    a.pid == b.pid && a.started == b.started
}

/// The holder the open lock file names, if it names one.
fn read_holder(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// Replaces the lock file's content with `holder`. No fsync: the lock only has to outlive
/// this process, not the machine.
fn write_holder(file: &mut File, holder: &Holder) -> std::io::Result<()> {
    let text = serde_json::to_string(holder).map_err(std::io::Error::other)?;
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(text.as_bytes())
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
    fn a_lock_a_dead_process_left_is_taken_and_reported() {
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
        // It died holding it (a clean release empties the file): the next holder is told,
        // to clear what it may have left.
        assert_eq!(lock.recovered(), Some(&stale));
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

    /// Another file description holding the flock on the lock file, as another process's
    /// operation does.
    fn flocked(dir: &Path, holder: Option<&Holder>) -> File {
        std::fs::create_dir_all(dir.join("loaf")).expect("mkdir");
        let mut file = open_lock_file(&dir.join("loaf/lock")).expect("open");
        file.lock().expect("flock");
        if let Some(holder) = holder {
            write_holder(&mut file, holder).expect("named");
        }
        file
    }

    /// Taken (the flock held) but not yet named: starting, whatever the file says.
    #[test]
    fn a_lock_taken_but_not_yet_named_is_starting() {
        let dir = tempfile::tempdir().expect("tempdir");
        let _held = flocked(dir.path(), None);
        let err = RepoLock::acquire(dir.path(), "apply", Duration::ZERO).expect_err("held");
        assert!(matches!(err, LockError::Starting), "{err}");
    }

    /// Held through the flock by a holder whose pid no longer runs (so the file alone
    /// would say stale): still held, and named. Only the flock's release frees it.
    #[test]
    fn a_flocked_lock_is_held_whatever_its_file_says_and_taken_once_released() {
        let dir = tempfile::tempdir().expect("tempdir");
        let gone = Holder {
            pid: u32::MAX - 1,
            command: "squash".into(),
            since: now_secs(),
            started: None,
        };
        let held = flocked(dir.path(), Some(&gone));
        let err = RepoLock::acquire(dir.path(), "apply", Duration::ZERO).expect_err("held");
        assert!(err.to_string().contains("`git loaf squash`"), "{err}");
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            let held = held;
            held.set_len(0).expect("emptied");
            drop(held);
        });
        let taken = RepoLock::acquire(dir.path(), "apply", Duration::from_secs(60));
        release.join().expect("released");
        assert_eq!(taken.expect("taken").recovered(), None, "released cleanly");
    }

    /// The lock file stays between operations, empty when free: no file is created or
    /// removed per operation, and a free lock is never taken for a crashed one.
    #[test]
    fn a_released_lock_leaves_its_file_empty_and_the_next_takes_it_as_free() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("loaf/lock");
        let first = RepoLock::acquire(dir.path(), "apply", Duration::ZERO).expect("free");
        assert!(
            std::fs::read_to_string(&path)
                .expect("named")
                .contains("\"apply\"")
        );
        drop(first);
        assert_eq!(std::fs::read_to_string(&path).expect("stays"), "");
        let second = RepoLock::acquire(dir.path(), "undo", Duration::ZERO).expect("free");
        assert_eq!(second.recovered(), None);
    }

    /// A name this very process left in the file (a release that could not empty it) is
    /// not a live holder of an older git-loaf: a long-lived process (watch, the MCP server)
    /// takes the lock again instead of waiting for itself forever.
    #[test]
    fn a_name_this_process_left_does_not_block_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let earlier = Holder {
            pid: std::process::id(),
            command: "apply".into(),
            since: 1,
            started: start_time(std::process::id()),
        };
        write_lock(dir.path(), &earlier);
        let lock = RepoLock::acquire(dir.path(), "undo", Duration::ZERO).expect("taken");
        assert_eq!(lock.recovered(), Some(&earlier));
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
                        // Same pid for all threads: the flock (one per open file) is what
                        // serializes them here.
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
