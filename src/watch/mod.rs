//! `git loaf watch`, the listener (DESIGN §3): each reply saved to a file (default
//! `.loaf/reply.md`) or, with `--clipboard`, copied to the clipboard is applied once, as an
//! ordinary apply, and its results are written beside the file (`results.md`) and put on the
//! clipboard, ready to paste back to the model.
//!
//! The loop, in the order a save travels through it:
//!
//! ```text
//! save ──notify──▶ debounce ──▶ read ──reply::inspect──▶ no blocks / still being written: wait
//!                                                 └──▶ complete: key ──record──▶ ran already: say so
//!                                                                      └──▶ ops::apply ──▶ results.md,
//!                                                                           clipboard, status line
//! ```
//!
//! - Exactly once: a reply's key is the hash of its blocks ([`reply`]); the keys run so far
//!   are in the operation log and a small file ([`record`]), so a re-save, an editor's
//!   double write, a re-copy or a restart never runs a reply twice.
//! - The operation lock is taken by each apply and only for its duration, so `git loaf undo`
//!   works while the watcher runs; a second watcher is refused by the watcher's own lock
//!   ([`lock`]).
//! - Ctrl-C or SIGTERM ([`signal`]) stop the watcher between applies, never during one; an
//!   apply that fails (the lock busy, a merge in progress) is reported and retried while the
//!   reply stays as it is, and never stops the watcher.

pub mod clipboard;
pub mod files;
pub mod lock;
pub mod record;
pub mod reply;
pub mod results;
pub mod signal;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::git::exclude::{self, ExcludeError, LOAF_DIR_PATTERN};
use crate::git::session::TxError;
use crate::ops::apply::{self, ApplyOptions};
use clipboard::Clipboard;
use files::{FileWatch, Seen};
use lock::{WatchLock, WatchLockError};
use record::AppliedReplies;
use reply::Readiness;

/// The default file, relative to the repository root.
pub const DEFAULT_FILE: &str = ".loaf/reply.md";

/// The line a new reply file starts with.
pub const FILE_HEADER: &str = "<!-- git loaf watch: replace this file's content with the model's whole reply and save; the results appear in results.md beside it -->\n";

/// The first words of every results report: text starting so is never taken for a reply.
const RESULTS_MARK: &str = "=== LOAF RESULTS ===";

/// How a failed apply is retried while its reply stays as it is.
const RETRY: Duration = Duration::from_secs(2);

/// How often the file's size and time are checked besides the notifications.
const STAT_EVERY: Duration = Duration::from_secs(1);

