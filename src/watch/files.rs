//! Noticing that the watched file was saved: the platform's file notifications (`notify`:
//! inotify, FSEvents, ReadDirectoryChangesW) on the file's folder, plus a cheap check of the
//! file's size and time every second, for the file systems that send no notifications
//! (network mounts, some containers) and for a folder removed and made again.
//!
//! The folder is watched, not the file: editors save by writing a temporary file and
//! renaming it over the old one, which a watch on the old file's inode would lose.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, SystemTime};

use notify::{RecursiveMode, Watcher as _};

/// What [`FileWatch::wait`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// A notification about the file.
    Event,
    /// Nothing within the time.
    Nothing,
}

/// The watch on one file.
pub struct FileWatch {
    path: PathBuf,
    name: std::ffi::OsString,
    events: Receiver<notify::Result<notify::Event>>,
    // Kept alive: dropping it stops the notifications.
    _watcher: Option<notify::RecommendedWatcher>,
    last_stat: Option<(u64, SystemTime)>,
}

impl FileWatch {
    /// Starts watching `path` (its folder must exist). When the platform's notifications
    /// cannot be used, the watch still works by the periodic check, and the reason is
    /// returned to tell the user.
    pub fn new(path: &Path) -> (FileWatch, Option<String>) {
        let (sender, events) = channel();
        let folder = path.parent().unwrap_or(Path::new("."));
        let watcher = notify::recommended_watcher(sender).and_then(|mut w| {
            w.watch(folder, RecursiveMode::NonRecursive)?;
            Ok(w)
        });
        let (watcher, notice) = match watcher {
            Ok(w) => (Some(w), None),
            Err(e) => (
                None,
                Some(format!(
                    "file notifications are not available ({e}): checking {} every second instead",
                    path.display()
                )),
            ),
        };
        let watch = FileWatch {
            path: path.to_path_buf(),
            name: path.file_name().unwrap_or_default().to_owned(),
            events,
            _watcher: watcher,
            last_stat: stat(path),
        };
        (watch, notice)
    }

    /// Waits up to `timeout` for a notification about the file (others in its folder, the
    /// results file among them, are skipped).
    pub fn wait(&self, timeout: Duration) -> Seen {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Ok(event)) if self.concerns(&event) => return Seen::Event,
                // An error of the notification backend (queue overflow): look at the file.
                Ok(Err(_)) => return Seen::Event,
                Ok(Ok(_)) => {}
                Err(RecvTimeoutError::Timeout) => return Seen::Nothing,
                // The backend stopped: the periodic check goes on; do not spin.
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(left);
                    return Seen::Nothing;
                }
            }
        }
    }

    /// Whether the file's size or modification time changed since the last call.
    pub fn stat_changed(&mut self) -> bool {
        let now = stat(&self.path);
        let changed = now != self.last_stat;
        self.last_stat = now;
        changed
    }

    fn concerns(&self, event: &notify::Event) -> bool {
        // Opening or reading the file (the watcher's own reads among them) changes nothing.
        if matches!(
            event.kind,
            notify::EventKind::Access(notify::event::AccessKind::Open(_))
        ) || matches!(
            event.kind,
            notify::EventKind::Access(notify::event::AccessKind::Read)
        ) || matches!(
            event.kind,
            notify::EventKind::Access(notify::event::AccessKind::Close(
                notify::event::AccessMode::Read
            ))
        ) {
            return false;
        }
        event
            .paths
            .iter()
            .any(|p| p.file_name() == Some(self.name.as_os_str()))
    }
}

fn stat(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_over_the_file_is_seen_and_other_files_are_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("reply.md");
        std::fs::write(&path, "a").expect("write");
        let (watch, notice) = FileWatch::new(&path);
        assert_eq!(notice, None, "inotify works here");
        std::fs::write(dir.path().join("results.md"), "r").expect("write");
        assert_eq!(watch.wait(Duration::from_millis(300)), Seen::Nothing);
        // As editors save: a temporary file renamed over the watched one.
        std::fs::write(dir.path().join(".reply.md.tmp"), "b").expect("write");
        std::fs::rename(dir.path().join(".reply.md.tmp"), &path).expect("rename");
        assert_eq!(watch.wait(Duration::from_secs(5)), Seen::Event);
    }
}
