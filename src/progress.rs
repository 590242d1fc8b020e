//! A progress line on stderr while an `exec` block or a hook runs longer than a moment, so that
//! a user watching a terminal sees what is running and for how long instead of a frozen
//! command:
//!
//! ```text
//! exec bash: cargo test · 12s
//! ```
//!
//! The line appears only after [`DELAY`] (quick commands show nothing), is redrawn in place
//! every second, and is erased when the command ends, so that it never mixes with what the
//! command prints afterwards. It is off unless the command line turns it on with [`set`],
//! which it does only when stderr is a terminal that understands `\r` and erase-line, and
//! never for `--json` output: a pipe, a file or a program reading the output never sees it.
//!
//! Runners ([`start`]) do not know whether it is on: they announce each command, and the
//! returned [`Task`] erases the line when dropped. Commands run one at a time; the line shows
//! the latest.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a command runs before its line appears.
pub(crate) const DELAY: Duration = Duration::from_secs(1);

/// How often the line is redrawn (it shows whole seconds).
const TICK: Duration = Duration::from_secs(1);

/// Whether and how the line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Never (the default).
    Off = 0,
    /// Drawn as plain text.
    Plain = 1,
    /// Drawn dim (colour is on).
    Dim = 2,
}

static MODE: AtomicU8 = AtomicU8::new(Mode::Off as u8);

/// Sets whether the progress line is drawn from now on. The caller decides: stderr must be a
/// terminal that understands cursor control, and the output not meant for a program.
pub fn set(mode: Mode) {
    MODE.store(mode as u8, Ordering::Relaxed);
}

fn mode() -> Mode {
    match MODE.load(Ordering::Relaxed) {
        1 => Mode::Plain,
        2 => Mode::Dim,
        _ => Mode::Off,
    }
}

/// A command that is running; dropping it (when the command ended) erases its line.
#[derive(Debug)]
pub struct Task {
    /// Dropped to tell the drawing thread to stop.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// Announces that `label` (e.g. `exec bash: sleep 2`, `hook: npm test`) starts running.
/// Costs nothing when the line is off.
pub fn start(label: &str) -> Task {
    let mode = mode();
    if mode == Mode::Off {
        return Task {
            stop: None,
            thread: None,
        };
    }
    let label = one_line(label);
    let (stop, stopped) = mpsc::channel::<()>();
    let started = Instant::now();
    let thread = std::thread::Builder::new()
        .name("loaf-progress".to_owned())
        .spawn(move || draw_until_stopped(&label, mode, started, &stopped))
        .ok();
    Task {
        stop: Some(stop),
        thread,
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        // Closing the channel wakes the thread; joining means the line is erased before
        // anything else is printed.
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn draw_until_stopped(label: &str, mode: Mode, started: Instant, stopped: &mpsc::Receiver<()>) {
    let mut wait = DELAY;
    let mut drawn = false;
    // Until the task ends (its sender is dropped): a timeout means it is still running.
    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(wait) {
        let line = line(label, started.elapsed(), columns());
        let line = match mode {
            Mode::Dim => format!("\x1b[2m{line}\x1b[0m"),
            Mode::Plain | Mode::Off => line,
        };
        write_stderr(&format!("{ERASE}{line}"));
        drawn = true;
        wait = TICK;
    }
    if drawn {
        write_stderr(ERASE);
    }
}

/// Back to the start of the line and clear it.
const ERASE: &str = "\r\x1b[K";

fn write_stderr(text: &str) {
    use std::io::Write as _;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// `<label> · <seconds>s`, cut to fit in `columns - 1` characters: a line that wrapped
/// could not be erased.
fn line(label: &str, elapsed: Duration, columns: usize) -> String {
    let time = format!(" · {}s", elapsed.as_secs());
    let room = columns
        .saturating_sub(1)
        .saturating_sub(time.chars().count());
    let label: String = if label.chars().count() <= room {
        label.to_owned()
    } else if room == 0 {
        String::new()
    } else {
        label.chars().take(room - 1).chain(['…']).collect()
    };
    format!("{label}{time}")
}

/// The first line of `label`, control characters (tabs, escapes from a model's code) made
/// spaces, `…` when there was more.
fn one_line(label: &str) -> String {
    let mut lines = label.trim().lines();
    let first = lines.next().unwrap_or_default();
    let mut out: String = first
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if lines.next().is_some() {
        out.push_str(" …");
    }
    out
}

/// The terminal's width on stderr, 80 when it cannot be read.
fn columns() -> usize {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` into the struct passed, which we own; fd 2 is
    // only queried.
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_col > 0 {
        usize::from(size.ws_col)
    } else {
        80
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_command_and_whole_seconds() {
        assert_eq!(
            line("exec bash: sleep 2", Duration::from_millis(3400), 80),
            "exec bash: sleep 2 · 3s"
        );
    }

    #[test]
    fn a_long_label_is_cut_to_fit_the_terminal() {
        let text = line(&"x".repeat(200), Duration::from_secs(12), 40);
        assert_eq!(text.chars().count(), 39, "{text}");
        assert!(text.ends_with("… · 12s"), "{text}");
    }

    #[test]
    fn only_the_first_line_shows_without_control_characters() {
        assert_eq!(
            one_line("  echo\x1b[31m a\tb\nsleep 5\n"),
            "echo [31m a b …"
        );
    }

    #[test]
    fn an_announced_task_draws_nothing_while_off() {
        set(Mode::Off);
        let task = start("exec bash: sleep 2");
        assert!(task.thread.is_none());
    }
}