/// How long the loop waits at most before looking at the stop request again.
const TICK: Duration = Duration::from_millis(100);

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
    let repo = crate::git::session::open(&options.cwd, "watch")?;
    let root: PathBuf = repo.workdir().ok_or(TxError::Bare)?.components().collect();
    let file = match &options.file {
        Some(file) => options.cwd.join(file),
        None => {
            exclude::ensure_excluded(&repo, LOAF_DIR_PATTERN)?;
            root.join(DEFAULT_FILE)
        }
    };
    create_if_missing(&file)?;
    let shown = show(&root, &file);
    let results = results::results_path(&file);
    let watching = if options.clipboard {
        format!("{shown} and the clipboard")
    } else {
        shown.clone()
    };
    let _lock = WatchLock::acquire(repo.commondir(), &watching)?;
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
    let mut listener = Listener {
        root: root.clone(),
        shown,
        shown_results: show(&root, &results),
        results,
        applied,
        clipboard,
        clipboard_failed: false,
        own_results: None,
        terminal,
        applies: 0,
        file: Source::default(),
        clip: Source::default(),
    };
    if let Some(notice) = notice {
        listener.note(&notice);
    }
    listener.note(&format!(
        "watching {watching}: each new reply is applied once; results go to {} and the clipboard. Ctrl-C stops.",
        listener.shown_results
    ));
    listener.run(options, &file, file_watch);
    listener.note(&format!(
        "stopped after {} appl{}",
        listener.applies,
        if listener.applies == 1 { "y" } else { "ies" }
    ));
    Ok(Stopped {
        applies: listener.applies,
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

/// Where a text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    File,
    Clipboard,
}

/// What the watcher last did with one source's text.
#[derive(Debug, Default)]
struct Source {
    /// The digest of the last text handled (applied, or found not to need it).
    handled: Option<[u8; 32]>,
    /// The last clipboard text read (to notice a change).
    text: Option<String>,
    /// A failed apply to try again, and when.
    retry: Option<(String, Instant)>,
    /// The last error said, so that a retry failing alike says nothing new.
    error: Option<String>,
    /// The last wait or "already applied" said, so that a double save says nothing twice.
    said: Option<String>,
}

/// What became of a text.
enum Handled {
    Done,
    Retry,
}

struct Listener<'a, 'c> {
    root: PathBuf,
    shown: String,
    results: PathBuf,
    shown_results: String,
    applied: AppliedReplies,
    clipboard: &'c mut dyn Clipboard,
    clipboard_failed: bool,
    own_results: Option<String>,
    terminal: Terminal<'a>,
    applies: usize,
    file: Source,
    clip: Source,
}

impl Listener<'_, '_> {
    fn run(&mut self, options: &WatchOptions, path: &Path, mut watch: FileWatch) {
        let mut file_due = Some(Instant::now());
        let mut next_stat = Instant::now() + STAT_EVERY;
        let mut next_clip = Instant::now();
        while !self.stop_requested(options) {
            let now = Instant::now();
            let mut wake = next_stat.min(now + TICK);
            for at in [file_due, options.clipboard.then_some(next_clip)]
                .into_iter()
                .flatten()
                .chain(self.file.retry.as_ref().map(|r| r.1))
                .chain(self.clip.retry.as_ref().map(|r| r.1))
            {
                wake = wake.min(at);
            }
            if watch.wait(wake.saturating_duration_since(now)) == Seen::Event {
                // Every notification restarts the wait: an editor's writes come in bursts.
                file_due = Some(Instant::now() + options.debounce);
                continue;
            }
            let now = Instant::now();
            if now >= next_stat {
                next_stat = now + STAT_EVERY;
                if watch.stat_changed() && file_due.is_none() {
                    file_due = Some(now + options.debounce);
                }
            }
            if file_due.is_some_and(|at| now >= at) {
                file_due = None;
                self.check_file(path, false);
            }
            if self.file.retry.as_ref().is_some_and(|r| now >= r.1) {
                // Taken first: a file gone meanwhile must not make this a busy loop.
                self.file.retry = None;
                self.check_file(path, true);
            }
            if options.clipboard && now >= next_clip {
                next_clip = now + options.clipboard_poll;
                self.check_clipboard();
            }
            if let Some((text, at)) = self.clip.retry.take() {
                if now >= at {
                    self.consider(Origin::Clipboard, &text, true);
                } else {
                    self.clip.retry = Some((text, at));
                }
            }
        }
    }

    fn stop_requested(&self, options: &WatchOptions) -> bool {
        signal::requested()
            || options.max_applies.is_some_and(|n| self.applies >= n)
            || options.stop_file.as_deref().is_some_and(Path::exists)
    }

    fn check_file(&mut self, path: &Path, retrying: bool) {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            // Between an editor's delete and its rename: the next notification comes.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                self.say_once(Origin::File, format!("cannot read {}: {e}", self.shown));
                return;
            }
        };
        let Ok(text) = String::from_utf8(bytes) else {
            self.say_once(
                Origin::File,
                format!("{} is not UTF-8 text: save the reply as UTF-8", self.shown),
            );
            return;
        };
        self.consider(Origin::File, &text, retrying);
    }

    fn check_clipboard(&mut self) {
        let text = match self.clipboard.get_text() {
            Ok(Some(text)) => text,
            Ok(None) => return,
            Err(e) => {
                if !self.clipboard_failed {
                    self.clipboard_failed = true;
                    self.note(&format!(
                        "cannot read the clipboard ({e}): watching {} only until it works",
                        self.shown
                    ));
                }
                return;
            }
        };
        if self.clip.text.as_deref() == Some(text.as_str()) {
            return;
        }
        self.clip.text = Some(text.clone());
        self.clip.retry = None;
        // Our own results, pasted nowhere yet: never a reply, whatever they quote.
        if self.own_results.as_deref() == Some(text.as_str())
            || text.trim_start().starts_with(RESULTS_MARK)
        {
            return;
        }
        self.consider(Origin::Clipboard, &text, false);
    }

    /// Acts on a text read from `from`: waits, says it ran already, or applies it.
    fn consider(&mut self, from: Origin, text: &str, retrying: bool) {
        let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        let source = self.source(from);
        // The same text again (a save that changed nothing, the periodic check): what was
        // done stands, a retry under way included.
        if source.handled == Some(digest) && !retrying {
            return;
        }
        source.retry = None;
        let handled = match reply::inspect(text) {
            Readiness::NoBlocks => {
                if from == Origin::File && !text.trim().is_empty() && text != FILE_HEADER {
                    self.say_once(
                        from,
                        format!("{} holds no NESL block: nothing to apply", self.shown),
                    );
                }
                Handled::Done
            }
            Readiness::Incomplete { block, line } => {
                let what = match block {
                    Some(id) => format!("block {id} (line {line}) is not closed yet"),
                    None => format!("the block header at line {line} is not finished"),
                };
                let message = match from {
                    Origin::File => format!(
                        "waiting: in {}, {what}; the reply runs when it is complete (`git loaf apply {}` runs it as it is)",
                        self.shown, self.shown
                    ),
                    Origin::Clipboard => format!(
                        "the clipboard holds a reply whose {what}: not applied (copy the whole reply)"
                    ),
                };
                self.say_once(from, message);
                Handled::Done
            }
            Readiness::Ready { key, blocks } => match self.applied.get(&key) {
                Some(id) => {
                    let what = match id {
                        Some(id) => format!("as apply {id}"),
                        None => "(it changed nothing, so it has no apply id)".to_owned(),
                    };
                    let place = match from {
                        Origin::File => format!("the reply in {}", self.shown),
                        Origin::Clipboard => "the reply on the clipboard".to_owned(),
                    };
                    self.say_once(
                        from,
                        format!("{place} was already applied {what}: not run again (a new or changed block runs; `git loaf apply FILE` runs a reply regardless)"),
                    );
                    Handled::Done
                }
                None => self.apply(from, text, &key, blocks),
            },
        };
        let source = self.source(from);
        match handled {
            Handled::Done => {
                source.handled = Some(digest);
                source.error = None;
            }
            Handled::Retry => {
                source.handled = Some(digest);
                source.retry = Some((text.to_owned(), Instant::now() + RETRY));
            }
        }
    }

    /// Runs the reply as an ordinary apply and hands the results back.
    fn apply(&mut self, from: Origin, text: &str, key: &str, blocks: usize) -> Handled {
        let options = ApplyOptions {
            model: None,
            reply_key: Some(key.to_owned()),
        };
        let applied = match apply::apply(&self.root, text, &options) {
            Ok(applied) => applied,
            Err(error) => {
                let message = format!(
                    "error: {error}\nhint: {}\nthe reply is tried again every {} s while it stays as it is",
                    error.hint(),
                    RETRY.as_secs()
                );
                // Said once: a retry failing alike (its numbers aside, the lock holder's
                // age) says nothing new.
                let gist: String = message.chars().filter(|c| !c.is_ascii_digit()).collect();
                let source = self.source(from);
                if source.error.as_deref() != Some(gist.as_str()) {
                    source.error = Some(gist);
                    let _ = writeln!(self.terminal.err, "{message}");
                }
                return Handled::Retry;
            }
        };
        self.applies += 1;
        self.source(from).said = None;
        let id = applied
            .result
            .git
            .as_ref()
            .map(|g| g.apply.as_str())
            .filter(|id| !id.is_empty());
        if let Err(e) = self.applied.record(key, id) {
            self.note(&format!(
                "cannot record that this reply ran ({e}): if the watcher restarts, it may run it again"
            ));
        }
        for notice in &applied.notices {
            self.note(&format!("note: {notice}"));
        }
        let report = applied.result.to_text();
        let mut wrote = Vec::new();
        match results::write_atomically(&self.results, &report) {
            Ok(()) => wrote.push(self.shown_results.clone()),
            Err(e) => self.note(&format!("cannot write {}: {e}", self.shown_results)),
        }
        match self.clipboard.set_text(&report) {
            Ok(()) => {
                wrote.push("the clipboard".to_owned());
                self.own_results = Some(report.clone());
                // What we just copied is not a new clipboard text to look at.
                self.clip.text = Some(report);
            }
            Err(e) => {
                if !self.clipboard_failed {
                    self.clipboard_failed = true;
                    self.note(&format!(
                        "cannot reach the clipboard ({e}): the results are in {} only",
                        self.shown_results
                    ));
                }
            }
        }
        let origin = match from {
            Origin::File => self.shown.clone(),
            Origin::Clipboard => "clipboard".to_owned(),
        };
        let _ = writeln!(
            self.terminal.out,
            "{} · {blocks} block{} from {origin} · results in {}",
            results::status_line(&applied),
            if blocks == 1 { "" } else { "s" },
            if wrote.is_empty() {
                "nothing (see above)".to_owned()
            } else {
                wrote.join(" and ")
            }
        );
        let _ = self.terminal.out.flush();
        Handled::Done
    }

    fn source(&mut self, from: Origin) -> &mut Source {
        match from {
            Origin::File => &mut self.file,
            Origin::Clipboard => &mut self.clip,
        }
    }

    /// Says `message` unless it is what was said last about this source.
    fn say_once(&mut self, from: Origin, message: String) {
        let source = self.source(from);
        if source.said.as_deref() == Some(message.as_str()) {
            return;
        }
        source.said = Some(message.clone());
        self.note(&message);
    }

    fn note(&mut self, message: &str) {
        let _ = writeln!(self.terminal.err, "{}", message.trim_end());
        let _ = self.terminal.err.flush();
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
