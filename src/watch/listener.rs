//! The watcher's loop: notifications, debounce, the periodic checks, and what is done with
//! each text read from the file or the clipboard (wait, say it ran already, or apply it).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::clipboard::Clipboard;
use super::files::{FileWatch, Seen};
use super::record::AppliedReplies;
use super::{FILE_HEADER, Terminal, WatchOptions, results, signal};
use crate::ops::apply::{self, ApplyOptions, Once};
use crate::ops::readiness::{self as reply, Readiness};

/// The first words of every results report: text starting so is never taken for a reply.
const RESULTS_MARK: &str = "=== LOAF RESULTS ===";

/// How a failed apply is retried while its reply stays as it is.
const RETRY: Duration = Duration::from_secs(2);

/// How often the file's size and time are checked besides the notifications.
const STAT_EVERY: Duration = Duration::from_secs(1);

/// How long the loop waits at most before looking at the stop request again.
const TICK: Duration = Duration::from_millis(100);

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

pub(super) struct Listener<'a, 'c> {
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

impl<'a, 'c> Listener<'a, 'c> {
    pub(super) fn new(
        root: PathBuf,
        shown: String,
        results: PathBuf,
        shown_results: String,
        applied: AppliedReplies,
        clipboard: &'c mut dyn Clipboard,
        terminal: Terminal<'a>,
    ) -> Self {
        Listener {
            root,
            shown,
            results,
            shown_results,
            applied,
            clipboard,
            clipboard_failed: false,
            own_results: None,
            terminal,
            applies: 0,
            file: Source::default(),
            clip: Source::default(),
        }
    }

    /// How many replies it applied.
    pub(super) fn applies(&self) -> usize {
        self.applies
    }

    /// The results file, as shown to the user.
    pub(super) fn shown_results(&self) -> &str {
        &self.shown_results
    }

    /// Watches until a stop is asked for.
    pub(super) fn run(&mut self, options: &WatchOptions, path: &Path, mut watch: FileWatch) {
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
        // Keyed as `git loaf apply` keys it, which reads the reply without one.
        let text = crate::input::without_bom(text);
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
            Readiness::Ready {
                key,
                blocks,
                earlier,
            } => match self.refreshed().get(&key) {
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
                None => match self.already_applied_run(&earlier) {
                    // A new reply appended below one that ran: only the new blocks run, at
                    // their own line numbers, so no block is applied twice.
                    Some((applied_blocks, next_line, id)) => {
                        let new_blocks = blocks - applied_blocks;
                        let ran = match applied_blocks {
                            1 => "the first block was".to_owned(),
                            n => format!("the first {n} blocks were"),
                        };
                        let new = match new_blocks {
                            1 => "the new one".to_owned(),
                            n => format!("the {n} new ones"),
                        };
                        let id = id.map(|id| format!(" (apply {id})")).unwrap_or_default();
                        self.say_once(from, format!("{ran} applied already{id}: running {new}"));
                        let rest = only_from_line(text, next_line);
                        self.apply(from, &rest, &key, new_blocks)
                    }
                    None => self.apply(from, text, &key, blocks),
                },
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

    /// The record of replies run, read again: a reply applied by hand since the watcher
    /// started is known (docs/watch.md, "Each reply runs once").
    fn refreshed(&mut self) -> &AppliedReplies {
        if let Err(e) = self.applied.reload(&self.root) {
            self.note(&format!(
                "cannot read the record of applied replies again ({e}): the operation log is checked once more before applying"
            ));
        }
        &self.applied
    }

    /// The longest run of the reply's first blocks that ran as a reply of its own: how many
    /// blocks, the line where the next one starts, and its apply id.
    fn already_applied_run(
        &self,
        earlier: &[(String, usize)],
    ) -> Option<(usize, usize, Option<String>)> {
        earlier
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, (key, line))| {
                self.applied
                    .get(key)
                    .map(|id| (i + 1, *line, id.map(str::to_owned)))
            })
    }

    /// Runs the reply as an ordinary apply and hands the results back.
    fn apply(&mut self, from: Origin, text: &str, key: &str, blocks: usize) -> Handled {
        let options = ApplyOptions {
            reply_key: Some(key.to_owned()),
            // As `git commit` from an editor would: the repository's hooks run and
            // commit.gpgSign is honoured.
            ..ApplyOptions::default()
        };
        // Between the record's last reading and the lock, another process may run it.
        crate::tx::publish::crash_point("watch-recorded");
        let applied = match apply::apply_once(&self.root, text, &options) {
            Ok(Once::Applied(applied)) => applied,
            Ok(Once::AlreadyApplied { apply }) => {
                let _ = self.applied.record(key, Some(&apply));
                let place = match from {
                    Origin::File => format!("the reply in {}", self.shown),
                    Origin::Clipboard => "the reply on the clipboard".to_owned(),
                };
                self.say_once(
                    from,
                    format!("{place} was just applied by another git loaf command, as apply {apply}: not run again"),
                );
                return Handled::Done;
            }
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
        let mut report = applied.result.to_text();
        // A `git loaf review` report waiting for the model goes back with these results, once.
        if let Some(review) = crate::ops::review::take_report(&self.root) {
            report.push('\n');
            report.push_str(&review);
        }
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

    /// Tells the user something on stderr.
    pub(super) fn note(&mut self, message: &str) {
        let _ = writeln!(self.terminal.err, "{}", message.trim_end());
        let _ = self.terminal.err.flush();
    }
}

/// `text` with its lines before `line` (1-based) blanked: what follows runs alone, and every
/// line keeps its number in the report.
fn only_from_line(text: &str, line: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, piece) in text.split_inclusive('\n').enumerate() {
        if i + 1 >= line {
            out.push_str(piece);
        } else {
            out.push('\n');
        }
    }
    out
}
