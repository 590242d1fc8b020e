//! `git loaf watch`, the listener (docs/watch.md): each reply saved to a file (default
//! `.loaf/reply.md`) or, with `--clipboard`, copied to the clipboard is applied once, as an
//! ordinary apply, and its results are written beside the file (`results.md`) and put on the
//! clipboard, ready to paste back to the model.
//!
//! The loop (in `listener.rs`), in the order a save travels through it:
//!
//! ```text
//! save ──notify──▶ debounce ──▶ read ──readiness::inspect──▶ no blocks / still being written: wait
//!                                                 └──▶ complete: key ──record──▶ ran already: say
//!                                                 so
//!                                                                      └──▶ ops::apply ──▶
//!                                                                      results.md,
//!                                                                           clipboard, status line
//! ```
//!
//! - Exactly once: a reply's key is the hash of its blocks ([`crate::ops::readiness`]); the keys
//!   run so far are in the operation log and a small file ([`record`]), so a re-save, an editor's
//!   double write, a re-copy or a restart never runs a reply twice.
//! - The operation lock is taken by each apply and only for its duration, so `git loaf undo`
//!   works while the watcher runs; a second watcher is refused by the watcher's own lock
//!   ([`lock`]).
//! - Ctrl-C or SIGTERM ([`signal`]) stop the watcher between applies, never during one; an
//!   apply that fails (the lock busy, a merge in progress) is reported and retried while the
//!   reply stays as it is, and never stops the watcher.

pub mod clipboard;
pub mod files;
mod listener;
pub mod lock;
pub mod record;
pub mod results;
pub mod signal;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::git::exclude::{self, ExcludeError, LOAF_DIR_PATTERN};
use crate::tx::session::TxError;
use clipboard::Clipboard;
use files::FileWatch;
use listener::Listener;
use lock::{WatchLock, WatchLockError};
use record::AppliedReplies;

/// The default file, relative to the repository root.
pub const DEFAULT_FILE: &str = ".loaf/reply.md";

/// The line a new reply file starts with.
pub const FILE_HEADER: &str = "<!-- git loaf watch: replace this file's content with the model's whole reply and save; the results appear in results.md beside it -->\n";

/// What to watch and how.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Where the command runs.
    pub cwd: PathBuf,
    /// The file to watch; `None`: [`DEFAULT_FILE`] at the repository root.
    pub file: Option<PathBuf>,
    /// Also watch the clipboard.
    pub clipboard: bool,
    /// How long a file must stay unchanged after a notification before it is read.
    pub debounce: Duration,
    /// How often the clipboard is read.
    pub clipboard_poll: Duration,
    /// Stop after this many applies (tests, scripts).
    pub max_applies: Option<usize>,
    /// Stop when this file exists (tests).
    pub stop_file: Option<PathBuf>,
}

impl WatchOptions {
    /// The defaults for watching from `cwd`.
    pub fn new(cwd: &Path) -> WatchOptions {
        WatchOptions {
            cwd: cwd.to_path_buf(),
            file: None,
            clipboard: false,
            debounce: Duration::from_millis(150),
            clipboard_poll: Duration::from_millis(500),
            max_applies: None,
            stop_file: None,
        }
    }
}

/// Where the watcher writes: status lines (one per apply) and notices.
pub struct Terminal<'a> {
    /// Status lines.
    pub out: &'a mut dyn Write,
    /// Notices, waits, errors.
    pub err: &'a mut dyn Write,
}

/// Why the watcher could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// Not in a repository, or a bare one.
    #[error(transparent)]
    Repository(#[from] TxError),
    /// Another watcher runs, or its lock is unusable.
    #[error(transparent)]
    Lock(#[from] WatchLockError),
    /// The exclude file cannot be written.
    #[error(transparent)]
    Exclude(#[from] ExcludeError),
    /// The reply file or its folder cannot be made, or the records read.
    #[error("cannot use {}: {error}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

impl WatchError {
    /// Whether it is a refusal (another watcher runs: exit 3).
    pub fn is_refusal(&self) -> bool {
        matches!(self, WatchError::Lock(WatchLockError::Busy { .. }))
    }

    /// What to do next.
    pub fn hint(&self) -> String {
        match self {
            WatchError::Repository(e) => e.hint(),
            WatchError::Lock(WatchLockError::Busy { holder }) => format!(
                "use that watcher, or stop it (Ctrl-C in its terminal, or `kill {}`) and start `git loaf watch` again",
                holder.pid
            ),
            WatchError::Lock(WatchLockError::Io { .. }) | WatchError::Exclude(_) => {
                "check that the git directory is writable".into()
            }
            WatchError::Io { .. } => {
                "check the path and its permissions, or name another file: `git loaf watch FILE`"
                    .into()
            }
        }
    }
}

/// How the watcher ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped {
    /// How many replies it applied.
    pub applies: usize,
}

/// Watches until stopped (Ctrl-C, SIGTERM, or the options' limits).
pub fn watch(
    options: &WatchOptions,
    clipboard: &mut dyn Clipboard,
    terminal: Terminal<'_>,
) -> Result<Stopped, WatchError> {
    let repo = crate::tx::session::open(&options.cwd, "watch")?;
    let root: PathBuf = repo.workdir().ok_or(TxError::Bare)?.components().collect();
    let file = match &options.file {
        Some(file) => options.cwd.join(file),
        None => root.join(DEFAULT_FILE),
    };
    let shown = show(&root, &file);
    let results = results::results_path(&file);
    let watching = if options.clipboard {
        format!("{shown} and the clipboard")
    } else {
        shown.clone()
    };
    // First the lock: a watcher refused because another runs creates nothing.
    let _lock = WatchLock::acquire(repo.commondir(), &watching)?;
    if options.file.is_none() {
        exclude::ensure_excluded(&repo, LOAF_DIR_PATTERN)?;
    }
    create_if_missing(&file)?;
    let applied = AppliedReplies::load(&repo).map_err(|error| WatchError::Io {
        path: repo.commondir().join("loaf"),
        error,
    })?;
    drop(repo);
    signal::install().map_err(|error| WatchError::Io {
        path: PathBuf::from("the Ctrl-C handler"),
        error,
    })?;
    let (file_watch, notice) = FileWatch::new(&file);
    let shown_results = show(&root, &results);
    let mut listener = Listener::new(
        root,
        shown,
        results,
        shown_results,
        applied,
        clipboard,
        terminal,
    );
    if let Some(notice) = notice {
        listener.note(&notice);
    }
    listener.note(&format!(
        "watching {watching}: each new reply is applied once; results go to {} and the clipboard. Ctrl-C stops.",
        listener.shown_results()
    ));
    listener.run(options, &file, file_watch);
    listener.note(&format!(
        "stopped after {} appl{}",
        listener.applies(),
        if listener.applies() == 1 { "y" } else { "ies" }
    ));
    Ok(Stopped {
        applies: listener.applies(),
    })
}

/// The file with its header when it does not exist, its folder made.
fn create_if_missing(file: &Path) -> Result<(), WatchError> {
    let io = |error| WatchError::Io {
        path: file.to_path_buf(),
        error,
    };
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(file)
    {
        Ok(mut new) => new.write_all(FILE_HEADER.as_bytes()).map_err(io),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(e)),
    }
}

/// A path as the user sees it: relative to the repository root when inside it.
fn show(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
